package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
)

// TestBenchConfigMix checks the generated config: exact object counts, at
// most benchMaxServices Services per cluster, extras on the first cluster
// only, and a config that loads.
func TestBenchConfigMix(t *testing.T) {
	set := &localcluster.Set{Clusters: []*localcluster.Cluster{
		{Name: "c1", Kubeconfig: "/tmp/c1.kubeconfig"}, {Name: "c2", Kubeconfig: "/tmp/c2.kubeconfig"},
	}}
	for _, tc := range []struct {
		objects, extra int
		want           map[hub.Kind]int // on c1
	}{
		{12, 0, map[hub.Kind]int{hub.KindDeployment: 4, hub.KindService: 4, hub.KindConfigMap: 4}},
		{13, 0, map[hub.Kind]int{hub.KindDeployment: 5, hub.KindService: 4, hub.KindConfigMap: 4}},
		{14, 0, map[hub.Kind]int{hub.KindDeployment: 5, hub.KindService: 4, hub.KindConfigMap: 5}},
		{1000, 0, map[hub.Kind]int{hub.KindDeployment: 400, hub.KindService: 200, hub.KindConfigMap: 400}},
		{12, 7, map[hub.Kind]int{hub.KindDeployment: 8, hub.KindService: 4, hub.KindConfigMap: 7}},
	} {
		text := benchConfig(set, tc.objects, tc.extra, 100, 8)
		path := filepath.Join(t.TempDir(), "bench.yaml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(path, config.LoadOptions{Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatalf("objects %d extra %d: %v\n%s", tc.objects, tc.extra, err, text)
		}
		if cfg.Hub.QPS != 100 || cfg.Hub.Burst != 200 || cfg.Hub.Workers != 8 {
			t.Errorf("hub settings: %+v", cfg.Hub)
		}
		got := map[string]map[hub.Kind]int{}
		for _, s := range config.Compile(cfg) {
			if got[s.ID.Cluster] == nil {
				got[s.ID.Cluster] = map[hub.Kind]int{}
			}
			got[s.ID.Cluster][s.ID.Kind]++
		}
		for k, n := range tc.want {
			if got["c1"][k] != n {
				t.Errorf("objects %d extra %d: c1 has %d %s, want %d", tc.objects, tc.extra, got["c1"][k], k, n)
			}
		}
		total := 0
		for _, n := range got["c2"] {
			total += n
		}
		if total != tc.objects {
			t.Errorf("objects %d extra %d: c2 has %d objects", tc.objects, tc.extra, total)
		}
	}
}

package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
)

func TestParseBench(t *testing.T) {
	o, err := parseBench(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.mode != benchAll || o.clusters != 3 || o.objects != 300 || o.drifts != 200 || o.rate != 20 ||
		o.interval != 10*time.Second || o.burst != 1000 || o.output != "table" {
		t.Fatalf("defaults: %+v", o)
	}
	for _, args := range [][]string{
		{"--mode", "fast"}, {"-o", "yaml"}, {"--clusters", "0"}, {"--objects", "0"}, {"--drifts", "0"},
		{"--rate", "0"}, {"--interval", "0s"}, {"--burst", "0"}, {"--qps", "-1"}, {"extra"}, {"--nope"},
	} {
		_, err := parseBench(args, io.Discard)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 {
			t.Errorf("%v: got %v, want a usage error", args, err)
		}
	}
}

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

// TestBench runs a tiny `driftwatch bench --mode all` on one real local
// cluster and checks the table.
func TestBench(t *testing.T) {
	bins := lctest.BinDir(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	getenv := func(k string) string {
		if k == envBinDir {
			return bins
		}
		return ""
	}
	began := time.Now()
	err := run(ctx, []string{"bench", "--mode", "all", "--clusters", "1", "--objects", "12", "--drifts", "8",
		"--burst", "10", "--interval", "2s", "--dir", t.TempDir()}, getenv, out, errOut)
	if err != nil {
		t.Fatalf("bench: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	t.Logf("bench took %s; output:\n%s", time.Since(began).Round(time.Millisecond), out)
	rows := map[string][]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if _, ok := rows[f[0]+" "+f[1]]; !ok { // the tables come first
			rows[f[0]+" "+f[1]] = f
		}
	}
	for _, mode := range []string{"watch", "poll", "burst"} {
		for _, lat := range []string{"floor", "detect", "apply", "repair"} {
			f, ok := rows[mode+" "+lat]
			if !ok {
				t.Errorf("no %s %s row", mode, lat)
				continue
			}
			// mode latency n p50 p95 p99 max
			if len(f) != 7 || f[2] == "0" {
				t.Errorf("%s %s: %q", mode, lat, f)
				continue
			}
			for _, v := range f[3:] {
				if d := parseTableDuration(t, v); d <= 0 {
					t.Errorf("%s %s: %s is not positive", mode, lat, v)
				}
			}
		}
		want := map[string]string{"watch": "8", "poll": "8", "burst": "10"}[mode]
		// mode drifts repaired failed ...
		f, ok := rows[mode+" "+want]
		if !ok || f[2] != want || f[3] != "0" {
			t.Errorf("%s summary row: %q (want %s drifts, all repaired, none failed)", mode, f, want)
		}
	}
	for _, s := range []string{"poll detect p50 / watch detect p50", "watch detect p99 / floor p99", "burst of 10 deletes fully repaired in under 15s"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q", s)
		}
	}
	// Polling every 2s must be much slower to detect than the watch.
	if p, w := parseTableDuration(t, rows["poll detect"][3]), parseTableDuration(t, rows["watch detect"][3]); p < 5*w {
		t.Errorf("poll detect p50 %s is not 5x watch detect p50 %s", p, w)
	}
}

// parseTableDuration parses a table cell such as "4.12ms" or "2.50s".
func parseTableDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	unit := time.Second
	num := strings.TrimSuffix(s, "s")
	if strings.HasSuffix(num, "m") {
		unit, num = time.Millisecond, strings.TrimSuffix(num, "m")
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		t.Fatalf("cell %q: %v", s, err)
	}
	return time.Duration(v * float64(unit))
}

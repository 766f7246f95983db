package app

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
)

// TestRetainedConfig: the app keeps a loaded config without its
// applications (only compiling needs them), across reloads too, unless
// Cluster API discovery may compile them later; the desired state is the
// whole config's either way.
func TestRetainedConfig(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := unreachableKubeconfig(t, dir)
	body := fmt.Sprintf(`clusters:
  - id: c1
    kubeconfig: %s
applications:
  - id: web
    namespace: shop
    clusters: [c1]
    image: registry.example/web:1
    config: {MODE: live}
`, kubeconfig)
	capi := fmt.Sprintf(`clusterAPI:
  - name: mgmt
    kubeconfig: %s
    namespaces: [fleet]
`, kubeconfig)
	web := hub.NewNodeID("c1", "shop", "web", hub.KindDeployment)
	for _, tc := range []struct {
		name     string
		text     string
		keepApps bool
	}{
		{"static clusters only", body, false},
		{"with cluster API discovery", body + capi, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "driftwatch.yaml")
			if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(path, config.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			a, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = a.Close() })
			check := func(when string) {
				t.Helper()
				a.mu.Lock()
				kept := a.cfg
				a.mu.Unlock()
				if got := len(kept.Applications) > 0; got != tc.keepApps {
					t.Errorf("%s: kept %d applications, want them kept: %v", when, len(kept.Applications), tc.keepApps)
				}
				if len(kept.Clusters) != 1 || kept.Clusters[0].ID != "c1" || kept.Path != path {
					t.Errorf("%s: kept clusters %+v, path %q: want c1 and %q", when, kept.Clusters, kept.Path, path)
				}
				if _, ok := a.Hub().Desired(web); !ok {
					t.Errorf("%s: the hub does not want %s", when, web)
				}
			}
			check("at start")
			if len(cfg.Applications) != 1 {
				t.Errorf("New changed the caller's config: %d applications", len(cfg.Applications))
			}
			if err := a.Reload(false); err != nil {
				t.Fatal(err)
			}
			check("after a reload")
		})
	}
}

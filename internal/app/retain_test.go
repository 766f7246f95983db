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
// applications and sources (only compiling needs them), across reloads
// too, unless Cluster API discovery may compile them later; the desired
// state is the whole config's either way.
func TestRetainedConfig(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := unreachableKubeconfig(t, dir)
	if err := os.MkdirAll(filepath.Join(dir, "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: robot\n"
	if err := os.WriteFile(filepath.Join(dir, "objects", "sa.yaml"), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`clusters:
  - id: c1
    kubeconfig: %s
applications:
  - id: web
    namespace: shop
    clusters: [c1]
    image: registry.example/web:1
    config: {MODE: live}
sources:
  - id: objects
    path: %s
    namespace: shop
    clusters: [c1]
`, kubeconfig, filepath.Join(dir, "objects"))
	capi := fmt.Sprintf(`clusterAPI:
  - name: mgmt
    kubeconfig: %s
    namespaces: [fleet]
`, kubeconfig)
	web := hub.NewNodeID("c1", "shop", "web", hub.KindDeployment)
	robot := hub.NewNodeID("c1", "shop", "robot", hub.KindSlug("", "ServiceAccount"))
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
				if got := len(kept.Sources) > 0; got != tc.keepApps {
					t.Errorf("%s: kept %d sources, want them kept: %v", when, len(kept.Sources), tc.keepApps)
				}
				if got := len(config.Compile(kept)) > 0; got != tc.keepApps {
					t.Errorf("%s: the kept config compiles: %v, want %v", when, got, tc.keepApps)
				}
				if len(kept.Clusters) != 1 || kept.Clusters[0].ID != "c1" || kept.Path != path {
					t.Errorf("%s: kept clusters %+v, path %q: want c1 and %q", when, kept.Clusters, kept.Path, path)
				}
				for _, id := range []hub.NodeID{web, robot} {
					if _, ok := a.Hub().Desired(id); !ok {
						t.Errorf("%s: the hub does not want %s", when, id)
					}
				}
			}
			check("at start")
			if len(cfg.Applications) != 1 || len(cfg.Sources) != 1 || len(config.Compile(cfg)) != 3 {
				t.Errorf("New changed the caller's config: %d applications, %d sources, %d specs", len(cfg.Applications), len(cfg.Sources), len(config.Compile(cfg)))
			}
			if err := a.Reload(false); err != nil {
				t.Fatal(err)
			}
			check("after a reload")
		})
	}
}

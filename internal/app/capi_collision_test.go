package app

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/clusters/capi"
	"github.com/driftwatch/driftwatch/config"
)

// TestClusterAPISourcesCollide: two Cluster API sources whose Clusters
// map to one id (each management cluster has a fleet/web) never silently
// replace each other: while both claim it the id is managed by neither
// and its health names both sources and Clusters; once one is left that
// one is registered. A Cluster that collides with a configured cluster is
// ignored, and its going away leaves the configured cluster alone.
func TestClusterAPISourcesCollide(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := unreachableKubeconfig(t, dir)
	path := filepath.Join(dir, "driftwatch.yaml")
	body := fmt.Sprintf(`clusters:
  - id: c1
    kubeconfig: %[1]s
clusterAPI:
  - name: mgmt-a
    kubeconfig: %[1]s
  - name: mgmt-b
    kubeconfig: %[1]s
`, kubeconfig)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
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
	handler := func(name string) capiHandler {
		for _, s := range cfg.ClusterAPI {
			if s.Name == name {
				return capiHandler{a: a, source: s}
			}
		}
		t.Fatalf("no source %s", name)
		return capiHandler{}
	}
	srcA, srcB := handler("mgmt-a"), handler("mgmt-b")
	found := func(src, id, ns, name string) capi.Discovered {
		return capi.Discovered{ID: id, Namespace: ns, Name: name, Source: "capi:" + src + "/" + ns, Phase: "Provisioned",
			Kubeconfig: []byte("apiVersion: v1\nkind: Config\n# from " + src + "\n")}
	}
	// registeredFrom says which source's kubeconfig the id is registered
	// with ("" when not registered).
	registeredFrom := func(id string) string {
		cc, ok := a.clusterConfig(id)
		if !ok {
			return ""
		}
		_, from, _ := strings.Cut(string(cc.KubeconfigData), "# from ")
		return strings.TrimSpace(from)
	}
	healthError := func(id string) string {
		for _, c := range a.Hub().Snapshot().Clusters {
			if c.Cluster == id {
				return c.LastError
			}
		}
		return ""
	}
	const collision = `cluster id "fleet-web" is claimed by clusterAPI sources "mgmt-a" (fleet/web), "mgmt-b" (fleet/web): none of them is managed until one is left`
	steps := []struct {
		name      string
		do        func()
		id        string
		wantFrom  string // the source registered, "" none
		wantError string // a substring of the id's health error, "" none
	}{
		{"a alone", func() { srcA.ClusterUp(found("mgmt-a", "fleet-web", "fleet", "web")) }, "fleet-web", "mgmt-a", ""},
		{"b collides", func() { srcB.ClusterUp(found("mgmt-b", "fleet-web", "fleet", "web")) }, "fleet-web", "", collision},
		{"a again, still colliding", func() { srcA.ClusterUp(found("mgmt-a", "fleet-web", "fleet", "web")) }, "fleet-web", "", collision},
		{"a gone, b is left", func() { srcA.ClusterGone("fleet-web") }, "fleet-web", "mgmt-b", ""},
		{"b gone", func() { srcB.ClusterGone("fleet-web") }, "fleet-web", "", ""},
		{"a collides with a configured cluster", func() { srcA.ClusterUp(found("mgmt-a", "c1", "c", "1")) }, "c1", "", ""},
		{"its going away keeps the configured cluster", func() { srcA.ClusterGone("c1") }, "c1", "", ""},
	}
	for _, s := range steps {
		s.do()
		if got := registeredFrom(s.id); got != s.wantFrom {
			t.Errorf("%s: %s registered from %q, want %q", s.name, s.id, got, s.wantFrom)
		}
		if got := healthError(s.id); (s.wantError == "") != (got == "") || !strings.Contains(got, s.wantError) {
			t.Errorf("%s: %s health error %q, want %q", s.name, s.id, got, s.wantError)
		}
	}
	if cc, ok := a.clusterConfig("c1"); !ok || cc.Kubeconfig == "" {
		t.Errorf("configured cluster c1: %+v, %v", cc, ok)
	}
}

package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/driftgen"
)

// TestDemoConfigIgnoresTheAutoscaler: the demo config loads and compiles;
// of the Deployments the fake autoscaler scales, storefront carries a
// manager rule for the autoscaler's spec.replicas and checkout carries none
// (so it shows as contested).
func TestDemoConfigIgnoresTheAutoscaler(t *testing.T) {
	dir := t.TempDir()
	var kubeconfigs []string
	for _, name := range demoClusterNames() {
		p := filepath.Join(dir, name+".kubeconfig")
		if err := os.WriteFile(p, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		kubeconfigs = append(kubeconfigs, p)
	}
	repo, err := newDemoRepo(filepath.Join(dir, "inventory-repo"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "demo.yaml")
	text := []byte(demoConfigText(filepath.Join(dir, "state.db"), kubeconfigs, repo.url()))
	git := NewGitSources(nil, nil)
	defer git.Close()
	cfg, err := config.Parse(path, text, git.LoadOptions(config.LoadOptions{}))
	if err != nil {
		t.Fatalf("demo config: %v", err)
	}
	specs := make(map[hub.NodeID]hub.NodeSpec)
	for _, s := range config.Compile(cfg) {
		specs[s.ID] = s
	}
	if cfg.Notifications.KubernetesEvents == nil {
		t.Error("the demo writes no Kubernetes Events on its objects")
	}
	if _, err := os.Stat(filepath.Join(dir, "git")); err != nil {
		t.Errorf("the Git cache is not in the demo's folder: %v", err)
	}
	// The inventory source: 8 objects on each cluster, each cluster with
	// its environment's overlay.
	for _, cluster := range demoClusterNames() {
		n := 0
		for id, s := range specs {
			if id.Cluster == cluster && s.Application == "inventory" {
				n++
			}
		}
		if n != 8 {
			t.Errorf("%s: %d inventory objects, want 8", cluster, n)
		}
	}
	hpa := func(cluster string) string {
		return string(specs[hub.NewNodeID(cluster, "inventory", "inventory-db", "horizontalpodautoscaler.autoscaling")].Body)
	}
	if !strings.Contains(hpa("prod-eu"), `"minReplicas":2`) || !strings.Contains(hpa("staging-eu"), `"minReplicas":1`) {
		t.Errorf("overlays not chosen by env: prod %s, staging %s", hpa("prod-eu"), hpa("staging-eu"))
	}
	scaled := demoAutoscaled()
	tests := []struct {
		id       hub.NodeID
		wantRule bool
	}{
		{scaled[0], true},  // storefront
		{scaled[1], false}, // checkout
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			s, ok := specs[tt.id]
			if !ok {
				t.Fatalf("the autoscaler scales %s, which the demo config does not manage", tt.id)
			}
			var got bool
			for _, r := range s.Ignore.For(hub.KindDeployment) {
				if slices.Contains(r.Managers, driftgen.AutoscalerManager) &&
					slices.ContainsFunc(r.Paths, func(p []string) bool { return slices.Equal(p, []string{"spec", "replicas"}) }) {
					got = true
				}
			}
			if got != tt.wantRule {
				t.Fatalf("%s: rule for %s over spec.replicas = %v, want %v (rules %+v)", tt.id, driftgen.AutoscalerManager, got, tt.wantRule, s.Ignore)
			}
		})
	}
}

// TestDemoReleases: the demo's inventory service lives in a Git
// repository in the demo's folder; each release is a commit the source
// renders (its settings ConfigMap carries the release) and asks the source
// for a fetch at once, as a push webhook would.
func TestDemoReleases(t *testing.T) {
	dir := t.TempDir()
	repo, err := newDemoRepo(filepath.Join(dir, "inventory-repo"))
	if err != nil {
		t.Fatal(err)
	}
	g := NewGitSources(nil, nil)
	defer g.Close()
	text := []byte(demoConfigText(filepath.Join(dir, "state.db"), []string{"/k1", "/k2", "/k3"}, repo.url()))
	settings := func() (string, string) {
		t.Helper()
		cfg, err := config.Parse(filepath.Join(dir, "demo.yaml"), text, g.LoadOptions(config.LoadOptions{}))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range config.Compile(cfg) {
			if s.ID == hub.NewNodeID("prod-eu", "inventory", "inventory-settings", hub.KindConfigMap) {
				co, _ := cfg.Sources[0].Checkout()
				return co.Commit + " " + co.Message, string(s.Body)
			}
		}
		t.Fatal("no inventory-settings ConfigMap on prod-eu")
		return "", ""
	}
	first, body := settings()
	if !strings.Contains(first, "inventory: first release") || strings.Contains(body, "RELEASE") {
		t.Fatalf("first commit %q, settings %s", first, body)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var errs []error
	done := make(chan struct{})
	go func() {
		defer close(done)
		repo.runReleases(ctx, time.Millisecond, g, func(err error) { errs = append(errs, err) })
	}()
	g.mu.Lock()
	r := g.repos[demoSourceID]
	g.mu.Unlock()
	select {
	case <-r.kick:
	case <-time.After(30 * time.Second):
		t.Fatal("no fetch asked after a release")
	}
	cancel()
	<-done
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if _, err := g.fetch(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	next, body := settings()
	if next == first || !strings.Contains(next, "inventory: release 1.") || !strings.Contains(body, `"RELEASE":"1.`) {
		t.Errorf("after a release: commit %q, settings %s", next, body)
	}
}

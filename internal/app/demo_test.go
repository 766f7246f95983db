package app

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
	var kubeconfigs []any
	for _, name := range demoClusterNames() {
		p := filepath.Join(dir, name+".kubeconfig")
		if err := os.WriteFile(p, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		kubeconfigs = append(kubeconfigs, p)
	}
	if err := writeDemoManifests(filepath.Join(dir, "manifests")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "demo.yaml")
	cfg, err := config.Parse(path, []byte(fmt.Sprintf(demoConfig, kubeconfigs...)), config.LoadOptions{})
	if err != nil {
		t.Fatalf("demo config: %v", err)
	}
	specs := make(map[hub.NodeID]hub.NodeSpec)
	for _, s := range config.Compile(cfg) {
		specs[s.ID] = s
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

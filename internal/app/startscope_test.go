package app

import (
	"slices"
	"testing"

	"github.com/driftwatch/driftwatch/config"
)

// startScope: the initial desired state judges the config's clusters only;
// records of other clusters are forgotten only by a single hub without
// discovery (a cluster removed from the config), and kept (judged later)
// when Cluster API discovery or Terraform workspaces may produce them, or
// when replicas share them.
func TestStartScope(t *testing.T) {
	base := config.Config{Clusters: []config.Cluster{{ID: "c1"}, {ID: "c2"}}, Terraform: []config.Workspace{{ID: "ws"}}}
	recorded := []string{"c1", "fleet-a", "old", "ws"}
	withCAPI := base
	withCAPI.ClusterAPI = []config.ClusterAPISource{{Name: "mgmt"}}
	withCoord := base
	withCoord.Hub.Coordination = &config.Coordination{}
	for _, tc := range []struct {
		name   string
		cfg    config.Config
		forget []string
	}{
		{"single hub", base, []string{"fleet-a", "old"}},
		{"cluster API discovery", withCAPI, nil},
		{"replicas", withCoord, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			only, forget := startScope(&tc.cfg, recorded)
			if !slices.Equal(only, []string{"c1", "c2"}) {
				t.Errorf("judged %v, want the config's clusters", only)
			}
			if !slices.Equal(forget, tc.forget) {
				t.Errorf("forgotten %v, want %v", forget, tc.forget)
			}
		})
	}
}

package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// TestCountsAreInflected: every count the TUI writes takes the noun's
// singular for one and its plural otherwise: header, status bar, feed,
// cluster and node views.
func TestCountsAreInflected(t *testing.T) {
	one := func() *hub.Snapshot {
		id := nid("solo:ns/web:deployment")
		nodes := []hub.NodeStatus{{ID: id, Application: "web", Kind: hub.KindDeployment, Status: hub.StatusInSync,
			LastChange: ago(time.Minute), Repairs: 1}}
		feed := []hub.FeedEntry{{At: ago(time.Minute), ID: id, Class: hub.DriftMissing, Action: "apply"}}
		return buildSnapshot("hub-1", []hub.ClusterStatus{{ClusterHealth: hub.ClusterHealth{Cluster: "solo", State: hub.ClusterSynced,
			Source: "config"}}}, nodes, feed, nil)
	}
	two := func() *hub.Snapshot {
		s := one()
		id := nid("solo:ns/db:deployment")
		nodes := append(s.Nodes, hub.NodeStatus{ID: id, Application: "db", Kind: hub.KindDeployment, Status: hub.StatusDrifted,
			LastChange: ago(time.Minute), Repairs: 2})
		feed := append(s.Feed, hub.FeedEntry{At: ago(2 * time.Minute), ID: id, Class: hub.DriftMissing, Action: "apply"})
		clusters := append(s.Clusters, hub.ClusterStatus{ClusterHealth: hub.ClusterHealth{Cluster: "zz", State: hub.ClusterUnreachable}})
		return buildSnapshot("hub-1", clusters, nodes, feed, nil)
	}
	tests := []struct {
		name string
		snap *hub.Snapshot
		id   string
		// want on the overview, the cluster view and the node view.
		overview, cluster, node []string
	}{
		{"one", one(), "solo:ns/web:deployment",
			[]string{"1 object in sync", "1/1 cluster up", "1 entry"}, []string{"1 object ·"}, []string{"1 repair"}},
		{"two", two(), "solo:ns/db:deployment",
			[]string{"2 objects · 1 drifted", "1/2 clusters up", "2 entries"}, []string{"2 objects ·"}, []string{"2 repairs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newFixtureModel(t, 160, 30, Options{})
			m.Update(snapshotMsg{snap: tt.snap})
			check := func(screen string, want []string) {
				t.Helper()
				out := m.View().Content
				for _, w := range want {
					if !strings.Contains(out, w) {
						t.Errorf("%s lacks %q:\n%s", screen, w, out)
					}
				}
				for _, bad := range []string{"1 objects", "1 entries", "1 repairs", "1/1 clusters"} {
					if strings.Contains(out, bad) {
						t.Errorf("%s says %q:\n%s", screen, bad, out)
					}
				}
			}
			check("overview", tt.overview)
			press(t, m, "enter")
			check("cluster view", tt.cluster)
			press(t, m, "esc")
			press(t, m, ":")
			typeText(t, m, "node "+tt.id)
			press(t, m, "enter")
			check("node view", tt.node)
		})
	}
}

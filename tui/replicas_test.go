package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/driftwatch/driftwatch/hub"
)

// TestGoldenReplicas shows the status bar of a merged view of three
// replicas, one of them down.
func TestGoldenReplicas(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		t.Run(fmt.Sprintf("overview_%dx%d", size[0], size[1]), func(t *testing.T) {
			m, _ := newFixtureModel(t, size[0], size[1], Options{})
			snap := fixture()
			snap.Replicas = []hub.ReplicaStatus{
				{ID: "hub-0", Self: true, Reachable: true, Clusters: []string{"prod-eu"}},
				{ID: "hub-1", Reachable: true, Clusters: []string{"prod-us"}},
				{ID: "hub-2", Err: "dial tcp 10.0.0.3:7070: connection refused", Clusters: []string{"staging"}},
			}
			m.Update(snapshotMsg{snap: snap})
			out := m.View().Content
			checkScreen(t, out, size[0], size[1])
			golden.RequireEqual(t, out)
		})
	}
}

// TestReplicasSummary checks the status bar's replica summary.
func TestReplicasSummary(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas []hub.ReplicaStatus
		want     string
	}{
		{"one process", nil, ""},
		{"one replica", []hub.ReplicaStatus{{ID: "a", Self: true, Reachable: true}}, "1 replica: a* up"},
		{"one down", []hub.ReplicaStatus{{ID: "a", Self: true, Reachable: true}, {ID: "b", Err: "refused"}}, "2 replicas: a* up, b down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newFixtureModel(t, 160, 48, Options{})
			snap := fixture()
			snap.Replicas = tc.replicas
			m.Update(snapshotMsg{snap: snap})
			if got := m.replicasSummary(); got != tc.want {
				t.Errorf("summary = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestFailingSources checks the status bar's note of the manifest sources
// that fail: their ids and the age of the oldest failure.
func TestFailingSources(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sources []hub.SourceStatus
		want    string
	}{
		{"none", nil, ""},
		{"one", []hub.SourceStatus{{ID: "web", Error: "x.yaml:5: no kind", Since: ago(5 * time.Minute)}},
			"source web failing 5m (last good kept)"},
		{"two", []hub.SourceStatus{{ID: "a", Since: ago(30 * time.Second)}, {ID: "b", Since: ago(2 * time.Hour)}},
			"sources a, b failing 2h (last good kept)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newFixtureModel(t, 200, 48, Options{})
			snap := fixture()
			snap.Sources = tc.sources
			m.Update(snapshotMsg{snap: snap})
			if got := m.failingSources(); got != tc.want {
				t.Errorf("note = %q, want %q", got, tc.want)
			}
			if tc.want != "" && !strings.Contains(m.View().Content, "! "+tc.want) {
				t.Errorf("status bar lacks %q", tc.want)
			}
		})
	}
}

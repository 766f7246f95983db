package tui

import (
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/hub"
)

// TestDetailShowsWhyStuck: a stuck node's diagnosis (its pods' words)
// shows under its status, one line per cause, wrapped to the screen and
// cleaned of escapes; a node without one has no such line.
func TestDetailShowsWhyStuck(t *testing.T) {
	for _, w := range []int{80, 160} {
		m, _ := newFixtureModel(t, w, 48, Options{})
		s := fixture()
		n := &s.Nodes[0]
		n.Status, n.Reason = hub.StatusStuck, `ProgressDeadlineExceeded: ReplicaSet "web-5d8f" has timed out progressing.`
		n.Diagnosis = []string{
			"pod web-5d8f-x2v: not scheduled: Unschedulable: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.\x1b[2J",
			"2 pods (web-5d8f-a, ...): container app ImagePullBackOff: Back-off pulling image \"registry.example/web:2\"",
		}
		showNode(t, m, s, n.ID)
		out := m.View().Content
		checkScreen(t, out, w, 48)
		flat := strings.Join(strings.Fields(out), " ")
		for _, want := range []string{"why pod web-5d8f-x2v: not scheduled: Unschedulable: 0/3 nodes are available",
			"2 pods (web-5d8f-a, ...): container app ImagePullBackOff"} {
			if !strings.Contains(flat, want) {
				t.Errorf("width %d: no %q in\n%s", w, want, out)
			}
		}
		if strings.Contains(out, "\x1b[2J") {
			t.Errorf("width %d: the cluster's escape reached the screen", w)
		}

		n.Status, n.Diagnosis = hub.StatusInSync, nil
		s.Seq++
		m.Update(snapshotMsg{snap: s})
		if out := m.View().Content; strings.Contains(out, "why ") || strings.Contains(out, "not scheduled") {
			t.Errorf("width %d: a node no longer stuck still says why:\n%s", w, out)
		}
	}
}

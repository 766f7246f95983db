package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/driftwatch/driftwatch/hub"
)

// TestUnauthorizedCluster: a cluster whose credentials are refused shows
// its state and error in the overview and the cluster view, in the colour
// of an unreachable one, its objects as unknown, and does not count as up.
func TestUnauthorizedCluster(t *testing.T) {
	const msg = `cluster "staging": unauthorized: the apiserver rejected the kubeconfig's credentials while trying to probe /readyz`
	snap := fixture()
	for i := range snap.Clusters {
		if c := &snap.Clusters[i]; c.Cluster == "staging" {
			c.State, c.LastError = hub.ClusterUnauthorized, msg
		}
	}
	for i := range snap.Nodes {
		if n := &snap.Nodes[i]; n.ID.Cluster == "staging" {
			n.Reason = "cluster unauthorized: " + msg
		}
	}
	m := New(newFakeSource(), Options{NoColor: true, Now: fixedClock})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	m.Update(snapshotMsg{snap: snap})

	overview := m.View().Content
	for _, want := range []string{"staging unauthorized", "└ unauthorized for 5m: " + msg, "2/3 clusters up"} {
		if !strings.Contains(overview, want) {
			t.Errorf("the overview does not show %q:\n%s", want, overview)
		}
	}
	press(t, m, "down", "down", "enter")
	view := m.View().Content
	for _, want := range []string{"staging unauthorized · config", "└ unauthorized for 5m: " + msg, "unknown"} {
		if !strings.Contains(view, want) {
			t.Errorf("the cluster view does not show %q:\n%s", want, view)
		}
	}

	st := newStyles(false)
	if got, want := st.health(hub.ClusterUnauthorized), st.health(hub.ClusterUnreachable); got != want || !got.on {
		t.Errorf("unauthorized is styled %+v, want the style of unreachable %+v", got, want)
	}
}

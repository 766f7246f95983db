package app

import (
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/teatest/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
	"github.com/driftwatch/driftwatch/tui"
)

// TestTUIAgainstRealHub drives the terminal UI over a real hub on a local
// control plane: drill into the cluster and back, filter, open a NodeID
// held by a paused cluster, press r, confirm, and see the repair appear.
func TestTUIAgainstRealHub(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	path := e2eConfig(t, set, "tui", "", "api", "worker")
	a := startApp(t, path, nil)
	a.waitSnap(t, 60*time.Second, "created", allInSync(3))
	a.hub.PauseCluster("c1", true)
	c := kubernetes.NewForConfigOrDie(set.Clusters[0].RESTConfig())
	if err := c.CoreV1().ConfigMaps("tui").Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	id := hub.NewNodeID("c1", "tui", "web", hub.KindConfigMap)
	a.waitSnap(t, 20*time.Second, "held by the pause", statusIs(id, hub.StatusPaused))

	m := tui.New(tui.HubSource(a.hub), tui.Options{NoColor: true})
	t.Cleanup(m.Close)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 30),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)))
	testwait.Screen(t, tm, "LIVE FEED", 20*time.Second)
	// Key presses are handled in order; the waits below are for what
	// arrives asynchronously (snapshots) or for whole new screens.
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter}) // into c1
	tm.Type("/configmap")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter}) // keep the filter
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter}) // open the node
	testwait.Screen(t, tm, "paused", 20*time.Second)
	tm.Type("r")
	testwait.Screen(t, tm, "[y/N]", 20*time.Second)
	tm.Type("y")
	a.waitSnap(t, 20*time.Second, "manual repair despite the pause", statusIs(id, hub.StatusRepaired))
	// The renderer redraws only what changed, so look for a whole new
	// line: the timeline's verification step.
	testwait.Screen(t, tm, "repair verified", 20*time.Second)
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEscape})
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEscape})
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEscape})
	testwait.Screen(t, tm, "LIVE FEED", 20*time.Second)
	tm.Type("q")
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	final, ok := tm.FinalModel(t).(*tui.Model)
	if !ok {
		t.Fatalf("final model is %T", tm.FinalModel(t))
	}
	if n, ok := final.Snapshot().Node(id); !ok || n.Status != hub.StatusRepaired {
		t.Fatalf("the UI's last snapshot shows %s as %v, want repaired", id, n.Status)
	}
	if _, err := c.CoreV1().ConfigMaps("tui").Get(t.Context(), "web", metav1.GetOptions{}); err != nil {
		t.Fatalf("configmap not repaired: %v", err)
	}
}

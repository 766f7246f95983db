package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/driftwatch/driftwatch/hub"
)

// contestedFixture is the fixture with one contested Deployment (an
// autoscaler fights the hub over spec.replicas) and one in sync with an
// ignored difference.
func contestedFixture() *hub.Snapshot {
	s := fixture()
	nodes := append([]hub.NodeStatus(nil), s.Nodes...)
	fight := nid("prod-eu:casehub/search:deployment")
	c := &hub.Contest{Manager: "fake-autoscaler", Fields: []string{"spec.replicas"}, Undone: 4, Since: ago(40 * time.Second),
		Backoff: 8 * time.Second, NextAttempt: fixedNow.Add(5 * time.Second)}
	nodes = append(nodes,
		hub.NodeStatus{ID: fight, Application: "search", Kind: hub.KindDeployment, Status: hub.StatusContested,
			Reason:    "contested with fake-autoscaler: 4 repairs undone; backoff 8s, next repair at " + c.NextAttempt.Format("15:04:05") + " (in 5s)",
			Contested: c, ReadyReplicas: 4, DesiredReplicas: 4, LastChange: ago(40 * time.Second), Repairs: 6,
			LastRepair: &hub.Repair{ID: fight, Action: "backoff",
				Drift:       hub.Drift{Class: hub.DriftModified, Fields: []hub.FieldDiff{{Path: "spec.replicas", Desired: "2", Actual: "4"}}},
				Attribution: &hub.Attribution{Manager: "fake-autoscaler", Operation: "Apply", At: ago(3 * time.Second), Fields: []string{"spec.replicas"}},
				ObservedAt:  ago(3 * time.Second), ClassifiedAt: ago(3 * time.Second)},
			// The last repair, then the autoscaler's five undos during the
			// backoff: one observed and classified pair, counted.
			Timeline: []hub.TimelineEntry{
				{At: ago(12 * time.Second), Step: hub.StepApplied, Detail: "apply"},
				{At: ago(12 * time.Second).Add(40 * time.Millisecond), Step: hub.StepVerified},
				{At: ago(4 * time.Second), Step: hub.StepObserved, Repeats: 4, Last: 4 * time.Second},
				{At: ago(4 * time.Second).Add(300 * time.Microsecond), Step: hub.StepClassified, Detail: "modified spec.replicas: 2 -> 4",
					Repeats: 4, Last: 4 * time.Second}}},
		hub.NodeStatus{ID: nid("prod-eu:casehub/web:deployment"), Application: "web", Kind: hub.KindDeployment, Status: hub.StatusInSync,
			ReadyReplicas: 5, DesiredReplicas: 5, LastChange: ago(time.Hour),
			Ignored: []hub.IgnoredField{{FieldDiff: hub.FieldDiff{Path: "spec.replicas", Desired: "2", Actual: "5"},
				Rule: "autoscaler", Manager: "fake-autoscaler"}}},
	)
	// The autoscaler undid the repairs five times in four seconds while
	// the hub backed off: one line in the feed.
	feed := append([]hub.FeedEntry{{At: ago(0), First: ago(4 * time.Second), Count: 5, ID: fight, Class: hub.DriftModified,
		Fields: []hub.FieldDiff{{Path: "spec.replicas", Desired: "2", Actual: "4"}}, Who: "fake-autoscaler", Action: "backoff",
		Latency: 800 * time.Microsecond}}, s.Feed...)
	return buildSnapshot(s.HubID, s.Clusters, nodes, feed, s.AppPolicies)
}

func TestGoldenContested(t *testing.T) {
	screens := []struct {
		name string
		keys []string
	}{
		{"overview", nil},
		{"detail_contested", []string{":", "node prod-eu:casehub/search:deployment", "enter"}},
		{"detail_ignored", []string{":", "node prod-eu:casehub/web:deployment", "enter"}},
		{"detail_propose", []string{":", "node prod-eu:casehub/search:deployment", "enter", "i"}},
	}
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		for _, s := range screens {
			t.Run(fmt.Sprintf("%s_%dx%d", s.name, size[0], size[1]), func(t *testing.T) {
				m, _ := newFixtureModel(t, size[0], size[1], Options{})
				m.Update(snapshotMsg{snap: contestedFixture()})
				for _, k := range s.keys {
					if len([]rune(k)) > 1 && k != "enter" {
						typeText(t, m, k)
						continue
					}
					press(t, m, k)
				}
				out := m.View().Content
				checkScreen(t, out, size[0], size[1])
				want := map[string]string{"overview": "×5", "detail_contested": "fake-autoscaler over spec.replicas", "detail_ignored": "ignored (rule autoscaler", "detail_propose": `managers: ["fake-autoscaler"]`}[s.name]
				if !strings.Contains(out, want) {
					t.Errorf("screen lacks %q:\n%s", want, out)
				}
				golden.RequireEqual(t, out)
			})
		}
	}
}

var _ tea.Msg = snapshotMsg{}

func TestProposeIgnoreRule(t *testing.T) {
	tests := []struct {
		name string
		n    hub.NodeStatus
		want string
	}{
		{name: "contested", n: hub.NodeStatus{Application: "search", Kind: hub.KindDeployment,
			Contested: &hub.Contest{Manager: "hpa", Fields: []string{"spec.replicas"}}},
			want: "ignore:\n  - name: \"hpa\"\n    managers: [\"hpa\"]\n    paths: [\"spec.replicas\"]\n    kinds: [Deployment]\n"},
		{name: "drift without attribution", n: hub.NodeStatus{Application: "web", Kind: hub.KindConfigMap,
			LastRepair: &hub.Repair{Drift: hub.Drift{Class: hub.DriftModified, Fields: []hub.FieldDiff{{Path: "data.k"}}}}},
			want: "ignore:\n  - name: \"fields of web\"\n    paths: [\"data.k\"]\n    kinds: [ConfigMap]\n"},
		{name: "nothing recorded", n: hub.NodeStatus{Application: "web"}},
	}
	for _, tt := range tests {
		if got := ProposeIgnoreRule(tt.n); got != tt.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
}

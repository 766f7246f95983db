package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// TestTimelineShowsRepeats: a timeline step the hub folded repeats into
// says how many times it happened and when last; on a narrow screen the
// detail gives way so that the count stays in sight, then the time of the
// last one goes. A step that happened once has no count.
func TestTimelineShowsRepeats(t *testing.T) {
	const long = "modified spec.replicas: 2 -> 4, spec.template.spec.containers[app].image: acme/app:1 -> acme/app:2"
	for _, tc := range []struct {
		name   string
		w      int
		detail string
		want   []string // in the classified step's line
		absent []string
	}{
		{"wide", 160, "modified spec.replicas: 2 -> 4", []string{"modified spec.replicas: 2 -> 4  ×5 (last 12:00:00.000)"}, nil},
		{"narrow", 80, "modified spec.replicas: 2 -> 4", []string{"modified spec.replicas: 2 -> 4  ×5"}, []string{"(last"}},
		{"narrow, a long detail", 80, long, []string{"modified spec.replicas", "…  ×5"}, []string{"(last"}},
		{"wide, a long detail", 160, long, []string{long + "  ×5"}, []string{"(last"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newFixtureModel(t, tc.w, 48, Options{})
			s := fixture()
			n := &s.Nodes[0]
			n.Timeline = []hub.TimelineEntry{
				{At: ago(10 * time.Second), Step: hub.StepApplied, Detail: "apply"},
				{At: ago(4 * time.Second), Step: hub.StepObserved, Repeats: 4, Last: 4 * time.Second},
				{At: ago(4 * time.Second), Step: hub.StepClassified, Detail: tc.detail, Repeats: 4, Last: 4 * time.Second},
			}
			showNode(t, m, s, n.ID)
			out := m.View().Content
			checkScreen(t, out, tc.w, 48)
			var applied, observed, classified string
			for _, l := range strings.Split(out, "\n") {
				switch {
				case strings.Contains(l, string(hub.StepApplied)):
					applied = l
				case strings.Contains(l, string(hub.StepObserved)):
					observed = l
				case strings.Contains(l, string(hub.StepClassified)):
					classified = l
				}
			}
			if strings.Contains(applied, "×") {
				t.Errorf("a step that happened once has a count: %q", applied)
			}
			if !strings.Contains(observed, "×5") {
				t.Errorf("the observed step lacks its count: %q", observed)
			}
			for _, w := range tc.want {
				if !strings.Contains(classified, w) {
					t.Errorf("the classified step %q lacks %q", classified, w)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(classified, a) {
					t.Errorf("the classified step %q has %q", classified, a)
				}
			}
		})
	}
}

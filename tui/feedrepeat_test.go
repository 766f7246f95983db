package tui

import (
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/hub"
)

// TestFeedCursorFollowsAFoldedEntry: the feed entry under the cursor stays
// under it when a repeat folds into it and moves it to the top.
func TestFeedCursorFollowsAFoldedEntry(t *testing.T) {
	m, _ := newFixtureModel(t, 160, 48, Options{})
	press(t, m, "tab", "down", "down")
	sel, ok := m.overview.SelectedFeed()
	if !ok {
		t.Fatal("no feed entry selected")
	}
	s := fixture()
	again := sel
	again.At, again.First, again.Count = fixedNow, sel.At, 2
	feed := []hub.FeedEntry{again}
	for _, e := range s.Feed {
		if e.ID != sel.ID || !e.At.Equal(sel.At) {
			feed = append(feed, e)
		}
	}
	s.Feed = feed
	s.Seq++
	m.Update(snapshotMsg{snap: s})
	got, ok := m.overview.SelectedFeed()
	if !ok || got.ID != sel.ID || got.Count != 2 || !got.At.Equal(fixedNow) {
		t.Fatalf("selected %+v after the fold, want %s ×2", got, sel.ID)
	}
	if m.overview.feedCur != 0 {
		t.Errorf("cursor at %d, want 0 (the folded entry's new place)", m.overview.feedCur)
	}
}

// TestFeedShowsADesiredChangeFromOldToNew: a feed entry that applies a
// change of the desired state (a new commit or chart version) reads from
// the value the object held to the new one; a repair of drift reads from
// what it should hold to what someone made of it.
func TestFeedShowsADesiredChangeFromOldToNew(t *testing.T) {
	m, _ := newFixtureModel(t, 200, 48, Options{})
	s := fixture()
	id := s.Feed[0].ID
	s.Feed = append([]hub.FeedEntry{
		{At: fixedNow, ID: id, Class: hub.DriftModified, Who: "desired changed (web@1.2.0)", Action: "apply",
			Fields: []hub.FieldDiff{{Path: "metadata.labels.chart", Desired: "web-1.2.0", Actual: "web-1.1.0"}}},
		{At: fixedNow, ID: id, Class: hub.DriftModified, Who: "kubectl-edit (Update) at 12:00:01", Action: "apply",
			Fields: []hub.FieldDiff{{Path: "spec.replicas", Desired: "3", Actual: "9"}}},
	}, s.Feed...)
	s.Seq++
	m.Update(snapshotMsg{snap: s})
	out := m.View().Content
	for _, want := range []string{"metadata.labels.chart: web-1.1.0 -> web-1.2.0", "spec.replicas: 3 -> 9"} {
		if !strings.Contains(out, want) {
			t.Errorf("the feed lacks %q:\n%s", want, out)
		}
	}
}

// TestDetailShowsADesiredChange: a node whose last write applied a change
// of the desired state shows it as such (from the old value to the new,
// and its cause), not as drift blamed on somebody.
func TestDetailShowsADesiredChange(t *testing.T) {
	m, _ := newFixtureModel(t, 160, 48, Options{})
	s := fixture()
	n := &s.Nodes[0]
	n.LastRepair = &hub.Repair{ID: n.ID, Drift: hub.Drift{Class: hub.DriftModified,
		Fields: []hub.FieldDiff{{Path: "spec.replicas", Desired: "3", Actual: "2"}}},
		Action: "apply", DesiredChange: "desired changed (web@1.2.0)", ObservedAt: fixedNow, AppliedAt: fixedNow}
	showNode(t, m, s, n.ID)
	out := m.View().Content
	for _, want := range []string{"CHANGE APPLIED", "- spec.replicas: 2", "+ spec.replicas: 3", "desired changed (web@1.2.0)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the node view lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "changed by") {
		t.Errorf("the node view blames somebody for a change of the desired state:\n%s", out)
	}
}

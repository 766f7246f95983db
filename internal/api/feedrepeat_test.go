package api

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// TestWatchFoldedFeedEntry: a repeat the hub folds into an older feed
// entry reaches a watch stream as one new entry with its count and the
// time of the first, and the position of the entry it replaces; applied
// to the snapshot, it leaves one line.
func TestWatchFoldedFeedEntry(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s1 := testSnapshot(3)
	backoff := hub.FeedEntry{At: t0, ID: s1.Nodes[0].ID, Class: hub.DriftModified,
		Fields: []hub.FieldDiff{{Path: "spec.replicas", Desired: "2", Actual: "4"}}, Who: "hpa", Action: "backoff", Count: 1}
	other := hub.FeedEntry{At: t0.Add(time.Second), ID: s1.Nodes[1].ID, Class: hub.DriftMissing, Action: "apply", Count: 1}
	oldest := hub.FeedEntry{At: t0.Add(-time.Minute), ID: s1.Nodes[2].ID, Class: hub.DriftMissing, Action: "apply", Count: 1}
	s1.Feed = []hub.FeedEntry{other, backoff, oldest}
	src := newFakeSource(s1)
	_, srv := startStreamer(t, src, streamConfig{}, RoleViewer)
	w := openWatch(t, srv.URL, "")
	if got := snapshotEvent(t, w.next()); len(got.Feed) != 3 || got.Feed[1].Count != 1 {
		t.Fatalf("snapshot feed %+v, want three entries counted once", got.Feed)
	}

	s2 := *s1
	s2.Seq++
	again := backoff
	again.At, again.First, again.Count = t0.Add(2*time.Second), t0, 2
	s2.Feed = []hub.FeedEntry{again, other, oldest}
	src.publish(&s2)
	ev := w.next()
	d := deltaEvent(t, ev)
	if len(d.Feed) != 1 || d.Feed[0].Count != 2 || !d.Feed[0].First.Equal(t0) || !d.Feed[0].At.Equal(again.At) ||
		!slices.Equal(d.FeedDropped, []int{1}) || d.FeedLength != 3 {
		t.Fatalf("delta feed %+v dropping %v (length %d), want the entry ×2 dropping [1]", d.Feed, d.FeedDropped, d.FeedLength)
	}
	if !strings.Contains(string(ev.data), `"count":2`) {
		t.Errorf("the delta's JSON lacks the count: %s", ev.data)
	}
	got, err := d.Apply(s1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Feed) != 3 || got.Feed[0].Count != 2 || got.Feed[1].ID != other.ID || got.Feed[2].ID != oldest.ID {
		t.Fatalf("feed after the delta %+v, want the entry ×2 and the two others", got.Feed)
	}
}

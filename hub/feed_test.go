package hub

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestFeedFoldsRepeats: a feed entry that repeats the NodeID's latest one
// (same class, fields, who, action and error, at most feedRepeatWindow
// after it) is folded into it: one line with a count, the time and latency
// of the last one and the time of the first, moved to the top. Anything
// else keeps a line of its own.
func TestFeedFoldsRepeats(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	a := NewNodeID("c1", "ns", "web", KindDeployment)
	b := NewNodeID("c1", "ns", "db", KindDeployment)
	fields := []FieldDiff{{Path: "spec.replicas", Desired: "2", Actual: "4"}}
	backoff := func(id NodeID, after time.Duration) FeedEntry {
		return FeedEntry{At: t0.Add(after), ID: id, Class: DriftModified, Fields: fields, Who: "hpa", Action: "backoff",
			Latency: after / 100}
	}
	with := func(e FeedEntry, f func(e *FeedEntry)) FeedEntry { f(&e); return e }
	// line is what a test expects of one line of the feed, newest first.
	type line struct {
		id     NodeID
		action string
		count  int
		at     time.Duration // after t0
		first  time.Duration // after t0; -1: none
	}
	tests := []struct {
		name    string
		entries []FeedEntry
		want    []line
	}{
		{"five in a second", []FeedEntry{backoff(a, 0), backoff(a, 200*time.Millisecond), backoff(a, 400*time.Millisecond),
			backoff(a, 600*time.Millisecond), backoff(a, time.Second)},
			[]line{{a, "backoff", 5, time.Second, 0}}},
		{"another NodeID between: folded, moved to the top", []FeedEntry{backoff(a, 0), backoff(b, time.Second), backoff(a, 2*time.Second)},
			[]line{{a, "backoff", 2, 2 * time.Second, 0}, {b, "backoff", 1, time.Second, -1}}},
		{"another line of the NodeID between", []FeedEntry{backoff(a, 0),
			with(backoff(a, time.Second), func(e *FeedEntry) { e.Action = "apply" }), backoff(a, 2*time.Second)},
			[]line{{a, "backoff", 1, 2 * time.Second, -1}, {a, "apply", 1, time.Second, -1}, {a, "backoff", 1, 0, -1}}},
		{"more than the window apart", []FeedEntry{backoff(a, 0), backoff(a, 11*time.Second)},
			[]line{{a, "backoff", 1, 11 * time.Second, -1}, {a, "backoff", 1, 0, -1}}},
		{"the window runs from the last repeat", []FeedEntry{backoff(a, 0), backoff(a, 9*time.Second), backoff(a, 18*time.Second), backoff(a, 27*time.Second)},
			[]line{{a, "backoff", 4, 27 * time.Second, 0}}},
		{"other fields while held back: folded", []FeedEntry{backoff(a, 0), with(backoff(a, time.Second), func(e *FeedEntry) {
			e.Fields = []FieldDiff{{Path: "spec.replicas", Desired: "2", Actual: "5"}}
		})}, []line{{a, "backoff", 2, time.Second, 0}}},
		{"the same writer's next write while held back: folded", []FeedEntry{
			with(backoff(a, 0), func(e *FeedEntry) { e.Who = "hpa (Update) at 12:00:00" }),
			with(backoff(a, time.Second), func(e *FeedEntry) {
				e.Who, e.Fields = "hpa (Update) at 12:00:01", []FieldDiff{{Path: "spec.replicas", Desired: "2", Actual: "5"}}
			})}, []line{{a, "backoff", 2, time.Second, 0}}},
		{"another writer while held back", []FeedEntry{
			with(backoff(a, 0), func(e *FeedEntry) { e.Who = "hpa (Update) at 12:00:00" }),
			with(backoff(a, time.Second), func(e *FeedEntry) { e.Who = "kubectl-scale (Update) at 12:00:01" })},
			[]line{{a, "backoff", 1, time.Second, -1}, {a, "backoff", 1, 0, -1}}},
		{"other fields repaired: a line each", []FeedEntry{with(backoff(a, 0), func(e *FeedEntry) { e.Action = "apply" }),
			with(backoff(a, time.Second), func(e *FeedEntry) {
				e.Action, e.Fields = "apply", []FieldDiff{{Path: "spec.replicas", Desired: "2", Actual: "5"}}
			})}, []line{{a, "apply", 1, time.Second, -1}, {a, "apply", 1, 0, -1}}},
		{"another writer", []FeedEntry{backoff(a, 0), with(backoff(a, time.Second), func(e *FeedEntry) { e.Who = "kubectl-scale" })},
			[]line{{a, "backoff", 1, time.Second, -1}, {a, "backoff", 1, 0, -1}}},
		{"another error", []FeedEntry{with(backoff(a, 0), func(e *FeedEntry) { e.Action, e.Err = "failed", "timeout" }),
			with(backoff(a, time.Second), func(e *FeedEntry) { e.Action, e.Err = "failed", "denied" }),
			with(backoff(a, 2*time.Second), func(e *FeedEntry) { e.Action, e.Err = "failed", "denied" })},
			[]line{{a, "failed", 2, 2 * time.Second, time.Second}, {a, "failed", 1, 0, -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(Options{FeedLength: 10}, newMetrics(), func() int { return 0 })
			for _, e := range tt.entries {
				s.feed(e)
			}
			feed := s.snapshot(t0).Feed
			if len(feed) != len(tt.want) {
				t.Fatalf("feed has %d lines, want %d: %+v", len(feed), len(tt.want), feed)
			}
			for i, w := range tt.want {
				e := feed[i]
				first := time.Time{}
				if w.first >= 0 {
					first = t0.Add(w.first)
				}
				if e.ID != w.id || e.Action != w.action || e.Count != w.count || !e.At.Equal(t0.Add(w.at)) || !e.First.Equal(first) {
					t.Errorf("line %d: %s %s ×%d at %s first %s, want %s %s ×%d at %s first %s", i, e.ID, e.Action, e.Count, e.At, e.First,
						w.id, w.action, w.count, t0.Add(w.at), first)
				}
				if e.Latency != w.at/100 {
					t.Errorf("line %d: latency %v, want the last one's, %v", i, e.Latency, w.at/100)
				}
			}
		})
	}
}

// TestFeedFoldKeepsTheBound: folding a repeat frees its old line, so a
// full feed loses no older line to it.
func TestFeedFoldKeepsTheBound(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := newStore(Options{FeedLength: 3}, newMetrics(), func() int { return 0 })
	for i, name := range []string{"a", "b", "c"} {
		s.feed(FeedEntry{At: t0.Add(time.Duration(i) * time.Second), ID: NewNodeID("c1", "ns", name, KindConfigMap), Class: DriftMissing, Action: "apply"})
	}
	s.feed(FeedEntry{At: t0.Add(3 * time.Second), ID: NewNodeID("c1", "ns", "a", KindConfigMap), Class: DriftMissing, Action: "apply"})
	feed := s.snapshot(t0).Feed
	if len(feed) != 3 || feed[0].ID.Resource != "ns/a" || feed[0].Count != 2 || feed[1].ID.Resource != "ns/c" || feed[2].ID.Resource != "ns/b" {
		t.Fatalf("feed %+v, want a ×2, c, b", feed)
	}
}

// TestContestedFeedIsOneLine: another writer undoing the object again and
// again while the hub backs off gives one "backoff" line in the feed, with
// the count of the times, not a line per time.
func TestContestedFeedIsOneLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		s := spec("c1", "a", "v1")
		f := start(t, b, contestOpts)
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		for range 4 {
			f.undo(s, "hpa") // three repairs, then a fight: backoff
		}
		for range 4 {
			time.Sleep(100 * time.Millisecond)
			f.undo(s, "hpa") // undone again during the backoff
		}
		var backoff []FeedEntry
		for _, e := range f.h.Snapshot().Feed {
			if e.ID == s.ID && e.Action == "backoff" {
				backoff = append(backoff, e)
			}
		}
		if len(backoff) != 1 || backoff[0].Count != 5 || backoff[0].Who != "hpa" {
			t.Fatalf("backoff lines %+v, want one with count 5", backoff)
		}
		if got := backoff[0].At.Sub(backoff[0].First); got != 400*time.Millisecond {
			t.Errorf("first to last %v, want 400ms", got)
		}
	})
}

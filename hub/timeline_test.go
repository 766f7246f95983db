package hub

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestTimelineFoldsRepeats: a pass's observed and classified steps that
// repeat the timeline's last two entries (same steps, same detail) are
// counted on them, with the time of the latest repeat, instead of taking
// two more entries; so is a lone step the hub only observed that repeats
// the last entry. Another detail, another step in between, or a write, its
// check or failure, a prune or a request, each keep an entry of its own.
func TestTimelineFoldsRepeats(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	id := NewNodeID("c1", "ns", "web", KindDeployment)
	const scaled, rescaled = "modified spec.replicas: 2 -> 4", "modified spec.replicas: 2 -> 5"
	// op is one write to the store: a pass's pair (pair true) or one step,
	// after ms milliseconds.
	type op struct {
		pair   bool
		step   Step
		detail string
		ms     int
	}
	pair := func(step Step, detail string, ms int) op { return op{true, step, detail, ms} }
	one := func(step Step, detail string, ms int) op { return op{false, step, detail, ms} }
	// entry is what a test expects of one timeline entry, oldest first.
	type entry struct {
		step    Step
		detail  string
		at      int // ms after t0
		repeats int
		lastAt  int // ms after t0; -1: none
	}
	tests := []struct {
		name   string
		length int // Options.TimelineLength; 0: the default
		ops    []op
		want   []entry
	}{
		{"identical pairs fold", 0,
			[]op{pair(StepClassified, scaled, 0), pair(StepClassified, scaled, 25), pair(StepClassified, scaled, 45)},
			[]entry{{StepObserved, "", 0, 2, 45}, {StepClassified, scaled, 0, 2, 45}}},
		{"a pair held back folds", 0,
			[]op{one(StepCreated, "first apply", 0), pair(StepHeld, scaled, 10), pair(StepHeld, scaled, 20)},
			[]entry{{StepCreated, "first apply", 0, 0, -1}, {StepObserved, "", 10, 1, 20}, {StepHeld, scaled, 10, 1, 20}}},
		{"another detail", 0,
			[]op{pair(StepClassified, scaled, 0), pair(StepClassified, rescaled, 25), pair(StepClassified, scaled, 45)},
			[]entry{{StepObserved, "", 0, 0, -1}, {StepClassified, scaled, 0, 0, -1}, {StepObserved, "", 25, 0, -1},
				{StepClassified, rescaled, 25, 0, -1}, {StepObserved, "", 45, 0, -1}, {StepClassified, scaled, 45, 0, -1}}},
		{"another classification", 0,
			[]op{pair(StepClassified, scaled, 0), pair(StepPaused, scaled, 25)},
			[]entry{{StepObserved, "", 0, 0, -1}, {StepClassified, scaled, 0, 0, -1}, {StepObserved, "", 25, 0, -1},
				{StepPaused, scaled, 25, 0, -1}}},
		{"a repair between", 0,
			[]op{pair(StepClassified, scaled, 0), one(StepApplied, "apply", 1), one(StepVerified, "", 2), pair(StepClassified, scaled, 25),
				pair(StepClassified, scaled, 30)},
			[]entry{{StepObserved, "", 0, 0, -1}, {StepClassified, scaled, 0, 0, -1}, {StepApplied, "apply", 1, 0, -1},
				{StepVerified, "", 2, 0, -1}, {StepObserved, "", 25, 1, 30}, {StepClassified, scaled, 25, 1, 30}}},
		{"a lone step between", 0,
			[]op{pair(StepWarned, scaled, 0), one(StepReleased, "", 10), pair(StepWarned, scaled, 20)},
			[]entry{{StepObserved, "", 0, 0, -1}, {StepWarned, scaled, 0, 0, -1}, {StepReleased, "", 10, 0, -1},
				{StepObserved, "", 20, 0, -1}, {StepWarned, scaled, 20, 0, -1}}},
		{"writes, checks, failures, prunes and requests never fold", 0,
			[]op{one(StepCreated, "first apply", 0), one(StepCreated, "first apply", 1), one(StepApplied, "apply", 2), one(StepApplied, "apply", 3),
				one(StepChangeApplied, "apply", 4), one(StepChangeApplied, "apply", 5), one(StepVerified, "", 6), one(StepVerified, "", 7),
				one(StepFailed, "denied", 8), one(StepFailed, "denied", 9), one(StepPruned, "delete requested", 10),
				one(StepPruned, "delete requested", 11), one(StepManual, "", 12), one(StepManual, "", 13)},
			[]entry{{StepCreated, "first apply", 0, 0, -1}, {StepCreated, "first apply", 1, 0, -1}, {StepApplied, "apply", 2, 0, -1},
				{StepApplied, "apply", 3, 0, -1}, {StepChangeApplied, "apply", 4, 0, -1}, {StepChangeApplied, "apply", 5, 0, -1},
				{StepVerified, "", 6, 0, -1}, {StepVerified, "", 7, 0, -1}, {StepFailed, "denied", 8, 0, -1}, {StepFailed, "denied", 9, 0, -1},
				{StepPruned, "delete requested", 10, 0, -1}, {StepPruned, "delete requested", 11, 0, -1}, {StepManual, "", 12, 0, -1},
				{StepManual, "", 13, 0, -1}}},
		{"a lone repeated observation folds", 0,
			[]op{one(StepStuck, "deadline exceeded", 0), one(StepStuck, "deadline exceeded", 10), one(StepStuck, "other", 20)},
			[]entry{{StepStuck, "deadline exceeded", 0, 1, 10}, {StepStuck, "other", 20, 0, -1}}},
		{"a fold keeps the older entries", 3,
			[]op{one(StepCreated, "first apply", 0), pair(StepClassified, scaled, 10), pair(StepClassified, scaled, 20),
				pair(StepClassified, scaled, 30)},
			[]entry{{StepCreated, "first apply", 0, 0, -1}, {StepObserved, "", 10, 2, 30}, {StepClassified, scaled, 10, 2, 30}}},
		{"a pair past the bound", 1,
			[]op{one(StepCreated, "first apply", 0), pair(StepClassified, scaled, 10)},
			[]entry{{StepClassified, scaled, 10, 0, -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(Options{TimelineLength: tt.length}.withDefaults(), newMetrics(), func() int { return 0 })
			s.track(&NodeSpec{ID: id, Kind: KindDeployment}, false, t0)
			for _, o := range tt.ops {
				at := t0.Add(time.Duration(o.ms) * time.Millisecond)
				if o.pair {
					s.observed(id, o.step, o.detail, at, at)
				} else {
					s.step(id, o.step, o.detail, at)
				}
			}
			n, _ := s.snapshot(t0).Node(id)
			if len(n.Timeline) != len(tt.want) {
				t.Fatalf("timeline has %d entries, want %d: %+v", len(n.Timeline), len(tt.want), n.Timeline)
			}
			for i, w := range tt.want {
				e := n.Timeline[i]
				lastAt := time.Time{}
				if w.lastAt >= 0 {
					lastAt = t0.Add(time.Duration(w.lastAt) * time.Millisecond)
				}
				if e.Step != w.step || e.Detail != w.detail || !e.At.Equal(t0.Add(time.Duration(w.at)*time.Millisecond)) ||
					int(e.Repeats) != w.repeats || !e.LastAt().Equal(lastAt) {
					t.Errorf("entry %d: %+v, want %s %q at +%dms, %d repeats, last at %s", i, e, w.step, w.detail, w.at, w.repeats, lastAt)
				}
			}
		})
	}
}

// TestTimelineFoldLeavesSnapshotsAlone: a fold copies the timeline, so a
// snapshot taken before it keeps the count it had, and readers of a
// published snapshot never race a fold (go test -race).
func TestTimelineFoldLeavesSnapshotsAlone(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	id := NewNodeID("c1", "ns", "web", KindDeployment)
	s := newStore(Options{}.withDefaults(), newMetrics(), func() int { return 0 })
	s.track(&NodeSpec{ID: id, Kind: KindDeployment}, false, t0)
	const detail = "modified spec.replicas: 2 -> 4"
	s.observed(id, StepClassified, detail, t0, t0)
	before, _ := s.snapshot(t0).Node(id)

	var wg sync.WaitGroup
	wg.Go(func() {
		for range 1000 {
			for _, e := range before.Timeline {
				if e.Repeats != 0 || !e.LastAt().IsZero() {
					t.Errorf("a published snapshot's entry changed: %+v", e)
					return
				}
			}
		}
	})
	for i := range 100 {
		at := t0.Add(time.Duration(i+1) * time.Millisecond)
		s.observed(id, StepClassified, detail, at, at)
	}
	wg.Wait()

	after, _ := s.snapshot(t0).Node(id)
	if len(after.Timeline) != 2 || after.Timeline[1].Repeats != 100 || !after.Timeline[1].LastAt().Equal(t0.Add(100*time.Millisecond)) {
		t.Fatalf("after the folds: %+v, want the pair with 100 repeats", after.Timeline)
	}
	if len(before.Timeline) != 2 || before.Timeline[0].Repeats != 0 || before.Timeline[1].Repeats != 0 {
		t.Fatalf("the snapshot before the folds: %+v, want the pair once", before.Timeline)
	}
	if &before.Timeline[0] == &after.Timeline[0] {
		t.Error("a fold kept the published timeline's array: stream deltas tell a changed timeline by its array")
	}
}

// TestHeldBackTimelineFolds: while the hub holds back a repair (warn-only,
// a fight it backs off from), every watch event of the drifted object
// makes a pass that observes and classifies the same drift again: the
// timeline shows the pair once with the count, and keeps the history
// before it (the repairs) within its bound. A different drift starts a
// new pair.
func TestHeldBackTimelineFolds(t *testing.T) {
	t.Run("warn-only", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := newFake(true)
			s := spec("c1", "a", "v1")
			s.Policy = PolicyWarn
			f := start(t, b, Options{Workers: 1})
			f.h.SetDesired([]NodeSpec{s})
			f.ready("c1", 1, 1)
			synctest.Wait()
			first := time.Now()
			for range 5 {
				f.undo(s, "hpa")
				synctest.Wait()
				time.Sleep(20 * time.Millisecond)
			}
			tl := f.node(s.ID).Timeline
			if len(tl) != 3 || tl[0].Step != StepCreated || tl[1].Step != StepObserved || tl[2].Step != StepWarned {
				t.Fatalf("timeline %+v, want created, then the observed and warned pair once", tl)
			}
			for _, e := range tl[1:] {
				if e.Repeats != 4 || !e.At.Equal(first) || e.LastAt().Sub(e.At) != 80*time.Millisecond {
					t.Errorf("%+v: want 4 repeats from the first pass to the last, 80ms later", e)
				}
			}
			f.b.put(s.ID, func(o *fakeObject) { o.content = "other-value" })
			synctest.Wait()
			tl = f.node(s.ID).Timeline
			if len(tl) != 5 || tl[3].Step != StepObserved || tl[4].Step != StepWarned || tl[4].Detail == tl[2].Detail ||
				tl[3].Repeats != 0 || tl[4].Repeats != 0 {
				t.Fatalf("timeline %+v, want a new pair for another drift", tl)
			}
		})
	})
	t.Run("contested", func(t *testing.T) {
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
			if n := f.steps(s.ID, StepApplied); n != 3 {
				t.Errorf("%d repairs applied in the timeline, want 3", n)
			}
			if n := f.steps(s.ID, StepVerified); n != 3 {
				t.Errorf("%d repairs verified in the timeline, want 3", n)
			}
			tl := f.node(s.ID).Timeline
			last := tl[len(tl)-2:]
			if last[0].Step != StepObserved || last[1].Step != StepClassified {
				t.Fatalf("timeline ends with %+v, want the pair of the backoff", last)
			}
			for _, e := range last {
				if e.Repeats != 4 || e.LastAt().Sub(e.At) != 400*time.Millisecond {
					t.Errorf("%+v: want 4 repeats over 400ms", e)
				}
			}
			if n := f.steps(s.ID, StepClassified); n != 4 {
				t.Errorf("%d classifications in the timeline, want 4 (three repaired, one held back)", n)
			}
		})
	})
}

package hub

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// undo makes another writer (manager, "" for a delete) undo the object's
// current state and waits until the hub has dealt with it.
func (f *fixture) undo(s NodeSpec, manager string) {
	f.b.mu.Lock()
	if manager == "" {
		f.b.attrib = nil
	} else {
		f.b.attrib = &Attribution{Manager: manager}
	}
	f.b.mu.Unlock()
	if manager == "" {
		f.b.remove(s.ID)
	} else {
		f.b.put(s.ID, func(o *fakeObject) { o.content = manager + "-value" })
	}
	synctest.Wait()
}

// contestOpts are the fight settings of these tests: 3 undone repairs in a
// minute make a fight.
var contestOpts = Options{Workers: 1, FightThreshold: 3, FightWindow: time.Minute}

// The same manager undoing repair after repair makes the NodeID contested
// (with the manager, the backoff and the next attempt); the backoff's end
// lets one repair through, and once that repair has held for the fight
// window the contest is over.
func TestContestedLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		s := spec("c1", "a", "v1")
		f := start(t, b, contestOpts)
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		for i := 1; i <= 3; i++ {
			f.undo(s, "hpa")
			if got := b.repairCount(s.ID); got != 1+i {
				t.Fatalf("after undo %d: %d repairs, want %d (the first three repairs are immediate)", i, got, 1+i)
			}
			if n := f.node(s.ID); n.Status == StatusContested || n.Contested != nil {
				t.Fatalf("after undo %d: contested too early: %s %+v", i, n.Status, n.Contested)
			}
		}
		start := time.Now()
		f.undo(s, "hpa")
		if got := b.repairCount(s.ID); got != 4 {
			t.Fatalf("the fourth undo was repaired at once (%d repairs), want a backoff", got)
		}
		n := f.node(s.ID)
		c := n.Contested
		if n.Status != StatusContested || c == nil {
			t.Fatalf("status %s %+v, want contested", n.Status, c)
		}
		if c.Manager != "hpa" || c.Undone != 3 || c.Backoff != 2*time.Second || !c.NextAttempt.Equal(start.Add(2*time.Second)) {
			t.Errorf("contest %+v, want hpa, 3 undone, backoff 2s, next attempt at %s", c, start.Add(2*time.Second))
		}
		if !strings.Contains(n.Reason, "contested with hpa") || !strings.Contains(n.Reason, "backoff 2s") {
			t.Errorf("reason %q", n.Reason)
		}
		if got := contestedCount(f.h, "c1"); got != 1 {
			t.Errorf("contested objects metric for c1 = %v, want 1", got)
		}

		// The backoff ends: one repair goes through, and the hub watches
		// whether it holds.
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := b.repairCount(s.ID); got != 5 {
			t.Fatalf("after the backoff: %d repairs, want 5", got)
		}
		n = f.node(s.ID)
		if n.Status != StatusContested || n.Contested == nil || !n.Contested.NextAttempt.IsZero() || n.Contested.ClearsAt.IsZero() {
			t.Fatalf("after the repair: %s %+v, want contested, watching until ClearsAt", n.Status, n.Contested)
		}

		// The other writer stopped: after the window the contest is over.
		time.Sleep(time.Minute - time.Second)
		synctest.Wait()
		if n := f.node(s.ID); n.Status != StatusContested {
			t.Fatalf("before the window ended: %s, want still contested", n.Status)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		n = f.node(s.ID)
		if n.Status == StatusContested || n.Contested != nil {
			t.Fatalf("a repair that held for the window: still %s %+v", n.Status, n.Contested)
		}
		if got := contestedCount(f.h, "c1"); got != 0 {
			t.Errorf("contested objects metric for c1 = %v, want 0", got)
		}

		// A fight that resumes later starts from scratch: immediate repairs.
		f.undo(s, "hpa")
		if got := b.repairCount(s.ID); got != 6 {
			t.Errorf("undo after the contest ended: %d repairs, want 6 (immediate)", got)
		}
	})
}

// Repairs undone by different managers are not a fight: every one is
// repaired at once and nothing is contested.
func TestContestNeedsTheSameManager(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		s := spec("c1", "a", "v1")
		f := start(t, b, contestOpts)
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		managers := []string{"hpa", "kubectl-edit", "hpa", "kubectl-edit", "hpa", "kubectl-edit", "hpa"}
		for i, m := range managers {
			f.undo(s, m)
			if got := b.repairCount(s.ID); got != 2+i {
				t.Fatalf("undo %d by %s: %d repairs, want %d", i+1, m, got, 2+i)
			}
			if n := f.node(s.ID); n.Status == StatusContested {
				t.Fatalf("undo %d by %s: contested %+v", i+1, m, n.Contested)
			}
		}
		// Then the same one three times more: now it is a fight.
		f.undo(s, "hpa")
		f.undo(s, "hpa")
		f.undo(s, "hpa")
		if n := f.node(s.ID); n.Status != StatusContested || n.Contested.Manager != "hpa" {
			t.Fatalf("three undos by hpa in a row: %s %+v, want contested with hpa", n.Status, n.Contested)
		}
	})
}

// Deletes have no field manager: repeated deletes still make a contest
// (the hub says why repairs slowed), with the manager unknown.
func TestContestedByDeletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		s := spec("c1", "a", "v1")
		f := start(t, b, contestOpts)
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		for range 4 {
			f.undo(s, "")
		}
		n := f.node(s.ID)
		if n.Status != StatusContested || n.Contested == nil || n.Contested.Manager != "" {
			t.Fatalf("status %s %+v, want contested by an unknown writer", n.Status, n.Contested)
		}
		if !strings.Contains(n.Reason, "unknown field manager") {
			t.Errorf("reason %q does not say the manager is unknown", n.Reason)
		}
	})
}

// An ignore rule that covers the fought-over fields ends the contest at
// once: the differences show as ignored and the NodeID is in sync.
func TestContestClearedByIgnoreRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		s := spec("c1", "a", "v1")
		f := start(t, b, contestOpts)
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		for range 4 {
			f.undo(s, "hpa")
		}
		if n := f.node(s.ID); n.Status != StatusContested {
			t.Fatalf("status %s, want contested", n.Status)
		}
		ruled := s
		ruled.Ignore = &IgnoreSet{Rules: []IgnoreRule{{Name: "autoscaler", Managers: []string{"hpa"}}}, Key: "k1"}
		changed, _ := f.h.SetDesired([]NodeSpec{ruled})
		if len(changed) != 1 {
			t.Fatalf("a new ignore rule did not change the spec: %v", changed)
		}
		synctest.Wait()
		n := f.node(s.ID)
		if n.Status == StatusContested || n.Contested != nil {
			t.Fatalf("status %s %+v, want the contest cleared by the rule", n.Status, n.Contested)
		}
		if len(n.Ignored) != 1 || n.Ignored[0].Rule != "autoscaler" || n.Ignored[0].Manager != "hpa" {
			t.Errorf("ignored = %+v, want the content field under rule autoscaler, owned by hpa", n.Ignored)
		}
		if got := b.repairCount(s.ID); got != 4 {
			t.Errorf("%d repairs, want 4 (the ignored difference is not repaired)", got)
		}
		// Further changes by hpa are ignored too: no repair, no contest.
		f.undo(s, "hpa")
		if got := b.repairCount(s.ID); got != 4 {
			t.Errorf("%d repairs after another ignored change, want 4", got)
		}
		if n := f.node(s.ID); n.Status != StatusInSync && n.Status != StatusRepaired {
			t.Errorf("status %s, want in sync", n.Status)
		}
	})
}

// contestedCount reads the managed-objects gauge for contested NodeIDs of a
// cluster, as published with the last snapshot.
func contestedCount(h *Hub, cluster string) float64 {
	h.pub.publish(h.opts.Now())
	return testutil.ToFloat64(h.metrics.objects.WithLabelValues(cluster, string(StatusContested)))
}

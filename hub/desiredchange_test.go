package hub

import (
	"slices"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestDesiredChangeIsNotDrift: applying a change of the desired state (a
// new commit's spec for an object already applied) is a write like a
// repair, but neither drift nor a repair: the object shows in sync, not
// repaired, its repair count and the drift and repair metrics stay as
// they were, the feed names the change, and nobody is blamed for it. A
// drift afterwards is drift and repaired as usual.
func TestDesiredChangeIsNotDrift(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		s := spec("c1", "web", "v1")
		s.Revision = "0123456789abcdef first"
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		b.attrib = &Attribution{Manager: "kubectl-edit", Operation: "Update"}
		before := b.repairs[s.ID]

		s.Hash, s.Revision = "v2", "fedcba9876543210 second"
		f.h.SetDesired([]NodeSpec{s})
		synctest.Wait()
		if got := b.repairs[s.ID] - before; got != 1 {
			t.Fatalf("writes of the change: %d, want 1", got)
		}
		snap := f.h.Snapshot()
		n, _ := snap.Node(s.ID)
		if n.Status != StatusInSync || n.Repairs != 0 {
			t.Errorf("after the change: status %s, %d repairs; want in-sync and none", n.Status, n.Repairs)
		}
		if r := n.LastRepair; r == nil || r.DesiredChange != "desired changed (web@fedcba9)" || r.Attribution != nil || r.AppliedAt.IsZero() {
			t.Errorf("last write: %+v", r)
		}
		if len(snap.Feed) == 0 || snap.Feed[0].Who != "desired changed (web@fedcba9)" || !snap.Feed[0].DesiredChanged() {
			t.Errorf("feed: %+v", snap.Feed)
		}
		var steps []Step
		for _, e := range n.Timeline {
			steps = append(steps, e.Step)
			if e.Step == StepClassified || e.Step == StepApplied || e.Step == StepVerified {
				t.Errorf("timeline step %q for a change of the desired state: %+v", e.Step, n.Timeline)
			}
		}
		if !slices.Contains(steps, StepDesiredChanged) || !slices.Contains(steps, StepChangeApplied) {
			t.Errorf("timeline %v, want %q and %q", steps, StepDesiredChanged, StepChangeApplied)
		}
		m := f.h.metrics
		if got := testutil.CollectAndCount(m.drift); got != 0 {
			t.Errorf("drift counted for a change of the desired state: %d series", got)
		}
		if got := testutil.CollectAndCount(m.repairs); got != 0 {
			t.Errorf("repairs counted for a change of the desired state: %d series", got)
		}
		if got := testutil.ToFloat64(m.desiredApplies.WithLabelValues("c1")); got != 1 {
			t.Errorf("desired changes applied: %v, want 1", got)
		}

		b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
		synctest.Wait()
		n, _ = f.h.Snapshot().Node(s.ID)
		if n.Status != StatusRepaired || n.Repairs != 1 || n.LastRepair == nil || n.LastRepair.DesiredChange != "" {
			t.Errorf("after a drift: status %s, %d repairs, last %+v; want repaired once", n.Status, n.Repairs, n.LastRepair)
		}
		if got := testutil.ToFloat64(m.repairs.WithLabelValues("c1", "success")); got != 1 {
			t.Errorf("repairs: %v, want 1", got)
		}
		if got := testutil.CollectAndCount(m.drift); got != 1 {
			t.Errorf("drift series after a drift: %d, want 1", got)
		}
	})
}

package hub

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestOneRecordPerNode: the loop keeps one record per NodeID, holding the
// desired spec, the decommission and the spec it applied (the same shared
// spec, not a copy); a pruned NodeID and a forgotten cluster leave no record
// behind; a snapshot nobody subscribed to is not kept.
func TestOneRecordPerNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		a, gone, other := spec("c1", "a", "v1"), spec("c1", "b", "v1"), spec("c2", "x", "v1")
		f.h.SetDesired([]NodeSpec{a, gone, other})
		f.ready("c1", 1, 0)
		f.ready("c2", 1, 0)
		synctest.Wait()
		records := func() map[NodeID]*node {
			f.h.mu.Lock()
			defer f.h.mu.Unlock()
			out := make(map[NodeID]*node, len(f.h.nodes))
			for id, n := range f.h.nodes {
				cp := *n
				out[id] = &cp
			}
			return out
		}
		got := records()
		if len(got) != 3 {
			t.Fatalf("%d records, want 3", len(got))
		}
		for id, n := range got {
			if n.spec == nil || n.dec != nil || n.applied != n.spec {
				t.Errorf("%s: spec %p, dec %v, applied %p: want the desired spec applied", id, n.spec, n.dec, n.applied)
			}
		}

		// b leaves the config: decommissioned, pruned, its record gone.
		f.h.SetDesired([]NodeSpec{a, other})
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		if b.exists(gone.ID) {
			t.Fatalf("%s not pruned", gone.ID)
		}
		if _, ok := records()[gone.ID]; ok {
			t.Errorf("the pruned %s still has a record", gone.ID)
		}
		f.h.ForgetCluster("c2")
		if got := records(); len(got) != 1 || got[a.ID] == nil {
			t.Errorf("records after forgetting c2: %v, want only %s", got, a.ID)
		}

		// No subscriber: the published snapshot is not kept; a
		// subscriber gets one.
		f.h.status.publish(f.h.opts.Now())
		f.h.status.mu.Lock()
		kept := f.h.status.latest
		f.h.status.mu.Unlock()
		if kept != nil {
			t.Error("a snapshot is kept with no subscriber")
		}
		ch, cancel := f.h.Subscribe()
		defer cancel()
		synctest.Wait()
		select {
		case snap := <-ch:
			if _, ok := snap.Node(a.ID); !ok {
				t.Errorf("the subscriber's snapshot lacks %s", a.ID)
			}
		default:
			t.Fatal("a new subscriber got no snapshot")
		}
	})
}

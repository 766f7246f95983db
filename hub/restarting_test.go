package hub

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A write cut by its cluster's manager restarting (ErrRestarting: a reload
// that changed what the cluster watches closed the connection the write
// was on) is not the NodeID's failure: no failed repair is counted, shown
// or written to the feed, and the pass runs again on the cluster's current
// backend: parked while the new manager connects, released when it is
// synced. It holds for a repair and for a prune.
func TestPassRunsAgainWhenItsBackendRestarted(t *testing.T) {
	for _, prune := range []bool{false, true} {
		t.Run(fmt.Sprintf("prune=%t", prune), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newFake(true)
				f := start(t, b, Options{})
				s, keep := spec("c1", "a", "v1"), spec("c1", "keep", "v1")
				f.h.SetDesired([]NodeSpec{s, keep})
				f.ready("c1", 1, 1)
				synctest.Wait()
				var cut atomic.Bool
				b.onWrite = func(_ context.Context, id NodeID) error {
					if id == s.ID && cut.CompareAndSwap(false, true) {
						// The manager restarts while the write is in
						// flight: its next report says connecting.
						f.h.ClusterChanged(ClusterHealth{Cluster: "c1", State: ClusterConnecting, Seq: 2})
						return fmt.Errorf("cluster \"c1\": apply: the cluster's watch manager is restarting: %w", ErrRestarting)
					}
					return nil
				}
				if prune {
					f.h.SetDesired([]NodeSpec{keep})
				} else {
					b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
				}
				synctest.Wait()
				if !cut.Load() {
					t.Fatal("the write never ran")
				}
				time.Sleep(10 * noBackendRetry) // parked, not failing, while connecting
				synctest.Wait()
				done := func() bool {
					if prune {
						return !b.exists(s.ID)
					}
					return b.repairCount(s.ID) == 2
				}
				if done() {
					t.Fatal("written while the cluster's new manager was connecting")
				}
				f.ready("c1", 2, 3)
				synctest.Wait()
				if !done() {
					t.Fatal("the pass cut by the restart never ran again once the cluster was synced")
				}
				if got := testutil.ToFloat64(f.h.metrics.repairs.WithLabelValues("c1", "failure")); got != 0 {
					t.Errorf("failed repairs counted: %v, want 0", got)
				}
				if got := testutil.ToFloat64(f.h.metrics.restarted.WithLabelValues("c1")); got != 1 {
					t.Errorf("driftwatch_passes_restarted_total = %v, want 1", got)
				}
				for _, e := range f.h.Snapshot().Feed {
					if e.ID == s.ID && e.Action == "failed" {
						t.Errorf("a failed feed line: %+v", e)
					}
				}
				if !prune {
					if n := f.node(s.ID); n.Status != StatusRepaired && n.Status != StatusInSync {
						t.Errorf("status %s (%s), want repaired", n.Status, n.Reason)
					}
				}
			})
		})
	}
}

package hub

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
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

// An orphan scan that meets a cluster whose backend is restarting skips
// that cluster quietly (no warning: the next manager's first sync asks
// for a scan of its own) and keeps what it showed there; the next
// generation's scan works again.
func TestOrphanScanSkipsARestartingBackend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs strings.Builder
		var logMu sync.Mutex
		b := newFake(true)
		stray := spec("c1", "stray", "v1").ID
		b.put(stray, func(o *fakeObject) { o.content = "old" })
		f := start(t, b, Options{Logger: slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		f.h.SetDesired(appSpecs("c1", "a"))
		f.ready("c1", 1, 1)
		synctest.Wait()
		if n, ok := f.h.Snapshot().Node(stray); !ok || n.Status != StatusOrphan {
			t.Fatal("the stray object is not shown as an orphan")
		}
		var restarting atomic.Bool
		restarting.Store(true)
		b.listErr = func() error {
			if restarting.Load() {
				return fmt.Errorf("cluster \"c1\": list owned objects: the cluster's watch manager is restarting: %w", ErrRestarting)
			}
			return nil
		}
		f.h.requestScanAll()
		synctest.Wait()
		logMu.Lock()
		if strings.Contains(logs.String(), "orphan scan") {
			t.Errorf("a restarting backend's scan logged a warning: %s", logs.String())
		}
		logMu.Unlock()
		if n, ok := f.h.Snapshot().Node(stray); !ok || n.Status != StatusOrphan {
			t.Error("the orphan shown before the restart was dropped")
		}
		restarting.Store(false)
		b.remove(stray)
		f.ready("c1", 2, 2) // the next manager synced: a scan of its own
		synctest.Wait()
		if _, ok := f.h.Snapshot().Node(stray); ok {
			t.Error("the next generation's scan did not run")
		}
	})
}

// lockedWriter is an io.Writer whose writes hold mu.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

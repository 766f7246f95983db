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

// A custom resource applied in the same wave as its CRD: until the cluster
// serves its kind (ErrKindNotServed), its first apply waits, shown as
// unknown with the reason, retried with the failure backoff, and never
// counted or fed as a failed repair; it is created once the kind is
// served. An object applied before whose kind went away still fails.
func TestFirstApplyWaitsForItsKind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		var served atomic.Bool
		cr, other := spec("c1", "gear", "v1"), spec("c1", "other", "v1")
		kindErr := fmt.Errorf("cluster \"c1\": read widget.example.com gear: the cluster serves no kind Widget.example.com/v1: %w", ErrKindNotServed)
		b.readErr = func(id NodeID) error {
			if id == cr.ID && !served.Load() {
				return kindErr
			}
			return nil
		}
		f := start(t, b, Options{})
		f.h.SetDesired([]NodeSpec{cr, other})
		f.ready("c1", 1, 1)
		time.Sleep(100 * time.Millisecond) // several retries
		synctest.Wait()
		if n := f.node(cr.ID); n.Status != StatusUnknown || !strings.Contains(n.Reason, "waiting for the cluster to serve its kind") {
			t.Errorf("waiting: status %s (%s), want unknown, waiting for its kind", n.Status, n.Reason)
		}
		if got := testutil.ToFloat64(f.h.metrics.repairs.WithLabelValues("c1", "failure")); got != 0 {
			t.Errorf("failed repairs counted while waiting for the kind: %v", got)
		}
		served.Store(true)
		time.Sleep(time.Minute) // the failure backoff's longest wait here
		synctest.Wait()
		if !b.exists(cr.ID) {
			t.Fatal("not created once its kind was served")
		}
		for _, e := range f.h.Snapshot().Feed {
			if e.ID == cr.ID && e.Action == "failed" {
				t.Errorf("a failed feed line: %+v", e)
			}
		}
		// Applied now: its kind going away is a failure like any other.
		served.Store(false)
		b.remove(cr.ID)
		synctest.Wait()
		if got := testutil.ToFloat64(f.h.metrics.repairs.WithLabelValues("c1", "failure")); got == 0 {
			t.Error("an applied object whose kind went away is not counted as failing")
		}
		if n := f.node(cr.ID); n.Status != StatusFailed {
			t.Errorf("applied object whose kind went away: status %s, want failed", n.Status)
		}
	})
}

// A missing object whose namespace (or CRD) is being deleted: the
// apiserver refuses to create it until the deletion ends (ErrTerminating).
// The write waits, shown as drifted with the reason and said once in the
// feed and the timeline, never counted or shown as a failed or forbidden
// repair, and is tried again every TerminatingRetry, not after the
// forbidden retry's minute: the object is back within that long of the
// deletion's end.
func TestWriteWaitsForADeletionInProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		var terminating atomic.Bool
		var refused atomic.Int64
		obj := spec("c1", "web", "v1")
		termErr := fmt.Errorf("cluster \"c1\": cannot apply deployment web in namespace \"ns\" yet: its namespace is being deleted: %w", ErrTerminating)
		b.repErr = func(id NodeID) error {
			if id == obj.ID && terminating.Load() {
				refused.Add(1)
				return termErr
			}
			return nil
		}
		f := start(t, b, Options{TerminatingRetry: 2 * time.Second})
		f.h.SetDesired([]NodeSpec{obj})
		f.ready("c1", 1, 1)
		synctest.Wait()
		if !b.exists(obj.ID) {
			t.Fatal("not created")
		}
		terminating.Store(true)
		b.remove(obj.ID)
		time.Sleep(9 * time.Second) // the namespace takes its time to go
		synctest.Wait()
		// Tried at once, then every 2 s: at 0, 2, 4, 6, 8 s.
		if got := refused.Load(); got != 5 {
			t.Errorf("writes refused while the namespace terminated: %d, want 5 (at once, then every TerminatingRetry)", got)
		}
		n := f.node(obj.ID)
		if n.Status != StatusDrifted || !strings.Contains(n.Reason, "waiting: ") || !strings.Contains(n.Reason, "its namespace is being deleted") {
			t.Errorf("waiting: status %s (%s), want drifted, waiting for the namespace", n.Status, n.Reason)
		}
		if got := testutil.ToFloat64(f.h.metrics.repairs.WithLabelValues("c1", "failure")); got != 0 {
			t.Errorf("failed repairs counted while waiting for the deletion: %v", got)
		}
		waiting := 0
		for _, e := range f.h.Snapshot().Feed {
			if e.ID != obj.ID {
				continue
			}
			if e.Action == "failed" {
				t.Errorf("a failed feed line: %+v", e)
			}
			if e.Action == "waiting" {
				waiting++
			}
		}
		if waiting != 1 {
			t.Errorf("feed lines saying the write waits: %d, want 1", waiting)
		}
		terminating.Store(false) // the namespace is gone: the next try creates it anew
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if !b.exists(obj.ID) {
			t.Fatal("not recreated within TerminatingRetry of the deletion's end")
		}
		if n := f.node(obj.ID); n.Status != StatusRepaired {
			t.Errorf("after the wait: status %s (%s), want repaired", n.Status, n.Reason)
		}
		// A second deletion says it once again.
		terminating.Store(true)
		b.remove(obj.ID)
		synctest.Wait()
		waiting = 0
		for _, e := range f.h.Snapshot().Feed {
			if e.ID == obj.ID && e.Action == "waiting" {
				waiting++
			}
		}
		if waiting != 2 {
			t.Errorf("feed lines after a second wait: %d, want 2", waiting)
		}
	})
}

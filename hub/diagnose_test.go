package hub

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// diagnosingFake is the fake backend with a Diagnoser: it answers lines
// (or err) and counts its calls.
type diagnosingFake struct {
	*fakeBackend
	mu    sync.Mutex
	lines []string
	err   error
	calls int
}

func (d *diagnosingFake) Backend(string) (Backend, bool) { return d, true }

func (d *diagnosingFake) Diagnose(context.Context, NodeSpec) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	return slices.Clone(d.lines), d.err
}

func (d *diagnosingFake) answer(lines []string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lines, d.err = lines, err
}

func (d *diagnosingFake) called() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls
}

// TestStuckIsDiagnosed: a NodeID that becomes stuck is diagnosed at once
// and shows why; while it stays stuck it is looked at again every
// DiagnoseEvery (a pod that moved from unschedulable to crashing is said
// so) without an event; an error is said in the diagnosis' place; once in
// sync the diagnosis goes, and a NodeID stuck again is diagnosed at once.
// A backend without a Diagnoser is never asked and never requeued for it.
func TestStuckIsDiagnosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		d := &diagnosingFake{fakeBackend: b, lines: []string{"pod web-1: not scheduled: 0/3 nodes are available"}}
		f := start(t, b, Options{DiagnoseEvery: 30 * time.Second})
		f.h.SetBackends(d)
		web := spec("c1", "web", "v1")
		f.h.SetDesired([]NodeSpec{web})
		f.ready("c1", 1, 1)
		synctest.Wait()
		if n := f.node(web.ID); n.Status != StatusInSync || n.Diagnosis != nil || d.called() != 0 {
			t.Fatalf("in sync: %s, diagnosis %q, %d calls", n.Status, n.Diagnosis, d.called())
		}

		b.put(web.ID, func(o *fakeObject) { o.stuck = "ProgressDeadlineExceeded" })
		synctest.Wait()
		if n := f.node(web.ID); n.Status != StatusStuck || !slices.Equal(n.Diagnosis, []string{"pod web-1: not scheduled: 0/3 nodes are available"}) || d.called() != 1 {
			t.Fatalf("stuck: %s, diagnosis %q, %d calls", n.Status, n.Diagnosis, d.called())
		}

		// Events within DiagnoseEvery ask nothing more.
		b.put(web.ID, func(o *fakeObject) {})
		synctest.Wait()
		if d.called() != 1 {
			t.Fatalf("%d calls after an event 0s later, want 1", d.called())
		}

		// No event: looked at again after DiagnoseEvery, with the pods' new state.
		d.answer([]string{"pod web-1: container app CrashLoopBackOff (last exit 1 Error, 4 restarts)"}, nil)
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if n := f.node(web.ID); d.called() != 2 || !slices.Equal(n.Diagnosis, []string{"pod web-1: container app CrashLoopBackOff (last exit 1 Error, 4 restarts)"}) {
			t.Fatalf("after 30s: %d calls, diagnosis %q", d.called(), n.Diagnosis)
		}
		d.answer(nil, errors.New(`pods is forbidden`))
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if n := f.node(web.ID); !slices.Equal(n.Diagnosis, []string{"why it is stuck could not be read: pods is forbidden"}) {
			t.Fatalf("an error: diagnosis %q", n.Diagnosis)
		}

		// In sync: the diagnosis goes; stuck again: asked at once.
		b.put(web.ID, func(o *fakeObject) { o.stuck = "" })
		synctest.Wait()
		if n := f.node(web.ID); n.Status != StatusInSync || n.Diagnosis != nil {
			t.Fatalf("recovered: %s, diagnosis %q", n.Status, n.Diagnosis)
		}
		calls := d.called()
		d.answer([]string{"pod web-2: not scheduled"}, nil)
		b.put(web.ID, func(o *fakeObject) { o.stuck = "ProgressDeadlineExceeded" })
		synctest.Wait()
		if n := f.node(web.ID); d.called() != calls+1 || !slices.Equal(n.Diagnosis, []string{"pod web-2: not scheduled"}) {
			t.Fatalf("stuck again: %d calls (want %d), diagnosis %q", d.called(), calls+1, n.Diagnosis)
		}
	})
}

// TestStuckWithoutDiagnoser: a backend that cannot diagnose leaves the
// diagnosis empty and the NodeID stuck, looked at only on events.
func TestStuckWithoutDiagnoser(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		var reads atomic.Int64
		b.onRead = func(NodeID, bool) { reads.Add(1) }
		f := start(t, b, Options{DiagnoseEvery: 30 * time.Second})
		web := spec("c1", "web", "v1")
		f.h.SetDesired([]NodeSpec{web})
		f.ready("c1", 1, 1)
		synctest.Wait()
		b.put(web.ID, func(o *fakeObject) { o.stuck = "ProgressDeadlineExceeded" })
		synctest.Wait()
		before := reads.Load()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if n := f.node(web.ID); n.Status != StatusStuck || n.Diagnosis != nil || reads.Load() != before {
			t.Fatalf("%s, diagnosis %q, %d reads after 2m (was %d)", n.Status, n.Diagnosis, reads.Load(), before)
		}
	})
}

package hub

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fakeHeap stands for the runtime's heap counters in heapReturner tests:
// the test says what a wave allocated; release returns free bytes.
type fakeHeap struct {
	mu                     sync.Mutex
	allocs, live, released uint64
	free                   uint64
	releases               int
}

func (f *fakeHeap) read() heapReading {
	f.mu.Lock()
	defer f.mu.Unlock()
	return heapReading{allocs: f.allocs, live: f.live, released: f.released}
}

func (f *fakeHeap) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.releases++
	f.released += f.free
}

// allocate records a wave's allocations and the heap it leaves free.
func (f *fakeHeap) allocate(n, free uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.allocs += n
	f.free = free
}

func (f *fakeHeap) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.releases
}

func (f *fakeHeap) setLive(n uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.live = n
}

// startWithHeap runs a hub over b whose heap returns read and release
// heap instead of the runtime's.
func startWithHeap(t *testing.T, b *fakeBackend, opts Options, heap *fakeHeap) *fixture {
	t.Helper()
	return startPrepared(t, b, opts, func(h *Hub) {
		h.heap.read, h.heap.release = heap.read, heap.release
	})
}

// TestHeapReturnedAfterAWave: once the queue is idle after a wave of work
// that allocated at least heapReturnMinAlloc and at least the live heap,
// the hub returns the freed heap, at most once per heapReturnEvery (a wave
// ending sooner is returned when the interval has passed); a small wave,
// a wave smaller than the live heap, and a queue still busy return
// nothing.
func TestHeapReturnedAfterAWave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		heap := &fakeHeap{live: 10 << 20}
		b := newFake(true)
		f := startWithHeap(t, b, Options{}, heap)
		specs := []NodeSpec{spec("a", "one", "v1"), spec("a", "two", "v1"), spec("a", "three", "v1")}
		f.h.SetDesired(specs)
		f.ready("a", 1, 1)
		synctest.Wait()
		time.Sleep(heapReturnQuiet)
		synctest.Wait()
		if got := f.node(specs[2].ID).Status; got != StatusInSync {
			t.Fatalf("after the first sync: %s is %s, want in sync", specs[2].ID, got)
		}
		// A quiet hub never collects for nothing.
		if n := heap.count(); n != 0 {
			t.Fatalf("a first sync that allocated nothing: %d returns, want 0", n)
		}

		// wave makes one drift and lets the hub repair it, as if that
		// allocated n bytes and left free bytes free.
		wave := func(n, free uint64) {
			heap.allocate(n, free)
			b.put(specs[0].ID, func(o *fakeObject) { o.content = "edited" })
			synctest.Wait()
			time.Sleep(heapReturnQuiet)
			synctest.Wait()
			if got := f.node(specs[0].ID).Status; got != StatusInSync && got != StatusRepaired {
				t.Fatalf("after a drift: %s is %s, want repaired", specs[0].ID, got)
			}
		}

		wave(heapReturnMinAlloc/2, 4<<20)
		if n := heap.count(); n != 0 {
			t.Fatalf("a wave of %d bytes: %d returns, want 0 (below %d)", heapReturnMinAlloc/2, n, heapReturnMinAlloc)
		}
		wave(heapReturnMinAlloc, 20<<20) // 48 MiB since the start
		if n := heap.count(); n != 1 {
			t.Fatalf("a wave of 48 MiB, 10 MiB live: %d returns, want 1", n)
		}
		if got := f.h.HeapReturns(); got != 1 {
			t.Errorf("HeapReturns = %d, want 1", got)
		}
		if got := testutil.ToFloat64(f.h.metrics.heapReturned); got != 20<<20 {
			t.Errorf("driftwatch_heap_returned_bytes_total = %v, want %d", got, 20<<20)
		}
		if got := testutil.ToFloat64(f.h.metrics.heapReturns); got != 1 {
			t.Errorf("driftwatch_heap_returns_total = %v, want 1", got)
		}

		// Another wave ends 10 s later: it is returned when the minute
		// since the last return has passed, the queue idle then.
		time.Sleep(10 * time.Second)
		wave(heapReturnMinAlloc, 8<<20)
		if n := heap.count(); n != 1 {
			t.Fatalf("a second wave 10 s after a return: %d returns, want still 1", n)
		}
		time.Sleep(heapReturnEvery - 10*time.Second - heapReturnQuiet - time.Millisecond)
		synctest.Wait()
		if n := heap.count(); n != 1 {
			t.Fatalf("just before the minute: %d returns, want still 1", n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n := heap.count(); n != 2 {
			t.Fatalf("a minute after the first return: %d returns, want 2", n)
		}

		// A wave smaller than the live heap: nothing (a large hub's
		// steady work does not collect its whole heap for little).
		time.Sleep(2 * heapReturnEvery)
		heap.setLive(200 << 20)
		wave(100<<20, 50<<20)
		if n := heap.count(); n != 2 {
			t.Fatalf("a wave of 100 MiB with 200 MiB live: %d returns, want still 2", n)
		}
		wave(100<<20, 50<<20) // 200 MiB since the last return
		if n := heap.count(); n != 3 {
			t.Fatalf("waves of 200 MiB with 200 MiB live: %d returns, want 3", n)
		}
	})
}

// TestHeapNotReturnedWhileBusy: a return due once the minute since the
// last one has passed waits while a write is in flight (the queue is not
// idle), and comes once it returned.
func TestHeapNotReturnedWhileBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		heap := &fakeHeap{live: 1 << 20}
		b := newFake(true)
		hold := make(chan struct{})
		var block sync.Mutex
		blocking := false
		b.onWrite = func(ctx context.Context, _ NodeID) error {
			block.Lock()
			wait := blocking
			block.Unlock()
			if !wait {
				return nil
			}
			select {
			case <-hold:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		// The hanging write outlives the minute.
		f := startWithHeap(t, b, Options{CallTimeout: 5 * time.Minute}, heap)
		s, other := spec("a", "one", "v1"), spec("a", "two", "v1")
		f.h.SetDesired([]NodeSpec{s, other})
		heap.allocate(64<<20, 32<<20)
		f.ready("a", 1, 1)
		synctest.Wait()
		time.Sleep(heapReturnQuiet)
		synctest.Wait()
		if n := heap.count(); n != 1 {
			t.Fatalf("after a first sync of 64 MiB: %d returns, want 1", n)
		}

		// A second wave ends 10 s later: its return is due at the minute.
		time.Sleep(10 * time.Second)
		heap.allocate(64<<20, 32<<20)
		b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
		synctest.Wait()
		// At 30 s a repair starts and hangs past the minute.
		time.Sleep(20 * time.Second)
		block.Lock()
		blocking = true
		block.Unlock()
		b.put(other.ID, func(o *fakeObject) { o.content = "edited" })
		synctest.Wait()
		time.Sleep(heapReturnEvery)
		synctest.Wait()
		if f.h.ctrl.inner.Idle() {
			t.Fatal("the queue is idle with a repair in flight")
		}
		if n := heap.count(); n != 1 {
			t.Fatalf("a return due while a repair is in flight: %d returns, want still 1", n)
		}
		close(hold)
		synctest.Wait()
		time.Sleep(heapReturnQuiet)
		synctest.Wait()
		if n := heap.count(); n != 2 {
			t.Fatalf("once the repair returned: %d returns, want 2", n)
		}
	})
}

// TestQueueIdled: the queue's idle token comes when a Done leaves nothing
// waiting and nothing handed out, never before.
func TestQueueIdled(t *testing.T) {
	r := newRenewing(1024)
	a, b := NewNodeID("c", "ns", "a", KindConfigMap), NewNodeID("c", "ns", "b", KindConfigMap)
	r.Add(a)
	r.Add(b)
	idled := func() bool {
		select {
		case <-r.Idled():
			return true
		default:
			return false
		}
	}
	x, _ := r.Get()
	r.Done(x)
	if idled() || r.Idle() {
		t.Fatal("idle with an item waiting")
	}
	x, _ = r.Get()
	r.Add(a)
	if r.Idle() {
		t.Fatal("idle with an item handed out")
	}
	r.Done(x)
	if idled() {
		t.Fatal("idle token with an item added during processing")
	}
	x, _ = r.Get()
	r.Done(x)
	if !idled() || !r.Idle() {
		t.Fatal("no idle token once the last item is done")
	}
	if idled() {
		t.Fatal("a second token without a second Done")
	}
}

// specsNamed returns n ConfigMap specs of cluster "a".
func specsNamed(n int) []NodeSpec {
	specs := make([]NodeSpec, n)
	for i := range specs {
		specs[i] = spec("a", fmt.Sprintf("cm-%d", i), "v1")
	}
	return specs
}

// TestHeapReturnWaitsForTheWaveEnd: the queue idle for a moment inside a
// wave (the watch echoes of a cold sync's last writes still to come) is
// not its end: while more than heapReturnTrickle items are done in a
// heapReturnQuiet window, the return waits for the next window.
func TestHeapReturnWaitsForTheWaveEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		heap := &fakeHeap{live: 1 << 20}
		b := newFake(true)
		f := startWithHeap(t, b, Options{}, heap)
		specs := specsNamed(heapReturnTrickle + 4)
		f.h.SetDesired(specs)
		heap.allocate(64<<20, 32<<20)
		f.ready("a", 1, 1)
		synctest.Wait() // synced and idle: the window runs until +200 ms
		count := func(at string, want int) {
			t.Helper()
			synctest.Wait()
			if n := heap.count(); n != want {
				t.Fatalf("%s: %d returns, want %d", at, n, want)
			}
		}
		count("the moment the queue is idle", 0)
		time.Sleep(heapReturnQuiet / 2)
		for _, s := range specs { // more than a trickle: a wave's tail
			b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
		}
		synctest.Wait() // repaired: idle again
		time.Sleep(heapReturnQuiet/2 - time.Millisecond)
		count("just before the window's end", 0)
		time.Sleep(time.Millisecond)
		count("the window's end, the wave's tail in it", 0)
		time.Sleep(heapReturnQuiet - time.Millisecond)
		count("just before the next window's end", 0)
		time.Sleep(time.Millisecond)
		count("a window with nothing done", 1)
	})
}

// TestHeapReturnedUnderATrickle: a live fleet always has a trickle of
// events (status updates); a wave's end is seen through it, and the heap
// returned while the trickle goes on.
func TestHeapReturnedUnderATrickle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		heap := &fakeHeap{live: 1 << 20}
		b := newFake(true)
		f := startWithHeap(t, b, Options{}, heap)
		specs := specsNamed(40)
		f.h.SetDesired(specs)
		heap.allocate(64<<20, 32<<20)
		f.ready("a", 1, 1)
		synctest.Wait()
		// An edit every 50 ms, each a repair and its echo: the queue is
		// idle between them, never for a whole window.
		for i, s := range specs {
			b.put(s.ID, func(o *fakeObject) { o.content = "status" })
			synctest.Wait()
			if n := heap.count(); n == 1 {
				t.Logf("returned after %d edits of the trickle", i+1)
				return
			}
			time.Sleep(heapReturnQuiet / 4)
		}
		t.Fatalf("no return during a trickle of %d edits 50 ms apart, after a 64 MiB wave", len(specs))
	})
}

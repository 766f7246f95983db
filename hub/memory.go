package hub

import (
	"context"
	"log/slog"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync/atomic"
	"time"
)

// A wave of work (a cold sync creating every object, a reconnected
// cluster's catch-up, a burst of repairs, a reload that changes many
// objects) grows the heap to twice what it keeps at its peak, and the
// runtime hands the freed pages back to the operating system only
// gradually: a hub that created 25,000 objects kept about 450 MiB resident
// for minutes where 160 MiB of heap were live. Once the loop's queue is
// idle after such a wave, the heapReturner collects and returns the freed
// heap at once (debug.FreeOSMemory): one collection at a moment the hub
// has nothing to do, instead of a resident set that says the hub needs
// what it needed only at the peak.
//
// The queue may be idle for a moment inside a wave: after the writes of a
// cold sync the watch echoes of the last ones are still coming, and each
// is a pass. A wave has ended once at most heapReturnTrickle items were
// done over heapReturnQuiet: a live fleet always has a trickle of events
// (status updates of rollouts and autoscalers), so the end of a wave
// cannot wait for the queue to stay idle.

// Tuning of the heapReturner.
const (
	// heapReturnMinAlloc is the least a wave must have allocated since
	// the last return to be followed by one: below it there is little to
	// return, and a quiet hub never pays for a collection it did not need.
	heapReturnMinAlloc = 32 << 20
	// heapReturnEvery is the least time between two returns: a hub that
	// is busy and idle in turn (steady drift at a high rate) pays for one
	// extra collection a minute at most.
	heapReturnEvery = time.Minute
	// heapReturnQuiet is the window over which a wave is seen to have
	// ended: at most heapReturnTrickle items done in it.
	heapReturnQuiet   = 200 * time.Millisecond
	heapReturnTrickle = 16
)

// heapReading is what the heapReturner reads from the runtime.
type heapReading struct {
	// allocs is the heap allocated since the process started; live the
	// heap the last collection marked live; released the heap returned
	// to the operating system and not reused since.
	allocs, live, released uint64
}

// readHeap reads the runtime's heap counters (runtime/metrics: a few
// atomic loads, no stop of the world).
func readHeap() heapReading {
	s := []rtmetrics.Sample{
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	rtmetrics.Read(s)
	u := func(i int) uint64 {
		if s[i].Value.Kind() != rtmetrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	return heapReading{allocs: u(0), live: u(1), released: u(2)}
}

// heapReturner returns the heap a wave of work freed to the operating
// system (see the comment above the tuning constants): when the queue is
// idle after a heapReturnQuiet window in which at most heapReturnTrickle
// items were done, if the wave allocated at least heapReturnMinAlloc and
// at least the live heap (so that a large hub whose steady work allocates
// little does not collect for nothing), at most once per heapReturnEvery.
// A wave that ends too soon after the last return is returned once the
// interval has passed, if the queue is idle then.
type heapReturner struct {
	log     *slog.Logger
	metrics *metrics
	// idled receives a token when the queue became idle; idle says
	// whether it still is, and finished counts the items done (see
	// renewing).
	idled    <-chan struct{}
	idle     func() bool
	finished func() int64
	read     func() heapReading
	// release collects and returns the freed heap (debug.FreeOSMemory).
	release  func()
	minAlloc uint64
	every    time.Duration
	quiet    time.Duration
	trickle  int64

	// Owned by run's goroutine.
	lastAllocs uint64
	last       time.Time
	// returns counts the returns made (Hub.HeapReturns).
	returns atomic.Int64
}

// newHeapReturner returns the heapReturner of a controller's queue.
func newHeapReturner(opts Options, m *metrics, q *renewing) *heapReturner {
	return &heapReturner{
		log: opts.Logger, metrics: m,
		idled: q.Idled(), idle: q.Idle, finished: q.Finished,
		read: readHeap, release: debug.FreeOSMemory,
		minAlloc: heapReturnMinAlloc, every: heapReturnEvery, quiet: heapReturnQuiet, trickle: heapReturnTrickle,
	}
}

// run returns the heap after each wave until ctx ends. The first wave's
// allocations count from the process's start: the hub's start (the config
// compiled, the desired state packed) is part of it.
func (r *heapReturner) run(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	t.Stop() // armed by the first idle token
	defer t.Stop()
	armed := false
	var seen int64
	// arm looks again after d, counting the items done from now.
	arm := func(d time.Duration) {
		seen = r.finished()
		t.Reset(d)
		armed = true
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.idled:
			// Idle a moment ago: look again once the quiet window is
			// over (a window already running is not restarted, so a
			// trickle of passes does not put the look off for ever).
			if !armed {
				arm(r.quiet)
			}
			continue
		case <-t.C:
			armed = false
		}
		if r.finished()-seen > r.trickle {
			arm(r.quiet) // the wave goes on
			continue
		}
		if !r.idle() {
			continue // a pass in flight: its Done sends a token
		}
		if wait := r.check(); wait > 0 {
			arm(wait)
		}
	}
}

// check returns the heap if the wave that ended (the caller saw the queue
// idle after no more than a trickle of work) allocated enough and the last
// return is at least r.every ago; otherwise it returns how long until it
// may (0: nothing to wait for).
func (r *heapReturner) check() time.Duration {
	h := r.read()
	if h.allocs-r.lastAllocs < max(r.minAlloc, h.live) {
		return 0
	}
	if !r.last.IsZero() {
		if wait := r.every - time.Since(r.last); wait > 0 {
			return wait
		}
	}
	wave := h.allocs - r.lastAllocs
	began := time.Now()
	r.release()
	took := time.Since(began)
	after := r.read()
	r.lastAllocs, r.last = after.allocs, time.Now()
	r.returns.Add(1)
	var returned uint64
	if after.released > h.released {
		returned = after.released - h.released
	}
	r.metrics.heapReturned.Add(float64(returned))
	r.metrics.heapReturns.Inc()
	r.log.Debug("returned the heap freed by a wave of work to the operating system",
		"allocatedMiB", wave>>20, "returnedMiB", returned>>20, "liveMiB", after.live>>20, "took", took)
	return 0
}

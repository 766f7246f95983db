package hub

import (
	"sync"
	"sync/atomic"

	"k8s.io/client-go/util/workqueue"
)

// queueName names the loop's workqueue (and its metrics, with a provider).
const queueName = "driftwatch"

// renewAbove is how many NodeIDs the queue must have held at once before it
// is renewed once drained (see renewing): below it, what the sets keep is
// small.
const renewAbove = 1024

// newQueue returns the loop's workqueue: client-go's rate-limiting queue
// with exponential failure backoff over client-go's delaying queue, as its
// defaults build them, over a renewing queue instead of a plain one, which
// it also returns (it knows when the queue is idle).
func newQueue(opts Options) (workqueue.TypedRateLimitingInterface[NodeID], *renewing) {
	inner := newRenewing(renewAbove)
	rl := workqueue.NewTypedItemExponentialFailureRateLimiter[NodeID](opts.FailureBaseDelay, opts.FailureMaxDelay)
	dq := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[NodeID]{Name: queueName, Queue: inner})
	return workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[NodeID]{Name: queueName, DelayingQueue: dq}), inner
}

// renewing is the innermost layer of the loop's workqueue: it forwards every
// call to a client-go queue (workqueue.Typed, with its deduplication and
// its guarantee that one item is never processed by two workers at once)
// and replaces that queue by a fresh one once it is empty after having held
// many items. A Go map never shrinks, so without this the queue's sets
// would keep the size of the largest burst (every NodeID of a cluster at
// its first sync, or every NodeID at a resync) for the life of the hub:
// about 100 bytes per NodeID.
//
// The replacement happens under mu, in Done, only when the current queue
// holds nothing: no item waiting (Len is 0) and none handed out and not yet
// Done (every Get answered by its Done). Then its dirty and processing sets
// are empty too, so no item, no order and no exclusion is lost; every
// Add goes through mu to the current queue, so none can reach the old one
// afterwards. The old queue is shut down, which wakes the workers waiting
// in its Get: they wait on the new one. The layers above (the delaying
// queue's timers, the rate limiter's failure counts) hold their own state
// and call through renewing.
type renewing struct {
	above int

	mu sync.Mutex
	// cur is the queue in use and list its FIFO, which counts the items
	// cur handed out.
	cur  *workqueue.Typed[NodeID]
	list *fifo[NodeID]
	// done counts the Done calls since cur was made; held is the most
	// items cur held at once; renewals counts the queues replaced.
	done, held int64
	renewals   int
	// shutting is set (under mu) by ShutDown; ShuttingDown reads it
	// without mu, as every pass's gate asks it while holding the loop's
	// lock: the loop's lock never waits for the queue's.
	shutting atomic.Bool
	// idle receives a token (never blocking: it holds one) each time a
	// Done leaves the queue idle (see Idle); finished counts every Done.
	idle     chan struct{}
	finished atomic.Int64
}

var _ workqueue.TypedInterface[NodeID] = (*renewing)(nil)

// newRenewing returns a renewing queue that is renewed once drained after it
// held at least above items.
func newRenewing(above int) *renewing {
	r := &renewing{above: above, idle: make(chan struct{}, 1)}
	r.renewLocked()
	return r
}

// Idle reports whether the queue is idle: no item waiting and every item
// handed out Done (items waiting in the layers above, a retry's delay,
// are not counted: they are not work yet).
func (r *renewing) Idle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.idleLocked()
}

func (r *renewing) idleLocked() bool {
	return r.cur.Len() == 0 && r.list.popped.Load() == r.done
}

// Idled returns a channel that holds a token once a Done left the queue
// idle: a wave of work ended. Read Idle on receipt: an Add may have come
// since.
func (r *renewing) Idled() <-chan struct{} { return r.idle }

// Finished returns how many items were Done since the queue was made: two
// equal readings with the queue idle at both say no work came between.
func (r *renewing) Finished() int64 { return r.finished.Load() }

// renewLocked makes a fresh current queue (callers hold mu, or own r).
func (r *renewing) renewLocked() {
	r.list = &fifo[NodeID]{}
	r.cur = workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[NodeID]{Name: queueName, Queue: r.list})
	r.done, r.held = 0, 0
}

// Add adds an item to the current queue (client-go's Add: an item already
// waiting is not added twice; one being processed is added back once Done).
func (r *renewing) Add(item NodeID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur.Add(item)
	if n := int64(r.cur.Len()); n > r.held {
		r.held = n
	}
}

// Len returns the number of items waiting.
func (r *renewing) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.Len()
}

// Get blocks until an item can be processed, or the queue shuts down; a
// queue renewed meanwhile hands the wait over to its successor.
func (r *renewing) Get() (NodeID, bool) {
	for {
		r.mu.Lock()
		q := r.cur
		r.mu.Unlock()
		item, shutdown := q.Get()
		if !shutdown {
			return item, false
		}
		r.mu.Lock()
		stop := r.shutting.Load() || q == r.cur
		r.mu.Unlock()
		if stop {
			return item, true
		}
	}
}

// Done marks an item processed, and renews the queue if it is now empty
// after having held at least above items.
func (r *renewing) Done(item NodeID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur.Done(item)
	r.done++
	r.finished.Add(1)
	if !r.idleLocked() {
		return
	}
	select {
	case r.idle <- struct{}{}:
	default:
	}
	if r.shutting.Load() || r.held < int64(r.above) {
		return
	}
	old := r.cur
	r.renewLocked()
	r.renewals++
	old.ShutDown()
}

// ShutDown makes the queue refuse new items and wakes every Get; items
// still waiting are handed out first (client-go's ShutDown).
func (r *renewing) ShutDown() {
	r.mu.Lock()
	r.shutting.Store(true)
	q := r.cur
	r.mu.Unlock()
	q.ShutDown()
}

// ShutDownWithDrain is ShutDown, then waits until the items being
// processed are Done (client-go's ShutDownWithDrain).
func (r *renewing) ShutDownWithDrain() {
	r.mu.Lock()
	r.shutting.Store(true)
	q := r.cur
	r.mu.Unlock()
	q.ShutDownWithDrain() // not under mu: Done takes it
}

// ShuttingDown reports whether ShutDown was called.
func (r *renewing) ShuttingDown() bool {
	return r.shutting.Load()
}

// fifo is a workqueue.Queue: first in, first out, like client-go's default,
// which pops by slicing forward, so after a burst the array sized for the
// whole burst stays allocated until as many items again were pushed. fifo
// drops its array whenever it runs empty, and counts the items it handed
// out (popped, read by renewing without the workqueue's lock). The
// workqueue calls it under its own lock.
type fifo[T comparable] struct {
	items  []T
	popped atomic.Int64
}

var _ workqueue.Queue[NodeID] = (*fifo[NodeID])(nil)

// Touch is a no-op: the order is the order of the first Push.
func (q *fifo[T]) Touch(T) {}

// Push appends an item.
func (q *fifo[T]) Push(item T) { q.items = append(q.items, item) }

// Len returns the number of items.
func (q *fifo[T]) Len() int { return len(q.items) }

// Pop removes and returns the oldest item; the workqueue only calls it when
// Len is positive, to hand the item out.
func (q *fifo[T]) Pop() T {
	q.popped.Add(1)
	item := q.items[0]
	if len(q.items) == 1 {
		q.items = nil
		return item
	}
	var zero T
	q.items[0] = zero // no reference stays in the part of the array left behind
	q.items = q.items[1:]
	return item
}

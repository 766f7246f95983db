package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/sourcegraph/conc"
	"k8s.io/client-go/util/workqueue"
)

// passRunner is what the controller drives, one NodeID at a time: the
// reconciler (controller-runtime's reconcile.Reconciler, injected).
type passRunner interface {
	// reconcile runs a pass over a NodeID up to its write; when the pass
	// must write it returns the write as a step for a writer to run.
	reconcile(ctx context.Context, id NodeID) (Result, *writeStep, error)
	// panicked records a pass that panicked on a NodeID.
	panicked(id NodeID, err error, now time.Time)
}

// controller owns the workqueue keyed by NodeID and its bookkeeping: the
// workers that take NodeIDs off it and run the reconciler's pass, the
// writers that run the writes the workers hand off (see writeQueue), the
// retries (rate-limited, or after a delay the pass asks for) and the
// recovery of panics, in passes and in the hub's background loops
// (controller-runtime's Controller). It knows nothing of what a pass does.
type controller struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics
	queue   workqueue.TypedRateLimitingInterface[NodeID]
	// inner is the queue's innermost layer, which knows when it is idle.
	inner *renewing
	// writeQ holds the writes workers handed off (see writeQueue).
	writeQ *writeQueue
	rec    passRunner
	// recorders run the writes' ahead steps (writeStep.ahead), one
	// goroutine each while it runs, at most maxAhead at once: a slot is
	// taken by the worker handing off, so a worker waits only when
	// maxAhead are already waiting for the state file.
	recorders        conc.WaitGroup
	aheadSlots       chan struct{}
	workers, writers conc.WaitGroup
}

// maxAhead bounds the writes' ahead steps in flight: as many first applies'
// records as wait for one group commit of the state file. A cold sync of
// 25,000 objects queues that many first applies at once; with the records
// of only a worker's count per fsync, the fsyncs, not the apiservers, set
// the pace.
const maxAhead = 1024

// newController returns a controller over rec (set before start).
func newController(opts Options, m *metrics) *controller {
	queue, inner := newQueue(opts)
	return &controller{
		opts:    opts,
		log:     opts.Logger,
		metrics: m,
		queue:   queue,
		inner:   inner,
		writeQ:  newWriteQueue(opts.Writers),
		// The slots are taken before each recorder starts.
		aheadSlots: make(chan struct{}, maxAhead),
	}
}

// add enqueues NodeIDs.
func (c *controller) add(ids ...NodeID) {
	for _, id := range ids {
		c.queue.Add(id)
	}
}

// stopping reports whether the queue is shut down: workers take no more
// NodeIDs and passes start no more writes (writes already in flight get
// ShutdownGrace to finish).
func (c *controller) stopping() bool { return c.queue.ShuttingDown() }

// start starts the workers and the writers; their calls use ctx.
func (c *controller) start(ctx context.Context) {
	for range c.opts.Workers {
		c.workers.Go(func() {
			for c.processNextWorkItem(ctx) {
			}
		})
	}
	for range c.opts.Writers {
		c.writers.Go(func() {
			for {
				j, cluster, ok := c.writeQ.next()
				if !ok {
					return
				}
				j(ctx)
				c.writeQ.done(cluster)
			}
		})
	}
}

// shutDown stops handing out NodeIDs; wait then waits for the workers, and
// for the writers once they ran what was handed to them.
func (c *controller) shutDown() { c.queue.ShutDown() }

// wait waits for the workers and writers started by start (after
// shutDown).
func (c *controller) wait() {
	c.workers.Wait()
	// No worker hands off a write any more; the recorders hand theirs to
	// the writers and end.
	c.recorders.Wait()
	// The writers run what waits (the gate refuses every write once the
	// hub stops) and end.
	c.writeQ.close()
	c.writers.Wait()
}

// processNextWorkItem takes one NodeID off the queue and reconciles it; it
// returns false once the queue shuts down (controller-runtime's
// processNextWorkItem).
func (c *controller) processNextWorkItem(ctx context.Context) bool {
	id, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	if c.stopping() {
		// The queue hands out what it still holds after ShutDown; a hub
		// that is stopping starts no new pass.
		c.queue.Done(id)
		return false
	}
	if !c.reconcileHandler(ctx, id) {
		c.queue.Done(id)
	}
	return true
}

// reconcileHandler runs the reconciler's pass for one NodeID and is the one
// place that turns its outcome into queue operations: success forgets the
// NodeID's failure history (or schedules the requested re-check), an error
// retries with exponential backoff (a permission error slowly), and a panic
// is recovered, reported on the NodeID, counted, and retried like an error;
// the worker lives on (controller-runtime's reconcileHandler).
//
// A pass that must write hands the write to the writers and reports true:
// the NodeID stays in the workqueue's processing set until the writer has
// run the write and called Done.
func (c *controller) reconcileHandler(ctx context.Context, id NodeID) (handedOff bool) {
	c.metrics.reconciles.Inc()
	defer c.recoverPass(id, &handedOff)
	res, write, err := c.rec.reconcile(ctx, id)
	if write != nil && write.ahead != nil {
		// The write's place among its cluster's writes is taken now.
		give := c.writeQ.reserve(id.Cluster)
		c.aheadSlots <- struct{}{}
		c.recorders.Go(func() { c.runAhead(id, write, give) })
		return true
	}
	if write != nil {
		c.writeQ.submit(id.Cluster, func(ctx context.Context) { c.runWrite(ctx, id, write.run) })
		return true
	}
	c.requeue(id, res, err)
	return false
}

// runAhead runs a handed-off write's ahead step on a recorder, then gives
// the write to its place among the writes (give); a panic is recovered like
// a pass's: the NodeID is retried and its place given a write that does
// nothing.
func (c *controller) runAhead(id NodeID, write *writeStep, give func(writeJob)) {
	defer func() { <-c.aheadSlots }()
	job := writeJob(func(context.Context) {})
	handedOff := false
	defer func() {
		give(job)
		if !handedOff {
			c.queue.Done(id)
		}
	}()
	defer c.recoverPass(id, &handedOff)
	write.ahead()
	job = func(ctx context.Context) { c.runWrite(ctx, id, write.run) }
	handedOff = true
}

// runWrite runs a handed-off write on a writer, then does with the NodeID
// what the handler would have, and calls Done.
func (c *controller) runWrite(ctx context.Context, id NodeID, write func(ctx context.Context) (Result, error)) {
	defer c.queue.Done(id)
	var handedOff bool
	defer c.recoverPass(id, &handedOff)
	res, err := write(ctx)
	c.requeue(id, res, err)
}

// recoverPass recovers a panic in a pass (deferred directly by the worker
// or the writer running it): reported on the NodeID, counted, and retried
// like an error; the worker or writer lives on, and the pass has handed
// nothing off.
func (c *controller) recoverPass(id NodeID, handedOff *bool) {
	if r := recover(); r != nil {
		*handedOff = false
		c.metrics.panics.Inc()
		err := fmt.Errorf("panic: %v", r)
		c.log.Error("reconcile panicked", "node", id.String(), "err", err, "stack", string(debug.Stack()))
		c.rec.panicked(id, err, c.opts.Now())
		c.queue.AddRateLimited(id)
	}
}

// requeue turns a pass's outcome into queue operations.
func (c *controller) requeue(id NodeID, res Result, err error) {
	switch {
	case errors.Is(err, ErrForbidden):
		c.queue.Forget(id)
		c.queue.AddAfter(id, c.opts.ForbiddenRetry)
	case errors.Is(err, ErrUnreachable):
		c.queue.Forget(id)
		c.queue.AddAfter(id, c.opts.UnreachableRetry)
	case err != nil:
		c.queue.AddRateLimited(id)
	case res.RequeueAfter > 0:
		c.queue.Forget(id)
		c.queue.AddAfter(id, res.RequeueAfter)
	default:
		c.queue.Forget(id)
	}
}

// loopRestartDelay is how long a background loop that panicked waits
// before it starts again (a panic that repeats does not spin).
const loopRestartDelay = time.Second

// supervise runs one of the hub's background loops until ctx ends. A panic
// in it is recovered, logged with its stack, counted
// (driftwatch_loop_panics_total) and the loop started again after
// loopRestartDelay: one bad snapshot or scan never ends publishing, the
// resync or orphan scans for the life of the hub, and never reaches Run.
func (c *controller) supervise(ctx context.Context, name string, loop func(context.Context)) {
	for {
		if !c.runRecovered(ctx, name, loop) {
			return // the loop returned: ctx ended
		}
		t := time.NewTimer(loopRestartDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// runRecovered runs loop once and reports whether it panicked.
func (c *controller) runRecovered(ctx context.Context, name string, loop func(context.Context)) (panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			panicked = true
			c.metrics.loopPanics.WithLabelValues(name).Inc()
			c.log.Error("hub loop panicked; restarting it", "loop", name, "err", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	loop(ctx)
	return false
}

package hub

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/sourcegraph/conc"
)

// Options configure a Hub. Zero values take the documented defaults.
type Options struct {
	// ID names the hub (status bar, API). Default "driftwatch".
	ID string
	// Policy is the hub-wide default policy. Default PolicyRepair.
	Policy Policy
	// Workers is the number of reconcile workers, which read and classify;
	// Writers is the number of writers, which carry out the writes the
	// workers hand them (repairs and first applies), in turn across
	// clusters. Defaults 4 and Workers.
	Workers, Writers int
	// Resync is the safety-net resync period, jittered by up to 10%.
	// Default 5m. Negative disables it.
	Resync time.Duration
	// DecommissionTimeout is how long a pruned object may take to go away
	// before it is stuck. Default 2m.
	DecommissionTimeout time.Duration
	// SnapshotInterval is the minimum time between snapshots. Default 100ms
	// (at most 10 per second). When building a snapshot takes long (tens
	// of thousands of NodeIDs), the pause grows so that publishing takes at
	// most a tenth of the time. A NodeID's changed status (a drift seen,
	// a repair done; not its first classification) is published sooner:
	// 20ms after the last snapshot, or as soon as publishing's share
	// allows (urgentPublishPause).
	SnapshotInterval time.Duration
	// TimelineLength bounds each NodeID's timeline. Default 32.
	TimelineLength int
	// DiagnoseEvery is how often the loop asks a Diagnoser again why a
	// stuck NodeID's rollout does not progress (it asks at once when the
	// NodeID becomes stuck, and looks at it again this often while it
	// stays so). Default 30s.
	DiagnoseEvery time.Duration
	// FeedLength bounds the live feed. Default 200.
	FeedLength int
	// CallTimeout bounds each API call of a reconcile. Default 30s.
	CallTimeout time.Duration
	// IntentWait bounds how long a pause, a hold or a warn override waits
	// for the writes in its scope that were already let through; writes
	// still running then are cancelled and waited for. Either way the
	// call returns only once none of them can still write. Default 1s.
	IntentWait time.Duration
	// MaxHoldTTL is the longest hold allowed. Default MaxHoldTTL.
	MaxHoldTTL time.Duration
	// ShutdownGrace bounds how long calls in flight may finish after the
	// context ends; then they are cancelled. No new pass and no new write
	// starts once the context has ended. Default 500ms.
	ShutdownGrace time.Duration
	// FailureBackoff bounds the exponential backoff of failed repairs.
	// Defaults 100ms and 1m.
	FailureBaseDelay, FailureMaxDelay time.Duration
	// FightThreshold is how many repairs of one NodeID within FightWindow
	// make a fight with another controller; then repairs back off
	// exponentially. Defaults 4 and 1m.
	FightThreshold int
	FightWindow    time.Duration
	// RepairedHold is how long a repaired NodeID shows as repaired before
	// it shows in sync. Default 1m.
	RepairedHold time.Duration
	// PruneLimit is the most objects one desired-state change may
	// decommission at once without AllowPrune. Default 50.
	PruneLimit int
	// Intent keeps pauses, policy overrides, holds, pending decommissions
	// and applied specs across restarts. Default: none (memory only).
	Intent IntentStore
	// PruneOrphans prunes orphans (objects carrying our label and this
	// hub's id that the hub has no record of), through the prune limit.
	// Default false: orphans are only reported.
	PruneOrphans bool
	// ForbiddenRetry is how long a NodeID whose object the credentials may
	// not read or write waits before it is tried again. Default 1m.
	ForbiddenRetry time.Duration
	// TerminatingRetry is how long a NodeID whose write waits for a
	// deletion in progress (ErrTerminating: its namespace or its CRD being
	// deleted) waits before it is tried again; such waits do not grow its
	// backoff, so the object is back within this long of the deletion's
	// end. Default 1s.
	TerminatingRetry time.Duration
	// UnreachableRetry is how long a NodeID whose pass failed with
	// ErrUnreachable waits before it is tried again; such failures do not
	// grow its backoff. Default 1s.
	UnreachableRetry time.Duration
	// Logger receives the hub's logs. Default: discard.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// OnRecord, when set, receives a copy of a NodeID's drift record each
	// time a worker classifies a drift and again once its repair was
	// applied (AppliedAt set); benchmarks measure latencies with it. It is
	// called synchronously from the worker, after the hub's lock is
	// released: it must return quickly and must not call into the Hub.
	// Default: none.
	OnRecord func(Repair)
	// OnStatus, when set, is called each time a pass gives a NodeID
	// another status, with the status and when it changed (the time the
	// NodeID's LastChange shows). Benchmarks follow a sync with it
	// instead of subscribing: at fleet scale every snapshot copies every
	// NodeID's status. Statuses the config sets (a NodeID tracked again,
	// decommissioning, orphans) are not reported. It is called
	// synchronously from the worker, after the hub's lock is released:
	// it must return quickly and must not call into the Hub. Default:
	// none.
	OnStatus func(id NodeID, st Status, at time.Time)
}

func (o Options) withDefaults() Options {
	if o.ID == "" {
		o.ID = "driftwatch"
	}
	if o.Policy == "" {
		o.Policy = PolicyRepair
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Writers <= 0 {
		o.Writers = o.Workers
	}
	if o.Resync == 0 {
		o.Resync = 5 * time.Minute
	}
	if o.DecommissionTimeout <= 0 {
		o.DecommissionTimeout = 2 * time.Minute
	}
	if o.SnapshotInterval <= 0 {
		o.SnapshotInterval = 100 * time.Millisecond
	}
	if o.DiagnoseEvery <= 0 {
		o.DiagnoseEvery = 30 * time.Second
	}
	if o.TimelineLength <= 0 {
		o.TimelineLength = 32
	}
	if o.FeedLength <= 0 {
		o.FeedLength = 200
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.IntentWait <= 0 {
		o.IntentWait = time.Second
	}
	if o.MaxHoldTTL <= 0 {
		o.MaxHoldTTL = MaxHoldTTL
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = 500 * time.Millisecond
	}
	if o.FailureBaseDelay <= 0 {
		o.FailureBaseDelay = 100 * time.Millisecond
	}
	if o.FailureMaxDelay <= 0 {
		o.FailureMaxDelay = time.Minute
	}
	if o.FightThreshold <= 0 {
		o.FightThreshold = 4
	}
	if o.FightWindow <= 0 {
		o.FightWindow = time.Minute
	}
	if o.RepairedHold <= 0 {
		o.RepairedHold = time.Minute
	}
	if o.PruneLimit <= 0 {
		o.PruneLimit = 50
	}
	if o.ForbiddenRetry <= 0 {
		o.ForbiddenRetry = time.Minute
	}
	if o.TerminatingRetry <= 0 {
		o.TerminatingRetry = time.Second
	}
	if o.UnreachableRetry <= 0 {
		o.UnreachableRetry = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Hub is the shared reconcile loop: one workqueue keyed by NodeID, fed by
// every backend's events, drained by N workers that compare desired with
// actual state and repair drift. It implements Sink for the watch managers.
//
// The Hub is a facade that wires the loop's parts, each with one job (see
// ARCHITECTURE.md, "The core's rooms"): the controller (queue, workers,
// retries, panics), the reconciler (a pass: observe, choose, carry out,
// with writes through the gate), the desired state, the loop's bookkeeping
// and the intent behind one lock (loopState), the status store (what users
// see, with its own lock, written through statusWriter and never read back
// by the loop) and the publisher. Backends are called with no lock held.
type Hub struct {
	// loopState is the desired state, the loop's bookkeeping, the intent
	// and the gate's writes in flight, behind one lock (mu).
	*loopState
	// desiredStore, intentAPI and orphanScanner are the Hub's public
	// methods that change the desired state, the operator intent and the
	// orphans (each over loopState, enqueueing through ctrl).
	*desiredStore
	*intentAPI
	*orphanScanner
	// ctrl owns the workqueue, the workers and the writers; rec is the
	// reconciler they run.
	ctrl *controller
	rec  *reconciler
	// store is the status store (what users see); pub publishes its
	// snapshots.
	store *store
	pub   *publisher
	// heap returns the heap a wave of work freed once the queue is idle.
	heap *heapReturner

	// running is set by Run (guarded by mu).
	running bool
}

// node is everything the loop keeps about one NodeID (guarded by loopState.mu),
// in one record: what is wanted (spec), what is being pruned (dec), what was
// applied, and the loop's bookkeeping. A NodeID has a record while spec,
// dec or applied is set; spec and dec are never both set; the loop fields
// matter only while the NodeID is managed (spec or dec set) and start from
// zero each time it becomes managed.
type node struct {
	// spec is the desired spec; nil when the NodeID is not desired.
	spec *NodeSpec
	// dec is set while the NodeID is decommissioned.
	dec *decommission
	// applied is the spec this hub last applied (now or, restored from the
	// intent store, by an earlier run; then without a body); nil when none.
	applied *NodeSpec
	nodeLoop
}

// nodeKey is the NodeID of a record: that of its spec, decommission or
// applied spec (one is set from the moment the record is created, in the
// same critical section; a record without any is never looked up).
func nodeKey(n *node) NodeID {
	switch {
	case n.spec != nil:
		return n.spec.ID
	case n.dec != nil:
		return n.dec.spec.ID
	case n.applied != nil:
		return n.applied.ID
	}
	return NodeID{}
}

// managed reports whether the NodeID is desired or being decommissioned
// (false for a nil record).
func (n *node) managed() bool { return n != nil && (n.spec != nil || n.dec != nil) }

// neverApplied reports whether the hub has neither applied the NodeID's
// object (this hub or, with a shared intent store, another replica) nor
// seen it on its cluster.
func (n *node) neverApplied() bool { return !n.seen && n.applied == nil }

// of returns the spec the NodeID is managed by: the desired one, else the
// decommissioned one.
func (n *node) of() *NodeSpec {
	if n.spec != nil {
		return n.spec
	}
	return n.dec.spec
}

// decommission is a NodeID whose application left the config.
type decommission struct {
	spec  *NodeSpec
	since time.Time
	// orphan marks an orphan's prune: its policy is its cluster's at the
	// moment of the delete (orphanPolicyLocked), not spec.Policy.
	orphan bool
}

// nodeLoop is the loop's bookkeeping of one NodeID (guarded by loopState.mu).
type nodeLoop struct {
	// pendingAt is the earliest event not yet reconciled (latencies are
	// measured from it).
	pendingAt time.Time
	// expect is the version our last write returned, until the backend's
	// cache shows it (an event with that version) or a fresh read
	// replaces it. A cached read of any other version is older than our
	// write, and never evidence of drift (client-go's expectations).
	expect string
	// rep is the repair and fight bookkeeping, allocated by the first
	// drift or repair (most NodeIDs never have one): nil reads as its
	// zero value.
	rep *nodeRepairs
	// manual is the sequence number of a pending manual repair (0: none):
	// it overrides warn-only, a pause or a hold set before it, once.
	manual uint64
	// fresh makes the next read bypass the watch cache (catch-up after a
	// disconnect).
	fresh bool
	// seen is set once the object was seen on its cluster or created by
	// the hub: a missing object is then drift, not a first apply.
	seen bool
	// verifying is set after a repair until the object is seen in sync.
	verifying bool
	// foreign is set once a pass met the object carrying another hub's
	// id, until it is seen in sync (the feed says it once).
	foreign bool
	// waiting is set once a write met a deletion in progress
	// (ErrTerminating), until the object is seen in sync (the timeline
	// and the feed say it once).
	waiting bool
	// stuck is set while the last status the loop showed for the NodeID
	// is StatusStuck: the timeline gets a stuck step on the way in only.
	// The loop keeps this itself and never reads the status store back.
	stuck bool
}

// nodeRepairs is the part of a NodeID's loop bookkeeping that only drift
// and repairs set (guarded by loopState.mu).
type nodeRepairs struct {
	// recent are recent repair times (fight detection); fights counts
	// backoffs in a row; backoffTill ends the current one.
	recent      []time.Time
	fights      int
	backoffTill time.Time
	// fight is who undoes the repairs, and the contest shown.
	fight fightState
	// verifiedAt is when the latest repair was seen in sync (zero: never):
	// the NodeID shows as repaired for Options.RepairedHold after it.
	verifiedAt time.Time
	// diagnosedAt is when the NodeID's stuck rollout was last diagnosed
	// (see reconciler.diagnose); read only while it stays stuck.
	diagnosedAt time.Time
	// heldLogged is the action of the held-back drift last logged (see
	// recorder.logHeld), "" once a write went through (reconciler.repair's
	// bookkeeping of the write): a drift held back
	// is logged when it starts being held back, not at each of its
	// events.
	heldLogged string
}

// repairs returns the NodeID's repair bookkeeping, allocating it on first
// use; readers that must not allocate check n.rep for nil instead.
func (n *nodeLoop) repairs() *nodeRepairs {
	if n.rep == nil {
		n.rep = &nodeRepairs{}
	}
	return n.rep
}

// clusterLoop is the loop's view of one cluster (guarded by loopState.mu).
type clusterLoop struct {
	state   ClusterState
	ready   bool
	lastGen int64
	lastSeq int64
	// fullPass is the number of the resync after the cluster's last full
	// pass (its first sync, or a catch-up after a reconnect) was
	// enqueued, 0 if none: a postponed resync leaves such a cluster out
	// (see resyncLoop).
	fullPass uint64
	// parked are NodeIDs a worker met while the cluster was not ready:
	// they are enqueued again the moment it becomes ready, so nothing
	// waits for the periodic resync.
	parked map[NodeID]struct{}
}

// New returns a hub. Call SetBackends before Run.
func New(opts Options) *Hub {
	opts = opts.withDefaults()
	m := newMetrics()
	ctrl := newController(opts, m)
	st := newStore(opts, m, ctrl.queue.Len)
	ls := newLoopState(opts, m, st, ctrl.stopping)
	h := &Hub{
		loopState:     ls,
		desiredStore:  &desiredStore{loopState: ls, ctrl: ctrl},
		intentAPI:     &intentAPI{loopState: ls, ctrl: ctrl},
		orphanScanner: &orphanScanner{loopState: ls, ctrl: ctrl},
		ctrl:          ctrl,
		rec:           &reconciler{loopState: ls, out: &recorder{loopState: ls}},
		store:         st,
		pub:           newPublisher(opts, st, st.dirty, st.changed),
		heap:          newHeapReturner(opts, m, ctrl.inner),
	}
	ctrl.rec = h.rec
	return h
}

// ID returns the hub id.
func (h *Hub) ID() string { return h.opts.ID }

// SetBackends sets where the hub finds each cluster's backend.
func (h *Hub) SetBackends(b Backends) {
	h.mu.Lock()
	h.backends = b
	h.mu.Unlock()
}

// Observe implements Sink: it records the event time and enqueues the
// NodeID. It never blocks. An event carrying the version our own last write
// returned is its echo: counted, and the expectation is met.
func (h *Hub) Observe(ev Event) {
	h.metrics.watch.WithLabelValues(ev.ID.Cluster, string(ev.Type)).Inc()
	managed := false
	h.withLoop(ev.ID, func(n *nodeLoop) {
		managed = true
		if ev.ResourceVersion != "" && ev.ResourceVersion == n.expect {
			h.metrics.echoes.WithLabelValues(ev.ID.Cluster).Inc()
			n.expect = ""
		}
		if n.pendingAt.IsZero() {
			n.pendingAt = ev.ObservedAt
		}
	})
	if managed {
		h.ctrl.add(ev.ID)
	}
}

// ClusterChanged implements Sink: it records a cluster's health. A report
// older than one already applied (Seq) is dropped, so health never goes
// backwards. A new sync generation enqueues every NodeID of the cluster
// (first apply, or catch-up after a disconnect, read fresh); becoming ready
// also releases the NodeIDs workers parked while it was not.
func (h *Hub) ClusterChanged(ch ClusterHealth) {
	for _, id := range h.clusterChanged(ch) {
		h.ctrl.add(id)
	}
}

// clusterChanged applies a health report under h.mu (released even on a
// panic) and returns the NodeIDs to enqueue.
func (h *Hub) clusterChanged(ch ClusterHealth) []NodeID {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch.State == ClusterRemoved {
		if cl := h.clusters[ch.Cluster]; cl != nil && ch.Seq != 0 && ch.Seq < cl.lastSeq {
			return nil
		}
		delete(h.clusters, ch.Cluster)
		h.status.removeHealth(ch.Cluster)
		return nil
	}
	cl := h.clusters[ch.Cluster]
	if cl == nil {
		cl = &clusterLoop{}
		h.clusters[ch.Cluster] = cl
	}
	if ch.Seq != 0 && ch.Seq < cl.lastSeq {
		h.metrics.staleHealth.WithLabelValues(ch.Cluster).Inc()
		return nil
	}
	if ch.Seq != 0 {
		cl.lastSeq = ch.Seq
	}
	wasReady := cl.ready
	cl.state = ch.State
	cl.ready = usable(ch.State)
	var ids []NodeID
	if ch.Generation > cl.lastGen {
		// After a disconnect the watch cache may still be stale: the
		// catch-up pass reads fresh.
		catchUp := cl.lastGen > 0
		cl.lastGen = ch.Generation
		cl.fullPass = h.resyncs + 1
		ids = h.clusterIDsLocked(ch.Cluster)
		if catchUp {
			for _, id := range ids {
				if n := h.loopLocked(id); n != nil {
					n.fresh = true
				}
			}
		}
		// nil, not clear: a cleared map keeps its buckets (a NodeID of
		// the cluster each) for the life of the hub.
		cl.parked = nil
		h.scans[ch.Cluster] = true
		select {
		case h.scanNow <- struct{}{}:
		default:
		}
	}
	if cl.ready && !wasReady {
		for id := range cl.parked {
			ids = append(ids, id)
		}
		cl.parked = nil
	}
	up := 0.0
	if cl.ready {
		up = 1
	}
	h.metrics.clusterUp.WithLabelValues(ch.Cluster).Set(up)
	h.status.health(ch)
	return ids
}

// orderIDs sorts ids, sorted by NodeID, by their apply phase (see
// NodeSpec.Order), keeping the NodeID order within a phase.
func orderIDs(ids []NodeID, order func(NodeID) uint8) {
	if !slices.ContainsFunc(ids, func(id NodeID) bool { return order(id) != 0 }) {
		return
	}
	slices.SortStableFunc(ids, func(a, b NodeID) int { return cmp.Compare(order(a), order(b)) })
}

// Run starts the workers, the resync loop and the snapshot publisher, and
// blocks until ctx ends. Then it stops taking work, lets in-flight repairs
// finish (bounded by ShutdownGrace) and returns once every goroutine it
// started has returned.
func (h *Hub) Run(ctx context.Context) error {
	h.mu.Lock()
	if h.running {
		h.mu.Unlock()
		return errors.New("hub: already running")
	}
	h.running = true
	h.mu.Unlock()

	// Work calls outlive ctx by at most ShutdownGrace.
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()

	var wg conc.WaitGroup
	h.ctrl.start(workCtx)
	pubCtx, stopPub := context.WithCancel(ctx)
	wg.Go(func() { h.ctrl.supervise(pubCtx, "publish", h.pub.run) })
	if h.opts.Resync > 0 {
		wg.Go(func() { h.ctrl.supervise(ctx, "resync", h.resyncLoop) })
	}
	wg.Go(func() { h.ctrl.supervise(ctx, "orphans", h.orphanLoop) })
	wg.Go(func() { h.ctrl.supervise(ctx, "heap", h.heap.run) })
	<-ctx.Done()
	h.ctrl.shutDown()
	grace := time.AfterFunc(h.opts.ShutdownGrace, cancelWork)
	defer grace.Stop()
	stopPub()
	h.ctrl.wait()
	wg.Wait()
	h.pub.publish(h.opts.Now()) // a last snapshot
	return nil
}

// resyncIdlePoll is how often a resync postponed by a busy queue looks
// again (see resyncLoop).
const resyncIdlePoll = time.Second

// resyncLoop enqueues every NodeID once a Resync (jittered by up to 10%)
// and asks for an orphan scan. A resync that comes due while the queue is
// busy (a cold sync longer than the period, a reconnected cluster's
// catch-up, a burst) waits until the queue is idle, for at most one more
// period: the wave passes over its NodeIDs already, and a second pass over
// those it has done would repeat them on apiservers the wave keeps busy
// (and read fresh every object whose write's echo is still on its way). So
// the safety net runs at least once every two periods, however busy the
// hub. A resync that waited also leaves out the clusters passed over in
// full since the last resync (a first sync or a catch-up: the wave it
// waited for, as a rule), whose objects were all just checked and which
// were scanned for orphans then: the next resync, one period later, covers
// them again. A resync that did not wait covers every cluster.
func (h *Hub) resyncLoop(ctx context.Context) {
	for {
		jitter := time.Duration(rand.Int64N(int64(h.opts.Resync)/10 + 1))
		if !sleepUntil(ctx, time.Now().Add(h.opts.Resync+jitter)) {
			return
		}
		waited := false
		if !h.ctrl.inner.Idle() {
			waited = true
			h.metrics.resyncsPostponed.Inc()
			h.log.Debug("resync postponed until the queue is idle", "within", h.opts.Resync)
			deadline := time.Now().Add(h.opts.Resync)
			for !h.ctrl.inner.Idle() && time.Now().Before(deadline) {
				if !sleepUntil(ctx, time.Now().Add(min(resyncIdlePoll, time.Until(deadline)))) {
					return
				}
			}
		}
		ids, left := h.resyncIDs(waited)
		for _, c := range left {
			h.metrics.resyncsLeftOut.WithLabelValues(c).Inc()
		}
		if len(left) > 0 {
			h.log.Debug("resync left out clusters passed over in full since the last one", "clusters", left)
		}
		for _, id := range ids {
			h.ctrl.add(id)
		}
		h.requestScanAll(left...) // a full pass asks for a scan too
	}
}

// resyncIDs counts a resync and returns the NodeIDs it enqueues: every
// desired and decommissioning NodeID, but, when leaveOut is set, not those
// of the clusters passed over in full since the last resync, whose names
// it returns, sorted.
func (h *Hub) resyncIDs(leaveOut bool) (ids []NodeID, left []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.resyncs++
	skip := make(map[string]bool)
	for c, cl := range h.clusters {
		if leaveOut && cl.fullPass == h.resyncs {
			skip[c] = true
			left = append(left, c)
		}
	}
	slices.Sort(left)
	ids = make([]NodeID, 0, h.nodes.len())
	for id, n := range h.nodes.all() {
		if n.managed() && !skip[id.Cluster] {
			ids = append(ids, id)
		}
	}
	return ids, left
}

// EnqueueAll enqueues every desired and decommissioning NodeID, whatever
// passes ran lately, as a resync that did not wait for a busy queue does;
// it counts as a resync (see resyncLoop).
func (h *Hub) EnqueueAll() {
	ids, _ := h.resyncIDs(false)
	for _, id := range ids {
		h.ctrl.add(id)
	}
}

// Health returns the last health a cluster reported, without building a
// snapshot (readiness probes call it often).
func (h *Hub) Health(cluster string) (ClusterHealth, bool) {
	return h.store.clusterHealth(cluster)
}

// Running reports whether Run is running its workers.
func (h *Hub) Running() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.running && !h.ctrl.stopping()
}

// QueueLen returns the number of NodeIDs waiting.
func (h *Hub) QueueLen() int { return h.ctrl.queue.Len() }

// HeapReturns returns how many times the hub returned the heap a wave of
// work freed to the operating system, once its queue was idle again (the
// first after its first sync: see heapReturner).
func (h *Hub) HeapReturns() int64 { return h.heap.returns.Load() }

// Subscribe returns a channel that receives the latest snapshot after every
// change (at most 10 per second by default). A slow subscriber only misses
// intermediate snapshots: the channel holds the latest one. It never
// blocks. Call cancel to unsubscribe.
func (h *Hub) Subscribe() (<-chan *Snapshot, func()) { return h.pub.subscribe() }

// Snapshot builds an immutable snapshot of the hub now.
func (h *Hub) Snapshot() *Snapshot { return h.store.snapshot(h.opts.Now()) }

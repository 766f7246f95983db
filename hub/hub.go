package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/conc"
	"k8s.io/client-go/util/workqueue"
)

// Options configure a Hub. Zero values take the documented defaults.
type Options struct {
	// ID names the hub (status bar, API). Default "driftwatch".
	ID string
	// ManagedBy is the managed-by label value. Default DefaultManagedBy.
	ManagedBy string
	// Policy is the hub-wide default policy. Default PolicyRepair.
	Policy Policy
	// Workers is the number of reconcile workers. Default 4.
	Workers int
	// Resync is the safety-net resync period, jittered by up to 10%.
	// Default 5m. Negative disables it.
	Resync time.Duration
	// DecommissionTimeout is how long a pruned object may take to go away
	// before it is stuck. Default 2m.
	DecommissionTimeout time.Duration
	// SnapshotInterval is the minimum time between snapshots. Default 100ms
	// (at most 10 per second).
	SnapshotInterval time.Duration
	// TimelineLength bounds each NodeID's timeline. Default 32.
	TimelineLength int
	// FeedLength bounds the live feed. Default 200.
	FeedLength int
	// CallTimeout bounds each API call of a reconcile. Default 30s.
	CallTimeout time.Duration
	// ShutdownGrace bounds how long in-flight repairs may finish after the
	// context ends. Default 10s.
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
	// ForbiddenRetry is how long a NodeID whose object the credentials may
	// not read or write waits before it is tried again. Default 1m.
	ForbiddenRetry time.Duration
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
}

func (o Options) withDefaults() Options {
	if o.ID == "" {
		o.ID = "driftwatch"
	}
	if o.ManagedBy == "" {
		o.ManagedBy = DefaultManagedBy
	}
	if o.Policy == "" {
		o.Policy = PolicyRepair
	}
	if o.Workers <= 0 {
		o.Workers = 4
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
	if o.TimelineLength <= 0 {
		o.TimelineLength = 32
	}
	if o.FeedLength <= 0 {
		o.FeedLength = 200
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = 10 * time.Second
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
	if o.ForbiddenRetry <= 0 {
		o.ForbiddenRetry = time.Minute
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
// The Hub holds the desired state and the loop's own bookkeeping behind one
// lock (mu); what users see lives in a separate status store with its own
// lock. Backends are called with no lock held.
type Hub struct {
	opts    Options
	log     *slog.Logger
	queue   workqueue.TypedRateLimitingInterface[NodeID]
	metrics *metrics
	status  *store

	mu        sync.Mutex
	backends  Backends
	desired   map[NodeID]*NodeSpec
	decom     map[NodeID]*decommission
	loop      map[NodeID]*nodeLoop
	clusters  map[string]*clusterLoop
	appPolicy map[string]Policy
	running   bool
}

// decommission is a NodeID whose application left the config.
type decommission struct {
	spec  *NodeSpec
	since time.Time
}

// nodeLoop is the loop's bookkeeping of one NodeID (guarded by Hub.mu).
type nodeLoop struct {
	// pendingAt is the earliest event not yet reconciled (latencies are
	// measured from it); manual asks for a repair that overrides warn-only
	// and pause once; fresh makes the next read bypass the watch cache
	// (catch-up after a disconnect).
	pendingAt time.Time
	manual    bool
	fresh     bool
	// seen is set once the object was seen on its cluster or created by
	// the hub: a missing object is then drift, not a first apply.
	seen bool
	// expect is the version our last write returned, until the backend's
	// cache shows it (an event with that version) or a fresh read
	// replaces it. A cached read of any other version is older than our
	// write, and never evidence of drift (client-go's expectations).
	expect string
	// recent are recent repair times (fight detection); fights counts
	// backoffs in a row; backoffTill ends the current one.
	recent      []time.Time
	fights      int
	backoffTill time.Time
	// verifying is set after a repair until the object is seen in sync.
	verifying bool
}

// clusterLoop is the loop's view of one cluster (guarded by Hub.mu).
type clusterLoop struct {
	state   ClusterState
	ready   bool
	lastGen int64
	lastSeq int64
	paused  bool
	// parked are NodeIDs a worker met while the cluster was not ready:
	// they are enqueued again the moment it becomes ready, so nothing
	// waits for the periodic resync.
	parked map[NodeID]struct{}
}

// New returns a hub. Call SetBackends before Run.
func New(opts Options) *Hub {
	opts = opts.withDefaults()
	rl := workqueue.NewTypedItemExponentialFailureRateLimiter[NodeID](opts.FailureBaseDelay, opts.FailureMaxDelay)
	h := &Hub{
		opts:      opts,
		log:       opts.Logger,
		queue:     workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[NodeID]{Name: "driftwatch"}),
		metrics:   newMetrics(),
		desired:   make(map[NodeID]*NodeSpec),
		decom:     make(map[NodeID]*decommission),
		loop:      make(map[NodeID]*nodeLoop),
		clusters:  make(map[string]*clusterLoop),
		appPolicy: make(map[string]Policy),
	}
	h.status = newStore(opts, h.metrics, h.queue.Len)
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

// ErrUnknownNode is returned for a NodeID the hub does not manage.
var ErrUnknownNode = errors.New("unknown node id")

// SetDesired replaces the whole desired state. NodeIDs that are new or whose
// spec changed are enqueued; NodeIDs that left are pruned (decommissioned).
// It returns the changed and removed NodeIDs.
func (h *Hub) SetDesired(specs []NodeSpec) (changed, removed []NodeID) {
	return h.setDesired(specs, func(NodeID) bool { return true })
}

// SetDesiredCluster replaces the desired state of one cluster only.
func (h *Hub) SetDesiredCluster(cluster string, specs []NodeSpec) (changed, removed []NodeID) {
	return h.setDesired(specs, func(id NodeID) bool { return id.Cluster == cluster })
}

// ForgetCluster stops managing a cluster: its desired state, pending
// decommissions and status are dropped without touching its objects.
// Removing a cluster from the config means "stop managing it", never
// "delete its objects". A worker in the middle of a pass over one of its
// NodeIDs finds it gone and stops.
func (h *Hub) ForgetCluster(cluster string) {
	h.mu.Lock()
	for id := range h.desired {
		if id.Cluster == cluster {
			delete(h.desired, id)
			delete(h.loop, id)
		}
	}
	for id := range h.decom {
		if id.Cluster == cluster {
			delete(h.decom, id)
			delete(h.loop, id)
		}
	}
	delete(h.clusters, cluster)
	h.status.forgetCluster(cluster)
	h.mu.Unlock()
}

func (h *Hub) setDesired(specs []NodeSpec, scope func(NodeID) bool) (changed, removed []NodeID) {
	now := h.opts.Now()
	h.mu.Lock()
	next := make(map[NodeID]*NodeSpec, len(specs))
	for i := range specs {
		s := specs[i]
		next[s.ID] = &s
	}
	for id, s := range next {
		old, ok := h.desired[id]
		if !ok || old.Hash != s.Hash || old.Policy != s.Policy {
			changed = append(changed, id)
		}
		h.desired[id] = s
		delete(h.decom, id)
		if h.loop[id] == nil {
			h.loop[id] = &nodeLoop{}
		}
		h.status.track(s, false, now)
	}
	for id, s := range h.desired {
		if !scope(id) {
			continue
		}
		if _, ok := next[id]; !ok {
			removed = append(removed, id)
			delete(h.desired, id)
			h.decom[id] = &decommission{spec: s, since: now}
			h.status.track(s, true, now)
		}
	}
	h.mu.Unlock()
	sortIDs(changed)
	sortIDs(removed)
	for _, id := range changed {
		h.queue.Add(id)
	}
	for _, id := range removed {
		h.queue.Add(id)
	}
	return changed, removed
}

func sortIDs(ids []NodeID) {
	slices.SortFunc(ids, func(a, b NodeID) int { return strings.Compare(a.String(), b.String()) })
}

// Desired returns the desired spec of a NodeID.
func (h *Hub) Desired(id NodeID) (NodeSpec, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.desired[id]
	if !ok {
		return NodeSpec{}, false
	}
	return *s, true
}

// Observe implements Sink: it records the event time and enqueues the
// NodeID. It never blocks. An event carrying the version our own last write
// returned is its echo: counted, and the expectation is met.
func (h *Hub) Observe(ev Event) {
	h.metrics.watch.WithLabelValues(ev.ID.Cluster, string(ev.Type)).Inc()
	h.mu.Lock()
	n := h.loop[ev.ID]
	if n == nil {
		h.mu.Unlock()
		return
	}
	if ev.ResourceVersion != "" && ev.ResourceVersion == n.expect {
		h.metrics.echoes.WithLabelValues(ev.ID.Cluster).Inc()
		n.expect = ""
	}
	if n.pendingAt.IsZero() {
		n.pendingAt = ev.ObservedAt
	}
	h.mu.Unlock()
	h.queue.Add(ev.ID)
}

// ClusterChanged implements Sink: it records a cluster's health. A report
// older than one already applied (Seq) is dropped, so health never goes
// backwards. A new sync generation enqueues every NodeID of the cluster
// (first apply, or catch-up after a disconnect, read fresh); becoming ready
// also releases the NodeIDs workers parked while it was not.
func (h *Hub) ClusterChanged(ch ClusterHealth) {
	h.mu.Lock()
	if ch.State == ClusterRemoved {
		if cl := h.clusters[ch.Cluster]; cl != nil && ch.Seq != 0 && ch.Seq < cl.lastSeq {
			h.mu.Unlock()
			return
		}
		delete(h.clusters, ch.Cluster)
		h.status.removeHealth(ch.Cluster)
		h.mu.Unlock()
		return
	}
	cl := h.clusters[ch.Cluster]
	if cl == nil {
		cl = &clusterLoop{}
		h.clusters[ch.Cluster] = cl
	}
	if ch.Seq != 0 && ch.Seq < cl.lastSeq {
		h.mu.Unlock()
		h.metrics.staleHealth.WithLabelValues(ch.Cluster).Inc()
		return
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
		ids = h.clusterIDsLocked(ch.Cluster)
		if catchUp {
			for _, id := range ids {
				if n := h.loop[id]; n != nil {
					n.fresh = true
				}
			}
		}
		clear(cl.parked)
	}
	if cl.ready && !wasReady {
		for id := range cl.parked {
			ids = append(ids, id)
		}
		clear(cl.parked)
	}
	up := 0.0
	if cl.ready {
		up = 1
	}
	h.metrics.clusterUp.WithLabelValues(ch.Cluster).Set(up)
	h.status.health(ch)
	h.mu.Unlock()
	for _, id := range ids {
		h.queue.Add(id)
	}
}

func (h *Hub) clusterIDsLocked(cluster string) []NodeID {
	var ids []NodeID
	for id := range h.desired {
		if id.Cluster == cluster {
			ids = append(ids, id)
		}
	}
	for id := range h.decom {
		if id.Cluster == cluster {
			ids = append(ids, id)
		}
	}
	sortIDs(ids)
	return ids
}

// RepairNow asks for an immediate repair of one NodeID, overriding warn-only
// and a paused cluster for this one repair.
func (h *Hub) RepairNow(id NodeID) error {
	now := h.opts.Now()
	h.mu.Lock()
	n := h.loop[id]
	_, desired := h.desired[id]
	if n == nil || !desired {
		h.mu.Unlock()
		return fmt.Errorf("repair %s: %w", id, ErrUnknownNode)
	}
	n.manual = true
	n.backoffTill = time.Time{}
	if n.pendingAt.IsZero() {
		n.pendingAt = now
	}
	h.mu.Unlock()
	h.status.step(id, StepManual, "", now)
	h.queue.Add(id)
	return nil
}

// PauseCluster pauses or resumes repairs on one cluster. Resuming enqueues
// every NodeID of the cluster.
func (h *Hub) PauseCluster(cluster string, paused bool) {
	h.mu.Lock()
	cl := h.clusters[cluster]
	if cl == nil {
		cl = &clusterLoop{state: ClusterConnecting}
		h.clusters[cluster] = cl
	}
	cl.paused = paused
	ids := h.clusterIDsLocked(cluster)
	h.status.paused(cluster, paused)
	h.mu.Unlock()
	if !paused {
		for _, id := range ids {
			h.queue.Add(id)
		}
	}
}

// SetApplicationPolicy overrides the policy of one application at runtime
// ("" removes the override). Every NodeID of the application is enqueued.
func (h *Hub) SetApplicationPolicy(app string, p Policy) {
	h.mu.Lock()
	if p == "" {
		delete(h.appPolicy, app)
	} else {
		h.appPolicy[app] = p
	}
	var ids []NodeID
	for id, s := range h.desired {
		if s.Application == app {
			ids = append(ids, id)
		}
	}
	h.status.appPolicies(h.appPolicy)
	h.mu.Unlock()
	for _, id := range ids {
		h.queue.Add(id)
	}
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
	for range h.opts.Workers {
		wg.Go(func() {
			for h.processNextWorkItem(workCtx) {
			}
		})
	}
	pubCtx, stopPub := context.WithCancel(ctx)
	wg.Go(func() { h.publishLoop(pubCtx) })
	if h.opts.Resync > 0 {
		wg.Go(func() { h.resyncLoop(ctx) })
	}
	<-ctx.Done()
	h.queue.ShutDown()
	grace := time.AfterFunc(h.opts.ShutdownGrace, cancelWork)
	defer grace.Stop()
	stopPub()
	wg.Wait()
	h.status.publish(h.opts.Now()) // a last snapshot
	return nil
}

func (h *Hub) resyncLoop(ctx context.Context) {
	for {
		jitter := time.Duration(rand.Int64N(int64(h.opts.Resync)/10 + 1))
		t := time.NewTimer(h.opts.Resync + jitter)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		h.EnqueueAll()
	}
}

// EnqueueAll enqueues every desired and decommissioning NodeID (the
// periodic safety-net resync).
func (h *Hub) EnqueueAll() {
	h.mu.Lock()
	ids := make([]NodeID, 0, len(h.desired)+len(h.decom))
	for id := range h.desired {
		ids = append(ids, id)
	}
	for id := range h.decom {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	for _, id := range ids {
		h.queue.Add(id)
	}
}

// Health returns the last health a cluster reported, without building a
// snapshot (readiness probes call it often).
func (h *Hub) Health(cluster string) (ClusterHealth, bool) {
	return h.status.clusterHealth(cluster)
}

// Running reports whether Run is running its workers.
func (h *Hub) Running() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.running && !h.queue.ShuttingDown()
}

// QueueLen returns the number of NodeIDs waiting.
func (h *Hub) QueueLen() int { return h.queue.Len() }

// processNextWorkItem takes one NodeID off the queue and reconciles it; it
// returns false once the queue shuts down (controller-runtime's
// processNextWorkItem).
func (h *Hub) processNextWorkItem(ctx context.Context) bool {
	id, shutdown := h.queue.Get()
	if shutdown {
		return false
	}
	defer h.queue.Done(id)
	h.reconcileHandler(ctx, id)
	return true
}

// reconcileHandler runs Reconcile for one NodeID and is the one place that
// turns its outcome into queue operations: success forgets the NodeID's
// failure history (or schedules the requested re-check), an error retries
// with exponential backoff (a permission error slowly), and a panic is
// recovered, reported on the NodeID, counted, and retried like an error; the
// worker lives on (controller-runtime's reconcileHandler).
func (h *Hub) reconcileHandler(ctx context.Context, id NodeID) {
	h.metrics.reconciles.Inc()
	defer func() {
		if r := recover(); r != nil {
			h.metrics.panics.Inc()
			err := fmt.Errorf("panic: %v", r)
			h.log.Error("reconcile panicked", "node", id.String(), "err", err, "stack", string(debug.Stack()))
			now := h.opts.Now()
			h.status.step(id, StepPanic, err.Error(), now)
			h.status.setStatus(id, StatusFailed, err.Error(), now)
			h.queue.AddRateLimited(id)
		}
	}()
	res, err := h.Reconcile(ctx, id)
	switch {
	case errors.Is(err, ErrForbidden):
		h.queue.Forget(id)
		h.queue.AddAfter(id, h.opts.ForbiddenRetry)
	case err != nil:
		h.queue.AddRateLimited(id)
	case res.RequeueAfter > 0:
		h.queue.Forget(id)
		h.queue.AddAfter(id, res.RequeueAfter)
	default:
		h.queue.Forget(id)
	}
}

// Subscribe returns a channel that receives the latest snapshot after every
// change (at most 10 per second by default). A slow subscriber only misses
// intermediate snapshots: the channel holds the latest one. It never
// blocks. Call cancel to unsubscribe.
func (h *Hub) Subscribe() (<-chan *Snapshot, func()) { return h.status.subscribe() }

// Snapshot builds an immutable snapshot of the hub now.
func (h *Hub) Snapshot() *Snapshot { return h.status.snapshot(h.opts.Now()) }

func (h *Hub) publishLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.status.dirty:
		}
		h.status.publish(h.opts.Now())
		t := time.NewTimer(h.opts.SnapshotInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
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
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Hub is the shared reconcile loop: one workqueue keyed by NodeID, fed by
// every cluster's events, drained by N workers that compare desired with
// actual state and repair drift. It implements Sink for the watch managers.
type Hub struct {
	opts    Options
	log     *slog.Logger
	queue   workqueue.TypedRateLimitingInterface[NodeID]
	metrics *metrics

	mu        sync.Mutex
	backends  Backends
	desired   map[NodeID]*NodeSpec
	order     []NodeID // NodeIDs of desired and decommissioning, sorted
	nodes     map[NodeID]*nodeState
	clusters  map[string]*clusterState
	appPolicy map[string]Policy
	decom     map[NodeID]*decommission
	feed      []FeedEntry // ring, newest at the end
	subs      map[int]chan *Snapshot
	nextSub   int
	seq       uint64
	running   bool
	latest    *Snapshot

	dirty chan struct{}
}

type clusterState struct {
	health  ClusterHealth
	paused  bool
	lastGen int64
	repairs []time.Duration // recent event-to-repaired times (ring)
}

type decommission struct {
	spec  *NodeSpec
	since time.Time
	stuck bool
}

type nodeState struct {
	idText      string
	status      Status
	reason      string
	lastChange  time.Time
	repair      *Repair
	timeline    []TimelineEntry
	ready       int32
	replicas    int32
	repairs     int
	appliedRV   string
	recent      []time.Time // recent repair times, for fight detection
	fights      int
	backoffTill time.Time
	verifying   bool
	// pending is the earliest unprocessed event time and whether a manual
	// repair was asked for.
	pendingAt time.Time
	manual    bool
	// uid is the live object's UID as last seen (events, applies): after a
	// repair of an object that left the watch, the same UID means it had
	// lost its label rather than been deleted.
	uid string
	// confirm makes the next read GET from the apiserver (catch-up after
	// a disconnect).
	confirm bool
	// seen is set once the object was seen on its cluster or created by
	// the hub: a missing object is then drift, not a first apply.
	seen bool
	// repairedAt is when a repair was verified (shown as repaired for a
	// while).
	repairedAt time.Time
}

// New returns a hub. Call SetBackends before Run.
func New(opts Options) *Hub {
	opts = opts.withDefaults()
	rl := workqueue.NewTypedItemExponentialFailureRateLimiter[NodeID](opts.FailureBaseDelay, opts.FailureMaxDelay)
	return &Hub{
		opts:      opts,
		log:       opts.Logger,
		queue:     workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[NodeID]{Name: "driftwatch"}),
		metrics:   newMetrics(),
		desired:   make(map[NodeID]*NodeSpec),
		nodes:     make(map[NodeID]*nodeState),
		clusters:  make(map[string]*clusterState),
		appPolicy: make(map[string]Policy),
		decom:     make(map[NodeID]*decommission),
		subs:      make(map[int]chan *Snapshot),
		dirty:     make(chan struct{}, 1),
	}
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

// ForgetCluster drops a cluster's desired state and status without pruning
// its objects (the cluster itself is gone).
func (h *Hub) ForgetCluster(cluster string) {
	h.mu.Lock()
	for id := range h.desired {
		if id.Cluster == cluster {
			delete(h.desired, id)
			delete(h.nodes, id)
		}
	}
	for id := range h.decom {
		if id.Cluster == cluster {
			delete(h.decom, id)
			delete(h.nodes, id)
		}
	}
	delete(h.clusters, cluster)
	h.metrics.clusterUp.DeleteLabelValues(cluster)
	h.rebuildOrderLocked()
	h.mu.Unlock()
	h.markDirty()
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
		if _, ok := h.nodes[id]; !ok {
			h.nodes[id] = &nodeState{idText: id.String(), status: StatusUnknown, lastChange: now}
		}
	}
	for id, s := range h.desired {
		if !scope(id) {
			continue
		}
		if _, ok := next[id]; !ok {
			removed = append(removed, id)
			delete(h.desired, id)
			h.decom[id] = &decommission{spec: s, since: now}
			if n := h.nodes[id]; n != nil {
				h.setStatusLocked(n, StatusDecommissioning, "application removed from the config", now)
			}
		}
	}
	h.rebuildOrderLocked()
	h.mu.Unlock()
	sortIDs(changed)
	sortIDs(removed)
	for _, id := range changed {
		h.queue.Add(id)
	}
	for _, id := range removed {
		h.queue.Add(id)
	}
	h.markDirty()
	return changed, removed
}

func sortIDs(ids []NodeID) {
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
}

func (h *Hub) rebuildOrderLocked() {
	h.order = h.order[:0]
	for id := range h.desired {
		h.order = append(h.order, id)
	}
	for id := range h.decom {
		h.order = append(h.order, id)
	}
	sort.Slice(h.order, func(i, j int) bool {
		return h.nodes[h.order[i]].idText < h.nodes[h.order[j]].idText
	})
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
// NodeID. It never blocks.
func (h *Hub) Observe(ev Event) {
	h.metrics.watch.WithLabelValues(ev.ID.Cluster, string(ev.Type)).Inc()
	h.mu.Lock()
	n := h.nodes[ev.ID]
	if n == nil {
		h.mu.Unlock()
		return
	}
	if ev.ResourceVersion != "" && ev.ResourceVersion == n.appliedRV {
		h.metrics.echoes.WithLabelValues(ev.ID.Cluster).Inc()
	}
	if n.pendingAt.IsZero() {
		n.pendingAt = ev.ObservedAt
	}
	if ev.UID != "" {
		n.uid = ev.UID
	}
	h.mu.Unlock()
	h.queue.Add(ev.ID)
}

// ClusterChanged implements Sink: it records the cluster's health; a new
// sync generation enqueues every NodeID of the cluster (first apply, or
// catch-up after a disconnect).
func (h *Hub) ClusterChanged(ch ClusterHealth) {
	up := 0.0
	if ch.State == ClusterSynced || ch.State == ClusterDegraded {
		up = 1
	}
	h.mu.Lock()
	if ch.State == ClusterRemoved {
		delete(h.clusters, ch.Cluster)
		h.mu.Unlock()
		h.metrics.clusterUp.DeleteLabelValues(ch.Cluster)
		h.markDirty()
		return
	}
	h.metrics.clusterUp.WithLabelValues(ch.Cluster).Set(up)
	cs := h.clusters[ch.Cluster]
	if cs == nil {
		cs = &clusterState{}
		h.clusters[ch.Cluster] = cs
	}
	cs.health = ch
	var ids []NodeID
	if ch.Generation > cs.lastGen {
		// After a disconnect the watch cache may still be stale: the
		// catch-up pass reads from the apiserver.
		catchUp := cs.lastGen > 0
		cs.lastGen = ch.Generation
		ids = h.clusterIDsLocked(ch.Cluster)
		if catchUp {
			for _, id := range ids {
				if n := h.nodes[id]; n != nil {
					n.confirm = true
				}
			}
		}
	}
	h.mu.Unlock()
	for _, id := range ids {
		h.queue.Add(id)
	}
	h.markDirty()
}

func (h *Hub) clusterIDsLocked(cluster string) []NodeID {
	var ids []NodeID
	for _, id := range h.order {
		if id.Cluster == cluster {
			ids = append(ids, id)
		}
	}
	return ids
}

// RepairNow asks for an immediate repair of one NodeID, overriding warn-only
// and a paused cluster for this one repair.
func (h *Hub) RepairNow(id NodeID) error {
	h.mu.Lock()
	n := h.nodes[id]
	_, desired := h.desired[id]
	if n == nil || !desired {
		h.mu.Unlock()
		return fmt.Errorf("repair %s: %w", id, ErrUnknownNode)
	}
	n.manual = true
	n.backoffTill = time.Time{}
	if n.pendingAt.IsZero() {
		n.pendingAt = h.opts.Now()
	}
	h.appendTimelineLocked(n, StepManual, "", h.opts.Now())
	h.mu.Unlock()
	h.queue.Add(id)
	h.markDirty()
	return nil
}

// PauseCluster pauses or resumes repairs on one cluster. Resuming enqueues
// every NodeID of the cluster.
func (h *Hub) PauseCluster(cluster string, paused bool) {
	h.mu.Lock()
	cs := h.clusters[cluster]
	if cs == nil {
		cs = &clusterState{health: ClusterHealth{Cluster: cluster, State: ClusterConnecting}}
		h.clusters[cluster] = cs
	}
	cs.paused = paused
	ids := h.clusterIDsLocked(cluster)
	h.mu.Unlock()
	if !paused {
		for _, id := range ids {
			h.queue.Add(id)
		}
	}
	h.markDirty()
}

// SetApplicationPolicy overrides the policy of one application at runtime
// ("" removes the override). Going back to repair enqueues its NodeIDs.
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
	h.mu.Unlock()
	for _, id := range ids {
		h.queue.Add(id)
	}
	h.markDirty()
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
			for h.processNext(workCtx) {
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
	h.publish() // a last snapshot
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
	ids := append([]NodeID(nil), h.order...)
	h.mu.Unlock()
	for _, id := range ids {
		h.queue.Add(id)
	}
}

// Health returns the last health a cluster reported, without building a
// snapshot (readiness probes call it often).
func (h *Hub) Health(cluster string) (ClusterHealth, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cs, ok := h.clusters[cluster]
	if !ok {
		return ClusterHealth{}, false
	}
	return cs.health, true
}

// Running reports whether Run is running its workers.
func (h *Hub) Running() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.running && !h.queue.ShuttingDown()
}

// QueueLen returns the number of NodeIDs waiting.
func (h *Hub) QueueLen() int { return h.queue.Len() }

func (h *Hub) processNext(ctx context.Context) bool {
	id, shutdown := h.queue.Get()
	if shutdown {
		return false
	}
	defer h.queue.Done(id)
	h.metrics.reconciles.Inc()
	h.reconcile(ctx, id)
	return true
}

// markDirty asks the publisher for a new snapshot.
func (h *Hub) markDirty() {
	select {
	case h.dirty <- struct{}{}:
	default:
	}
}

// Subscribe returns a channel that receives the latest snapshot after every
// change (at most 10 per second by default). A slow subscriber only misses
// intermediate snapshots: the channel holds the latest one. Call cancel to
// unsubscribe.
func (h *Hub) Subscribe() (<-chan *Snapshot, func()) {
	ch := make(chan *Snapshot, 1)
	h.mu.Lock()
	id := h.nextSub
	h.nextSub++
	h.subs[id] = ch
	latest := h.latest
	h.mu.Unlock()
	if latest != nil {
		ch <- latest
	}
	h.markDirty()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs, id)
		h.mu.Unlock()
	}
}

func (h *Hub) publishLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.dirty:
		}
		h.publish()
		t := time.NewTimer(h.opts.SnapshotInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (h *Hub) publish() {
	s := h.Snapshot()
	h.mu.Lock()
	h.latest = s
	subs := make([]chan *Snapshot, 0, len(h.subs))
	for _, ch := range h.subs {
		subs = append(subs, ch)
	}
	h.mu.Unlock()
	for _, ch := range subs {
		select {
		case <-ch:
		default:
		}
		select {
		case ch <- s:
		default:
		}
	}
}

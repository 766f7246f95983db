package hub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/conc"
	"k8s.io/client-go/util/workqueue"

	"github.com/driftwatch/driftwatch/internal/pack"
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
	// most a tenth of the time.
	SnapshotInterval time.Duration
	// TimelineLength bounds each NodeID's timeline. Default 32.
	TimelineLength int
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
// The Hub holds the desired state and the loop's own bookkeeping behind one
// lock (mu); what users see lives in a separate status store with its own
// lock. Backends are called with no lock held.
type Hub struct {
	opts  Options
	log   *slog.Logger
	queue workqueue.TypedRateLimitingInterface[NodeID]
	// writeQ holds the writes workers handed off (see writeQueue).
	writeQ  *writeQueue
	metrics *metrics
	status  *store

	mu       sync.Mutex
	backends Backends
	// nodes holds one record per NodeID the hub wants, decommissions or
	// remembers applying (see node), by nodeKey.
	nodes     *idIndex[*node]
	clusters  map[string]*clusterLoop
	appPolicy map[string]Policy
	holds     map[HoldTarget]Hold
	// seq numbers intent changes (see intentView); pauses, appPolicySeq
	// and holdSeq hold the number of the change that set each switch.
	// Pauses are kept by cluster id apart from the cluster's loop state,
	// so a cluster forgotten and discovered again is still paused.
	seq          uint64
	pauses       map[string]uint64
	appPolicySeq map[string]uint64
	holdSeq      map[HoldTarget]uint64
	// writes are the writes the gate let through that have not returned,
	// by NodeID (a NodeID has one pass at a time).
	writes map[NodeID]*inflight
	// orphans are the objects found carrying our marks that nothing
	// wants or remembers, by cluster.
	orphans map[string]map[NodeID]SpecRef
	// clusterPolicy is each cluster's default policy, for its orphans.
	clusterPolicy map[string]Policy
	// scans are clusters waiting for an orphan scan.
	scans   map[string]bool
	scanNow chan struct{}
	running bool
	// kept are the applications of DesiredOptions.Keep of the last
	// change of the whole desired state.
	kept []string
	// dicts pack the bodies of the desired specs, one dictionary per kind
	// (see pack).
	dicts pack.Dicts[Kind]
}

// pack packs the body of a spec the hub keeps against its kind's
// dictionary: the desired objects of a kind look alike, so a body of
// several hundred bytes packs to a few dozen. The backends get the body
// back (pass.desired), and the snapshots' specs read it with JSON. batches
// hold the Batch of each kind packed in one change of the desired state
// (the dictionaries only unpack in between).
func (h *Hub) pack(s *NodeSpec, batches map[Kind]*pack.Batch) {
	if len(s.Body) == 0 {
		return
	}
	b := batches[s.Kind]
	if b == nil {
		b = h.dicts.For(s.Kind, s.Body).Batch()
		batches[s.Kind] = b
	}
	s.packed, s.dict, s.Body = b.Pack(s.Body), b.Dict(), nil
}

// node is everything the loop keeps about one NodeID (guarded by Hub.mu),
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

// of returns the spec the NodeID is managed by: the desired one, else the
// decommissioned one.
func (n *node) of() *NodeSpec {
	if n.spec != nil {
		return n.spec
	}
	return n.dec.spec
}

// nodeForLocked returns the record of a NodeID, creating it if needed; a
// record that was not managed gets fresh loop bookkeeping. The caller sets
// the record's spec or decommission before it releases h.mu (nodeKey).
func (h *Hub) nodeForLocked(id NodeID) *node {
	n := h.nodes.at(id)
	if n == nil {
		n = &node{}
		h.nodes.put(id, n)
	}
	if !n.managed() {
		n.nodeLoop = nodeLoop{}
	}
	return n
}

// loopLocked returns the loop bookkeeping of a managed NodeID, or nil.
func (h *Hub) loopLocked(id NodeID) *nodeLoop {
	n := h.nodes.at(id)
	if !n.managed() {
		return nil
	}
	return &n.nodeLoop
}

// decommission is a NodeID whose application left the config.
type decommission struct {
	spec  *NodeSpec
	since time.Time
}

// nodeLoop is the loop's bookkeeping of one NodeID (guarded by Hub.mu).
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
}

// nodeRepairs is the part of a NodeID's loop bookkeeping that only drift
// and repairs set (guarded by Hub.mu).
type nodeRepairs struct {
	// recent are recent repair times (fight detection); fights counts
	// backoffs in a row; backoffTill ends the current one.
	recent      []time.Time
	fights      int
	backoffTill time.Time
	// fight is who undoes the repairs, and the contest shown.
	fight fightState
}

// repairs returns the NodeID's repair bookkeeping, allocating it on first
// use; readers that must not allocate check n.rep for nil instead.
func (n *nodeLoop) repairs() *nodeRepairs {
	if n.rep == nil {
		n.rep = &nodeRepairs{}
	}
	return n.rep
}

// clusterLoop is the loop's view of one cluster (guarded by Hub.mu).
type clusterLoop struct {
	state   ClusterState
	ready   bool
	lastGen int64
	lastSeq int64
	// parked are NodeIDs a worker met while the cluster was not ready:
	// they are enqueued again the moment it becomes ready, so nothing
	// waits for the periodic resync.
	parked map[NodeID]struct{}
}

// New returns a hub. Call SetBackends before Run.
func New(opts Options) *Hub {
	opts = opts.withDefaults()
	h := &Hub{
		opts:          opts,
		log:           opts.Logger,
		queue:         newQueue(opts),
		writeQ:        newWriteQueue(opts.Writers),
		metrics:       newMetrics(),
		nodes:         newIDIndex(nodeKey),
		clusters:      make(map[string]*clusterLoop),
		appPolicy:     make(map[string]Policy),
		holds:         make(map[HoldTarget]Hold),
		pauses:        make(map[string]uint64),
		holdSeq:       make(map[HoldTarget]uint64),
		writes:        make(map[NodeID]*inflight),
		appPolicySeq:  make(map[string]uint64),
		orphans:       make(map[string]map[NodeID]SpecRef),
		clusterPolicy: make(map[string]Policy),
		scans:         make(map[string]bool),
		scanNow:       make(chan struct{}, 1),
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

// DesiredOptions tune a desired-state change.
type DesiredOptions struct {
	// AllowPrune lets the change decommission every managed object of a
	// cluster, or more than Options.PruneLimit objects at once.
	AllowPrune bool
	// Forget lists clusters the change stops managing (removed from the
	// config): their NodeIDs are dropped, never decommissioned, and do not
	// count for the prune guard. Nothing is forgotten when the guard
	// refuses the change.
	Forget []string
	// Only, when not nil, limits the change to these clusters: the desired
	// state, decommissions and applied records of every other cluster are
	// left as they are, neither judged by the prune guard nor
	// decommissioned. A start uses it for the clusters it knows so far, so
	// what was applied on clusters that discovery (Cluster API) or a
	// Terraform workspace produces later is judged when they appear.
	Only []string
	// Keep lists the applications (manifest sources) whose desired state
	// is unknown this time: a source that failed to render. Their NodeIDs
	// desired now stay desired with their current (last good) spec, and
	// what an earlier run applied for them is neither decommissioned nor
	// judged by the prune guard. While any application is kept, orphans
	// are not pruned: the kept sources' objects cannot be told from them.
	// A change of the whole desired state (ReplaceDesired) replaces the
	// hub's list; nil keeps none. A change of one cluster keeps its
	// NodeIDs of these applications and leaves the hub's list as it is.
	Keep []string
}

// ErrPruneRefused is wrapped by the error of a desired-state change that the
// prune guard refused.
var ErrPruneRefused = errors.New("prune refused")

// PruneCount is how many objects a change would decommission on a cluster.
type PruneCount struct {
	Cluster  string
	Removing int
	Managed  int
}

// PruneRefusedError says why a desired-state change was refused as a whole:
// it would decommission every managed object of a cluster that has some, or
// more than the limit at once.
type PruneRefusedError struct {
	Total    int
	Limit    int
	Clusters []PruneCount
}

// Error lists the counts per cluster and how to confirm.
func (e *PruneRefusedError) Error() string {
	var parts []string
	for _, c := range e.Clusters {
		p := fmt.Sprintf("cluster %q: %d of %d managed objects", c.Cluster, c.Removing, c.Managed)
		if c.Removing == c.Managed {
			p += " (all of them)"
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("refusing to prune %d objects (limit %d, or every object of a cluster): %s; nothing was changed; "+
		"if this is intended, confirm with `driftwatch reload --allow-prune` (or POST /api/v1/reload?allowPrune=true)",
		e.Total, e.Limit, strings.Join(parts, "; "))
}

// Unwrap makes errors.Is(err, ErrPruneRefused) hold.
func (e *PruneRefusedError) Unwrap() error { return ErrPruneRefused }

// SetDesired replaces the whole desired state with no prune guard (tests,
// tools). Anything acting on user input uses ReplaceDesired.
func (h *Hub) SetDesired(specs []NodeSpec) (changed, removed []NodeID) {
	changed, removed, _ = h.ReplaceDesired(specs, DesiredOptions{AllowPrune: true})
	return changed, removed
}

// SetDesiredCluster replaces the desired state of one cluster with no prune
// guard (tests, tools).
func (h *Hub) SetDesiredCluster(cluster string, specs []NodeSpec) (changed, removed []NodeID) {
	changed, removed, _ = h.ReplaceDesiredCluster(cluster, specs, DesiredOptions{AllowPrune: true})
	return changed, removed
}

// ReplaceDesired replaces the whole desired state. NodeIDs that are new or
// whose spec changed are enqueued; NodeIDs that left, and NodeIDs an earlier
// run applied that the new state no longer has (an application removed
// while the hub was down), are decommissioned. Unless opts.AllowPrune, a
// change that would decommission every managed object of a cluster, or more
// than PruneLimit objects, is refused as a whole with a *PruneRefusedError
// and changes nothing.
func (h *Hub) ReplaceDesired(specs []NodeSpec, opts DesiredOptions) (changed, removed []NodeID, err error) {
	return h.setDesired(specs, func(NodeID) bool { return true }, opts, true)
}

// ReplaceDesiredCluster is ReplaceDesired for one cluster's NodeIDs only.
func (h *Hub) ReplaceDesiredCluster(cluster string, specs []NodeSpec, opts DesiredOptions) (changed, removed []NodeID, err error) {
	return h.setDesired(specs, func(id NodeID) bool { return id.Cluster == cluster }, opts, false)
}

// ForgetCluster stops managing a cluster: its desired state, pending
// decommissions and status are dropped without touching its objects.
// Removing a cluster from the config means "stop managing it", never
// "delete its objects". A worker in the middle of a pass over one of its
// NodeIDs finds it gone and stops.
func (h *Hub) ForgetCluster(cluster string) {
	gone := func() []NodeID {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.forgetClusterLocked(cluster)
	}()
	h.forgetRecords(gone)
}

// forgetClusterLocked drops a cluster's desired state, decommissions,
// applied records and status; it returns the NodeIDs whose durable records
// must be deleted (after the lock is released).
func (h *Hub) forgetClusterLocked(cluster string) []NodeID {
	var ids []NodeID
	for id, n := range h.nodes.all() {
		if id.Cluster != cluster {
			continue
		}
		if n.dec != nil || n.applied != nil {
			ids = append(ids, id)
		}
		h.nodes.del(id)
	}
	delete(h.clusters, cluster)
	delete(h.orphans, cluster)
	delete(h.scans, cluster)
	h.status.forgetCluster(cluster)
	return ids
}

// forgetRecords deletes the durable records of forgotten NodeIDs.
func (h *Hub) forgetRecords(ids []NodeID) {
	for _, id := range ids {
		h.forgetApplied(id)
	}
}

// setDesired replaces the desired state of the NodeIDs in scope; whole is
// set for a change of the whole desired state, whose Keep list replaces
// the hub's (see DesiredOptions.Keep).
func (h *Hub) setDesired(specs []NodeSpec, scope func(NodeID) bool, opts DesiredOptions, whole bool) (changed, removed []NodeID, err error) {
	now := h.opts.Now()
	next := make(map[NodeID]*NodeSpec, len(specs))
	batches := make(map[Kind]*pack.Batch)
	for i := range specs {
		s := specs[i]
		h.pack(&s, batches)
		next[s.ID] = &s
	}
	if opts.Only != nil {
		inner, only := scope, make(map[string]bool, len(opts.Only))
		for _, c := range opts.Only {
			only[c] = true
		}
		scope = func(id NodeID) bool { return inner(id) && only[id.Cluster] }
	}
	if len(opts.Forget) > 0 {
		inner := scope
		scope = func(id NodeID) bool { return inner(id) && !slices.Contains(opts.Forget, id.Cluster) }
	}
	var forgotten, revived []NodeID
	var records []DecommissionRecord
	func() {
		h.mu.Lock()
		defer h.mu.Unlock() // released even if something below panics
		// What leaves: desired NodeIDs in scope, plus what an earlier run
		// applied and nothing wants any more. A kept application's
		// NodeIDs stay as they are.
		leaving := make(map[NodeID]*NodeSpec)
		for id, n := range h.nodes.all() {
			if !scope(id) || next[id] != nil {
				continue
			}
			switch {
			case n.spec != nil && slices.Contains(opts.Keep, n.spec.Application):
				next[id] = n.spec
			case n.spec != nil:
				leaving[id] = n.spec
			case n.dec == nil && n.applied != nil && !slices.Contains(opts.Keep, n.applied.Application):
				rs := RefOf(*n.applied).Spec()
				leaving[id] = &rs
			}
		}
		if !opts.AllowPrune {
			if refused := h.guardLocked(leaving, scope); refused != nil {
				err = refused
				return
			}
		}
		for _, c := range opts.Forget {
			forgotten = append(forgotten, h.forgetClusterLocked(c)...)
		}
		if whole {
			h.kept = slices.Clone(opts.Keep)
		}
		for id, s := range next {
			n := h.nodeForLocked(id)
			if old := n.spec; old == nil || old.Hash != s.Hash || old.Policy != s.Policy || old.Note != s.Note || old.Ignore.key() != s.Ignore.key() {
				changed = append(changed, id)
				if old != nil {
					n.resetFight() // what was fought over may be ignored now
				}
			} else if old != s && old.Revision != s.Revision {
				// The same desired state from a later revision: the
				// object keeps the revision that last changed it.
				s.Revision = old.Revision
			}
			n.spec = s
			if n.dec != nil {
				revived = append(revived, id)
				n.dec = nil
			}
			h.status.track(s, false, now)
		}
		records = make([]DecommissionRecord, 0, len(leaving))
		for id, s := range leaving {
			removed = append(removed, id)
			n := h.nodeForLocked(id)
			n.spec = nil
			n.dec = &decommission{spec: s, since: now}
			h.status.track(s, true, now)
			records = append(records, DecommissionRecord{Ref: RefOf(*s), Since: now})
		}
	}()
	if err != nil {
		return nil, nil, err
	}
	h.forgetRecords(forgotten)
	if h.opts.Intent != nil {
		// Wanted again: a pending decommission ends and is forgotten, so
		// a restart never resumes it.
		for _, id := range revived {
			if err := h.opts.Intent.DeleteDecommission(id); err != nil {
				h.log.Error("forget decommission", "node", id.String(), "err", err)
			}
		}
		for _, r := range records {
			if err := h.opts.Intent.PutDecommission(r); err != nil {
				h.log.Error("record decommission", "node", r.Ref.ID.String(), "err", err)
			}
		}
	}
	sortIDs(changed)
	sortIDs(removed)
	orderIDs(changed, func(id NodeID) uint8 {
		if s := next[id]; s != nil {
			return s.Order
		}
		return 0
	})
	for _, id := range changed {
		h.queue.Add(id)
	}
	for _, id := range removed {
		h.queue.Add(id)
	}
	return changed, removed, nil
}

// guardLocked refuses a change that would decommission every managed object
// of a cluster that has some, or more than PruneLimit objects at once.
func (h *Hub) guardLocked(leaving map[NodeID]*NodeSpec, scope func(NodeID) bool) *PruneRefusedError {
	if len(leaving) == 0 {
		return nil
	}
	managed := make(map[string]int)
	for id, n := range h.nodes.all() {
		if scope(id) && (n.spec != nil || (n.dec == nil && n.applied != nil)) {
			managed[id.Cluster]++
		}
	}
	removing := make(map[string]int)
	for id := range leaving {
		removing[id.Cluster]++
	}
	e := &PruneRefusedError{Total: len(leaving), Limit: h.opts.PruneLimit}
	all := false
	for c, n := range removing {
		e.Clusters = append(e.Clusters, PruneCount{Cluster: c, Removing: n, Managed: managed[c]})
		if n == managed[c] {
			all = true
		}
	}
	if !all && len(leaving) <= h.opts.PruneLimit {
		return nil
	}
	slices.SortFunc(e.Clusters, func(a, b PruneCount) int { return strings.Compare(a.Cluster, b.Cluster) })
	return e
}

func sortIDs(ids []NodeID) {
	slices.SortFunc(ids, func(a, b NodeID) int { return strings.Compare(a.String(), b.String()) })
}

// RecordedClusters returns, sorted, the clusters the hub has records of
// (desired state, decommissions, or what an earlier run applied).
func (h *Hub) RecordedClusters() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := make(map[string]bool)
	for id := range h.nodes.all() {
		seen[id.Cluster] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// Desired returns the desired spec of a NodeID, with its Body.
func (h *Hub) Desired(id NodeID) (NodeSpec, bool) {
	h.mu.Lock()
	var spec *NodeSpec
	if n := h.nodes.at(id); n != nil {
		spec = n.spec
	}
	h.mu.Unlock()
	if spec == nil {
		return NodeSpec{}, false
	}
	s, err := spec.unpacked()
	if err != nil {
		return *spec, true // its JSON and Object report the error
	}
	return s, true
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
		h.queue.Add(ev.ID)
	}
}

// ClusterChanged implements Sink: it records a cluster's health. A report
// older than one already applied (Seq) is dropped, so health never goes
// backwards. A new sync generation enqueues every NodeID of the cluster
// (first apply, or catch-up after a disconnect, read fresh); becoming ready
// also releases the NodeIDs workers parked while it was not.
func (h *Hub) ClusterChanged(ch ClusterHealth) {
	for _, id := range h.clusterChanged(ch) {
		h.queue.Add(id)
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
		if h.pauses[ch.Cluster] != 0 {
			// A cluster forgotten (or removed) and back is still
			// paused: the pause is intent, not cluster state.
			h.status.paused(ch.Cluster, true)
		}
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

func (h *Hub) clusterIDsLocked(cluster string) []NodeID {
	var ids []NodeID
	for id, n := range h.nodes.all() {
		if id.Cluster == cluster && n.managed() {
			ids = append(ids, id)
		}
	}
	sortIDs(ids)
	orderIDs(ids, func(id NodeID) uint8 {
		if n := h.nodes.at(id); n != nil && n.spec != nil {
			return n.spec.Order
		}
		return 0
	})
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

// RepairNow asks for an immediate repair of one NodeID, overriding warn-only,
// a pause or a hold for this one repair; a pause, hold or warn override set
// after the request wins over it.
func (h *Hub) RepairNow(id NodeID) error {
	now := h.opts.Now()
	known := func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		rec := h.nodes.at(id)
		if rec == nil || rec.spec == nil {
			return false
		}
		n := &rec.nodeLoop
		n.manual = h.nextSeqLocked()
		if n.rep != nil {
			n.rep.backoffTill = time.Time{}
		}
		if n.pendingAt.IsZero() {
			n.pendingAt = now
		}
		return true
	}()
	if !known {
		return fmt.Errorf("repair %s: %w", id, ErrUnknownNode)
	}
	h.status.step(id, StepManual, "", now)
	h.queue.Add(id)
	return nil
}

// PauseCluster pauses or resumes repairs on one cluster. Pausing returns
// once no write on the cluster can still happen: writes already let through
// have finished, or were cancelled after Options.IntentWait. Resuming
// enqueues every NodeID of the cluster. With an intent store the pause
// survives a restart; an error means it could not be recorded (the pause
// still holds in this run).
func (h *Hub) PauseCluster(cluster string, paused bool) error {
	var ids []NodeID
	var ws []*inflight
	func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if paused == (h.pauses[cluster] != 0) {
			return
		}
		h.setPausedLocked(cluster, paused)
		if !paused {
			ids = h.clusterIDsLocked(cluster)
		}
		ws = h.writesLocked(func(id NodeID, _ *inflight) bool { return id.Cluster == cluster })
	}()
	h.drain(ws)
	for _, id := range ids {
		h.queue.Add(id)
	}
	if h.opts.Intent != nil {
		if err := h.opts.Intent.SetPaused(cluster, paused); err != nil {
			return fmt.Errorf("pause cluster %q: record: %w", cluster, err)
		}
	}
	return nil
}

// setPausedLocked records a cluster's pause. Callers hold h.mu.
func (h *Hub) setPausedLocked(cluster string, paused bool) {
	if paused {
		h.pauses[cluster] = h.nextSeqLocked()
	} else {
		delete(h.pauses, cluster)
	}
	h.status.paused(cluster, paused)
}

// SetApplicationPolicy overrides the policy of one application at runtime
// ("" removes the override). Every NodeID of the application is enqueued.
// Switching to warn returns once no repair or prune of the application can
// still happen. With an intent store the override survives a restart.
func (h *Hub) SetApplicationPolicy(app string, p Policy) error {
	var ids []NodeID
	var ws []*inflight
	func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.setAppPolicyLocked(app, p)
		for id, n := range h.nodes.all() {
			if n.spec != nil && n.spec.Application == app {
				ids = append(ids, id)
			}
		}
		h.status.appPolicies(h.appPolicy)
		if p == PolicyWarn {
			ws = h.writesLocked(func(_ NodeID, w *inflight) bool { return w.app == app })
		}
	}()
	h.drain(ws)
	for _, id := range ids {
		h.queue.Add(id)
	}
	if h.opts.Intent != nil {
		if err := h.opts.Intent.SetPolicy(app, p); err != nil {
			return fmt.Errorf("policy of application %q: record: %w", app, err)
		}
	}
	return nil
}

// setAppPolicyLocked records an application's policy override ("" removes
// it). Callers hold h.mu.
func (h *Hub) setAppPolicyLocked(app string, p Policy) {
	if p == "" {
		delete(h.appPolicy, app)
		delete(h.appPolicySeq, app)
		return
	}
	h.appPolicy[app] = p
	h.appPolicySeq[app] = h.nextSeqLocked()
}

// MaxHoldTTL is the default longest hold: a hold is for an incident, and
// one forgotten must not stop repairs for good.
const MaxHoldTTL = 7 * 24 * time.Hour

// Hold stops repairs (and prunes) of a NodeID, an application or a cluster
// for ttl, with a reason: drift is still detected and shown as held. A hold
// on the same target is replaced. It expires by itself; with an intent
// store it survives a restart.
func (h *Hub) Hold(t HoldTarget, ttl time.Duration, reason string) (Hold, error) {
	if err := t.Valid(); err != nil {
		return Hold{}, err
	}
	if ttl <= 0 {
		return Hold{}, fmt.Errorf("hold %s: the duration must be positive", t)
	}
	if ttl > h.opts.MaxHoldTTL {
		return Hold{}, fmt.Errorf("hold %s: the duration %s is longer than the longest hold, %s", t, ttl, h.opts.MaxHoldTTL)
	}
	if strings.TrimSpace(reason) == "" {
		return Hold{}, fmt.Errorf("hold %s: a reason is required", t)
	}
	now := h.opts.Now()
	hd := Hold{Target: t, Reason: reason, Since: now, Until: now.Add(ttl)}
	var ws []*inflight
	func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.holds[t] = hd
		h.holdSeq[t] = h.nextSeqLocked()
		h.status.setHolds(h.holdsLocked())
		ws = h.writesLocked(func(id NodeID, w *inflight) bool { return covers(t, id, w.app) })
	}()
	h.drain(ws)
	if h.opts.Intent != nil {
		if err := h.opts.Intent.PutHold(hd); err != nil {
			return hd, fmt.Errorf("hold %s: record: %w", t, err)
		}
	}
	return hd, nil
}

// ReleaseHold ends a hold early and re-checks what it covered.
func (h *Hub) ReleaseHold(t HoldTarget) error {
	var ids []NodeID
	ok := false
	func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		_, ok = h.holds[t]
		delete(h.holds, t)
		delete(h.holdSeq, t)
		h.status.setHolds(h.holdsLocked())
		ids = h.heldIDsLocked(t)
	}()
	if !ok {
		return fmt.Errorf("release %s: no such hold", t)
	}
	for _, id := range ids {
		h.queue.Add(id)
	}
	if h.opts.Intent != nil {
		if err := h.opts.Intent.DeleteHold(t); err != nil {
			return fmt.Errorf("release %s: record: %w", t, err)
		}
	}
	return nil
}

func (h *Hub) holdsLocked() []Hold {
	out := make([]Hold, 0, len(h.holds))
	for _, hd := range h.holds {
		out = append(out, hd)
	}
	slices.SortFunc(out, func(a, b Hold) int { return strings.Compare(a.Target.String(), b.Target.String()) })
	return out
}

// heldIDsLocked lists the NodeIDs a hold target covers.
func (h *Hub) heldIDsLocked(t HoldTarget) []NodeID {
	var ids []NodeID
	for id, n := range h.nodes.all() {
		if n.managed() && covers(t, id, n.of().Application) {
			ids = append(ids, id)
		}
	}
	return ids
}

func covers(t HoldTarget, id NodeID, app string) bool {
	switch t.Scope {
	case HoldNode:
		return t.Name == id.String()
	case HoldApplication:
		return t.Name == app
	case HoldCluster:
		return t.Name == id.Cluster
	}
	return false
}

// holdForLocked returns the active hold covering a NodeID, if any; expired
// holds are dropped and returned for deletion from the intent store.
func (h *Hub) holdForLocked(id NodeID, app string, now time.Time) (*Hold, []HoldTarget) {
	var expired []HoldTarget
	var found *Hold
	for _, t := range []HoldTarget{{HoldNode, id.String()}, {HoldApplication, app}, {HoldCluster, id.Cluster}} {
		hd, ok := h.holds[t]
		if !ok {
			continue
		}
		if !hd.Active(now) {
			delete(h.holds, t)
			delete(h.holdSeq, t)
			expired = append(expired, t)
			continue
		}
		if found == nil || hd.Until.After(found.Until) {
			c := hd
			found = &c
		}
	}
	if len(expired) > 0 {
		h.status.setHolds(h.holdsLocked())
	}
	return found, expired
}

// LoadIntent restores what the intent store remembers: pauses, policy
// overrides, holds, pending decommissions and the specs an earlier run
// applied. Call it once, before the first ReplaceDesired and Run: the first
// ReplaceDesired then decommissions (guarded) what was applied before and is
// no longer wanted.
func (h *Hub) LoadIntent() error {
	if h.opts.Intent == nil {
		return nil
	}
	in, err := h.opts.Intent.Load()
	if err != nil {
		return fmt.Errorf("load intent: %w", err)
	}
	now := h.opts.Now()
	func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for c, p := range in.Paused {
			if p {
				h.setPausedLocked(c, true)
			}
		}
		for app, p := range in.Policies {
			h.setAppPolicyLocked(app, p)
		}
		h.status.appPolicies(h.appPolicy)
		for _, hd := range in.Holds {
			if hd.Active(now) {
				h.holds[hd.Target] = hd
				h.holdSeq[hd.Target] = h.nextSeqLocked()
			}
		}
		h.status.setHolds(h.holdsLocked())
		for id, ref := range in.Applied {
			rs := ref.Spec()
			rs.ID = id // the key (the store checks they match)
			if n := h.nodes.at(id); n != nil {
				n.applied = &rs
			} else {
				h.nodes.put(id, &node{applied: &rs})
			}
		}
		for _, d := range in.Decommissions {
			s := d.Ref.Spec()
			n := h.nodeForLocked(s.ID)
			n.spec = nil
			n.dec = &decommission{spec: &s, since: d.Since}
			h.status.track(&s, true, now)
		}
	}()
	return nil
}

// noteApplied records that spec is what the object now carries. The record
// holds the spec itself (shared and immutable), not a copy of its fields; a
// NodeID no longer managed (its cluster forgotten mid-pass) is not recorded.
func (h *Hub) noteApplied(spec *NodeSpec) {
	ref := RefOf(*spec)
	h.mu.Lock()
	n := h.nodes.at(spec.ID)
	if !n.managed() || n.applied == spec || (n.applied != nil && RefOf(*n.applied) == ref) {
		h.mu.Unlock()
		return
	}
	n.applied = spec
	h.mu.Unlock()
	if h.opts.Intent != nil {
		if err := h.opts.Intent.PutApplied(ref); err != nil {
			h.log.Error("record applied spec", "node", spec.ID.String(), "err", err)
		}
	}
}

// unnoteApplied takes back the applied record noteApplied wrote ahead of a
// first apply that then failed: the NodeID has no applied record again.
func (h *Hub) unnoteApplied(spec *NodeSpec) {
	taken := func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		n := h.nodes.at(spec.ID)
		if !n.managed() || n.applied != spec {
			return false
		}
		n.applied = nil
		return true
	}()
	if taken && h.opts.Intent != nil {
		if err := h.opts.Intent.DeleteApplied(spec.ID); err != nil {
			h.log.Error("forget applied spec", "node", spec.ID.String(), "err", err)
		}
	}
}

// forgetApplied drops the records of a NodeID that is gone.
func (h *Hub) forgetApplied(id NodeID) {
	if h.opts.Intent == nil {
		return
	}
	if err := h.opts.Intent.DeleteApplied(id); err != nil {
		h.log.Error("forget applied spec", "node", id.String(), "err", err)
	}
	if err := h.opts.Intent.DeleteDecommission(id); err != nil {
		h.log.Error("forget decommission", "node", id.String(), "err", err)
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

	var workers, writers, wg conc.WaitGroup
	for range h.opts.Workers {
		workers.Go(func() {
			for h.processNextWorkItem(workCtx) {
			}
		})
	}
	for range h.opts.Writers {
		writers.Go(func() {
			for {
				j, cluster, ok := h.writeQ.next()
				if !ok {
					return
				}
				j(workCtx)
				h.writeQ.done(cluster)
			}
		})
	}
	pubCtx, stopPub := context.WithCancel(ctx)
	wg.Go(func() { h.supervise(pubCtx, "publish", h.publishLoop) })
	if h.opts.Resync > 0 {
		wg.Go(func() { h.supervise(ctx, "resync", h.resyncLoop) })
	}
	wg.Go(func() { h.supervise(ctx, "orphans", h.orphanLoop) })
	<-ctx.Done()
	h.queue.ShutDown()
	grace := time.AfterFunc(h.opts.ShutdownGrace, cancelWork)
	defer grace.Stop()
	stopPub()
	workers.Wait()
	// No worker hands off a write any more: the writers run what waits
	// (the gate refuses every write once the hub stops) and end.
	h.writeQ.close()
	writers.Wait()
	wg.Wait()
	h.status.publish(h.opts.Now()) // a last snapshot
	return nil
}

// loopRestartDelay is how long a background loop that panicked waits
// before it starts again (a panic that repeats does not spin).
const loopRestartDelay = time.Second

// supervise runs one of the hub's background loops until ctx ends. A panic
// in it is recovered, logged with its stack, counted
// (driftwatch_loop_panics_total) and the loop started again after
// loopRestartDelay: one bad snapshot or scan never ends publishing, the
// resync or orphan scans for the life of the hub, and never reaches Run.
func (h *Hub) supervise(ctx context.Context, name string, loop func(context.Context)) {
	for {
		if !h.runRecovered(ctx, name, loop) {
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
func (h *Hub) runRecovered(ctx context.Context, name string, loop func(context.Context)) (panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			panicked = true
			h.metrics.loopPanics.WithLabelValues(name).Inc()
			h.log.Error("hub loop panicked; restarting it", "loop", name, "err", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	loop(ctx)
	return false
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
		h.requestScanAll()
	}
}

// EnqueueAll enqueues every desired and decommissioning NodeID (the
// periodic safety-net resync).
func (h *Hub) EnqueueAll() {
	h.mu.Lock()
	ids := make([]NodeID, 0, h.nodes.len())
	for id, n := range h.nodes.all() {
		if n.managed() {
			ids = append(ids, id)
		}
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
	if h.stopping() {
		// The queue hands out what it still holds after ShutDown; a hub
		// that is stopping starts no new pass.
		h.queue.Done(id)
		return false
	}
	if !h.reconcileHandler(ctx, id) {
		h.queue.Done(id)
	}
	return true
}

// reconcileHandler runs Reconcile for one NodeID and is the one place that
// turns its outcome into queue operations: success forgets the NodeID's
// failure history (or schedules the requested re-check), an error retries
// with exponential backoff (a permission error slowly), and a panic is
// recovered, reported on the NodeID, counted, and retried like an error; the
// worker lives on (controller-runtime's reconcileHandler).
//
// A pass that must write hands the write to the writers and reports true:
// the NodeID stays in the workqueue's processing set until the writer has
// run the write and called Done.
func (h *Hub) reconcileHandler(ctx context.Context, id NodeID) (handedOff bool) {
	h.metrics.reconciles.Inc()
	defer h.recoverPass(id, &handedOff)
	res, write, err := h.reconcile(ctx, id)
	if write != nil {
		h.writeQ.submit(id.Cluster, func(ctx context.Context) { h.runWrite(ctx, id, write) })
		return true
	}
	h.requeue(id, res, err)
	return false
}

// runWrite runs a handed-off write on a writer, then does with the NodeID
// what the handler would have, and calls Done.
func (h *Hub) runWrite(ctx context.Context, id NodeID, write writeStep) {
	defer h.queue.Done(id)
	var handedOff bool
	defer h.recoverPass(id, &handedOff)
	res, err := write(ctx)
	h.requeue(id, res, err)
}

// recoverPass recovers a panic in a pass (deferred directly by the worker
// or the writer running it): reported on the NodeID, counted, and retried
// like an error; the worker or writer lives on, and the pass has handed
// nothing off.
func (h *Hub) recoverPass(id NodeID, handedOff *bool) {
	if r := recover(); r != nil {
		*handedOff = false
		h.metrics.panics.Inc()
		err := fmt.Errorf("panic: %v", r)
		h.log.Error("reconcile panicked", "node", id.String(), "err", err, "stack", string(debug.Stack()))
		now := h.opts.Now()
		h.status.step(id, StepPanic, err.Error(), now)
		h.status.setStatus(id, StatusFailed, err.Error(), now)
		h.queue.AddRateLimited(id)
	}
}

// requeue turns a pass's outcome into queue operations.
func (h *Hub) requeue(id NodeID, res Result, err error) {
	switch {
	case errors.Is(err, ErrForbidden):
		h.queue.Forget(id)
		h.queue.AddAfter(id, h.opts.ForbiddenRetry)
	case errors.Is(err, ErrUnreachable):
		h.queue.Forget(id)
		h.queue.AddAfter(id, h.opts.UnreachableRetry)
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
		start := time.Now()
		h.status.publish(h.opts.Now())
		pause := publishPause(h.opts.SnapshotInterval, time.Since(start))
		if !h.status.watched() {
			// Nobody reads the snapshots: they only refresh the
			// gauges, which scrapes read every 15 s or more.
			pause = max(pause, unwatchedPublishPause)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-h.status.joined:
			t.Stop() // a new subscriber waits for its first snapshot
		}
	}
}

// unwatchedPublishPause is the least time between publishes while nobody
// subscribes (a headless hub with no TUI or stream attached): an idle fleet
// hub's health reports would otherwise rebuild a snapshot of every NodeID
// several times a second for the gauges alone.
const unwatchedPublishPause = 2 * time.Second

// publishShare is the most of the wall time snapshot publishing may take:
// building a snapshot walks every NodeID under the store's lock, so at
// fleet scale (25,000 NodeIDs) publishing at a fixed 10 per second would
// take a large share of a core and keep workers waiting for the lock.
const publishShare = 10

// publishPause is how long the publisher waits after a publish that took
// took: at least interval, and long enough that publishing takes at most
// 1/publishShare of the time.
func publishPause(interval, took time.Duration) time.Duration {
	return max(interval, (publishShare-1)*took)
}

// requestScanAll asks for an orphan scan of every ready cluster.
func (h *Hub) requestScanAll() {
	h.mu.Lock()
	for c, cl := range h.clusters {
		if cl.ready {
			h.scans[c] = true
		}
	}
	h.mu.Unlock()
	select {
	case h.scanNow <- struct{}{}:
	default:
	}
}

// orphanLoop scans clusters for orphans when asked: after each sync
// generation and at each resync. The clusters asked for together are one
// change for the prune guard.
func (h *Hub) orphanLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.scanNow:
		}
		h.mu.Lock()
		clusters := make([]string, 0, len(h.scans))
		for c := range h.scans {
			clusters = append(clusters, c)
		}
		clear(h.scans)
		backends := h.backends
		h.mu.Unlock()
		slices.Sort(clusters)
		found := make(map[string][]SpecRef, len(clusters))
		for _, c := range clusters {
			if ctx.Err() != nil {
				return
			}
			if backends == nil {
				continue
			}
			be, ok := backends.Backend(c)
			if !ok {
				continue
			}
			lister, ok := be.(OwnedLister)
			if !ok {
				continue
			}
			callCtx, cancel := context.WithTimeout(ctx, h.opts.CallTimeout)
			refs, err := lister.ListOwned(callCtx)
			cancel()
			if err != nil {
				h.log.Warn("orphan scan", "cluster", c, "err", err)
				continue
			}
			found[c] = refs
		}
		h.scanOrphans(found)
	}
}

// SetClusterPolicy sets a cluster's default policy ("" for the hub's): the
// policy orphans found on it are judged by (a warn-only cluster never
// prunes its orphans). The desired specs carry their own policies.
func (h *Hub) SetClusterPolicy(cluster string, p Policy) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p == "" {
		delete(h.clusterPolicy, cluster)
		return
	}
	h.clusterPolicy[cluster] = p
}

// orphanPolicyLocked is the policy orphans of a cluster are judged by.
// Callers hold h.mu.
func (h *Hub) orphanPolicyLocked(cluster string) Policy {
	if p, ok := h.clusterPolicy[cluster]; ok {
		return p
	}
	return h.opts.Policy
}

// ScanOrphans takes the objects a cluster's backend found carrying our
// marks (see scanOrphans) and returns its orphans.
func (h *Hub) ScanOrphans(cluster string, refs []SpecRef) []NodeID {
	return h.scanOrphans(map[string][]SpecRef{cluster: refs})[cluster]
}

// judgeOrphans is scanOrphans's part under h.mu (released even on a
// panic): it finds the orphans, judges them and decommissions what may go.
func (h *Hub) judgeOrphans(scanned map[string][]SpecRef, now time.Time) (map[string][]NodeID, []DecommissionRecord) {
	h.mu.Lock()
	defer h.mu.Unlock()
	orphans := make(map[string]map[NodeID]SpecRef, len(scanned))
	out := make(map[string][]NodeID, len(scanned))
	reasons := make(map[string]string, len(scanned))
	var candidates []string
	total := 0
	wanted := make(map[string]int, len(scanned))
	if h.opts.PruneOrphans {
		for id, n := range h.nodes.all() {
			if n.spec != nil {
				wanted[id.Cluster]++
			}
		}
	}
	for _, cluster := range slices.Sorted(maps.Keys(scanned)) {
		if h.clusters[cluster] == nil {
			continue // forgotten meanwhile
		}
		found := make(map[NodeID]SpecRef)
		for _, r := range scanned[cluster] {
			// Wanted, decommissioned or applied before: not an orphan.
			if r.ID.Cluster != cluster || h.nodes.at(r.ID) != nil {
				continue
			}
			found[r.ID] = r
		}
		orphans[cluster] = found
		ids := slices.Collect(maps.Keys(found))
		sortIDs(ids)
		out[cluster] = ids
		reasons[cluster] = orphanShown
		if !h.opts.PruneOrphans || len(found) == 0 {
			continue
		}
		switch {
		case h.orphanPolicyLocked(cluster) == PolicyWarn:
			reasons[cluster] = orphanWarn
			h.metrics.orphanGuard.WithLabelValues("warn").Inc()
		case h.pauses[cluster] != 0:
			reasons[cluster] = orphanPaused
		case len(h.kept) > 0:
			reasons[cluster] = fmt.Sprintf(orphanKept, strings.Join(h.kept, ", "))
		case wanted[cluster] == 0:
			// The hub wants nothing here: pruning would delete every
			// object of this hub on the cluster (a lost config, a
			// wrong hub id), the case the prune guard exists for.
			reasons[cluster] = orphanAll
			h.metrics.orphanGuard.WithLabelValues("all").Inc()
			h.log.Error("orphans not pruned: they are every object of this hub on the cluster", "cluster", cluster,
				"orphans", len(found))
		default:
			candidates = append(candidates, cluster)
			total += len(found)
		}
	}
	if total > h.opts.PruneLimit {
		h.metrics.orphanGuard.WithLabelValues("limit").Inc()
		h.log.Error("orphans not pruned: more than the prune limit across the hub", "clusters", candidates,
			"orphans", total, "limit", h.opts.PruneLimit)
		for _, c := range candidates {
			reasons[c] = orphanLimit
		}
		candidates = nil
	}
	var records []DecommissionRecord
	for _, cluster := range candidates {
		found := orphans[cluster]
		for _, id := range out[cluster] {
			s := found[id].Spec()
			s.ID = id
			s.Policy = h.orphanPolicyLocked(cluster)
			n := h.nodeForLocked(id)
			n.dec = &decommission{spec: &s, since: now}
			h.status.track(&s, true, now)
			records = append(records, DecommissionRecord{Ref: found[id], Since: now})
		}
		delete(orphans, cluster)
		h.status.setOrphans(cluster, nil, "", now)
		delete(h.orphans, cluster)
	}
	for cluster, found := range orphans {
		h.orphans[cluster] = found
		h.status.setOrphans(cluster, found, reasons[cluster], now)
	}
	return out, records
}

// Reasons shown on orphans that are not pruned.
const (
	orphanShown  = "carries our label and hub id, but is in neither the config nor the state file; pruned only with hub.pruneOrphans"
	orphanWarn   = "would prune (hub.pruneOrphans): warn-only on this cluster never deletes"
	orphanAll    = "would prune (hub.pruneOrphans): refused, the hub wants nothing on this cluster: it would delete every object of this hub there"
	orphanLimit  = "would prune (hub.pruneOrphans): refused, more orphans than hub.pruneLimit across the hub"
	orphanPaused = "would prune (hub.pruneOrphans): repairs paused on this cluster"
	orphanKept   = "would prune (hub.pruneOrphans): refused while a source fails (%s): its objects cannot be told from orphans"
)

// scanOrphans takes the objects each cluster's backend found carrying our
// marks: those the hub neither wants, decommissions nor remembers applying
// are orphans. They are shown as such. With PruneOrphans they are
// decommissioned through the prune guard, the scan being one change for
// the whole hub: never on a cluster whose policy is warn-only or that is
// paused, never every object of this hub on a cluster, and nothing at all
// when the scan would prune more than PruneLimit objects across the hub
// (each refusal logged, counted and shown on the orphans). The deletes
// then pass the write gate like every prune. It returns the orphans by
// cluster.
func (h *Hub) scanOrphans(scanned map[string][]SpecRef) map[string][]NodeID {
	now := h.opts.Now()
	out, records := h.judgeOrphans(scanned, now)
	if h.opts.Intent != nil {
		for _, r := range records {
			if err := h.opts.Intent.PutDecommission(r); err != nil {
				h.log.Error("record decommission", "node", r.Ref.ID.String(), "err", err)
			}
		}
	}
	for _, r := range records {
		h.queue.Add(r.Ref.ID)
	}
	return out
}

package hub

import (
	"log/slog"
	"sync"
)

// loopState is what the loop knows, behind one lock (mu): the desired
// state with each NodeID's loop bookkeeping (nodes), the loop's view of
// each cluster, the operator intent (intents), the backends, and the writes
// the gate let through (writes). The reconciler, the gate and the Hub's
// own methods share it; backends are called with no lock held. It writes
// what users see to the status store through statusWriter only, and never
// reads it back.
type loopState struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics
	status  statusWriter
	// stopping reports whether the hub stops (the controller's queue is
	// shut down): the gate lets no write start then.
	stopping func() bool

	mu       sync.Mutex
	backends Backends
	// nodes holds one record per NodeID the hub wants, decommissions or
	// remembers applying (see node), by nodeKey.
	nodes    *idIndex[*node]
	clusters map[string]*clusterLoop
	// resyncs counts the safety-net resyncs enqueued (clusterLoop.fullPass
	// refers to them).
	resyncs uint64
	// intents is the operator intent: pauses, holds, policy overrides.
	intents
	// writes are the writes the gate let through that have not returned,
	// by NodeID (a NodeID has one pass at a time).
	writes map[NodeID]*inflight
	// kept are the applications of DesiredOptions.Keep of the last
	// change of the whole desired state.
	kept []string
	// orphans are the objects found carrying our marks that nothing
	// wants or remembers, by cluster.
	orphans map[string]map[NodeID]SpecRef
	// scans are clusters waiting for an orphan scan; scanNow wakes the
	// scanner (not guarded: a channel).
	scans   map[string]bool
	scanNow chan struct{}
}

// newLoopState returns an empty state writing statuses to status.
func newLoopState(opts Options, m *metrics, status statusWriter, stopping func() bool) *loopState {
	return &loopState{
		opts:     opts,
		log:      opts.Logger,
		metrics:  m,
		status:   status,
		stopping: stopping,
		nodes:    newIDIndex(nodeKey),
		clusters: make(map[string]*clusterLoop),
		intents:  newIntents(opts.Policy, status),
		writes:   make(map[NodeID]*inflight),
		orphans:  make(map[string]map[NodeID]SpecRef),
		scans:    make(map[string]bool),
		scanNow:  make(chan struct{}, 1),
	}
}

// nodeForLocked returns the record of a NodeID, creating it if needed; a
// record that was not managed gets fresh loop bookkeeping. The caller sets
// the record's spec or decommission before it releases l.mu (nodeKey).
func (l *loopState) nodeForLocked(id NodeID) *node {
	n := l.nodes.at(id)
	if n == nil {
		n = &node{}
		l.nodes.put(id, n)
	}
	if !n.managed() {
		n.nodeLoop = nodeLoop{}
	}
	return n
}

// loopLocked returns the loop bookkeeping of a managed NodeID, or nil.
func (l *loopState) loopLocked(id NodeID) *nodeLoop {
	n := l.nodes.at(id)
	if !n.managed() {
		return nil
	}
	return &n.nodeLoop
}

// withLoop runs fn on a managed NodeID's loop bookkeeping under l.mu (not
// at all when the NodeID is no longer managed). The lock is released even
// if fn panics.
func (l *loopState) withLoop(id NodeID, fn func(n *nodeLoop)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.loopLocked(id); n != nil {
		fn(n)
	}
}

func (l *loopState) clusterIDsLocked(cluster string) []NodeID {
	var ids []NodeID
	for id, n := range l.nodes.inCluster(cluster) {
		if n.managed() {
			ids = append(ids, id)
		}
	}
	sortIDs(ids)
	orderIDs(ids, func(id NodeID) uint8 {
		if n := l.nodes.at(id); n != nil && n.spec != nil {
			return n.spec.Order
		}
		return 0
	})
	return ids
}

// desiredChanged reports whether the spec differs from the one last
// applied to its NodeID: a write then applies a change of the desired
// state, not a repair of drift.
func (l *loopState) desiredChanged(spec *NodeSpec) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.nodes.at(spec.ID)
	return n != nil && n.applied != nil && n.applied.Hash != spec.Hash
}

// noteApplied records that spec is what the object now carries, in memory
// and in the state file. The record holds the spec itself (shared and
// immutable), not a copy of its fields; a NodeID no longer managed (its
// cluster forgotten mid-pass) is not recorded.
func (l *loopState) noteApplied(spec *NodeSpec) {
	if persist := l.markApplied(spec); persist != nil {
		persist()
	}
}

// markApplied is noteApplied in two steps: it records spec in memory now
// and returns what makes the record durable in the state file (nil when
// there is nothing to write: the record says so already, the NodeID is no
// longer managed, or the hub keeps no state file). A pass marks its first
// apply's record itself, so the recorder that writes it ahead of the apply
// (writeStep.ahead) waits for the state file's group commit alone, holding
// none of the loop's locks.
func (l *loopState) markApplied(spec *NodeSpec) (persist func()) {
	ref := RefOf(*spec)
	l.mu.Lock()
	n := l.nodes.at(spec.ID)
	if !n.managed() || n.applied == spec || (n.applied != nil && RefOf(*n.applied) == ref) {
		l.mu.Unlock()
		return nil
	}
	n.applied = spec
	l.mu.Unlock()
	if l.opts.Intent == nil {
		return nil
	}
	return func() {
		if err := l.opts.Intent.PutApplied(ref); err != nil {
			l.log.Error("record applied spec", "node", spec.ID.String(), "err", err)
		}
	}
}

// unnoteApplied takes back the applied record noteApplied wrote ahead of a
// first apply that then failed: the NodeID has no applied record again.
func (l *loopState) unnoteApplied(spec *NodeSpec) {
	taken := func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		n := l.nodes.at(spec.ID)
		if !n.managed() || n.applied != spec {
			return false
		}
		n.applied = nil
		return true
	}()
	if taken && l.opts.Intent != nil {
		if err := l.opts.Intent.DeleteApplied(spec.ID); err != nil {
			l.log.Error("forget applied spec", "node", spec.ID.String(), "err", err)
		}
	}
}

// forgetApplied drops the records of a NodeID that is gone.
func (l *loopState) forgetApplied(id NodeID) {
	if l.opts.Intent == nil {
		return
	}
	if err := l.opts.Intent.DeleteApplied(id); err != nil {
		l.log.Error("forget applied spec", "node", id.String(), "err", err)
	}
	if err := l.opts.Intent.DeleteDecommission(id); err != nil {
		l.log.Error("forget decommission", "node", id.String(), "err", err)
	}
}

// currentContest returns a copy of the NodeID's contest, nil when none.
func (l *loopState) currentContest(id NodeID) *Contest {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.loopLocked(id)
	if n == nil || n.rep == nil || n.rep.fight.contest == nil {
		return nil
	}
	c := *n.rep.fight.contest
	return &c
}

package hub

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/driftwatch/driftwatch/internal/pack"
)

// desiredStore is the Hub's public side of the desired state: replacing it
// (guarded against mass prunes), forgetting a cluster, reading a spec. It
// changes loopState's records under its lock and enqueues what changed.
type desiredStore struct {
	*loopState
	ctrl *controller
	// dicts pack the bodies of the desired specs, one dictionary per kind
	// (see pack; guarded by mu).
	dicts pack.Dicts[Kind]
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
	// count for the prune guard, and the change returns once no write on
	// them can still happen (as ForgetCluster). Nothing is forgotten when
	// the guard refuses the change.
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

func sortIDs(ids []NodeID) {
	slices.SortFunc(ids, CompareText)
}

// SetDesired replaces the whole desired state with no prune guard (tests,
// tools). Anything acting on user input uses ReplaceDesired.
func (ds *desiredStore) SetDesired(specs []NodeSpec) (changed, removed []NodeID) {
	changed, removed, _ = ds.ReplaceDesired(specs, DesiredOptions{AllowPrune: true})
	return changed, removed
}

// SetDesiredCluster replaces the desired state of one cluster with no prune
// guard (tests, tools).
func (ds *desiredStore) SetDesiredCluster(cluster string, specs []NodeSpec) (changed, removed []NodeID) {
	changed, removed, _ = ds.ReplaceDesiredCluster(cluster, specs, DesiredOptions{AllowPrune: true})
	return changed, removed
}

// ReplaceDesired replaces the whole desired state. NodeIDs that are new or
// whose spec changed are enqueued; NodeIDs that left, and NodeIDs an earlier
// run applied that the new state no longer has (an application removed
// while the hub was down), are decommissioned. Unless opts.AllowPrune, a
// change that would decommission every managed object of a cluster, or more
// than PruneLimit objects, is refused as a whole with a *PruneRefusedError
// and changes nothing.
func (ds *desiredStore) ReplaceDesired(specs []NodeSpec, opts DesiredOptions) (changed, removed []NodeID, err error) {
	return ds.setDesired(specs, func(NodeID) bool { return true }, opts, true)
}

// ReplaceDesiredCluster is ReplaceDesired for one cluster's NodeIDs only.
func (ds *desiredStore) ReplaceDesiredCluster(cluster string, specs []NodeSpec, opts DesiredOptions) (changed, removed []NodeID, err error) {
	return ds.setDesired(specs, func(id NodeID) bool { return id.Cluster == cluster }, opts, false)
}

// ForgetCluster stops managing a cluster: its desired state, pending
// decommissions and status are dropped without touching its objects.
// Removing a cluster from the config means "stop managing it", never
// "delete its objects". A worker in the middle of a pass over one of its
// NodeIDs finds it gone and stops; like a pause, ForgetCluster returns
// once no write on the cluster can still happen (writes the gate let
// through have returned, or were cancelled after Options.IntentWait).
func (ds *desiredStore) ForgetCluster(cluster string) {
	gone, ws := func() ([]NodeID, []*inflight) {
		ds.mu.Lock()
		defer ds.mu.Unlock()
		return ds.forgetClusterLocked(cluster), ds.writesLocked(func(id NodeID, _ *inflight) bool { return id.Cluster == cluster })
	}()
	ds.drain(ws)
	ds.forgetRecords(gone)
}

// forgetClusterLocked drops a cluster's desired state, decommissions,
// applied records and status; it returns the NodeIDs whose durable records
// must be deleted (after the lock is released).
func (ds *desiredStore) forgetClusterLocked(cluster string) []NodeID {
	var ids []NodeID
	for id, n := range ds.nodes.inCluster(cluster) {
		if n.dec != nil || n.applied != nil {
			ids = append(ids, id)
		}
		ds.nodes.del(id)
	}
	delete(ds.clusters, cluster)
	delete(ds.orphans, cluster)
	delete(ds.scans, cluster)
	ds.status.forgetCluster(cluster)
	return ids
}

// forgetRecords deletes the durable records of forgotten NodeIDs.
func (ds *desiredStore) forgetRecords(ids []NodeID) {
	for _, id := range ids {
		ds.forgetApplied(id)
	}
}

// setDesired replaces the desired state of the NodeIDs in scope; whole is
// set for a change of the whole desired state, whose Keep list replaces
// the hub's (see DesiredOptions.Keep).
func (ds *desiredStore) setDesired(specs []NodeSpec, scope func(NodeID) bool, opts DesiredOptions, whole bool) (changed, removed []NodeID, err error) {
	now := ds.opts.Now()
	next := make(map[NodeID]*NodeSpec, len(specs))
	batches := make(map[Kind]*pack.Batch)
	for i := range specs {
		s := specs[i]
		ds.pack(&s, batches)
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
	var draining []*inflight
	var records []DecommissionRecord
	func() {
		ds.mu.Lock()
		defer ds.mu.Unlock() // released even if something below panics
		// What leaves: desired NodeIDs in scope, plus what an earlier run
		// applied and nothing wants any more. A kept application's
		// NodeIDs stay as they are.
		leaving := make(map[NodeID]*NodeSpec)
		for id, n := range ds.nodes.all() {
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
			if refused := ds.guardLocked(leaving, scope); refused != nil {
				err = refused
				return
			}
		}
		for _, c := range opts.Forget {
			forgotten = append(forgotten, ds.forgetClusterLocked(c)...)
			draining = append(draining, ds.writesLocked(func(id NodeID, _ *inflight) bool { return id.Cluster == c })...)
		}
		if whole {
			ds.kept = slices.Clone(opts.Keep)
		}
		for id, s := range next {
			n := ds.nodeForLocked(id)
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
			ds.status.track(s, false, now)
		}
		records = make([]DecommissionRecord, 0, len(leaving))
		for id, s := range leaving {
			removed = append(removed, id)
			n := ds.nodeForLocked(id)
			n.spec = nil
			n.dec = &decommission{spec: s, since: now}
			ds.status.track(s, true, now)
			records = append(records, DecommissionRecord{Ref: RefOf(*s), Since: now})
		}
	}()
	if err != nil {
		return nil, nil, err
	}
	ds.drain(draining) // as ForgetCluster does
	ds.forgetRecords(forgotten)
	if ds.opts.Intent != nil {
		// Wanted again: a pending decommission ends and is forgotten, so
		// a restart never resumes it.
		for _, id := range revived {
			if err := ds.opts.Intent.DeleteDecommission(id); err != nil {
				ds.log.Error("forget decommission", "node", id.String(), "err", err)
			}
		}
		for _, r := range records {
			if err := ds.opts.Intent.PutDecommission(r); err != nil {
				ds.log.Error("record decommission", "node", r.Ref.ID.String(), "err", err)
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
		ds.ctrl.add(id)
	}
	for _, id := range removed {
		ds.ctrl.add(id)
	}
	return changed, removed, nil
}

// guardLocked refuses a change that would decommission every managed object
// of a cluster that has some, or more than PruneLimit objects at once.
func (ds *desiredStore) guardLocked(leaving map[NodeID]*NodeSpec, scope func(NodeID) bool) *PruneRefusedError {
	if len(leaving) == 0 {
		return nil
	}
	managed := make(map[string]int)
	for id, n := range ds.nodes.all() {
		if scope(id) && (n.spec != nil || (n.dec == nil && n.applied != nil)) {
			managed[id.Cluster]++
		}
	}
	removing := make(map[string]int)
	for id := range leaving {
		removing[id.Cluster]++
	}
	e := &PruneRefusedError{Total: len(leaving), Limit: ds.opts.PruneLimit}
	all := false
	for c, n := range removing {
		e.Clusters = append(e.Clusters, PruneCount{Cluster: c, Removing: n, Managed: managed[c]})
		if n == managed[c] {
			all = true
		}
	}
	if !all && len(leaving) <= ds.opts.PruneLimit {
		return nil
	}
	slices.SortFunc(e.Clusters, func(a, b PruneCount) int { return strings.Compare(a.Cluster, b.Cluster) })
	return e
}

// RecordedClusters returns, sorted, the clusters the hub has records of
// (desired state, decommissions, or what an earlier run applied).
func (ds *desiredStore) RecordedClusters() []string {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	return slices.Sorted(ds.nodes.clusterNames())
}

// Desired returns the desired spec of a NodeID, with its Body.
func (ds *desiredStore) Desired(id NodeID) (NodeSpec, bool) {
	ds.mu.Lock()
	var spec *NodeSpec
	if n := ds.nodes.at(id); n != nil {
		spec = n.spec
	}
	ds.mu.Unlock()
	if spec == nil {
		return NodeSpec{}, false
	}
	s, err := spec.unpacked()
	if err != nil {
		return *spec, true // its JSON and Object report the error
	}
	return s, true
}

// pack packs the body of a spec the hub keeps against its kind's
// dictionary: the desired objects of a kind look alike, so a body of
// several hundred bytes packs to a few dozen. The backends get the body
// back (pass.desired), and the snapshots' specs read it with JSON. batches
// hold the Batch of each kind packed in one change of the desired state
// (the dictionaries only unpack in between).
func (ds *desiredStore) pack(s *NodeSpec, batches map[Kind]*pack.Batch) {
	if len(s.Body) == 0 {
		return
	}
	b := batches[s.Kind]
	if b == nil {
		b = ds.dicts.For(s.Kind, s.Body).Batch()
		batches[s.Kind] = b
	}
	s.packed, s.dict, s.Body = b.Pack(s.Body), b.Dict(), nil
}

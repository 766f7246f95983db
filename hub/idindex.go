package hub

import (
	"hash/maphash"
	"iter"
	"maps"
)

// idIndex maps NodeIDs to records that know their own NodeID (key), in
// about a quarter of the memory of a map[NodeID]V: its maps are keyed by a
// 64-bit hash of the NodeID, a slot of 16 bytes instead of 56 (a NodeID is
// three strings). A record whose hash another NodeID's record already
// holds (a collision: practically never, but handled) goes to a second
// map keyed by NodeID. The records are kept per cluster, so that what
// concerns one cluster (its NodeIDs when its watches restart, its orphans,
// forgetting it) costs its own records, not the fleet's. The zero value is
// not usable: see newIDIndex. Not safe for concurrent use; its owner's
// lock guards it.
type idIndex[V comparable] struct {
	// sum hashes a NodeID (maphash with a seed of the index's own).
	sum func(NodeID) uint64
	key func(V) NodeID
	// clusters holds each cluster's records; a cluster without any has
	// no shard.
	clusters map[string]*idShard[V]
	n        int
}

// idShard is one cluster's records.
type idShard[V comparable] struct {
	byHash map[uint64]V
	// other holds the records that collided; nil when none.
	other map[NodeID]V
}

func (s *idShard[V]) len() int { return len(s.byHash) + len(s.other) }

// newIDIndex returns an empty index of records whose NodeID key returns;
// key must return the NodeID a record was put under for as long as it is
// in the index.
func newIDIndex[V comparable](key func(V) NodeID) *idIndex[V] {
	seed := maphash.MakeSeed()
	return &idIndex[V]{sum: func(id NodeID) uint64 { return maphash.Comparable(seed, id) }, key: key, clusters: make(map[string]*idShard[V])}
}

func (x *idIndex[V]) hash(id NodeID) uint64 { return x.sum(id) }

// get returns the record of id.
func (x *idIndex[V]) get(id NodeID) (V, bool) {
	s := x.clusters[id.Cluster]
	if s == nil {
		var zero V
		return zero, false
	}
	if v, ok := s.byHash[x.hash(id)]; ok && x.key(v) == id {
		return v, true
	}
	v, ok := s.other[id]
	return v, ok
}

// put adds or replaces the record of id; key(v) must be id.
func (x *idIndex[V]) put(id NodeID, v V) {
	s := x.clusters[id.Cluster]
	if s == nil {
		s = &idShard[V]{byHash: make(map[uint64]V)}
		x.clusters[id.Cluster] = s
	}
	before := s.len()
	h := x.hash(id)
	cur, taken := s.byHash[h]
	switch {
	case taken && x.key(cur) == id:
		s.byHash[h] = v
	case taken:
		if s.other == nil {
			s.other = make(map[NodeID]V)
		}
		s.other[id] = v
	default:
		if _, ok := s.other[id]; ok {
			// It collided when it came; its rival has left since.
			s.other[id] = v
			break
		}
		s.byHash[h] = v
	}
	x.n += s.len() - before
}

// del removes the record of id, if any.
func (x *idIndex[V]) del(id NodeID) {
	s := x.clusters[id.Cluster]
	if s == nil {
		return
	}
	h := x.hash(id)
	if v, ok := s.byHash[h]; ok && x.key(v) == id {
		delete(s.byHash, h)
		x.n--
	} else if _, ok := s.other[id]; ok {
		delete(s.other, id)
		x.n--
		if len(s.other) == 0 {
			s.other = nil
		}
	}
	if s.len() == 0 {
		delete(x.clusters, id.Cluster)
	}
}

// deleteFunc removes every record for which drop returns true, and
// returns how many it removed.
func (x *idIndex[V]) deleteFunc(drop func(V) bool) int {
	n := 0
	for cluster := range x.clusters {
		n += x.deleteInCluster(cluster, drop)
	}
	return n
}

// deleteInCluster removes every record of cluster for which drop returns
// true, and returns how many it removed.
func (x *idIndex[V]) deleteInCluster(cluster string, drop func(V) bool) int {
	s := x.clusters[cluster]
	if s == nil {
		return 0
	}
	n := 0
	for h, v := range s.byHash {
		if drop(v) {
			delete(s.byHash, h)
			n++
		}
	}
	for id, v := range s.other {
		if drop(v) {
			delete(s.other, id)
			n++
		}
	}
	if len(s.other) == 0 {
		s.other = nil
	}
	if s.len() == 0 {
		delete(x.clusters, cluster)
	}
	x.n -= n
	return n
}

// len returns the number of records.
func (x *idIndex[V]) len() int { return x.n }

// clusterNames yields the clusters that have records, in no particular
// order.
func (x *idIndex[V]) clusterNames() iter.Seq[string] { return maps.Keys(x.clusters) }

// all yields every record with its NodeID, in no particular order. The
// loop body may delete the record it was given (as with a map), nothing
// else.
func (x *idIndex[V]) all() iter.Seq2[NodeID, V] {
	return func(yield func(NodeID, V) bool) {
		for _, s := range x.clusters {
			if !x.yieldShard(s, yield) {
				return
			}
		}
	}
}

// inCluster yields the records of one cluster with their NodeIDs, in no
// particular order; the loop body may delete the record it was given.
func (x *idIndex[V]) inCluster(cluster string) iter.Seq2[NodeID, V] {
	return func(yield func(NodeID, V) bool) {
		if s := x.clusters[cluster]; s != nil {
			x.yieldShard(s, yield)
		}
	}
}

// yieldShard yields a shard's records; false once yield returned false.
// A shard emptied by the loop body is dropped by del, but the ranges
// over its maps go on safely (ranging a map while deleting from it).
func (x *idIndex[V]) yieldShard(s *idShard[V], yield func(NodeID, V) bool) bool {
	for _, v := range s.byHash {
		if !yield(x.key(v), v) {
			return false
		}
	}
	for id, v := range s.other {
		if !yield(id, v) {
			return false
		}
	}
	return true
}

// at returns the record of id, the zero V when there is none (as indexing
// a map does).
func (x *idIndex[V]) at(id NodeID) V {
	v, _ := x.get(id)
	return v
}

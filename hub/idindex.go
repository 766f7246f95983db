package hub

import (
	"hash/maphash"
	"iter"
)

// idIndex maps NodeIDs to records that know their own NodeID (key), in
// about a quarter of the memory of a map[NodeID]V: its map is keyed by a
// 64-bit hash of the NodeID, a slot of 16 bytes instead of 56 (a NodeID is
// three strings). A record whose hash another NodeID's record already
// holds (a collision: practically never, but handled) goes to a second
// map keyed by NodeID. The zero value is not usable: see newIDIndex. Not
// safe for concurrent use; its owner's lock guards it.
type idIndex[V comparable] struct {
	// sum hashes a NodeID (maphash with a seed of the index's own).
	sum    func(NodeID) uint64
	key    func(V) NodeID
	byHash map[uint64]V
	// other holds the records that collided; nil when none.
	other map[NodeID]V
}

// newIDIndex returns an empty index of records whose NodeID key returns;
// key must return the NodeID a record was put under for as long as it is
// in the index.
func newIDIndex[V comparable](key func(V) NodeID) *idIndex[V] {
	seed := maphash.MakeSeed()
	return &idIndex[V]{sum: func(id NodeID) uint64 { return maphash.Comparable(seed, id) }, key: key, byHash: make(map[uint64]V)}
}

func (x *idIndex[V]) hash(id NodeID) uint64 { return x.sum(id) }

// get returns the record of id.
func (x *idIndex[V]) get(id NodeID) (V, bool) {
	if v, ok := x.byHash[x.hash(id)]; ok && x.key(v) == id {
		return v, true
	}
	v, ok := x.other[id]
	return v, ok
}

// put adds or replaces the record of id; key(v) must be id.
func (x *idIndex[V]) put(id NodeID, v V) {
	h := x.hash(id)
	cur, taken := x.byHash[h]
	switch {
	case taken && x.key(cur) == id:
		x.byHash[h] = v
	case taken:
		x.putOther(id, v)
	default:
		if _, ok := x.other[id]; ok {
			// It collided when it came; its rival has left since.
			x.other[id] = v
			return
		}
		x.byHash[h] = v
	}
}

func (x *idIndex[V]) putOther(id NodeID, v V) {
	if x.other == nil {
		x.other = make(map[NodeID]V)
	}
	x.other[id] = v
}

// del removes the record of id, if any.
func (x *idIndex[V]) del(id NodeID) {
	h := x.hash(id)
	if v, ok := x.byHash[h]; ok && x.key(v) == id {
		delete(x.byHash, h)
		return
	}
	if _, ok := x.other[id]; ok {
		delete(x.other, id)
		if len(x.other) == 0 {
			x.other = nil
		}
	}
}

// deleteFunc removes every record for which drop returns true, and
// returns how many it removed.
func (x *idIndex[V]) deleteFunc(drop func(V) bool) int {
	n := 0
	for h, v := range x.byHash {
		if drop(v) {
			delete(x.byHash, h)
			n++
		}
	}
	for id, v := range x.other {
		if drop(v) {
			delete(x.other, id)
			n++
		}
	}
	if len(x.other) == 0 {
		x.other = nil
	}
	return n
}

// len returns the number of records.
func (x *idIndex[V]) len() int { return len(x.byHash) + len(x.other) }

// all yields every record with its NodeID, in no particular order. The
// loop body may delete the record it was given (as with a map), nothing
// else.
func (x *idIndex[V]) all() iter.Seq2[NodeID, V] {
	return func(yield func(NodeID, V) bool) {
		for _, v := range x.byHash {
			if !yield(x.key(v), v) {
				return
			}
		}
		for id, v := range x.other {
			if !yield(id, v) {
				return
			}
		}
	}
}

// at returns the record of id, the zero V when there is none (as indexing
// a map does).
func (x *idIndex[V]) at(id NodeID) V {
	v, _ := x.get(id)
	return v
}

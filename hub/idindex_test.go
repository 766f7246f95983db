package hub

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

type indexed struct {
	id  NodeID
	val int
}

// TestIDIndex runs the same random puts, gets and deletes on an idIndex and
// on a plain map, with the real hash, with every NodeID colliding, and with
// a few hash values shared by many NodeIDs.
func TestIDIndex(t *testing.T) {
	for _, tc := range []struct {
		name string
		sum  func(NodeID) uint64 // nil: the real hash
	}{
		{"maphash", nil},
		{"all collide", func(NodeID) uint64 { return 7 }},
		{"four hashes", func(id NodeID) uint64 { return uint64(len(id.Resource) % 4) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newIDIndex(func(r *indexed) NodeID { return r.id })
			if tc.sum != nil {
				x.sum = tc.sum
			}
			want := map[NodeID]*indexed{}
			rng := rand.New(rand.NewPCG(1, 2))
			id := func() NodeID {
				return NewNodeID("c"+strconv.Itoa(rng.IntN(2)), "ns", "n"+strconv.Itoa(rng.IntN(40)), KindConfigMap)
			}
			check := func(step int) {
				t.Helper()
				if x.len() != len(want) {
					t.Fatalf("step %d: len %d, want %d", step, x.len(), len(want))
				}
				seen := 0
				for id, r := range x.all() {
					seen++
					if id != r.id || want[id] != r {
						t.Fatalf("step %d: all yields %s, %v, not in the map", step, id, r)
					}
				}
				if seen != len(want) {
					t.Fatalf("step %d: all yields %d records, want %d", step, seen, len(want))
				}
			}
			for step := range 5000 {
				k := id()
				switch op := rng.IntN(10); {
				case op < 5:
					r := &indexed{id: k, val: step}
					x.put(k, r)
					want[k] = r
				case op < 8:
					x.del(k)
					delete(want, k)
				case op < 9:
					cluster := k.Cluster
					var removed int
					if step%2 == 0 {
						removed = x.deleteFunc(func(r *indexed) bool { return r.id.Cluster == cluster && r.val%3 == 0 })
					} else {
						removed = x.deleteInCluster(cluster, func(r *indexed) bool { return r.val%3 == 0 })
					}
					n := 0
					for w, r := range want {
						if w.Cluster == cluster && r.val%3 == 0 {
							delete(want, w)
							n++
						}
					}
					if removed != n {
						t.Fatalf("step %d: deleteFunc removed %d, want %d", step, removed, n)
					}
				default:
					got, ok := x.get(k)
					if w, wok := want[k]; ok != wok || got != w {
						t.Fatalf("step %d: get %s = %v, %v; want %v, %v", step, k, got, ok, w, wok)
					}
				}
				check(step)
			}
			for k, r := range want {
				if got, ok := x.get(k); !ok || got != r {
					t.Errorf("get %s = %v, %v; want %v", k, got, ok, r)
				}
			}
			for id, r := range x.all() { // deleting the record given, as a map allows
				if r.val%2 == 0 {
					x.del(id)
					delete(want, id)
				}
			}
			check(-1)
			collided := 0
			for _, sh := range x.clusters {
				collided += len(sh.other)
			}
			if tc.sum == nil && collided > 0 {
				t.Errorf("%d collisions with the real hash over 80 NodeIDs", collided)
			}
			// One cluster's records, alone; then all of them deleted
			// from inside the loop, which drops the cluster's shard.
			for id, r := range x.inCluster("c0") {
				if id.Cluster != "c0" || want[id] != r {
					t.Fatalf("inCluster(c0) yields %s, %v", id, r)
				}
				x.del(id)
				delete(want, id)
			}
			check(-2)
			if x.clusters["c0"] != nil {
				t.Error("a cluster without records keeps its shard")
			}
			for range x.inCluster("c0") {
				t.Fatal("inCluster of a cluster without records yields")
			}
		})
	}
}

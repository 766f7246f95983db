package hub

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkSnapshotFleet measures building one snapshot of a fleet: 250
// clusters of 100 NodeIDs (25,000), as the publisher does up to 10 times a
// second (bounded to a tenth of the time by publishPause).
func BenchmarkSnapshotFleet(b *testing.B) {
	h, specs := syncedFleetHub()
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if snap := h.store.snapshot(now); len(snap.Nodes) != len(specs) {
			b.Fatalf("snapshot has %d nodes, want %d", len(snap.Nodes), len(specs))
		}
	}
}

// BenchmarkGaugesFleet measures what a publish costs the same fleet when
// nobody subscribes: the gauges alone (refreshGauges), against a whole
// snapshot (BenchmarkSnapshotFleet).
func BenchmarkGaugesFleet(b *testing.B) {
	h, _ := syncedFleetHub()
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		h.store.refreshGauges(now)
	}
}

// BenchmarkClusterChangedFleet measures one cluster of a fleet of 250
// clusters of 100 NodeIDs reporting new watches (a generation): the hub
// takes that cluster's NodeIDs to reconcile them, which costs its own 100
// NodeIDs, not the fleet's 25,000. The queue is drained between calls.
func BenchmarkClusterChangedFleet(b *testing.B) {
	h, _ := fleetHub()
	gen := int64(0)
	for b.Loop() {
		gen++
		h.ClusterChanged(ClusterHealth{Cluster: "f123", State: ClusterSynced, Generation: gen})
		b.StopTimer()
		for h.ctrl.queue.Len() > 0 {
			id, _ := h.ctrl.queue.Get()
			h.ctrl.queue.Done(id)
		}
		b.StartTimer()
	}
}

// syncedFleetHub is fleetHub with every cluster reported synced.
func syncedFleetHub() (*Hub, []NodeSpec) {
	h, specs := fleetHub()
	for c := range 250 {
		h.ClusterChanged(ClusterHealth{Cluster: fmt.Sprintf("f%03d", c), State: ClusterSynced, Generation: 1})
	}
	return h, specs
}

// fleetHub returns a hub (not running) desiring 250 clusters of 100
// NodeIDs, f000 to f249, and its specs.
func fleetHub() (*Hub, []NodeSpec) {
	h := New(Options{Workers: 1, Resync: -1})
	var specs []NodeSpec
	for c := range 250 {
		cluster := fmt.Sprintf("f%03d", c)
		for i := range 100 {
			specs = append(specs, spec(cluster, fmt.Sprintf("app-%d", i), "v1"))
		}
	}
	h.SetDesired(specs)
	return h, specs
}

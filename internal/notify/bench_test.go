package notify

import (
	"fmt"
	"testing"

	"github.com/driftwatch/driftwatch/hub"
)

// BenchmarkDeriver10k: deriving events from one snapshot of 10,000
// NodeIDs in which nothing changed (the common case, up to 10 times a
// second).
func BenchmarkDeriver10k(b *testing.B) {
	nodes := make([]hub.NodeStatus, 10000)
	for i := range nodes {
		nodes[i] = node(hub.NewNodeID("prod", "shop", fmt.Sprintf("app-%05d", i), hub.KindDeployment), hub.StatusInSync, 1)
	}
	s := snap(1, hub.ClusterSynced, nodes...)
	d := newDeriver("hq")
	d.next(s)
	b.ReportAllocs()
	for b.Loop() {
		if evs := d.next(s); len(evs) != 0 {
			b.Fatalf("%d events from an unchanged snapshot", len(evs))
		}
	}
}

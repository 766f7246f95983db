package api

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/driftwatch/driftwatch/hub"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
)

// BenchmarkWatchFanout publishes one snapshot in which one NodeID of 1,000
// changed to 50 watch streams (45 operators, 5 viewers), and compares the
// watch stream ("delta-marshal-once": a delta computed and marshalled once
// per view, the bytes shared) with the stream as it was before
// ("full-snapshot-per-client": every client marshalling the whole
// snapshot). One op is one published snapshot reaching every client; the
// clients write to io.Discard, so the network is not measured. Compare
// allocs/op, B/op, ns/op and wire-B/client between the two sub-benchmarks
// of the same run.
func BenchmarkWatchFanout(b *testing.B) {
	const clients, viewers, nodes = 50, 5, 1000
	view := func(i int) view {
		if i < viewers {
			return viewRedacted
		}
		return viewOperator
	}
	b.Run("delta-marshal-once", func(b *testing.B) {
		s := testSnapshot(nodes)
		st := newStreamer(newFakeSource(nil), streamConfig{})
		st.publish(s)
		cursors := make([]uint64, clients)
		for i := range cursors {
			cursors[i] = s.Seq
		}
		var wire int
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			b.StopTimer()
			next := nextSnapshot(s, i%nodes, []hub.Status{hub.StatusDrifted, hub.StatusInSync}[i%2])
			b.StartTimer()
			st.publish(next)
			wire = 0
			for c := range clients {
				evs, _ := st.pending(cursors[c], true)
				for _, e := range evs {
					f := e.frame(view(c))
					wire += len(f)
					_, _ = io.Discard.Write(f)
				}
				cursors[c] = evs[len(evs)-1].seq
			}
			s = next
		}
		b.ReportMetric(float64(wire)/clients, "wire-B/client")
	})
	b.Run("full-snapshot-per-client", func(b *testing.B) {
		s := testSnapshot(nodes)
		var wire int
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			b.StopTimer()
			next := nextSnapshot(s, i%nodes, []hub.Status{hub.StatusDrifted, hub.StatusInSync}[i%2])
			b.StartTimer()
			wire = 0
			for range clients {
				data, err := json.Marshal(next)
				if err != nil {
					b.Fatal(err)
				}
				wire += len(data)
				_, _ = io.Discard.Write(data)
			}
			s = next
		}
		b.ReportMetric(float64(wire)/clients, "wire-B/client")
	})
}

// BenchmarkDescribeRead compares what `driftwatch describe` reads of a hub
// managing 100,000 NodeIDs: the node's view ("node-view": GET
// /api/v1/nodes/{id}'s document, with its cluster, holds and override)
// against the whole snapshot it read before ("full-snapshot"). One op is
// the server's marshal and the client's decode; compare ns/op, B/op and
// wire-B between the two sub-benchmarks of the same run.
func BenchmarkDescribeRead(b *testing.B) {
	s := testSnapshot(100_000)
	id := s.Nodes[len(s.Nodes)/2].ID
	b.Run("node-view", func(b *testing.B) {
		var wire int
		b.ReportAllocs()
		for b.Loop() {
			v, ok := s.NodeView(id)
			if !ok {
				b.Fatal("no view")
			}
			data, err := json.Marshal(apiv1.NewNodeView(v))
			if err != nil {
				b.Fatal(err)
			}
			wire = len(data)
			var d apiv1.NodeDetail
			if err := json.Unmarshal(data, &d); err != nil {
				b.Fatal(err)
			}
			if _, _, err := d.View(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(wire), "wire-B")
	})
	b.Run("full-snapshot", func(b *testing.B) {
		var wire int
		b.ReportAllocs()
		for b.Loop() {
			data, err := json.Marshal(apiv1.FromSnapshot(s))
			if err != nil {
				b.Fatal(err)
			}
			wire = len(data)
			var snap apiv1.Snapshot
			if err := json.Unmarshal(data, &snap); err != nil {
				b.Fatal(err)
			}
			if _, err := snap.ToHub(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(wire), "wire-B")
	})
}

package terraform

import (
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// countSink counts what reaches the hub.
type countSink struct{ events, health atomic.Int64 }

func (c *countSink) Observe(hub.Event)                { c.events.Add(1) }
func (c *countSink) ClusterChanged(hub.ClusterHealth) { c.health.Add(1) }

func TestGatedSinkStopsAtClose(t *testing.T) {
	next := &countSink{}
	g := &gatedSink{next: next}
	g.Observe(hub.Event{})
	g.ClusterChanged(hub.ClusterHealth{})
	g.close()
	g.Observe(hub.Event{})
	g.ClusterChanged(hub.ClusterHealth{})
	if e, h := next.events.Load(), next.health.Load(); e != 1 || h != 1 {
		t.Errorf("after close: %d events, %d health reports reached the hub; want 1 and 1", e, h)
	}
}

func TestWorkspacePlan(t *testing.T) {
	ws := func(id, interval string) Options {
		d, _ := time.ParseDuration(interval)
		return Options{ID: id, Dir: "/srv/" + id, Interval: d, Policy: hub.PolicyRepair}
	}
	s, err := NewSet(SetOptions{Sink: &countSink{}, Getenv: func(string) string { return "" }, Logger: slog.New(slog.DiscardHandler),
		OnSpecs: func(string, []hub.NodeSpec, func() bool) {}}, []Options{ws("a", "1m"), ws("b", "1m"), ws("c", "1m")})
	if err != nil {
		t.Fatal(err)
	}
	gone, added := s.Plan([]Options{ws("a", "1m"), ws("b", "30s"), ws("d", "1m")})
	if want := []string{"b", "c"}; !slices.Equal(gone, want) {
		t.Errorf("gone = %v, want %v (b changed, c removed)", gone, want)
	}
	var ids []string
	for _, wc := range added {
		ids = append(ids, wc.ID)
	}
	if want := []string{"b", "d"}; !slices.Equal(ids, want) {
		t.Errorf("added = %v, want %v (b changed, d new)", ids, want)
	}
	// Not running yet: remove and add change the set only.
	for _, id := range gone {
		s.Remove(id)
	}
	for _, wc := range added {
		if err := s.Add(wc); err != nil {
			t.Fatal(err)
		}
	}
	for id, want := range map[string]bool{"a": true, "b": true, "c": false, "d": true} {
		if _, ok := s.Get(id); ok != want {
			t.Errorf("get(%s) = %v, want %v", id, ok, want)
		}
	}
	if gone, added := s.Plan([]Options{ws("a", "1m"), ws("b", "30s"), ws("d", "1m")}); len(gone)+len(added) != 0 {
		t.Errorf("the same section again: gone %v, added %d; want nothing", gone, len(added))
	}
}

package terraform

import (
	"context"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/testwait"
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

// errHookCtx is a context whose Err, once a hook is set, reports the
// context's error as it is and then runs the hook (once). The set calls
// Err under its lock to check that it still runs before it starts a
// workspace (startLocked): a hook that ends the context runs right after
// that check passed, where a reload's Add meets Run's end.
type errHookCtx struct {
	context.Context
	hook atomic.Pointer[func()]
}

func (c *errHookCtx) Err() error {
	err := c.Context.Err()
	if f := c.hook.Swap(nil); f != nil {
		(*f)()
	}
	return err
}

// lateSink records whether a report reached the hub after done was set.
type lateSink struct {
	done, late atomic.Bool
	reports    atomic.Int32
}

func (l *lateSink) Observe(hub.Event) {}
func (l *lateSink) ClusterChanged(hub.ClusterHealth) {
	l.reports.Add(1)
	if l.done.Load() {
		l.late.Store(true)
	}
}

// TestAddAsRunEnds: a workspace that a reload's Add starts just as Run's
// context ends is one Run waits for: Run returns neither while Add is
// still starting it nor before it has stopped (its WaitGroup's Add raced
// Run's Wait, and the workspace outlived the set).
func TestAddAsRunEnds(t *testing.T) {
	sink := &lateSink{}
	s, err := NewSet(SetOptions{Sink: sink, Getenv: func(string) string { return "" }, Logger: slog.New(slog.DiscardHandler),
		OnSpecs: func(string, []hub.NodeSpec, func() bool) {}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx := &errHookCtx{Context: parent}
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		s.Run(ctx)
		sink.done.Store(true)
	}()
	testwait.For(t, 10*time.Second, "Run started", func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		return testwait.Check(s.ctx != nil, "not yet")
	})
	var early atomic.Bool
	hook := func() {
		cancel()
		// Run must not return while Add holds the set's lock: it cannot
		// have waited for the workspace Add is about to start. A
		// correct Run is blocked until Add returns; the wait bounds the
		// test.
		select {
		case <-runDone:
			early.Store(true)
		case <-time.After(250 * time.Millisecond):
		}
	}
	ctx.hook.Store(&hook)
	if err := s.Add(Options{ID: "late", Dir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	<-runDone
	if early.Load() {
		t.Error("Run returned while Add was starting a workspace")
	}
	if sink.reports.Load() == 0 || sink.late.Load() {
		t.Errorf("the workspace Add started: %d reports, one after Run returned: %v; want it started and stopped before Run returned",
			sink.reports.Load(), sink.late.Load())
	}
}

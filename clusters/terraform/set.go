package terraform

import (
	"context"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/hub"
)

// Backend implements hub.Backends: the set's running workspaces by id.
func (s *Set) Backend(id string) (hub.Backend, bool) {
	w, ok := s.Get(id)
	if !ok {
		return nil, false
	}
	return w, true
}

// Set holds the Terraform workspaces of a config, runs them, and adds,
// replaces and removes them when a reload changes the config's
// `terraform:` section. It is a hub.Backends of its current workspaces.
type Set struct {
	opts SetOptions

	// wg owns every workspace's Run goroutine; run waits for it.
	wg conc.WaitGroup

	mu      sync.Mutex
	entries map[string]*setEntry
	ctx     context.Context // run's; nil before run, done after
	// stopped is set once Run waits for the workspaces: none starts
	// after it (a start would race the wait and outlive Run).
	stopped bool
}

// setEntry is one running workspace.
type setEntry struct {
	cfg    Options // as given, without what the set adds
	w      *Workspace
	sink   *gatedSink
	cancel context.CancelFunc // nil until started
}

// gatedSink passes a workspace's reports to the hub until the workspace is
// removed: after close returns, nothing more reaches the hub (a poll that
// was running when the workspace was removed must not bring its health or
// its resources back).
type gatedSink struct {
	next hub.Sink

	mu     sync.RWMutex
	closed bool
}

// Observe implements hub.Sink.
func (g *gatedSink) Observe(ev hub.Event) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if !g.closed {
		g.next.Observe(ev)
	}
}

// ClusterChanged implements hub.Sink.
func (g *gatedSink) ClusterChanged(h hub.ClusterHealth) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if !g.closed {
		g.next.ClusterChanged(h)
	}
}

// close stops the reports; it returns once none is being delivered.
func (g *gatedSink) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// SetOptions are what every workspace of a Set shares.
type SetOptions struct {
	// Sink takes the workspaces' reports (until a workspace is removed).
	Sink hub.Sink
	// Env, Getenv, StopGrace and Logger are given to every workspace (see
	// Options).
	Env       map[string]string
	Getenv    func(string) string
	StopGrace time.Duration
	Logger    *slog.Logger
	// OnSpecs takes a workspace's desired state; current tells whether
	// the workspace that sent it is still the set's (call it under the
	// lock that also serialises the set's changes).
	OnSpecs func(id string, specs []hub.NodeSpec, current func() bool)
}

// NewSet builds a workspace per entry of workspaces (each an Options with
// the settings of one `terraform:` entry: ID, Dir, Binary, Vars, VarFiles,
// Interval, Policy, Targets; the set adds the rest from opts).
func NewSet(opts SetOptions, workspaces []Options) (*Set, error) {
	s := &Set{opts: opts, entries: make(map[string]*setEntry)}
	for _, wc := range workspaces {
		e, err := s.build(wc)
		if err != nil {
			return nil, err
		}
		s.entries[wc.ID] = e
	}
	return s, nil
}

// build makes the workspace of one entry.
func (s *Set) build(wc Options) (*setEntry, error) {
	e := &setEntry{cfg: wc, sink: &gatedSink{next: s.opts.Sink}}
	current := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.entries[wc.ID] == e
	}
	o := wc
	o.Env, o.Getenv, o.StopGrace, o.Logger = s.opts.Env, s.opts.Getenv, s.opts.StopGrace, s.opts.Logger
	o.OnSpecs = func(id string, specs []hub.NodeSpec) { s.opts.OnSpecs(id, specs, current) }
	w, err := New(o, e.sink)
	if err != nil {
		return nil, err
	}
	e.w = w
	return e, nil
}

// Get returns a current workspace by id.
func (s *Set) Get(id string) (*Workspace, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[id]; ok {
		return e.w, true
	}
	return nil, false
}

// startLocked runs e under the set's context, if run has started and not
// stopped.
func (s *Set) startLocked(e *setEntry) {
	if s.ctx == nil || s.stopped || s.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	e.cancel = cancel
	s.wg.Go(func() {
		defer cancel()
		if err := e.w.Run(ctx); err != nil {
			s.opts.Logger.Error("terraform workspace stopped", "workspace", e.w.ID(), "err", err)
		}
	})
}

// Run runs every workspace, and those Add adds, until ctx ends; it returns
// once every one has returned. A workspace Add adds once ctx ended is not
// started; one it started as ctx ended is waited for.
func (s *Set) Run(ctx context.Context) {
	s.mu.Lock()
	s.ctx = ctx
	for _, id := range slices.Sorted(maps.Keys(s.entries)) {
		s.startLocked(s.entries[id])
	}
	s.mu.Unlock()
	<-ctx.Done()
	s.mu.Lock()
	s.stopped = true // under the lock a start holds: none races the wait
	s.mu.Unlock()
	s.wg.Wait()
}

// Plan compares the workspaces with new entries (a reloaded `terraform:`
// section): gone are the ids to stop (removed, or changed and to be
// rebuilt), added the entries to start.
func (s *Set) Plan(next []Options) (gone []string, added []Options) {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := make(map[string]Options, len(next))
	for _, wc := range next {
		want[wc.ID] = wc
	}
	for _, id := range slices.Sorted(maps.Keys(s.entries)) {
		if wc, ok := want[id]; !ok || !reflect.DeepEqual(wc, s.entries[id].cfg) {
			gone = append(gone, id)
		}
	}
	for _, wc := range next {
		if e, ok := s.entries[wc.ID]; !ok || !reflect.DeepEqual(wc, e.cfg) {
			added = append(added, wc)
		}
	}
	return gone, added
}

// Remove stops a workspace: its reports stop reaching the hub at once, its
// run is cancelled (Run's wait covers its end), and it is no longer a
// backend.
func (s *Set) Remove(id string) {
	s.mu.Lock()
	e := s.entries[id]
	delete(s.entries, id)
	s.mu.Unlock()
	if e == nil {
		return
	}
	e.sink.close()
	if e.cancel != nil {
		e.cancel()
	}
}

// Add builds and starts a workspace (a reload's new or changed entry).
func (s *Set) Add(wc Options) error {
	e, err := s.build(wc)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries[wc.ID] = e
	s.startLocked(e)
	return nil
}

package app

import (
	"context"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/clusters/terraform"
	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
)

// Backend implements hub.Backends: the set's running workspaces by id.
func (s *workspaceSet) Backend(id string) (hub.Backend, bool) {
	w, ok := s.get(id)
	if !ok {
		return nil, false
	}
	return w, true
}

// workspaceSet holds the config's Terraform workspaces, runs them, and
// adds, replaces and removes them when a reload changes the `terraform:`
// section.
type workspaceSet struct {
	sink      hub.Sink
	env       map[string]string
	stopGrace time.Duration
	getenv    func(string) string
	log       *slog.Logger
	// onSpecs takes a workspace's desired state; current tells whether
	// the workspace that sent it is still the set's (called by onSpecs
	// under the caller's lock that also serialises reloads).
	onSpecs func(id string, specs []hub.NodeSpec, current func() bool)

	// wg owns every workspace's Run goroutine; run waits for it.
	wg conc.WaitGroup

	mu      sync.Mutex
	entries map[string]*workspaceEntry
	ctx     context.Context // run's; nil before run, done after
}

// workspaceEntry is one running workspace.
type workspaceEntry struct {
	cfg    config.Workspace
	w      *terraform.Workspace
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

// newWorkspaces builds a workspace per `terraform:` entry. Each hands its
// desired state to onSpecs.
func newWorkspaces(cfg *config.Config, sink hub.Sink, env map[string]string, stopGrace time.Duration, getenv func(string) string, log *slog.Logger,
	onSpecs func(string, []hub.NodeSpec, func() bool)) (*workspaceSet, error) {
	s := &workspaceSet{sink: sink, env: env, stopGrace: stopGrace, getenv: getenv, log: log, onSpecs: onSpecs,
		entries: make(map[string]*workspaceEntry)}
	for _, wc := range cfg.Terraform {
		e, err := s.build(wc)
		if err != nil {
			return nil, err
		}
		s.entries[wc.ID] = e
	}
	return s, nil
}

// build makes the workspace of one `terraform:` entry.
func (s *workspaceSet) build(wc config.Workspace) (*workspaceEntry, error) {
	e := &workspaceEntry{cfg: wc, sink: &gatedSink{next: s.sink}}
	current := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.entries[wc.ID] == e
	}
	w, err := terraform.New(terraform.Options{
		ID: wc.ID, Dir: wc.Dir, Binary: wc.Binary, Vars: wc.Vars, VarFiles: wc.VarFiles,
		Interval: wc.Interval, Policy: wc.Policy, Targets: wc.Targets, Env: s.env, Getenv: s.getenv,
		StopGrace: s.stopGrace, Logger: s.log,
		OnSpecs: func(id string, specs []hub.NodeSpec) { s.onSpecs(id, specs, current) },
	}, e.sink)
	if err != nil {
		return nil, err
	}
	e.w = w
	return e, nil
}

// get returns a current workspace by id.
func (s *workspaceSet) get(id string) (*terraform.Workspace, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[id]; ok {
		return e.w, true
	}
	return nil, false
}

// startLocked runs e under the set's context, if run has started.
func (s *workspaceSet) startLocked(e *workspaceEntry) {
	if s.ctx == nil || s.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	e.cancel = cancel
	s.wg.Go(func() {
		defer cancel()
		if err := e.w.Run(ctx); err != nil {
			s.log.Error("terraform workspace stopped", "workspace", e.w.ID(), "err", err)
		}
	})
}

// run runs every workspace, and those a reload adds, until ctx ends; it
// returns once every one has returned.
func (s *workspaceSet) run(ctx context.Context) {
	s.mu.Lock()
	s.ctx = ctx
	for _, id := range slices.Sorted(maps.Keys(s.entries)) {
		s.startLocked(s.entries[id])
	}
	s.mu.Unlock()
	<-ctx.Done()
	s.wg.Wait() // no start after ctx ended (startLocked checks it)
}

// plan compares the running workspaces with a new `terraform:` section:
// gone are the ids to stop (removed, or changed and to be rebuilt), added
// the entries to start.
func (s *workspaceSet) plan(next []config.Workspace) (gone []string, added []config.Workspace) {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := make(map[string]config.Workspace, len(next))
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

// remove stops a workspace: its reports stop reaching the hub at once, its
// run is cancelled (run's wait covers its end), and it is no longer a
// backend.
func (s *workspaceSet) remove(id string) {
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

// add builds and starts a workspace (a reload's new or changed entry).
func (s *workspaceSet) add(wc config.Workspace) error {
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

// workspaceSpecs takes a workspace's new desired state: it replaces that
// workspace's NodeIDs in the hub, unless a reload removed the workspace
// meanwhile. A resource that left the state is never deleted (the
// workspace reads it as not owned), so the prune guard, which protects
// clusters from a bad config, does not apply.
func (a *App) workspaceSpecs(id string, specs []hub.NodeSpec, current func() bool) {
	a.desiredMu.Lock()
	defer a.desiredMu.Unlock()
	if !current() {
		return
	}
	a.wsSpecs[id] = specs
	if _, _, err := a.hub.ReplaceDesiredCluster(id, specs, hub.DesiredOptions{AllowPrune: true}); err != nil {
		a.log.Error("terraform workspace: desired state refused", "workspace", id, "err", err)
	}
}

// workspaceSpecsLocked returns every current workspace's last desired state
// but those of skip (for reloads, which replace the whole desired state).
// The caller holds desiredMu.
func (a *App) workspaceSpecsLocked(skip []string) []hub.NodeSpec {
	var out []hub.NodeSpec
	for _, id := range slices.Sorted(maps.Keys(a.wsSpecs)) {
		if !slices.Contains(skip, id) {
			out = append(out, a.wsSpecs[id]...)
		}
	}
	return out
}

// Workspace returns a Terraform workspace of the config, for a manual
// refresh.
func (a *App) Workspace(id string) (*terraform.Workspace, bool) {
	return a.ws.get(id)
}

package app

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/clusters/terraform"
	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
)

// backends finds a NodeID's backend: a Terraform workspace by its id, else
// a cluster of the registry.
type backends struct {
	clusters   hub.Backends
	workspaces map[string]*terraform.Workspace // fixed after New
}

// Backend implements hub.Backends.
func (b backends) Backend(id string) (hub.Backend, bool) {
	if w, ok := b.workspaces[id]; ok {
		return w, true
	}
	return b.clusters.Backend(id)
}

// workspaceSet holds the config's Terraform workspaces and the desired
// state each last reported.
type workspaceSet struct {
	byID map[string]*terraform.Workspace

	mu    sync.Mutex
	specs map[string][]hub.NodeSpec
}

// newWorkspaces builds a workspace per `terraform:` entry. Each hands its
// desired state to the hub through onSpecs.
func newWorkspaces(cfg *config.Config, sink hub.Sink, env map[string]string, stopGrace time.Duration, getenv func(string) string, log *slog.Logger,
	onSpecs func(string, []hub.NodeSpec)) (*workspaceSet, error) {
	set := &workspaceSet{byID: make(map[string]*terraform.Workspace), specs: make(map[string][]hub.NodeSpec)}
	for _, wc := range cfg.Terraform {
		w, err := terraform.New(terraform.Options{
			ID: wc.ID, Dir: wc.Dir, Binary: wc.Binary, Vars: wc.Vars, VarFiles: wc.VarFiles,
			Interval: wc.Interval, Policy: wc.Policy, Targets: wc.Targets, Env: env, Getenv: getenv,
			StopGrace: stopGrace, Logger: log, OnSpecs: onSpecs,
		}, sink)
		if err != nil {
			return nil, err
		}
		set.byID[wc.ID] = w
	}
	return set, nil
}

// allSpecs returns every workspace's last desired state (for reloads,
// which replace the whole desired state).
func (s *workspaceSet) allSpecs() []hub.NodeSpec {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []hub.NodeSpec
	for _, id := range slices.Sorted(maps.Keys(s.specs)) {
		out = append(out, s.specs[id]...)
	}
	return out
}

// run runs every workspace until ctx ends.
func (s *workspaceSet) run(ctx context.Context, log *slog.Logger) {
	var wg conc.WaitGroup
	for _, w := range s.byID {
		wg.Go(func() {
			if err := w.Run(ctx); err != nil {
				log.Error("terraform workspace stopped", "workspace", w.ID(), "err", err)
			}
		})
	}
	wg.Wait()
}

// workspaceSpecs takes a workspace's new desired state: it replaces that
// workspace's NodeIDs in the hub. A resource that left the state is never
// deleted (the workspace reads it as not owned), so the prune guard, which
// protects clusters from a bad config, does not apply.
func (a *App) workspaceSpecs(id string, specs []hub.NodeSpec) {
	a.desiredMu.Lock()
	defer a.desiredMu.Unlock()
	a.ws.mu.Lock()
	a.ws.specs[id] = specs
	a.ws.mu.Unlock()
	if _, _, err := a.hub.ReplaceDesiredCluster(id, specs, hub.DesiredOptions{AllowPrune: true}); err != nil {
		a.log.Error("terraform workspace: desired state refused", "workspace", id, "err", err)
	}
}

// Workspace returns a Terraform workspace of the config, for a manual
// refresh.
func (a *App) Workspace(id string) (*terraform.Workspace, bool) {
	w, ok := a.ws.byID[id]
	return w, ok
}

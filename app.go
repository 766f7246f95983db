package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
)

// app wires one running hub: the config's desired state, the reconcile loop
// and the cluster registry, plus config reloads.
type app struct {
	log      *slog.Logger
	hub      *hub.Hub
	reg      *clusters.Registry
	path     string
	loadOpts config.LoadOptions

	// desiredMu serialises every writer of the desired state (reloads and
	// Cluster API discovery), so a reload can never compute its desired
	// state, lose the race to a just-discovered cluster, and then prune
	// that cluster's objects.
	desiredMu sync.Mutex

	mu    sync.Mutex
	cfg   *config.Config
	found map[string]discovered // clusters discovered through Cluster API
}

// appOptions tune an app (tests shorten the health probes).
type appOptions struct {
	log      *slog.Logger
	loadOpts config.LoadOptions
	health   clusters.HealthOptions
	// hubOpts are merged over the config's hub settings.
	hubOpts hub.Options
	// disableWatch turns the informers off (the bench's poll baseline).
	disableWatch bool
}

// newApp builds the hub and the registry for a loaded config.
func newApp(cfg *config.Config, opts appOptions) *app {
	if opts.log == nil {
		opts.log = slog.New(slog.DiscardHandler)
	}
	ho := opts.hubOpts
	ho.ID = cfg.Hub.ID
	ho.ManagedBy = cfg.Hub.ManagedBy
	ho.Policy = cfg.Hub.Policy
	if ho.Workers == 0 {
		ho.Workers = cfg.Hub.Workers
	}
	if ho.Resync == 0 {
		ho.Resync = cfg.Hub.Resync
	}
	ho.DecommissionTimeout = cfg.Hub.DecommissionTimeout
	ho.Logger = opts.log.With("component", "hub")
	h := hub.New(ho)
	reg := clusters.NewRegistry(h, clusters.RegistryOptions{Logger: opts.log.With("component", "clusters"), Health: opts.health})
	h.SetBackends(reg)
	a := &app{log: opts.log, hub: h, reg: reg, path: cfg.Path, loadOpts: opts.loadOpts, cfg: cfg, found: make(map[string]discovered)}
	for _, cc := range clusterConfigs(cfg, opts.disableWatch) {
		if err := reg.Add(cc); err != nil {
			a.log.Error("add cluster", "err", err)
		}
	}
	h.SetDesired(config.Compile(cfg))
	return a
}

// clusterConfigs turns the config's clusters into watch-manager configs.
func clusterConfigs(cfg *config.Config, disableWatch bool) []clusters.ClusterConfig {
	out := make([]clusters.ClusterConfig, 0, len(cfg.Clusters))
	for _, c := range cfg.Clusters {
		out = append(out, clusters.ClusterConfig{
			ID: c.ID, Kubeconfig: c.Kubeconfig, Context: c.Context,
			Namespaces: cfg.Namespaces(c.ID), ManagedBy: cfg.Hub.ManagedBy,
			QPS: c.QPS, Burst: c.Burst, Labels: c.Labels, Source: "config",
			DisableWatch: disableWatch,
		})
	}
	return out
}

// Run runs the hub and the registry until ctx ends, and waits for both.
func (a *app) Run(ctx context.Context) error {
	var wg conc.WaitGroup
	var hubErr, regErr error
	wg.Go(func() { hubErr = a.hub.Run(ctx) })
	wg.Go(func() { regErr = a.reg.Run(ctx) })
	a.mu.Lock()
	sources := a.cfg.ClusterAPI
	a.mu.Unlock()
	for _, src := range sources {
		wg.Go(func() { a.runDiscovery(ctx, src) })
	}
	wg.Wait()
	return errors.Join(hubErr, regErr)
}

// Reload re-reads the config file. An invalid file changes nothing and
// returns every error; a valid one updates the clusters and the desired
// state: what changed is enqueued, what was removed is pruned.
func (a *app) Reload() error {
	cfg, err := config.Load(a.path, a.loadOpts)
	if err != nil {
		a.hub.RecordReload("rejected")
		return fmt.Errorf("reload %s: config rejected, still running the previous one:\n%w", a.path, err)
	}
	a.desiredMu.Lock()
	defer a.desiredMu.Unlock()
	a.mu.Lock()
	old := a.cfg
	a.cfg = cfg
	a.mu.Unlock()
	next := clusterConfigs(cfg, false)
	keep := make(map[string]bool, len(next))
	for _, cc := range next {
		keep[cc.ID] = true
	}
	// A cluster removed from the config is no longer managed: it is
	// forgotten first (its desired state dropped, never pruned), so no
	// worker can start deleting its objects, then deregistered.
	for _, c := range old.Clusters {
		if !keep[c.ID] {
			a.hub.ForgetCluster(c.ID)
			a.reg.Remove(c.ID)
			a.hub.ForgetCluster(c.ID) // a report sent while it stopped
		}
	}
	for _, cc := range next {
		if err := a.reg.Update(cc); err != nil {
			a.log.Error("update cluster", "cluster", cc.ID, "err", err)
		}
	}
	changed, removed := a.hub.SetDesired(append(config.Compile(cfg), a.discoveredSpecs(cfg)...))
	a.hub.RecordReload("applied")
	a.log.Info("config reloaded", "path", a.path, "changed", len(changed), "removed", len(removed))
	return nil
}

// reloadOnSIGHUP reloads the config at every SIGHUP until ctx ends; a
// rejected reload is logged with every error and changes nothing.
func (a *app) reloadOnSIGHUP(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if err := a.Reload(); err != nil {
				a.log.Error("config reload rejected", "err", err)
			}
		}
	}
}

// ready reports whether the loop runs and every configured cluster has been
// attempted.
func (a *app) ready() error {
	a.mu.Lock()
	cfg := a.cfg
	a.mu.Unlock()
	if !a.hub.Running() {
		return errors.New("reconcile loop not running")
	}
	var waiting []string
	for _, c := range cfg.Clusters {
		cs, ok := a.hub.Health(c.ID)
		if !ok || (cs.State == hub.ClusterConnecting && cs.LastError == "") {
			waiting = append(waiting, c.ID)
		}
	}
	if len(waiting) > 0 {
		return fmt.Errorf("clusters not yet attempted: %v", waiting)
	}
	return nil
}

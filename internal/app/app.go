package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sourcegraph/conc"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/clusters/backends"
	"github.com/driftwatch/driftwatch/clusters/terraform"
	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/rescue"
)

// App wires one running hub: the config's desired state, the reconcile loop
// and the cluster registry, plus config reloads.
type App struct {
	log      *slog.Logger
	hub      *hub.Hub
	reg      *clusters.Registry
	path     string
	loadOpts config.LoadOptions
	// intent is the hub's durable state (nil: memory only); Close closes
	// it.
	intent hub.IntentStore
	// notifier sends the hub's events to the config's webhooks (nil:
	// none configured).
	notifier *notify.Notifier

	// desiredMu serialises every writer of the desired state (reloads and
	// Cluster API discovery), so a reload can never compute its desired
	// state, lose the race to a just-discovered cluster, and then prune
	// that cluster's objects.
	desiredMu sync.Mutex
	// claims (guarded by desiredMu) are the Cluster API sources' latest
	// reports, by cluster id, then source name: an id two sources claim
	// is managed by neither.
	claims map[string]map[string]discovered
	// writeMu serialises edits of the config file (WriteIgnoreRule).
	writeMu sync.Mutex

	// rep, with hub.coordination, is this replica's share of the
	// clusters; nil: every cluster is registered.
	rep *replicas
	// desiredHash identifies the desired state of the config running now
	// (see desiredHash); guarded by desiredMu.
	desiredHash string

	mu sync.Mutex
	// cfg is the config running now, as retainLocked keeps it: without
	// its applications unless Cluster API discovery may compile them.
	cfg   *config.Config
	found map[string]discovered // clusters discovered through Cluster API
	// discovering is set once Run started Cluster API discovery: its
	// handlers compile the applications of a.cfg from then on.
	discovering bool
	// failing are the manifest sources that failed (see noteSourceFaults)
	// with the time each started failing; guarded by desiredMu.
	failing map[string]time.Time

	// ws are the config's Terraform workspaces; wsSpecs (guarded by
	// desiredMu) the desired state each last reported.
	ws      *terraform.Set
	wsSpecs map[string][]hub.NodeSpec

	// git fetches the Git manifest sources (nil: the config has none and
	// no Options.Git was given).
	git *GitSources

	// watchAfter holds the clusters' watches back (Options.WatchAfter).
	watchAfter <-chan struct{}
}

// Options tune an App. Zero values take the documented defaults.
type Options struct {
	// Logger receives the hub's and the clusters' logs. Default: discard.
	Logger *slog.Logger
	// LoadOptions are used by Reload to read the config file again, and
	// their Getenv to resolve the default kubeconfig.
	LoadOptions config.LoadOptions
	// Health tunes the clusters' health probes (tests shorten them).
	Health clusters.HealthOptions
	// HubOptions are merged over the config's hub settings.
	HubOptions hub.Options
	// DisableWatch turns the informers off (the bench's poll baseline).
	DisableWatch bool
	// WatchAfter, when set, holds the clusters' watches back until it is
	// closed, for at most WatchAfterLimit: the terminal UI closes it once
	// its first frame with the hub's state is drawn (tui.Options.FirstFrame),
	// which on a relaunch over thousands of objects then has the cores
	// before the watches' first lists do.
	WatchAfter <-chan struct{}
	// StateFile is where the hub keeps its intent (pauses, overrides,
	// holds, pending decommissions, what it applied); "" keeps it in
	// memory only. Commands resolve it with StateFile.
	StateFile string
	// AllowPrune lets the initial desired state decommission every managed
	// object of a cluster, or more than the prune limit (--allow-prune).
	AllowPrune bool
	// ReplicaID names this replica when the config sets hub.coordination
	// (see ResolveReplicaID).
	ReplicaID string
	// TerraformEnv is added to the environment of every Terraform run
	// (the demo and tests point TF_CLI_CONFIG_FILE at a provider mirror).
	TerraformEnv map[string]string
	// Git fetches the Git manifest sources: the GitSources whose
	// LoadOptions loaded cfg (LoadOptions.GitCheckout must be its
	// Checkout). New ties it to the app, Run runs its pollers and Close
	// closes it. Nil: a config with Git sources cannot be reloaded.
	Git *GitSources
	// TerraformStopGrace is how long a Terraform run gets to exit after an
	// interrupt at shutdown before it is killed (0: a minute).
	TerraformStopGrace time.Duration
}

// New builds the hub and the registry for a loaded config: it opens the
// state file, restores the hub's intent from it and sets the initial
// desired state. A desired state the prune guard refuses (unless
// opts.AllowPrune) is an error wrapping hub.ErrPruneRefused, and nothing
// runs. Call Close once the app has stopped.
func New(cfg *config.Config, opts Options) (*App, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Hub.Coordination != nil && len(cfg.Terraform) > 0 {
		return nil, fmt.Errorf("config %s: %w", cfg.Path, errWorkspacesWithReplicas)
	}
	var store hub.IntentStore
	var coordClient kubernetes.Interface
	var shared *ownedIntent
	if co := cfg.Hub.Coordination; co != nil {
		// Replicas share their intent in the coordination namespace; the
		// state file is not used.
		cs, s, err := openSharedIntent(co, cfg.Hub.ID, cfg.Hub.ManagedBy, opts.LoadOptions.Getenv)
		if err != nil {
			return nil, err
		}
		shared = &ownedIntent{IntentStore: s}
		coordClient, store = cs, shared
	} else if opts.StateFile != "" {
		s, err := openState(opts.StateFile)
		if err != nil {
			return nil, err
		}
		store = s
	}
	ho := opts.HubOptions
	ho.ID = cfg.Hub.ID
	ho.Policy = cfg.Hub.Policy
	if ho.Workers == 0 {
		ho.Workers = cfg.Workers()
	}
	if ho.Resync == 0 {
		ho.Resync = cfg.Hub.Resync
	}
	ho.DecommissionTimeout = cfg.Hub.DecommissionTimeout
	if ho.PruneLimit == 0 {
		ho.PruneLimit = cfg.Hub.PruneLimit
	}
	ho.PruneOrphans = ho.PruneOrphans || cfg.Hub.PruneOrphans
	ho.Intent = store
	ho.Logger = opts.Logger.With("component", "hub")
	h := hub.New(ho)
	// A running hub never refuses a whole reload for one broken source
	// (see config.LoadOptions.IsolateSources).
	opts.LoadOptions.IsolateSources = true
	a := &App{log: opts.Logger, hub: h, path: cfg.Path, loadOpts: opts.LoadOptions, intent: store, found: make(map[string]discovered), claims: make(map[string]map[string]discovered),
		git: opts.Git, watchAfter: opts.WatchAfter}
	a.cfg = a.retainLocked(cfg) // a is not shared yet
	// The state file's records are read while the desired state compiles:
	// the two are independent, and on a relaunch over thousands of
	// objects each takes tens of milliseconds (the read on one core).
	var intentErr error
	var compiled []hub.NodeSpec
	var both conc.WaitGroup
	both.Go(func() { intentErr = h.LoadIntent() })
	both.Go(func() { compiled = config.Compile(cfg) })
	both.Wait()
	if intentErr != nil {
		_ = a.Close()
		return nil, intentErr
	}
	a.desiredHash = desiredHash(cfg, compiled)
	only, forget := startScope(cfg, h.RecordedClusters())
	for _, c := range cfg.Clusters {
		h.SetClusterPolicy(c.ID, c.Policy)
	}
	if _, _, err := h.ReplaceDesired(compiled, hub.DesiredOptions{AllowPrune: opts.AllowPrune, Only: only, Forget: forget,
		Keep: faultySources(cfg)}); err != nil {
		_ = a.Close()
		return nil, fmt.Errorf("config %s: %w", cfg.Path, err)
	}
	a.noteSourceFaults(cfg)
	if a.git != nil {
		a.git.attach(a)
		a.git.loaded(cfg)
	}
	n, err := newNotifier(cfg, h, a, opts.Logger)
	if err != nil {
		_ = a.Close()
		return nil, err
	}
	a.notifier = n
	a.reg = clusters.NewRegistry(h, clusters.RegistryOptions{Logger: opts.Logger.With("component", "clusters"), Health: opts.Health,
		Registerer: h.Registerer()})
	var clusterBackends hub.Backends = a.reg
	if co := cfg.Hub.Coordination; co != nil {
		r, err := newReplicas(a, co, coordClient, opts.ReplicaID, a.desiredHash)
		if err != nil {
			_ = a.Close()
			return nil, err
		}
		a.rep = r
		shared.owns = r.coord.Owns
		clusterBackends = backends.Fenced{Set: a.reg, Fence: r.coord}
	}
	ws, err := terraform.NewSet(terraform.SetOptions{Sink: h, Env: opts.TerraformEnv, StopGrace: opts.TerraformStopGrace,
		Getenv: opts.LoadOptions.Getenv, Logger: opts.Logger.With("component", "terraform"), OnSpecs: a.workspaceSpecs}, workspaceOptions(cfg.Terraform))
	if err != nil {
		_ = a.Close()
		return nil, fmt.Errorf("config %s: %w", cfg.Path, err)
	}
	a.ws, a.wsSpecs = ws, make(map[string][]hub.NodeSpec)
	h.SetBackends(backends.Mux{ws, clusterBackends})
	for _, cc := range clusterConfigs(cfg, opts.DisableWatch, opts.LoadOptions.Getenv) {
		if err := a.putCluster(cc); err != nil {
			a.log.Error("add cluster", "err", err)
		}
	}
	return a, nil
}

// startScope says which clusters the initial desired state judges: the
// clusters of the config. What an earlier run applied on any other cluster
// is left for later: a cluster that Cluster API discovery produces is
// judged (through the prune guard) when discovery reports it, and a
// Terraform workspace when its first plan gives its desired state; a
// discovered cluster that never comes back keeps its records and nothing
// is pruned. A single hub without discovery forgets the records of clusters
// that left the config (removing a cluster means "stop managing it"); with
// coordination the records are shared with the other replicas and are
// never forgotten at start.
func startScope(cfg *config.Config, recorded []string) (only, forget []string) {
	known := make(map[string]bool, len(cfg.Clusters)+len(cfg.Terraform))
	only = make([]string, 0, len(cfg.Clusters))
	for _, c := range cfg.Clusters {
		known[c.ID] = true
		only = append(only, c.ID)
	}
	for _, w := range cfg.Terraform {
		known[w.ID] = true
	}
	if len(cfg.ClusterAPI) > 0 || cfg.Hub.Coordination != nil {
		return only, nil
	}
	for _, c := range recorded {
		if !known[c] {
			forget = append(forget, c)
		}
	}
	return only, forget
}

// retainLocked returns what the app keeps of a loaded config for its life:
// all of it while Cluster API discovery may run (its handlers compile the
// applications and sources for each discovered cluster), else all but the
// applications and sources (config.WithoutDesired), which only compiling
// the desired state needs and which are a large part of a config at scale
// (every application's fields, config data, labels and environment; every
// object the sources rendered to). Reloads compare the clusters, hub,
// notifications and terraform sections and Ready reads the clusters: those
// stay. Callers hold a.mu.
func (a *App) retainLocked(cfg *config.Config) *config.Config {
	if a.discovering || len(cfg.ClusterAPI) > 0 {
		return cfg
	}
	return cfg.WithoutDesired()
}

// Hub returns the app's hub.
func (a *App) Hub() *hub.Hub { return a.hub }

// Close releases the state file. Call it once Run has returned (or when
// Run never ran).
func (a *App) Close() error {
	if a.git != nil {
		if err := a.git.Close(); err != nil {
			a.log.Error("remove the temporary git cache", "err", err)
		}
	}
	if a.intent == nil {
		return nil
	}
	if err := a.intent.Close(); err != nil {
		return fmt.Errorf("close the state file: %w", err)
	}
	return nil
}

// ClusterConfigs turns the config's clusters into watch-manager configs;
// getenv (nil: os.Getenv) resolves the default kubeconfig.
func ClusterConfigs(cfg *config.Config, getenv func(string) string) []clusters.ClusterConfig {
	return clusterConfigs(cfg, false, getenv)
}

func clusterConfigs(cfg *config.Config, disableWatch bool, getenv func(string) string) []clusters.ClusterConfig {
	out := make([]clusters.ClusterConfig, 0, len(cfg.Clusters))
	for _, c := range cfg.Clusters {
		out = append(out, clusters.ClusterConfig{
			ID: c.ID, Kubeconfig: c.Kubeconfig, Context: c.Context, InCluster: c.InCluster, Getenv: getenv,
			Namespaces: cfg.Namespaces(c.ID), Kinds: cfg.Kinds(c.ID), ManagedBy: cfg.Hub.ManagedBy,
			HubID: cfg.Hub.ID, Replicated: cfg.Hub.Coordination != nil, QPS: c.QPS, Burst: c.Burst, Labels: c.Labels, Source: "config",
			DisableWatch: disableWatch,
		})
	}
	return out
}

// keepWatching returns next watching what prev watched too: while a
// manifest source fails, its last good objects stay desired and are
// repaired (hub.DesiredOptions.Keep), but the config no longer names their
// kinds and namespaces, and a watch that dropped them would see their
// drift only at the resync (and restart the cluster's manager for
// nothing). The union is exact again at the first reload without a failing
// source. The orders are the config's: namespaces sorted, kinds by group,
// version and kind.
func keepWatching(next, prev clusters.ClusterConfig) clusters.ClusterConfig {
	next.Namespaces = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(next.Namespaces), prev.Namespaces...))))
	kinds := append(slices.Clone(next.Kinds), prev.Kinds...)
	slices.SortFunc(kinds, func(a, b schema.GroupVersionKind) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Version, b.Version), cmp.Compare(a.Kind, b.Kind))
	})
	next.Kinds = slices.Compact(kinds)
	return next
}

// Run runs the hub and the registry until ctx ends, and waits for both.
// The registry stops after the hub: stopping a cluster's watch manager
// closes its connections, which would cut a call the hub still lets finish
// (the second half of a remove-then-apply pair). With coordination, an
// error of the coordinator (another live process has this replica's id, or
// a panic in its loop) stops everything and is returned.
func (a *App) Run(ctx context.Context) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg conc.WaitGroup
	var hubErr, regErr error
	regCtx, stopReg := context.WithCancel(context.WithoutCancel(ctx))
	defer stopReg()
	wg.Go(func() {
		defer stopReg()
		hubErr = a.hub.Run(ctx)
	})
	wg.Go(func() {
		if a.watchAfter != nil {
			start := time.Now()
			why := waitToWatch(ctx, a.watchAfter, WatchAfterLimit)
			a.log.Info("cluster watches start", "after", why, "waited", time.Since(start))
		}
		regErr = a.reg.Run(regCtx)
	})
	var coordErr error
	if a.rep != nil {
		wg.Go(func() {
			if coordErr = a.rep.coord.Run(ctx); coordErr != nil {
				stop()
			}
		})
		wg.Go(func() { a.rep.run(ctx) })
	}
	if a.notifier != nil {
		// The notifier stops after the hub, so the hub's last
		// snapshots still reach it.
		notifyCtx, stopNotify := context.WithCancel(context.WithoutCancel(ctx))
		defer stopNotify()
		wg.Go(func() {
			<-regCtx.Done()
			stopNotify()
		})
		wg.Go(func() { _ = a.notifier.Run(notifyCtx) })
	}
	wg.Go(func() { a.ws.Run(ctx) })
	if a.git != nil {
		wg.Go(func() { a.git.Run(ctx) })
	}
	a.mu.Lock()
	sources := a.cfg.ClusterAPI
	a.discovering = a.discovering || len(sources) > 0
	a.mu.Unlock()
	for _, src := range sources {
		wg.Go(func() { a.runDiscovery(ctx, src) })
	}
	wg.Wait()
	return errors.Join(hubErr, regErr, coordErr)
}

// WatchAfterLimit is how long Options.WatchAfter holds the clusters'
// watches back at most.
const WatchAfterLimit = 250 * time.Millisecond

// waitToWatch returns when gate is closed, limit has passed, or ctx ends,
// whichever comes first, and says which.
func waitToWatch(ctx context.Context, gate <-chan struct{}, limit time.Duration) string {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-gate:
		return "first frame"
	case <-t.C:
		return "limit"
	case <-ctx.Done():
		return "stop"
	}
}

// putCluster registers a cluster, or with coordination records it and
// registers it only while this replica owns it.
func (a *App) putCluster(cc clusters.ClusterConfig) error {
	if a.rep != nil {
		return a.rep.put(cc)
	}
	return a.reg.Update(cc)
}

// dropCluster deregisters a cluster (and with coordination forgets it).
func (a *App) dropCluster(id string) {
	if a.rep != nil {
		a.rep.drop(id)
		return
	}
	a.reg.Remove(id)
}

// clusterConfig returns the configuration of a cluster the app manages (or
// with coordination, that any replica manages).
func (a *App) clusterConfig(id string) (clusters.ClusterConfig, bool) {
	if a.rep != nil {
		return a.rep.config(id)
	}
	return a.reg.Config(id)
}

// errWorkspacesWithReplicas refuses Terraform workspaces in a hub with
// coordination, at start and on reload: two replicas must never apply the
// same workspace, and workspaces are not claimed like clusters yet.
var errWorkspacesWithReplicas = errors.New("terraform: workspaces are not shared among replicas yet; run them in a hub without hub.coordination")

// Reload re-reads the config file. An invalid file changes nothing and
// returns every error. A valid one goes to the hub's prune guard first: a
// change that would decommission every managed object of a cluster, or more
// than the prune limit, is refused (unless allowPrune) with an error
// wrapping hub.ErrPruneRefused, and the old config and desired state keep
// running. Once the hub took it, the clusters are updated: what changed is
// enqueued, what was removed is pruned. Settings read at start (workers,
// pruneLimit, stateFile, ...) keep their old values until a restart.
func (a *App) Reload(allowPrune bool) error {
	data, err := config.ReadFile(a.path)
	if err != nil {
		a.hub.RecordReload("rejected")
		return fmt.Errorf("reload %s: config rejected, still running the previous one:\n%w", a.path, err)
	}
	if err := a.reload(data, allowPrune); err != nil {
		return err
	}
	if a.git != nil {
		// A reload looks again at everything: each Git source and chart
		// from a repository is fetched at once (a new revision then
		// reloads the desired state once more), not at its next poll.
		a.git.FetchAll()
	}
	return nil
}

// reloadSources is the reload of a Git source's new commit: the config
// as it was last loaded is parsed again (its Git sources checking out
// their newest commits), so an edit of the file that nobody reloaded yet
// does not go live with the commit. The prune guard applies as to Reload.
func (a *App) reloadSources() error {
	a.mu.Lock()
	data := a.cfg.Data()
	a.mu.Unlock()
	if data == nil {
		return a.Reload(false)
	}
	return a.reload(data, false)
}

// reload is Reload of the config content data.
func (a *App) reload(data []byte, allowPrune bool) error {
	cfg, err := config.Parse(a.path, data, a.loadOpts)
	if err != nil {
		a.hub.RecordReload("rejected")
		return fmt.Errorf("reload %s: config rejected, still running the previous one:\n%w", a.path, err)
	}
	a.desiredMu.Lock()
	defer a.desiredMu.Unlock()
	a.mu.Lock()
	old := a.cfg
	a.mu.Unlock()
	next := clusterConfigs(cfg, false, a.loadOpts.Getenv)
	keep := make(map[string]bool, len(next))
	for _, cc := range next {
		keep[cc.ID] = true
	}
	if a.rep != nil && len(cfg.Terraform) > 0 {
		a.hub.RecordReload("rejected")
		return fmt.Errorf("reload %s: %w", a.path, errWorkspacesWithReplicas)
	}
	// A workspace removed from the config, or changed, is stopped and
	// forgotten (never destroyed: Terraform resources are never deleted);
	// a changed one starts again as new and finds its resources in its
	// state. The others' resources stay as they are.
	wsGone, wsAdded := a.ws.Plan(workspaceOptions(cfg.Terraform))
	compiled := config.Compile(cfg)
	hash := desiredHash(cfg, compiled)
	found, err := a.discoveredSpecs(cfg)
	if err != nil {
		a.hub.RecordReload("rejected")
		return fmt.Errorf("reload %s: %w", a.path, err)
	}
	specs := append(compiled, found...)
	specs = append(specs, a.workspaceSpecsLocked(wsGone)...)
	// A cluster removed from the config is no longer managed, never
	// pruned: the hub forgets it in the same guarded change (nothing is
	// forgotten if the guard refuses), then it is deregistered.
	var gone []string
	for _, c := range old.Clusters {
		if !keep[c.ID] {
			gone = append(gone, c.ID)
		}
	}
	// The change judges the clusters known now: those of the config, the
	// discovered ones and the workspaces with a desired state. Records of
	// a cluster discovery has not reported yet are left for its report.
	only := make([]string, 0, len(next)+len(a.wsSpecs))
	for _, cc := range next {
		only = append(only, cc.ID)
	}
	for _, c := range cfg.Clusters {
		a.hub.SetClusterPolicy(c.ID, c.Policy)
	}
	only = append(only, a.discoveredIDs()...)
	only = append(only, slices.Collect(maps.Keys(a.wsSpecs))...)
	undo := func() {}
	if a.rep != nil && a.git != nil {
		// Recorded before the new desired state is in force, so no replica
		// taking a cluster over later applies an older commit.
		if undo, err = a.rep.recordRevisions(a.git.revisionsOf(cfg)); err != nil {
			a.hub.RecordReload("rejected")
			return fmt.Errorf("reload %s: %w", a.path, err)
		}
	}
	if a.rep != nil {
		// Published before the new desired state is in force: if it makes
		// this replica disagree with the owners, its writes stop first.
		a.rep.coord.SetDesiredHash(hash)
	}
	changed, removed, err := a.hub.ReplaceDesired(specs, hub.DesiredOptions{AllowPrune: allowPrune, Only: only,
		Forget: append(slices.Clone(gone), wsGone...), Keep: faultySources(cfg)})
	if err != nil {
		undo()
		if a.rep != nil {
			a.rep.coord.SetDesiredHash(a.desiredHash)
		}
		if a.git != nil && errors.Is(err, hub.ErrPruneRefused) {
			a.git.refusedLoad(cfg, err)
		}
		a.hub.RecordReload("rejected")
		return fmt.Errorf("reload %s: %w", a.path, err)
	}
	a.desiredHash = hash
	a.mu.Lock()
	a.cfg = a.retainLocked(cfg)
	a.mu.Unlock()
	a.noteSourceFaults(cfg)
	if a.git != nil {
		a.git.loaded(cfg)
	}
	for _, id := range gone {
		a.dropCluster(id)
		a.hub.ForgetCluster(id) // a report sent while it stopped
	}
	for _, id := range wsGone {
		a.ws.Remove(id) // no report of it reaches the hub after this
		delete(a.wsSpecs, id)
		a.hub.ForgetCluster(id)
	}
	for _, wc := range wsAdded {
		if err := a.ws.Add(wc); err != nil {
			a.log.Error("add terraform workspace", "workspace", wc.ID, "err", err)
		}
	}
	if len(wsGone)+len(wsAdded) > 0 {
		a.log.Info("terraform workspaces reloaded", "stopped", wsGone, "started", len(wsAdded))
	}
	kept := len(cfg.SourceFaults()) > 0
	for _, cc := range next {
		if prev, ok := a.clusterConfig(cc.ID); ok && kept {
			cc = keepWatching(cc, prev)
		}
		if err := a.putCluster(cc); err != nil {
			a.log.Error("update cluster", "cluster", cc.ID, "err", err)
		}
	}
	if old.Hub.PruneLimit != cfg.Hub.PruneLimit || old.Hub.StateFile != cfg.Hub.StateFile {
		a.log.Warn("hub.pruneLimit and hub.stateFile changes take effect at the next start", "path", a.path)
	}
	if !reflect.DeepEqual(old.Notifications, cfg.Notifications) {
		a.log.Warn("notifications changes take effect at the next start", "path", a.path)
	}
	a.hub.RecordReload("applied")
	a.log.Info("config reloaded", "path", a.path, "changed", len(changed), "removed", len(removed), "allowPrune", allowPrune)
	return nil
}

// ReloadOnSIGHUP subscribes to SIGHUP at once (so a SIGHUP right after
// start reloads instead of ending the process) and returns the loop that
// reloads the config at every SIGHUP until ctx ends, never allowing a
// guarded prune; a rejected reload is logged with every error and changes
// nothing. A panic in a reload is recovered and logged with its stack, and
// the loop waits for the next SIGHUP (still subscribed: a SIGHUP never ends
// the process). Run the returned function in a goroutine the caller waits
// for.
func (a *App) ReloadOnSIGHUP(ctx context.Context) func() {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				var err error
				if rescue.Call(a.log, "the config reload on SIGHUP", func() { err = a.Reload(false) }) != nil {
					continue
				}
				if err != nil {
					a.log.Error("config reload rejected", "err", err)
				}
			}
		}
	}
}

// StartError turns New's error into the command's (cmd prefixes it unless
// empty): a refused prune says how to confirm at start; every error exits
// 1.
func StartError(cmd string, err error) error {
	if cmd != "" {
		err = fmt.Errorf("%s: %w", cmd, err)
	}
	if errors.Is(err, hub.ErrPruneRefused) {
		err = fmt.Errorf("%w\n(at start: if this is intended, run the command again with --allow-prune)", err)
	}
	return &ExitError{Code: 1, Err: err}
}

// Ready reports whether the loop runs and every configured cluster has been
// attempted; with coordination, also whether this replica takes its share
// of the clusters (not joining, not refused for another desired state, not
// fenced off from the coordination cluster).
func (a *App) Ready() error {
	a.mu.Lock()
	cfg := a.cfg
	a.mu.Unlock()
	if !a.hub.Running() {
		return errors.New("reconcile loop not running")
	}
	if a.rep != nil {
		if err := a.rep.ready(); err != nil {
			return err
		}
	}
	var waiting []string
	for _, c := range cfg.Clusters {
		if a.rep != nil && !a.rep.owns(c.ID) {
			continue // another replica's
		}
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

// noteSourceFaults logs each manifest source of cfg that fails (left out of
// the desired state: its last good state stays, see LoadOptions.
// IsolateSources) and each that is fixed, and shows the failing ones in the
// hub's snapshot and metrics. Callers hold desiredMu (or own a alone).
func (a *App) noteSourceFaults(cfg *config.Config) {
	faults := cfg.SourceFaults()
	now := time.Now()
	prev := a.failing
	a.failing = make(map[string]time.Time, len(faults))
	status := make([]hub.SourceStatus, 0, len(faults))
	for _, id := range slices.Sorted(maps.Keys(faults)) {
		since, was := prev[id]
		if !was {
			since = now
		}
		a.failing[id] = since
		msgs := make([]string, 0, len(faults[id]))
		for _, e := range faults[id] {
			msgs = append(msgs, e.Error())
		}
		msg := strings.Join(msgs, "; ")
		a.log.Error("manifest source failing: left out, its last good desired state stays in force", "source", id, "err", msg)
		status = append(status, hub.SourceStatus{ID: id, Error: msg, Since: since})
	}
	for id := range prev {
		if _, still := faults[id]; !still {
			a.log.Info("manifest source fixed", "source", id)
		}
	}
	a.hub.SetSourceFaults(status)
}

// faultySources are the ids of cfg's sources left out because they cannot
// be used (config.Config.SourceFaults), sorted: the hub keeps their last
// good state (hub.DesiredOptions.Keep).
func faultySources(cfg *config.Config) []string {
	return slices.Sorted(maps.Keys(cfg.SourceFaults()))
}

// keptSources are the manifest sources whose last good state the hub keeps
// (see hub.DesiredOptions.Keep). Callers hold desiredMu.
func (a *App) keptSources() []string {
	return slices.Sorted(maps.Keys(a.failing))
}

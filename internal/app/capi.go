package app

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/clusters/capi"
	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
)

// discovered is a cluster found by a Cluster API source.
type discovered struct {
	source config.ClusterAPISource
	found  capi.Discovered
}

// capiHandler turns Cluster API discoveries into registered clusters and
// desired state.
type capiHandler struct {
	a      *App
	source config.ClusterAPISource
}

// ClusterUp registers (or re-registers, e.g. with rotated credentials) a
// discovered cluster and applies the applications that select it, through
// the prune guard: a change that would decommission every managed object
// of the cluster, or more than the prune limit, is refused and logged.
func (c capiHandler) ClusterUp(d capi.Discovered) {
	a := c.a
	a.desiredMu.Lock()
	defer a.desiredMu.Unlock()
	a.mu.Lock()
	cfg := a.cfg
	_, static := cfg.Cluster(d.ID)
	a.mu.Unlock()
	if static {
		a.log.Error("discovered cluster id collides with a configured cluster; ignored", "cluster", d.ID, "source", d.Source)
		return
	}
	if d.Err != nil {
		if _, ok := a.clusterConfig(d.ID); ok {
			// Keep the working connection; say what is wrong.
			a.log.Error("discovered cluster: kubeconfig secret unusable, keeping the current connection", "cluster", d.ID, "err", d.Err)
			return
		}
		a.hub.ClusterChanged(hub.ClusterHealth{Cluster: d.ID, State: hub.ClusterUnreachable, LastError: d.Err.Error(),
			Since: time.Now(), Source: d.Source, Phase: d.Phase})
		return
	}
	info := c.source.Info(d.ID, d.Labels)
	a.hub.SetClusterPolicy(d.ID, info.Policy)
	if _, _, err := a.hub.ReplaceDesiredCluster(d.ID, config.CompileCluster(cfg, info), hub.DesiredOptions{}); err != nil {
		// The new labels would prune too much: keep the desired state
		// (and the labels that made it) of the last discovery; a reload
		// with --allow-prune applies the new ones.
		a.log.Error("discovered cluster: desired state change refused, keeping the previous one", "cluster", d.ID, "err", err)
		a.mu.Lock()
		if prev, ok := a.found[d.ID]; ok {
			d.Labels = prev.found.Labels
			info = c.source.Info(d.ID, d.Labels)
		}
		a.mu.Unlock()
	}
	a.mu.Lock()
	a.found[d.ID] = discovered{source: c.source, found: d}
	a.mu.Unlock()
	cc := clusters.ClusterConfig{
		ID: d.ID, KubeconfigData: d.Kubeconfig, Namespaces: cfg.NamespacesFor(info),
		ManagedBy: cfg.Hub.ManagedBy, HubID: cfg.Hub.ID, QPS: cfg.Hub.QPS, Burst: cfg.Hub.Burst,
		Source: d.Source, Phase: d.Phase, Labels: maps.Clone(info.Labels),
		// The secret is checked again when the manager connects, and
		// client-go enforces the exec allowlist before running a plugin.
		KubeconfigPolicy: kubeconfigPolicy(c.source),
	}
	if err := a.putCluster(cc); err != nil {
		a.log.Error("register discovered cluster", "cluster", d.ID, "err", err)
	}
}

// ClusterGone stops repairs on a deleted cluster at once, then deregisters
// it and frees its memory.
func (c capiHandler) ClusterGone(id string) {
	a := c.a
	a.desiredMu.Lock()
	defer a.desiredMu.Unlock()
	a.mu.Lock()
	delete(a.found, id)
	a.mu.Unlock()
	a.hub.ForgetCluster(id) // no desired state: workers stop repairing it now
	a.dropCluster(id)
	// Its manager may have reported health between the two calls.
	a.hub.ForgetCluster(id)
}

// runDiscovery runs one Cluster API source until ctx ends, restarting it with
// backoff when the management cluster cannot be reached.
func (a *App) runDiscovery(ctx context.Context, src config.ClusterAPISource) {
	log := a.log.With("capi", src.Name)
	backoff := time.Second
	for ctx.Err() == nil {
		d, err := capi.New(capi.Source{
			Name: src.Name, Kubeconfig: src.Kubeconfig, Context: src.Context, InCluster: src.InCluster, Namespaces: src.Namespaces,
			Selector: src.Selector, Labels: src.Labels, IDTemplate: src.IDTemplate,
			KubeconfigPolicy: kubeconfigPolicy(src),
		}, capiHandler{a: a, source: src}, log)
		if err != nil {
			log.Error("cluster API source", "err", err)
			return
		}
		started := time.Now()
		if err := d.Run(ctx); err != nil {
			log.Error("cluster API discovery stopped; retrying", "err", err, "backoff", backoff)
		}
		if time.Since(started) > time.Minute {
			backoff = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// kubeconfigPolicy is what the kubeconfig secrets of a source's clusters
// may use: exec plugins only from the source's execAllowlist, insecure TLS
// only with allowInsecureSkipTLSVerify, never file references.
func kubeconfigPolicy(src config.ClusterAPISource) clusters.KubeconfigPolicy {
	return clusters.KubeconfigPolicy{
		Origin:                     fmt.Sprintf("clusterAPI source %q", src.Name),
		ExecAllowlist:              src.ExecAllowlist,
		AllowInsecureSkipTLSVerify: src.AllowInsecureSkipTLSVerify,
	}
}

// discoveredIDs returns the ids of the clusters discovery reported.
func (a *App) discoveredIDs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Collect(maps.Keys(a.found))
}

// discoveredSpecs compiles the desired state of every discovered cluster
// with cfg (used by reloads).
func (a *App) discoveredSpecs(cfg *config.Config) []hub.NodeSpec {
	a.mu.Lock()
	found := maps.Clone(a.found)
	a.mu.Unlock()
	var specs []hub.NodeSpec
	for id, d := range found {
		src := d.source
		for _, s := range cfg.ClusterAPI {
			if s.Name == src.Name {
				src = s
			}
		}
		specs = append(specs, config.CompileCluster(cfg, src.Info(id, d.found.Labels))...)
	}
	return specs
}

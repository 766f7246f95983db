package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
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

// ClusterUp records the source's claim on the id, then registers (or
// re-registers, e.g. with rotated credentials) the discovered cluster and
// applies the applications that select it, through the prune guard: a
// change that would decommission every managed object of the cluster, or
// more than the prune limit, is refused and logged. An id claimed by
// several sources is managed by none of them (see claimLocked).
func (c capiHandler) ClusterUp(d capi.Discovered) {
	a := c.a
	a.desiredMu.Lock()
	defer a.desiredMu.Unlock()
	if a.staticCluster(d.ID) {
		a.log.Error("discovered cluster id collides with a configured cluster; ignored", "cluster", d.ID, "source", d.Source)
		return
	}
	if !a.claimLocked(d.ID, discovered{source: c.source, found: d}) {
		return
	}
	a.clusterUpLocked(c.source, d)
}

// staticCluster reports whether id is a cluster of the config.
func (a *App) staticCluster(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.cfg.Cluster(id)
	return ok
}

// claimLocked records a source's claim on a cluster id (desiredMu held)
// and reports whether that source alone claims it. When two sources
// (e.g. two management clusters that both have a Cluster fleet/web) claim
// one id, neither silently replaces the other: the cluster is let go and
// the id's health says who claims it until one claim is left.
func (a *App) claimLocked(id string, d discovered) bool {
	claims := a.claims[id]
	if claims == nil {
		claims = make(map[string]discovered)
		a.claims[id] = claims
	}
	before := len(claims)
	claims[d.source.Name] = d
	if len(claims) == 1 {
		return true
	}
	if before == 1 {
		a.letGoLocked(id) // the first source's cluster stops here
	}
	a.showCollisionLocked(id, claims)
	return false
}

// showCollisionLocked sets the health of an id several sources claim.
func (a *App) showCollisionLocked(id string, claims map[string]discovered) {
	names := slices.Sorted(maps.Keys(claims))
	parts := make([]string, len(names))
	for i, n := range names {
		f := claims[n].found
		objs := f.Namespace + "/" + f.Name
		if c, ok := errors.AsType[*capi.IDCollisionError](f.Err); ok {
			objs = strings.Join(c.Clusters, ", ")
		}
		parts[i] = fmt.Sprintf("%q (%s)", n, objs)
	}
	err := fmt.Sprintf("cluster id %q is claimed by clusterAPI sources %s: none of them is managed until one is left (delete or rename the others, or give the sources different idTemplates)",
		id, strings.Join(parts, ", "))
	a.log.Error("discovered cluster id collision: none of the sources' clusters is managed", "cluster", id, "err", err)
	a.hub.ClusterChanged(hub.ClusterHealth{Cluster: id, State: hub.ClusterUnreachable, LastError: err,
		Since: time.Now(), Source: claims[names[0]].found.Source})
}

// clusterUpLocked registers a discovered cluster (desiredMu held).
func (a *App) clusterUpLocked(source config.ClusterAPISource, d capi.Discovered) {
	a.mu.Lock()
	cfg := a.cfg
	a.mu.Unlock()
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
	info := source.Info(d.ID, d.Labels)
	specs, err := config.CompileCluster(cfg, info)
	if err != nil {
		// A manifest source does not render for this cluster (or misses
		// a label): nothing is managed there until the config or the
		// cluster's labels are fixed.
		a.log.Error("discovered cluster: desired state does not compile", "cluster", d.ID, "err", err)
		a.hub.ClusterChanged(hub.ClusterHealth{Cluster: d.ID, State: hub.ClusterUnreachable, LastError: err.Error(),
			Since: time.Now(), Source: d.Source, Phase: d.Phase})
		return
	}
	a.hub.SetClusterPolicy(d.ID, info.Policy)
	if _, _, err := a.hub.ReplaceDesiredCluster(d.ID, specs, hub.DesiredOptions{Keep: a.keptSources()}); err != nil {
		// The new labels would prune too much: keep the desired state
		// (and the labels that made it) of the last discovery; a reload
		// with --allow-prune applies the new ones.
		a.log.Error("discovered cluster: desired state change refused, keeping the previous one", "cluster", d.ID, "err", err)
		a.mu.Lock()
		if prev, ok := a.found[d.ID]; ok {
			d.Labels = prev.found.Labels
			info = source.Info(d.ID, d.Labels)
		}
		a.mu.Unlock()
	}
	a.mu.Lock()
	a.found[d.ID] = discovered{source: source, found: d}
	a.mu.Unlock()
	cc := clusters.ClusterConfig{
		ID: d.ID, KubeconfigData: d.Kubeconfig, Namespaces: cfg.NamespacesFor(info), Kinds: cfg.KindsFor(info),
		ManagedBy: cfg.Hub.ManagedBy, HubID: cfg.Hub.ID, Replicated: cfg.Hub.Coordination != nil, QPS: cfg.Hub.QPS, Burst: cfg.Hub.Burst,
		Source: d.Source, Phase: d.Phase, Labels: maps.Clone(info.Labels),
		// The secret is checked again when the manager connects, and
		// client-go enforces the exec allowlist before running a plugin.
		KubeconfigPolicy: kubeconfigPolicy(source),
	}
	if err := a.putCluster(cc); err != nil {
		a.log.Error("register discovered cluster", "cluster", d.ID, "err", err)
	}
}

// ClusterGone drops the source's claim on the id: with no claim left it
// stops repairs on the cluster at once, then deregisters it and frees its
// memory; with one claim left (the end of a collision) that source's
// cluster comes up. A configured cluster of that id is never touched.
func (c capiHandler) ClusterGone(id string) {
	a := c.a
	a.desiredMu.Lock()
	defer a.desiredMu.Unlock()
	claims := a.claims[id]
	delete(claims, c.source.Name)
	if a.staticCluster(id) {
		return // ignored when it came up
	}
	switch len(claims) {
	case 0:
		delete(a.claims, id)
		a.letGoLocked(id)
	case 1:
		a.letGoLocked(id) // the collision's health
		for _, d := range claims {
			a.clusterUpLocked(d.source, d.found)
		}
	default:
		a.showCollisionLocked(id, claims)
	}
}

// letGoLocked stops repairs on a discovered cluster at once, then
// deregisters it and frees its memory (desiredMu held).
func (a *App) letGoLocked(id string) {
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
// with cfg (used by reloads); an error (a manifest source that does not
// render for one of them) refuses the reload.
func (a *App) discoveredSpecs(cfg *config.Config) ([]hub.NodeSpec, error) {
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
		cs, err := config.CompileCluster(cfg, src.Info(id, d.found.Labels))
		if err != nil {
			return nil, err
		}
		specs = append(specs, cs...)
	}
	return specs, nil
}

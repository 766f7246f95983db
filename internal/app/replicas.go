package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/hub/intent"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
	"github.com/driftwatch/driftwatch/internal/coord"
	"github.com/driftwatch/driftwatch/internal/rescue"
)

// replicas is an App's share of the clusters when it runs as one replica
// of several (hub.coordination): every cluster the config and Cluster API
// discovery name is wanted, and only those whose claim this replica holds
// are registered (watched and repaired). An ownership change adds or
// removes a cluster from the registry as discovery does, and never prunes
// anything: the hub keeps the cluster's desired state, and a cluster that
// is not registered is only parked.
type replicas struct {
	a     *App
	coord *coord.Coordinator
	// client reaches the coordination cluster.
	client kubernetes.Interface
	// lease is the lease duration, also the period of the intent refresh.
	lease time.Duration

	// regMu serialises registering and deregistering owned clusters
	// (Own, Disown and the takeover retries), so a retry never registers
	// a cluster Disown just removed.
	regMu sync.Mutex

	mu     sync.Mutex
	wanted map[string]clusters.ClusterConfig
	owned  map[string]bool
	// pending are owned clusters not taken over yet (not registered,
	// retried every renewal period), each with why its last takeover
	// failed ("": not tried yet).
	pending map[string]string
	// lastFetchAsk is when a takeover behind the fleet's Git revisions
	// last asked for a fetch; revsChecked are the revisions last found
	// current, at revsCheckedAt.
	lastFetchAsk  time.Time
	revsChecked   []gitRevision
	revsCheckedAt time.Time
}

// ResolveReplicaID returns the replica id: flag when set, else $POD_NAME,
// else the host name (lower-cased).
func ResolveReplicaID(flag string, getenv func(string) string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	if p := getenv("POD_NAME"); p != "" {
		return p, nil
	}
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("replica id: no --replica-id, no $POD_NAME, and the host name: %w", err)
	}
	return strings.ToLower(h), nil
}

// sharedIntentTimeout bounds the first call to the coordination cluster.
const sharedIntentTimeout = 30 * time.Second

// openSharedIntent connects to the coordination cluster (its kubeconfig is
// checked like every other) and opens the intent store the replicas share
// in its namespace.
func openSharedIntent(co *config.Coordination, hubID, managedBy string, getenv func(string) string) (kubernetes.Interface, hub.IntentStore, error) {
	rc, err := clusters.RESTConfig(clusters.ClusterConfig{
		ID: "coordination", Kubeconfig: co.Kubeconfig, Context: co.Context, InCluster: co.Kubeconfig == "", Getenv: getenv,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("hub.coordination: %w", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, fmt.Errorf("hub.coordination: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedIntentTimeout)
	defer cancel()
	s, err := intent.NewConfigMapStore(ctx, cs, co.Namespace, hubID, intent.ConfigMapOptions{ManagedBy: managedBy})
	if err != nil {
		return nil, nil, fmt.Errorf("hub.coordination: %w", err)
	}
	return cs, s, nil
}

// newReplicas prepares the coordinator (it joins when the App runs);
// desiredHash is the hash of the desired state it starts with.
func newReplicas(a *App, co *config.Coordination, cs kubernetes.Interface, replicaID, desiredHash string) (*replicas, error) {
	r := &replicas{a: a, client: cs, lease: co.LeaseDuration, wanted: make(map[string]clusters.ClusterConfig),
		owned: make(map[string]bool), pending: make(map[string]string)}
	var err error
	r.coord, err = coord.New(coord.Options{
		Client: cs, Namespace: co.Namespace, HubID: a.hub.ID(), ReplicaID: replicaID,
		LeaseDuration: co.LeaseDuration, Handler: r, Logger: a.log.With("component", "coordination"),
		Registerer: a.hub.Registerer(), DesiredHash: desiredHash,
		// A push webhook reaches one replica: the others fetch as soon as
		// it publishes the desired state of the new commit.
		OnOtherHash: func() {
			if a.git != nil {
				a.git.TriggerAll()
			}
		},
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// put records a wanted cluster and registers it when owned (and taken
// over).
func (r *replicas) put(cc clusters.ClusterConfig) error {
	r.mu.Lock()
	_, known := r.wanted[cc.ID]
	r.wanted[cc.ID] = cc
	_, pending := r.pending[cc.ID]
	registered := r.owned[cc.ID] && !pending
	ids := slices.Collect(maps.Keys(r.wanted))
	r.mu.Unlock()
	if !known {
		r.coord.SetClusters(ids)
	}
	if registered {
		return r.a.reg.Update(cc)
	}
	return nil
}

// drop forgets a wanted cluster and deregisters it.
func (r *replicas) drop(id string) {
	r.mu.Lock()
	delete(r.wanted, id)
	ids := slices.Collect(maps.Keys(r.wanted))
	r.mu.Unlock()
	r.coord.SetClusters(ids)
	r.a.reg.Remove(id)
}

// config returns a wanted cluster's configuration.
func (r *replicas) config(id string) (clusters.ClusterConfig, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cc, ok := r.wanted[id]
	return cc, ok
}

// owns reports whether this replica manages the cluster: it holds its
// claim and took it over.
func (r *replicas) owns(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, pending := r.pending[id]
	return r.owned[id] && !pending
}

// Own implements coord.Handler: the hub takes the cluster over (it adopts
// what the intent the replicas share holds for it: pauses, holds,
// policies, applied and decommission records), then the cluster is
// registered; its manager's first list finds the drift made while nobody
// managed it. A takeover that fails leaves the cluster unregistered (held,
// not managed) and is retried every renewal period.
func (r *replicas) Own(id string) {
	r.regMu.Lock()
	defer r.regMu.Unlock()
	r.mu.Lock()
	r.owned[id] = true
	r.pending[id] = ""
	r.mu.Unlock()
	r.takeOverLocked(id)
}

// takeOverLocked takes an owned cluster over and registers it; on failure
// it stays pending. Callers hold r.regMu.
func (r *replicas) takeOverLocked(id string) {
	if err := r.revisionsCurrent(); err != nil {
		r.stillPending(id, "take over cluster: not managed until this replica's Git sources are at the revisions the replicas applied; retrying", err)
		return
	}
	if err := r.a.hub.TakeOver(id); err != nil {
		r.stillPending(id, "take over cluster: not managed until the shared intent is read; retrying", err)
		return
	}
	r.mu.Lock()
	if !r.owned[id] {
		r.mu.Unlock()
		return
	}
	delete(r.pending, id)
	cc, ok := r.wanted[id]
	r.mu.Unlock()
	if !ok {
		return
	}
	if err := r.a.reg.Update(cc); err != nil {
		r.a.log.Error("register owned cluster", "cluster", id, "err", err)
	}
}

// stillPending records why a cluster's takeover failed, and logs it when
// the reason changed (it is retried every renewal period).
func (r *replicas) stillPending(id, msg string, err error) {
	r.mu.Lock()
	why, pending := r.pending[id]
	changed := why != err.Error()
	if pending {
		r.pending[id] = err.Error()
	}
	r.mu.Unlock()
	if changed {
		r.a.log.Error(msg, "cluster", id, "err", err)
	}
}

// retryTakeOvers retries the takeovers that failed.
func (r *replicas) retryTakeOvers() {
	r.regMu.Lock()
	defer r.regMu.Unlock()
	r.mu.Lock()
	ids := slices.Sorted(maps.Keys(r.pending))
	r.mu.Unlock()
	for _, id := range ids {
		r.takeOverLocked(id)
	}
}

// Disown implements coord.Handler: the cluster is deregistered, nothing
// is pruned.
func (r *replicas) Disown(id string) {
	r.regMu.Lock()
	defer r.regMu.Unlock()
	r.mu.Lock()
	delete(r.owned, id)
	delete(r.pending, id)
	r.mu.Unlock()
	r.a.reg.Remove(id)
}

// run re-reads the shared intent every lease duration, so an override or
// a hold recorded through another replica holds here too, and retries
// failed takeovers every renewal period (a fifth of it), until ctx ends.
// A panic in a tick is recovered and logged with its stack, and the next
// tick comes as usual: a takeover that panicked is still pending, and
// retried then.
func (r *replicas) run(ctx context.Context) {
	period := max(r.lease/5, time.Millisecond)
	t := time.NewTicker(period)
	defer t.Stop()
	lastRefresh := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_ = rescue.Call(r.a.log, "the replicas' takeover retries and intent refresh", func() { r.tick(&lastRefresh) })
	}
}

// tick retries the failed takeovers, and re-reads the shared intent when
// the last read (at *lastRefresh, which it updates) is a lease duration
// old.
func (r *replicas) tick(lastRefresh *time.Time) {
	r.retryTakeOvers()
	if time.Since(*lastRefresh) < r.lease {
		return
	}
	*lastRefresh = time.Now()
	switch err := r.a.hub.RefreshIntent(); {
	case errors.Is(err, hub.ErrRefreshRaced):
		// A switch set here is being recorded: read again at the next
		// tick.
		*lastRefresh = time.Time{}
	case err != nil:
		r.a.log.Error("refresh shared intent", "err", err)
	}
}

// ready returns nil while this replica takes its share of the clusters,
// else why not: joining, refused for another desired state, fenced off
// from the coordination cluster, or holding clusters it could not take
// over yet.
func (r *replicas) ready() error {
	if err := r.coord.Ready(); err != nil {
		return err
	}
	return r.pendingErr()
}

// pendingErr names the clusters held but not taken over yet, and why (nil:
// none).
func (r *replicas) pendingErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	pending := slices.Sorted(maps.Keys(r.pending))
	if len(pending) == 0 {
		return nil
	}
	reasons := make([]string, 0, len(pending))
	for _, id := range pending {
		why := r.pending[id]
		if why == "" {
			why = "taking over"
		}
		reasons = append(reasons, id+": "+why)
	}
	return fmt.Errorf("clusters held but not taken over yet: %s", strings.Join(reasons, "; "))
}

// apiReplicas returns the coordinator's view of the live replicas for the
// API (GET /api/v1/replicas and each cluster's owner in the snapshot).
// While this replica is joining or fenced off from the coordination
// cluster it lists only itself, in that state, with no cluster: it cannot
// tell who owns what.
func (r *replicas) apiReplicas() []apiv1.Replica {
	v := r.coord.View()
	out := make([]apiv1.Replica, 0, len(v.Replicas))
	for _, rep := range v.Replicas {
		out = append(out, apiv1.Replica{
			ID: rep.ID, Address: rep.Address, Self: rep.Self, State: replicaState(rep.Standing), Reason: rep.Reason,
			DesiredHash: rep.DesiredHash, Clusters: append([]string{}, rep.Clusters...),
		})
	}
	return out
}

// replicaState is the API state of a coordinator standing.
func replicaState(s coord.Standing) string {
	switch s {
	case coord.StandingRefused:
		return apiv1.ReplicaRefused
	case coord.StandingFenced:
		return apiv1.ReplicaCoordinationUnreachable
	case coord.StandingJoining:
		return apiv1.ReplicaJoining
	}
	return apiv1.ReplicaLive
}

// ownedIntent is the intent store of a replica: the records that belong
// to one cluster (applied specs, pending decommissions) are written only
// while this replica holds the cluster's claim and agrees with the
// owners' desired state; those of other clusters are kept in memory only.
// A replica never writes records for a cluster another replica owns: one
// started or reloaded with another config computes decommissions for
// every cluster, and the owner would adopt them at a takeover. Pauses,
// policies and holds are shared by every replica and go through.
type ownedIntent struct {
	hub.IntentStore
	// owns reports whether this replica may write a cluster's records;
	// nil (before the coordinator exists): none. Set before the hub runs.
	owns func(cluster string) bool
}

func (o *ownedIntent) mayWrite(cluster string) bool { return o.owns != nil && o.owns(cluster) }

// LoadOverrides implements hub.OverridesLoader.
func (o *ownedIntent) LoadOverrides() (hub.Intent, error) {
	if l, ok := o.IntentStore.(hub.OverridesLoader); ok {
		return l.LoadOverrides()
	}
	return o.IntentStore.Load()
}

// PutDecommission implements hub.IntentStore for owned clusters.
func (o *ownedIntent) PutDecommission(d hub.DecommissionRecord) error {
	if !o.mayWrite(d.Ref.ID.Cluster) {
		return nil
	}
	return o.IntentStore.PutDecommission(d)
}

// DeleteDecommission implements hub.IntentStore for owned clusters.
func (o *ownedIntent) DeleteDecommission(id hub.NodeID) error {
	if !o.mayWrite(id.Cluster) {
		return nil
	}
	return o.IntentStore.DeleteDecommission(id)
}

// PutApplied implements hub.IntentStore for owned clusters.
func (o *ownedIntent) PutApplied(r hub.SpecRef) error {
	if !o.mayWrite(r.ID.Cluster) {
		return nil
	}
	return o.IntentStore.PutApplied(r)
}

// DeleteApplied implements hub.IntentStore for owned clusters.
func (o *ownedIntent) DeleteApplied(id hub.NodeID) error {
	if !o.mayWrite(id.Cluster) {
		return nil
	}
	return o.IntentStore.DeleteApplied(id)
}

package hub

import (
	"sync"
	"time"
)

// clusterBoard is the part of the status store that shows clusters and the
// hub as a whole: each cluster's health, pause and recent repair times, the
// holds, the failing sources and the runtime policy overrides. It shares
// the store's lock (mu) and change signal (dirty), so a snapshot reads it
// and the NodeIDs' records in one critical section.
type clusterBoard struct {
	mu        *sync.Mutex
	dirty     chan<- struct{}
	metrics   *metrics
	clusters  map[string]*clusterStatus
	appPolicy map[string]Policy
	// appPolicyNotes say when each override was set, by whom and why.
	appPolicyNotes map[string]OverrideNote
	holds          []Hold
	sources        []SourceStatus
	revisions      []SourceRevision
}

func (b *clusterBoard) clusterLocked(id string) *clusterStatus {
	c := b.clusters[id]
	if c == nil {
		c = &clusterStatus{health: ClusterHealth{Cluster: id, State: ClusterConnecting}}
		b.clusters[id] = c
	}
	return c
}

func (b *clusterBoard) health(h ClusterHealth) {
	b.mu.Lock()
	c := b.clusterLocked(h.Cluster)
	c.health = h
	c.known = true
	b.mu.Unlock()
	b.metrics.setClusterState(h.Cluster, h.State)
	signal(b.dirty)
}

// removeHealth drops a removed cluster's health (its NodeIDs stay when it
// still has desired state: they show as unknown).
func (b *clusterBoard) removeHealth(cluster string) {
	b.mu.Lock()
	b.dropLocked(cluster)
	b.mu.Unlock()
	b.metrics.forgetCluster(cluster)
	signal(b.dirty)
}

// dropLocked forgets a cluster's health and repair times but keeps its
// pause: the pause is the operator's intent, not cluster state, so a
// paused cluster stays listed (as removed, and paused) while it is gone,
// and is shown paused when it comes back however its first health report
// and its NodeIDs' first passes interleave. Callers hold mu.
func (b *clusterBoard) dropLocked(cluster string) {
	if c := b.clusters[cluster]; c != nil && c.paused {
		b.clusters[cluster] = &clusterStatus{health: ClusterHealth{Cluster: cluster, State: ClusterRemoved}, paused: true, pausedAt: c.pausedAt, pauseNote: c.pauseNote}
		return
	}
	delete(b.clusters, cluster)
}

// paused shows a cluster's pause, made at at with its note (at and note
// are zero when it is resumed).
func (b *clusterBoard) paused(cluster string, paused bool, at time.Time, note SwitchNote) {
	b.mu.Lock()
	c := b.clusterLocked(cluster)
	c.paused, c.pausedAt, c.pauseNote = paused, at, note
	b.mu.Unlock()
	b.metrics.setPaused(cluster, paused, at)
	signal(b.dirty)
}

// setHolds records the holds (sorted, owned by the store from now on).
func (b *clusterBoard) setHolds(h []Hold) {
	b.mu.Lock()
	b.holds = h
	b.mu.Unlock()
	b.metrics.setHolds(h)
	signal(b.dirty)
}

// setSources records the failing sources (sorted, owned by the store).
func (b *clusterBoard) setSources(src []SourceStatus) {
	b.mu.Lock()
	b.sources = src
	b.mu.Unlock()
	signal(b.dirty)
}

// setRevisions records the Git sources' revisions (sorted, owned by the
// store).
func (b *clusterBoard) setRevisions(r []SourceRevision) {
	b.mu.Lock()
	b.revisions = r
	b.mu.Unlock()
	signal(b.dirty)
}

// appPolicies records the runtime policy overrides with their notes (owned
// by the store from now on).
func (b *clusterBoard) appPolicies(o map[string]appOverride) {
	p := make(map[string]Policy, len(o))
	notes := make(map[string]OverrideNote, len(o))
	for app, ov := range o {
		p[app] = ov.Policy
		if ov.OverrideNote != (OverrideNote{}) {
			notes[app] = ov.OverrideNote
		}
	}
	b.mu.Lock()
	b.appPolicy, b.appPolicyNotes = p, notes
	b.mu.Unlock()
	b.metrics.setOverrides(o)
	signal(b.dirty)
}

// clusterHealth returns the last health a cluster reported.
func (b *clusterBoard) clusterHealth(cluster string) (ClusterHealth, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.clusters[cluster]
	if !ok || !c.known {
		return ClusterHealth{}, false
	}
	return c.health, true
}

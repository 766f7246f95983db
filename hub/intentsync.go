package hub

import (
	"fmt"
	"maps"
	"time"
)

// RefreshIntent re-reads the operator intent (cluster pauses, application
// policy overrides, holds) from the intent store and adopts it, enqueueing
// what a lifted pause, a changed policy or a released hold covers. Replicas
// of one hub share a store: a pause recorded by one must hold on the
// replica that takes the cluster over. A pause, hold or warn override
// adopted here returns, like one set here, once no write in its scope can
// still happen. Applied and decommission records are read by LoadIntent at
// start and, for a cluster a replica takes over, by TakeOver.
func (h *Hub) RefreshIntent() error {
	if h.opts.Intent == nil {
		return nil
	}
	load := h.opts.Intent.Load
	if o, ok := h.opts.Intent.(OverridesLoader); ok {
		load = o.LoadOverrides
	}
	in, err := load()
	if err != nil {
		return fmt.Errorf("refresh intent: %w", err)
	}
	h.adopt(in, "")
	return nil
}

// TakeOver prepares the hub to manage a cluster another replica of it
// managed until now: before the cluster's first write it re-reads the
// shared intent store and adopts the operator intent (as RefreshIntent
// does) and the cluster's applied and decommission records, so a missing
// object another replica applied is drift (repaired through the write gate,
// in the feed and the metrics), never a first apply, and a decommission it
// started goes on. Call it before registering the cluster's backend.
func (h *Hub) TakeOver(cluster string) error {
	if h.opts.Intent == nil {
		return nil
	}
	in, err := h.opts.Intent.Load()
	if err != nil {
		return fmt.Errorf("take over cluster %q: %w", cluster, err)
	}
	h.adopt(in, cluster)
	return nil
}

// adopt takes the intent read from the store: the overrides always, and
// the applied and decommission records of cluster when it is not "".
func (h *Hub) adopt(in Intent, cluster string) {
	wake, drain := h.adoptIntent(in, cluster)
	h.drain(drain)
	for _, id := range wake {
		h.ctrl.add(id)
	}
}

// adoptIntent is adopt's part under h.mu (released even on a panic): it
// returns the NodeIDs to look at again and the writes to wait for.
func (h *Hub) adoptIntent(in Intent, cluster string) (wake []NodeID, drain []*inflight) {
	now := h.opts.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	paused := make(map[string]bool)
	for c, p := range in.Paused {
		if p {
			paused[c] = true
		}
	}
	for c := range h.pauses {
		if !paused[c] {
			h.setPausedLocked(c, false)
			wake = append(wake, h.clusterIDsLocked(c)...)
		}
	}
	for c := range paused {
		if h.pauses[c] == 0 {
			h.setPausedLocked(c, true)
			drain = append(drain, h.writesLocked(func(id NodeID, _ *inflight) bool { return id.Cluster == c })...)
		}
	}
	if !maps.Equal(h.appPolicy, in.Policies) {
		changed := make(map[string]bool)
		for app, p := range h.appPolicy {
			if in.Policies[app] != p {
				changed[app] = true
			}
		}
		for app, p := range in.Policies {
			if h.appPolicy[app] != p {
				changed[app] = true
			}
		}
		for app := range changed {
			p := in.Policies[app]
			h.setAppPolicyLocked(app, p)
			if p == PolicyWarn {
				drain = append(drain, h.writesLocked(func(_ NodeID, w *inflight) bool { return w.app == app })...)
			}
		}
		for id, n := range h.nodes.all() {
			if n.spec != nil && changed[n.spec.Application] {
				wake = append(wake, id)
			}
		}
		h.status.appPolicies(h.appPolicy)
	}
	next := make(map[HoldTarget]Hold)
	for _, hd := range in.Holds {
		if hd.Active(now) {
			next[hd.Target] = hd
		}
	}
	if !maps.Equal(h.holds, next) {
		for t := range h.holds {
			if _, ok := next[t]; !ok {
				wake = append(wake, h.heldIDsLocked(t)...)
				delete(h.holdSeq, t)
			}
		}
		for t, hd := range next {
			if old, ok := h.holds[t]; !ok || old != hd {
				h.holdSeq[t] = h.nextSeqLocked()
				drain = append(drain, h.writesLocked(func(id NodeID, w *inflight) bool { return covers(t, id, w.app) })...)
			}
		}
		h.holds = next
		h.status.setHolds(h.holdsLocked())
	}
	if cluster != "" {
		h.adoptRecordsLocked(in, cluster, now)
	}
	return wake, drain
}

// adoptRecordsLocked takes the applied and decommission records of one
// cluster from the store: what another replica applied is remembered as
// applied, and a decommission it started goes on unless this hub wants the
// NodeID. Callers hold h.mu.
func (h *Hub) adoptRecordsLocked(in Intent, cluster string, now time.Time) {
	for id, ref := range in.Applied {
		if id.Cluster != cluster {
			continue
		}
		rs := ref.Spec()
		rs.ID = id
		if n := h.nodes.at(id); n != nil {
			if n.applied == nil || RefOf(*n.applied) != RefOf(rs) {
				n.applied = &rs
			}
		} else {
			h.nodes.put(id, &node{applied: &rs})
		}
	}
	for _, d := range in.Decommissions {
		if d.Ref.ID.Cluster != cluster {
			continue
		}
		if n := h.nodes.at(d.Ref.ID); n != nil && n.managed() {
			continue // wanted here, or already being decommissioned
		}
		s := d.Ref.Spec()
		n := h.nodeForLocked(s.ID)
		n.dec = &decommission{spec: &s, since: d.Since}
		h.status.track(&s, true, now)
	}
}

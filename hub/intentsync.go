package hub

import (
	"fmt"
	"maps"
)

// RefreshIntent re-reads the operator intent (cluster pauses, application
// policy overrides, holds) from the intent store and adopts it, enqueueing
// what a lifted pause, a changed policy or a released hold covers. Replicas
// of one hub share a store: a pause recorded by one must hold on the
// replica that takes the cluster over. Applied and decommission records are
// not re-read: they are read once by LoadIntent, and each is written by the
// replica that owns its cluster.
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
	now := h.opts.Now()
	h.mu.Lock()
	var wake []NodeID
	for c, p := range in.Paused {
		if p && h.clusters[c] == nil {
			h.clusters[c] = &clusterLoop{state: ClusterConnecting}
		}
	}
	for c, cl := range h.clusters {
		if p := in.Paused[c]; cl.paused != p {
			cl.paused = p
			h.status.paused(c, p)
			if !p {
				wake = append(wake, h.clusterIDsLocked(c)...)
			}
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
		h.appPolicy = maps.Clone(in.Policies)
		if h.appPolicy == nil {
			h.appPolicy = make(map[string]Policy)
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
			}
		}
		h.holds = next
		h.status.setHolds(h.holdsLocked())
	}
	h.mu.Unlock()
	for _, id := range wake {
		h.queue.Add(id)
	}
	return nil
}

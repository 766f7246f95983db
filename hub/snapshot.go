package hub

import (
	"maps"
	"slices"
)

// Snapshot builds an immutable snapshot of the hub now.
func (h *Hub) Snapshot() *Snapshot {
	now := h.opts.Now()
	depth := h.queue.Len()
	h.metrics.queueDepth.Set(float64(depth))
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	s := &Snapshot{
		HubID:       h.opts.ID,
		Seq:         h.seq,
		Taken:       now,
		Policy:      h.opts.Policy,
		Nodes:       make([]NodeStatus, 0, len(h.order)),
		AppPolicies: maps.Clone(h.appPolicy),
		QueueDepth:  depth,
	}
	counts := make(map[string]map[Status]int, len(h.clusters))
	objects := make(map[string]int, len(h.clusters))
	for _, id := range h.order {
		n := h.nodes[id]
		if n == nil {
			continue
		}
		spec := h.desired[id]
		if spec == nil {
			if d := h.decom[id]; d != nil {
				spec = d.spec
			}
		}
		st := n.status
		reason := n.reason
		if st == StatusRepaired && now.Sub(n.repairedAt) >= h.opts.RepairedHold {
			st = StatusInSync
		}
		if cs := h.clusters[id.Cluster]; cs == nil || (cs.health.State != ClusterSynced && cs.health.State != ClusterDegraded) {
			st = StatusUnknown
			if cs != nil {
				reason = "cluster " + string(cs.health.State)
				if cs.health.LastError != "" {
					reason += ": " + cs.health.LastError
				}
			} else {
				reason = "cluster not connected"
			}
		}
		ns := NodeStatus{
			ID: id, Status: st, Reason: reason, LastRepair: n.repair, Timeline: n.timeline,
			ReadyReplicas: n.ready, DesiredReplicas: n.replicas, LastChange: n.lastChange, Repairs: n.repairs,
			Spec: spec,
		}
		if spec != nil {
			ns.Application, ns.Kind, ns.Policy = spec.Application, spec.Kind, spec.Policy
			if p, ok := h.appPolicy[spec.Application]; ok {
				ns.Policy = p
			}
		}
		s.Nodes = append(s.Nodes, ns)
		if counts[id.Cluster] == nil {
			counts[id.Cluster] = make(map[Status]int)
		}
		counts[id.Cluster][st]++
		objects[id.Cluster]++
	}
	for id, cs := range h.clusters {
		c := ClusterStatus{ClusterHealth: cs.health, Paused: cs.paused, Objects: objects[id], Counts: counts[id]}
		if c.Counts == nil {
			c.Counts = map[Status]int{}
		}
		if len(cs.repairs) > 0 {
			r := slices.Clone(cs.repairs)
			slices.Sort(r)
			c.MedianRepair = r[len(r)/2]
		}
		s.Clusters = append(s.Clusters, c)
		for _, st := range AllStatuses() {
			h.metrics.objects.WithLabelValues(id, string(st)).Set(float64(c.Counts[st]))
		}
	}
	// Clusters with desired objects but no health report yet.
	for id, n := range objects {
		if _, ok := h.clusters[id]; !ok {
			s.Clusters = append(s.Clusters, ClusterStatus{
				ClusterHealth: ClusterHealth{Cluster: id, State: ClusterConnecting},
				Objects:       n, Counts: counts[id],
			})
		}
	}
	slices.SortFunc(s.Clusters, func(a, b ClusterStatus) int {
		switch {
		case a.Cluster < b.Cluster:
			return -1
		case a.Cluster > b.Cluster:
			return 1
		}
		return 0
	})
	s.Feed = make([]FeedEntry, len(h.feed))
	for i := range h.feed {
		s.Feed[i] = h.feed[len(h.feed)-1-i]
	}
	return s
}

// AllStatuses lists every node status in display order.
func AllStatuses() []Status {
	return []Status{StatusInSync, StatusRepaired, StatusRepairing, StatusDrifted, StatusWarnOnly,
		StatusPaused, StatusFailed, StatusStuck, StatusDecommissioning, StatusUnknown}
}

package api

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/driftwatch/driftwatch/hub"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
)

// Merge returns one view of the replicas of a hub that runs as several:
// list is the replicas as the replica the client asked sees them, snaps
// the latest snapshot of each replica (by replica id) and errs why a
// replica's API did not answer. Every cluster appears once:
//
//   - a cluster a reachable replica manages comes from that replica's
//     snapshot, with its nodes, and Owner set;
//   - a cluster whose owner did not answer (or has not sent a snapshot
//     yet) is unreachable, with the replica named in LastError; one whose
//     owner answered without it (just taken over) is connecting; the
//     nodes of both, taken from any replica that lists them, are unknown:
//     never stale data shown as in sync;
//   - a cluster no replica manages yet comes from the asked replica's
//     snapshot, without an owner.
//
// The feed is every replica's feed, newest first, bounded by the longest;
// the header, policies and holds (shared between the replicas) come from
// the asked replica. Merge does not modify its arguments.
func Merge(list apiv1.ReplicaList, snaps map[string]*hub.Snapshot, errs map[string]error) *hub.Snapshot {
	out := &hub.Snapshot{}
	var self *hub.Snapshot
	owners := list.Owners()
	reachable := map[string]bool{}
	for _, r := range list.Replicas {
		st := hub.ReplicaStatus{ID: r.ID, Address: r.Address, Self: r.Self, Clusters: slices.Clone(r.Clusters)}
		switch s, err := snaps[r.ID], errs[r.ID]; {
		case err != nil:
			st.Err = err.Error()
		case s == nil:
			st.Err = "no snapshot yet"
		default:
			st.Reachable = true
			reachable[r.ID] = true
		}
		if r.Self {
			self = snaps[r.ID]
		}
		out.Replicas = append(out.Replicas, st)
	}
	if self != nil {
		out.HubID, out.Policy, out.AppPolicies, out.Holds, out.Sources, out.Revisions = self.HubID, self.Policy, self.AppPolicies, self.Holds, self.Sources, self.Revisions
		out.AppPolicyNotes = self.AppPolicyNotes
	}
	// from returns the snapshot a cluster's status and nodes come from, and
	// whether they are current.
	from := func(cluster string) (*hub.Snapshot, bool) {
		owner, ok := owners[cluster]
		if !ok {
			return self, true
		}
		if reachable[owner] && slices.ContainsFunc(snaps[owner].Clusters, func(c hub.ClusterStatus) bool { return c.Cluster == cluster }) {
			return snaps[owner], true
		}
		return nil, false
	}
	// absent is a cluster whose owner's snapshot does not speak for it.
	absent := func(cluster, source string) hub.ClusterStatus {
		owner := owners[cluster]
		h := hub.ClusterHealth{Cluster: cluster, State: hub.ClusterUnreachable, Source: source,
			LastError: fmt.Sprintf("replica %q that manages the cluster did not answer: %s", owner, replicaErr(out.Replicas, owner))}
		if reachable[owner] {
			h.State, h.LastError = hub.ClusterConnecting, fmt.Sprintf("replica %q has not reported the cluster yet", owner)
		}
		return hub.ClusterStatus{Owner: owner, ClusterHealth: h}
	}
	seen := map[string]bool{}
	var feedLen int
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range snaps {
			if !yield(id) {
				return
			}
		}
	})
	for _, id := range ids {
		s := snaps[id]
		if s == nil {
			continue
		}
		out.Seq += s.Seq
		out.QueueDepth += s.QueueDepth
		if s.Taken.After(out.Taken) {
			out.Taken = s.Taken
		}
		feedLen = max(feedLen, len(s.Feed))
		for _, c := range s.Clusters {
			if seen[c.Cluster] {
				continue
			}
			src, current := from(c.Cluster)
			switch {
			case current && src != s:
				continue // another replica's snapshot speaks for it
			case !current:
				c = absent(c.Cluster, c.Source)
			}
			c.Owner = owners[c.Cluster]
			seen[c.Cluster] = true
			out.Clusters = append(out.Clusters, c)
		}
		for _, n := range s.Nodes {
			src, current := from(n.ID.Cluster)
			if current && src != s {
				continue
			}
			if !current {
				n = hub.NodeStatus{ID: n.ID, Application: n.Application, Kind: n.Kind, Policy: n.Policy, Status: hub.StatusUnknown,
					Reason: fmt.Sprintf("replica %q that manages the cluster has not reported it", owners[n.ID.Cluster])}
			}
			out.Nodes = append(out.Nodes, n)
		}
		out.Feed = append(out.Feed, s.Feed...)
	}
	// A cluster only the view names (its owner's snapshot is missing and
	// no other replica lists it) still appears.
	for c := range owners {
		if seen[c] {
			continue
		}
		out.Clusters = append(out.Clusters, absent(c, ""))
	}
	slices.SortFunc(out.Clusters, func(a, b hub.ClusterStatus) int { return cmp.Compare(a.Cluster, b.Cluster) })
	slices.SortFunc(out.Nodes, func(a, b hub.NodeStatus) int { return hub.CompareText(a.ID, b.ID) })
	out.Nodes = slices.CompactFunc(out.Nodes, func(a, b hub.NodeStatus) bool { return a.ID == b.ID })
	slices.SortStableFunc(out.Feed, func(a, b hub.FeedEntry) int { return b.At.Compare(a.At) })
	if len(out.Feed) > feedLen {
		out.Feed = out.Feed[:feedLen]
	}
	return out
}

// replicaErr returns why a replica of rs did not answer.
func replicaErr(rs []hub.ReplicaStatus, id string) string {
	for _, r := range rs {
		if r.ID == id && r.Err != "" {
			return r.Err
		}
	}
	return "not a live replica"
}

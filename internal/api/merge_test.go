package api

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
)

// TestMerge checks the merged view of the replicas: every cluster once,
// with its owner, from its owner's snapshot; an unreachable owner's
// clusters unreachable and their nodes unknown, never dropped.
func TestMerge(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	node := func(cluster string, st hub.Status) hub.NodeStatus {
		return hub.NodeStatus{ID: hub.NewNodeID(cluster, "ns", "web", hub.KindDeployment), Application: "web", Kind: hub.KindDeployment, Status: st}
	}
	cluster := func(id string, st hub.ClusterState) hub.ClusterStatus {
		return hub.ClusterStatus{ClusterHealth: hub.ClusterHealth{Cluster: id, State: st}}
	}
	// Replica a manages c1, b manages c2; c3 is not claimed yet. Each
	// replica lists every cluster (the desired state is shared), the ones
	// it does not manage as connecting with their nodes unknown.
	snapA := &hub.Snapshot{HubID: "hub", Seq: 3, Taken: t0, QueueDepth: 1,
		Clusters: []hub.ClusterStatus{cluster("c1", hub.ClusterSynced), cluster("c2", hub.ClusterConnecting), cluster("c3", hub.ClusterConnecting)},
		Nodes:    []hub.NodeStatus{node("c1", hub.StatusInSync), node("c2", hub.StatusUnknown), node("c3", hub.StatusUnknown)},
		Feed:     []hub.FeedEntry{{At: t0, ID: node("c1", "").ID, Action: "repaired"}},
		Holds:    []hub.Hold{{Target: hub.HoldTarget{Scope: hub.HoldCluster, Name: "c2"}, Reason: "maintenance"}},
	}
	snapB := &hub.Snapshot{HubID: "hub", Seq: 5, Taken: t0.Add(time.Second), QueueDepth: 2,
		Clusters: []hub.ClusterStatus{cluster("c1", hub.ClusterConnecting), cluster("c2", hub.ClusterDegraded)},
		Nodes:    []hub.NodeStatus{node("c1", hub.StatusUnknown), node("c2", hub.StatusDrifted)},
		Feed:     []hub.FeedEntry{{At: t0.Add(time.Second), ID: node("c2", "").ID, Action: "drift"}},
	}
	list := apiv1.ReplicaList{APIVersion: apiv1.APIVersion, Replicas: []apiv1.Replica{
		{ID: "a", Address: "a:7070", Self: true, State: apiv1.ReplicaLive, Clusters: []string{"c1"}},
		{ID: "b", Address: "b:7070", State: apiv1.ReplicaLive, Clusters: []string{"c2"}},
	}}
	type want struct {
		clusters  string // id=state@owner, comma separated
		nodes     string // cluster=status, comma separated
		replicas  string // id=reachable
		feed      int
		seq       uint64
		holds     int
		errSubstr string // in c2's LastError
	}
	for _, tc := range []struct {
		name  string
		list  apiv1.ReplicaList
		snaps map[string]*hub.Snapshot
		errs  map[string]error
		want  want
	}{
		{
			name:  "both reachable",
			list:  list,
			snaps: map[string]*hub.Snapshot{"a": snapA, "b": snapB},
			want: want{clusters: "c1=synced@a,c2=degraded@b,c3=connecting@", nodes: "c1=in-sync,c2=drifted,c3=unknown",
				replicas: "a=true,b=true", feed: 1, seq: 8, holds: 1},
		},
		{
			name:  "owner unreachable",
			list:  list,
			snaps: map[string]*hub.Snapshot{"a": snapA},
			errs:  map[string]error{"b": errors.New("dial tcp b:7070: connection refused")},
			want: want{clusters: "c1=synced@a,c2=unreachable@b,c3=connecting@", nodes: "c1=in-sync,c2=unknown,c3=unknown",
				replicas: "a=true,b=false", feed: 1, seq: 3, holds: 1, errSubstr: "connection refused"},
		},
		{
			name:  "owner without snapshot yet, cluster listed by nobody else",
			list:  apiv1.ReplicaList{Replicas: []apiv1.Replica{list.Replicas[0], {ID: "b", Clusters: []string{"c2", "c9"}}}},
			snaps: map[string]*hub.Snapshot{"a": snapA},
			want: want{clusters: "c1=synced@a,c2=unreachable@b,c3=connecting@,c9=unreachable@b", nodes: "c1=in-sync,c2=unknown,c3=unknown",
				replicas: "a=true,b=false", feed: 1, seq: 3, holds: 1, errSubstr: "no snapshot yet"},
		},
		{
			name:  "owner reachable, has not reported a cluster it just took",
			list:  apiv1.ReplicaList{Replicas: []apiv1.Replica{list.Replicas[0], {ID: "b", Clusters: []string{"c2", "c3"}}}},
			snaps: map[string]*hub.Snapshot{"a": snapA, "b": snapB},
			want: want{clusters: "c1=synced@a,c2=degraded@b,c3=connecting@b", nodes: "c1=in-sync,c2=drifted,c3=unknown",
				replicas: "a=true,b=true", feed: 1, seq: 8, holds: 1},
		},
		{
			name:  "one process: no replicas",
			list:  apiv1.ReplicaList{},
			snaps: map[string]*hub.Snapshot{},
			want:  want{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Merge(tc.list, tc.snaps, tc.errs)
			var cs, ns, rs []string
			for _, c := range got.Clusters {
				cs = append(cs, fmt.Sprintf("%s=%s@%s", c.Cluster, c.State, c.Owner))
				if c.Cluster == "c2" && tc.want.errSubstr != "" && !strings.Contains(c.LastError, tc.want.errSubstr) {
					t.Errorf("c2 LastError = %q, want it to contain %q", c.LastError, tc.want.errSubstr)
				}
			}
			for _, n := range got.Nodes {
				ns = append(ns, fmt.Sprintf("%s=%s", n.ID.Cluster, n.Status))
			}
			for _, r := range got.Replicas {
				rs = append(rs, fmt.Sprintf("%s=%t", r.ID, r.Reachable))
			}
			check := func(what, got, want string) {
				if got != want {
					t.Errorf("%s = %q, want %q", what, got, want)
				}
			}
			check("clusters", strings.Join(cs, ","), tc.want.clusters)
			check("nodes", strings.Join(ns, ","), tc.want.nodes)
			check("replicas", strings.Join(rs, ","), tc.want.replicas)
			if len(got.Feed) != tc.want.feed || got.Seq != tc.want.seq || len(got.Holds) != tc.want.holds {
				t.Errorf("feed %d seq %d holds %d, want %d %d %d", len(got.Feed), got.Seq, len(got.Holds), tc.want.feed, tc.want.seq, tc.want.holds)
			}
			if !slices.IsSortedFunc(got.Feed, func(a, b hub.FeedEntry) int { return b.At.Compare(a.At) }) {
				t.Errorf("feed not newest first: %+v", got.Feed)
			}
		})
	}
	if snapA.Clusters[1].Owner != "" || snapB.Nodes[0].Status != hub.StatusUnknown {
		t.Error("Merge modified its arguments")
	}
}

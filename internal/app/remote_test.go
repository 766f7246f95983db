package app

import (
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// statusSnapshot is a hub's snapshot with a synced cluster holding a
// failure, a fight, a drift and a paused object, and an unreachable
// cluster whose objects are unknown.
func statusSnapshot(now time.Time) *hub.Snapshot {
	node := func(cluster, name string, st hub.Status, reason string) hub.NodeStatus {
		return hub.NodeStatus{ID: hub.NewNodeID(cluster, "shop", name, hub.KindDeployment), Status: st, Reason: reason, LastChange: now.Add(-time.Minute)}
	}
	return &hub.Snapshot{
		HubID: "hub-1", Taken: now.Add(-2 * time.Second), Policy: hub.PolicyRepair,
		Clusters: []hub.ClusterStatus{
			{ClusterHealth: hub.ClusterHealth{Cluster: "eu", State: hub.ClusterSynced}, Objects: 6,
				Counts: map[hub.Status]int{hub.StatusInSync: 1, hub.StatusRepaired: 1, hub.StatusFailed: 1, hub.StatusContested: 1, hub.StatusDrifted: 1, hub.StatusHeld: 1}},
			{ClusterHealth: hub.ClusterHealth{Cluster: "us", State: hub.ClusterUnreachable, Since: now.Add(-5 * time.Minute), LastError: "dial tcp: refused\x1b[2J"},
				Objects: 2, Counts: map[hub.Status]int{hub.StatusUnknown: 2}},
		},
		Nodes: []hub.NodeStatus{
			node("eu", "a", hub.StatusInSync, ""),
			node("eu", "b", hub.StatusHeld, "held: INC-1"),
			node("eu", "c", hub.StatusDrifted, "modified"),
			node("eu", "d", hub.StatusContested, "contested with hpa"),
			node("eu", "e", hub.StatusFailed, "apply: denied"),
			{ID: hub.NewNodeID("eu", "shop", "g", hub.KindDeployment), Status: hub.StatusStuck, Reason: "ProgressDeadlineExceeded",
				LastChange: now.Add(-time.Minute), Diagnosis: []string{"pod g-1: not scheduled: 0/3 nodes are available"}},
			node("eu", "f", hub.StatusRepaired, ""),
			node("us", "a", hub.StatusUnknown, "cluster unreachable"),
			node("us", "b", hub.StatusUnknown, "cluster unreachable"),
		},
		Holds:     []hub.Hold{{Target: hub.HoldTarget{Scope: hub.HoldNode, Name: "eu:shop/b:deployment"}, Reason: "INC-1", Until: now.Add(30 * time.Minute)}},
		Sources:   []hub.SourceStatus{{ID: "web", Error: "kustomize: bad", Since: now.Add(-time.Hour), KeptObjects: 4}},
		Revisions: []hub.SourceRevision{{ID: "inventory", Commit: "abc"}, {ID: "charts", Error: "503", Since: now.Add(-time.Minute)}},
	}
}

// TestBuildStatus: the worst first, unknown NodeIDs of a cluster that is
// not connected left to its row, the limit counted, the holds and the
// failing and stale sources listed.
func TestBuildStatus(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	rep := BuildStatus(statusSnapshot(now), 0)
	var got []string
	for _, n := range rep.Attention {
		got = append(got, n.Status+" "+n.ID)
	}
	want := "failed eu:shop/e:deployment,stuck eu:shop/g:deployment,contested eu:shop/d:deployment,drifted eu:shop/c:deployment,held eu:shop/b:deployment"
	if strings.Join(got, ",") != want {
		t.Errorf("attention %v, want %s", got, want)
	}
	if rep.AttentionTotal != 5 || !rep.NeedsAttention || rep.Objects != 8 || len(rep.Attention[1].Diagnosis) != 1 {
		t.Errorf("total %d, needs %v, objects %d", rep.AttentionTotal, rep.NeedsAttention, rep.Objects)
	}
	if c := rep.Clusters[0]; c.InSync != 2 || c.Drift != 2 || c.Failed != 1 || c.Contested != 1 || c.Detection != "watch" {
		t.Errorf("cluster eu: %+v", c)
	}
	if len(rep.Holds) != 1 || len(rep.FailingSources) != 1 || rep.FailingSources[0].KeptObjects != 4 ||
		len(rep.StaleSources) != 1 || rep.StaleSources[0].ID != "charts" {
		t.Errorf("holds %+v, failing %+v, stale %+v", rep.Holds, rep.FailingSources, rep.StaleSources)
	}
	limited := BuildStatus(statusSnapshot(now), 2)
	if len(limited.Attention) != 2 || limited.AttentionTotal != 5 || limited.Attention[0].Status != "failed" {
		t.Errorf("limited to 2: %+v", limited.Attention)
	}

	// In sync: nothing needs attention; a paused cluster does.
	quiet := &hub.Snapshot{Clusters: []hub.ClusterStatus{{ClusterHealth: hub.ClusterHealth{Cluster: "eu", State: hub.ClusterSynced}, Objects: 1,
		Counts: map[hub.Status]int{hub.StatusInSync: 1}}}, Nodes: []hub.NodeStatus{{ID: hub.NewNodeID("eu", "a", "b", hub.KindConfigMap), Status: hub.StatusInSync}}}
	if BuildStatus(quiet, 0).NeedsAttention {
		t.Error("an in-sync hub needs attention")
	}
	quiet.Clusters[0].Paused = true
	if !BuildStatus(quiet, 0).NeedsAttention {
		t.Error("a paused cluster does not need attention")
	}
}

// TestWriteStatus: the text form names each section once it has
// something, cleans what came from a cluster, and ends no line in blanks.
func TestWriteStatus(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	var b strings.Builder
	if err := writeStatus(&b, BuildStatus(statusSnapshot(now), 3), "http://127.0.0.1:7070", now); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"hub hub-1 at http://127.0.0.1:7070 · mode repair · 2 clusters · 8 objects · snapshot 2s ago",
		"us       unreachable  watch   2",
		"since 5m0s: dial tcp: refused",
		"NEEDS ATTENTION (3 of 5, --all lists every one)",
		"  eu:shop/g:deployment  stuck      1m0s  ProgressDeadlineExceeded\n    why: pod g-1: not scheduled: 0/3 nodes are available\n",
		"  eu:shop/e:deployment  failed     1m0s  apply: denied",
		"HOLDS\n  node eu:shop/b:deployment until ",
		"(in 30m0s): INC-1",
		"web failing for 1h0m0s, its last good state kept (4 objects): kustomize: bad",
		"charts stale for 1m0s, the revision before in force: 503",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, "in sync\n") {
		t.Errorf("an escape, or all in sync, in\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasSuffix(l, " ") {
			t.Errorf("line %q ends in a blank", l)
		}
	}
}

package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/api"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
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
		Holds:          []hub.Hold{{Target: hub.HoldTarget{Scope: hub.HoldNode, Name: "eu:shop/b:deployment"}, Reason: "INC-1", By: "bob", Until: now.Add(30 * time.Minute)}},
		AppPolicies:    map[string]hub.Policy{"shop": hub.PolicyWarn, "cart": hub.PolicyRepair},
		AppPolicyNotes: map[string]hub.OverrideNote{"shop": {At: now.Add(-10 * time.Minute), By: "dave", Reason: "DB migration\x1b[2J"}},
		Sources:        []hub.SourceStatus{{ID: "web", Error: "kustomize: bad", Since: now.Add(-time.Hour), KeptObjects: 4}},
		Revisions:      []hub.SourceRevision{{ID: "inventory", Commit: "abc"}, {ID: "charts", Error: "503", Since: now.Add(-time.Minute)}},
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
	quiet.Replicas = []hub.ReplicaStatus{{ID: "a", Address: "10.0.0.1:7070", Reachable: true, Clusters: []string{"eu"}}}
	if BuildStatus(quiet, 0).NeedsAttention {
		t.Error("an in-sync hub of answering replicas needs attention")
	}
	quiet.Replicas = append(quiet.Replicas, hub.ReplicaStatus{ID: "b", Address: "10.0.0.2:7070", Err: "replica \"b\": timeout"})
	if !BuildStatus(quiet, 0).NeedsAttention {
		t.Error("a replica that does not answer does not need attention")
	}
	quiet.Replicas = nil
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
	if err := writeStatus(&b, BuildStatus(statusSnapshot(now), 3), "http://127.0.0.1:7070", now, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"hub hub-1 at http://127.0.0.1:7070 · mode repair · 2 clusters · 8 objects · snapshot 2s ago",
		"us       unreachable  watch   2",
		"for 5m0s: dial tcp: refused",
		"NEEDS ATTENTION (3 of 5, --all lists every one)",
		"  eu:shop/g:deployment  stuck      1m0s  ProgressDeadlineExceeded\n    why: pod g-1: not scheduled: 0/3 nodes are available\n",
		"  eu:shop/e:deployment  failed     1m0s  apply: denied",
		"HOLDS\n  node eu:shop/b:deployment until ",
		"(in 30m0s) by bob: INC-1",
		"OVERRIDES\n  application cart repaired (driftwatch policy cart config drops it)\n  application shop warn-only since 10m0s ago by dave: DB migration\\x1b[2J (driftwatch policy shop config drops it)\n",
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

// startAPIHub runs a hub that knows the clusters c1 and c2 (no backend:
// both stay connecting) behind its API, which lists replicas.
func startAPIHub(t *testing.T, tokens *api.Tokens, replicas func() []apiv1.Replica) (*hub.Hub, *httptest.Server) {
	t.Helper()
	return startAPIHubWith(t, tokens, replicas, nil)
}

// startAPIHubWith is startAPIHub with wrap (when not nil) around the API's
// handler.
func startAPIHubWith(t *testing.T, tokens *api.Tokens, replicas func() []apiv1.Replica, wrap func(http.Handler) http.Handler) (*hub.Hub, *httptest.Server) {
	t.Helper()
	h := hub.New(hub.Options{ID: "hub", SnapshotInterval: 10 * time.Millisecond})
	var specs []hub.NodeSpec
	for _, c := range []string{"c1", "c2"} {
		specs = append(specs, hub.NodeSpec{ID: hub.NewNodeID(c, "ns", "web", hub.KindDeployment), Namespace: "ns", Name: "web",
			Kind: hub.KindDeployment, Application: "web", Policy: hub.PolicyRepair, Hash: "1"})
	}
	h.SetDesired(specs)
	ctx, cancel := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	wg.Go(func() { _ = h.Run(ctx) })
	handler := api.Handler(h, api.Options{Tokens: tokens, Replicas: replicas})
	if wrap != nil {
		handler = wrap(handler)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(func() { srv.Close(); cancel(); wg.Wait() })
	return h, srv
}

// TestRemoteThroughReplicas: asked through replica a of two (a manages
// c1, b c2), status shows both clusters with their owners and the
// replicas, and a pause of c2 reaches b, not a.
func TestRemoteThroughReplicas(t *testing.T) {
	const token = "op-token-0123456789abcdef0123456789"
	tokens, err := api.ParseTokens("test", []byte(token+" operator alice\n"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var list []apiv1.Replica
	view := func(self string) func() []apiv1.Replica {
		return func() []apiv1.Replica {
			mu.Lock()
			defer mu.Unlock()
			out := slices.Clone(list)
			for i := range out {
				out[i].Self = out[i].ID == self
			}
			return out
		}
	}
	ha, srvA := startAPIHub(t, tokens, view("a"))
	hb, srvB := startAPIHub(t, tokens, view("b"))
	mu.Lock()
	list = []apiv1.Replica{
		{ID: "a", Address: strings.TrimPrefix(srvA.URL, "http://"), State: apiv1.ReplicaLive, Clusters: []string{"c1"}},
		{ID: "b", Address: strings.TrimPrefix(srvB.URL, "http://"), State: apiv1.ReplicaLive, Clusters: []string{"c2"}},
	}
	mu.Unlock()

	var out strings.Builder
	r, err := NewRemote(srvA.URL, api.ClientOptions{Token: token}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Status("text", 0); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"replica a", "replica b", "REPLICAS\n  a at 127.0.0.1:", "manages 1 cluster, answers"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, &out)
		}
	}
	if err := r.Pause([]string{"c2"}, false, true, "INC-4211: failover"); err != nil {
		t.Fatal(err)
	}
	if c2, _ := hb.Snapshot().Cluster("c2"); !c2.Paused || c2.PausedBy != "alice" || c2.PauseReason != "INC-4211: failover" {
		t.Errorf("c2 on b, which manages it = %+v, want paused by alice with the reason", c2)
	}
	out.Reset()
	if _, err := r.Status("text", 0); err != nil {
		t.Fatal(err)
	}
	if want := "PAUSED 0s ago by alice: INC-4211: failover; replica b"; !strings.Contains(out.String(), want) {
		t.Errorf("status after the pause: no %q in\n%s", want, &out)
	}
	if c2, _ := ha.Snapshot().Cluster("c2"); c2.Paused {
		t.Error("c2 paused on a, which does not manage it")
	}

	// b stops answering: its cluster stays, unreachable, naming b.
	srvB.CloseClientConnections()
	srvB.Close()
	out.Reset()
	attention, err := r.Status("text", 0)
	if err != nil || !attention {
		t.Fatalf("status with b down: attention %v, %v", attention, err)
	}
	for _, want := range []string{"c2       unreachable", `replica "b"`, "b at 127.0.0.1:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("b down: no %q in\n%s", want, &out)
		}
	}
}

// TestComplete: each kind of argument from a snapshot, by prefix, sorted,
// without the arguments already given, bounded.
func TestComplete(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	snap := statusSnapshot(now)
	snap.AppPolicies = map[string]hub.Policy{"payments": hub.PolicyWarn}
	snap.Nodes[0].Application, snap.Nodes[1].Application = "shop", "cart"
	for _, tt := range []struct {
		name   string
		kind   Completion
		scope  hub.HoldScope
		prefix string
		taken  []string
		want   []string
	}{
		{"clusters", CompleteCluster, "", "", nil, []string{"eu", "us"}},
		{"clusters but one given", CompleteCluster, "", "", []string{"eu"}, []string{"us"}},
		{"NodeIDs by prefix", CompleteNodeID, "", "eu:shop/e", nil, []string{"eu:shop/e:deployment"}},
		{"applications", CompleteApplication, "", "", nil, []string{"cart", "payments", "shop"}},
		{"held nodes", CompleteHeld, hub.HoldNode, "", nil, []string{"eu:shop/b:deployment"}},
		{"held clusters", CompleteHeld, hub.HoldCluster, "", nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Complete(snap, tt.kind, tt.scope, tt.prefix, tt.taken); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	big := &hub.Snapshot{}
	for i := range 2 * maxCompletions {
		big.Nodes = append(big.Nodes, hub.NodeStatus{ID: hub.NewNodeID("eu", "ns", fmt.Sprintf("n%04d", i), hub.KindConfigMap)})
	}
	if got := Complete(big, CompleteNodeID, "", "", nil); len(got) != maxCompletions || got[0] != "eu:ns/n0000:configmap" {
		t.Errorf("a fleet: %d candidates, first %q", len(got), got[0])
	}
}

// TestWriteStatusOfAFleet: past 20 clusters, the table lists those with
// something to say and counts the others; --all lists every one.
func TestWriteStatusOfAFleet(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	snap := &hub.Snapshot{HubID: "fleet"}
	for i := range 30 {
		c := hub.ClusterStatus{ClusterHealth: hub.ClusterHealth{Cluster: fmt.Sprintf("c%02d", i), State: hub.ClusterSynced}, Objects: 2,
			Counts: map[hub.Status]int{hub.StatusInSync: 2}}
		switch i {
		case 3:
			c.Paused = true
		case 7:
			c.Counts = map[hub.Status]int{hub.StatusInSync: 1, hub.StatusFailed: 1}
		case 9:
			c.State = hub.ClusterUnreachable
		}
		snap.Clusters = append(snap.Clusters, c)
	}
	for _, all := range []bool{false, true} {
		var b strings.Builder
		if err := writeStatus(&b, BuildStatus(snap, 0), "http://127.0.0.1:7070", now, all); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		rows := 0
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "c") && !strings.HasPrefix(l, "CLUSTER") {
				rows++
			}
		}
		want, more := 3, "(27 more clusters synced, every object in sync: --all lists them)"
		if all {
			want, more = 30, ""
		}
		if rows != want || (more != "" && !strings.Contains(out, more)) || (more == "" && strings.Contains(out, "more clusters")) {
			t.Errorf("all %v: %d rows, want %d:\n%s", all, rows, want, out)
		}
	}
}

// TestDescribeReadsOneNode: describe reads the node's detail alone (its
// cluster with the pause, its holds), not the whole snapshot; a hub from
// before node views, whose detail has no cluster, is read through its
// snapshot instead, with the same text.
func TestDescribeReadsOneNode(t *testing.T) {
	const token = "op-token-0123456789abcdef0123456789"
	tokens, err := api.ParseTokens("test", []byte(token+" operator alice\n"))
	if err != nil {
		t.Fatal(err)
	}
	id := hub.NewNodeID("c1", "ns", "web", hub.KindDeployment)
	for _, old := range []bool{false, true} {
		t.Run(fmt.Sprintf("old hub %v", old), func(t *testing.T) {
			var mu sync.Mutex
			var paths []string
			wrap := func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					paths = append(paths, r.URL.Path)
					mu.Unlock()
					if !old || !strings.HasPrefix(r.URL.Path, "/api/v1/nodes/") {
						next.ServeHTTP(w, r)
						return
					}
					rec := httptest.NewRecorder()
					next.ServeHTTP(rec, r)
					var d apiv1.NodeDetail
					if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
						t.Error(err)
					}
					d.Cluster, d.Holds, d.AppPolicy = nil, nil, "" // as a hub before node views
					w.Header().Set("Content-Type", "application/json")
					_ = json.NewEncoder(w).Encode(d)
				})
			}
			h, srv := startAPIHubWith(t, tokens, nil, wrap)
			if err := h.PauseClusterNote("c1", hub.SwitchNote{By: "alice", Reason: "INC-9"}); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Hold(hub.HoldTarget{Scope: hub.HoldApplication, Name: "web"}, time.Hour, "canary"); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				c, _ := h.Snapshot().Cluster("c1")
				if c.PausedBy != "" && len(h.Snapshot().Holds) == 1 {
					break // a snapshot with both
				}
				if time.Now().After(deadline) {
					t.Fatal("no snapshot with the pause and the hold")
				}
			}
			var out strings.Builder
			r, err := NewRemote(srv.URL, api.ClientOptions{Token: token}, &out)
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			paths = nil
			mu.Unlock()
			if err := r.Describe(id, "text"); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"paused 0s ago by alice: INC-9", "canary"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("no %q in\n%s", want, &out)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if got := slices.Contains(paths, "/api/v1/snapshot"); got != old {
				t.Errorf("requests %q: the snapshot read %v, want %v", paths, got, old)
			}
		})
	}
}

// TestPauseOfAPausedClusterNeverResumes: pausing a paused cluster again
// (with a new reason) sends one pause and no resume: a resume in between
// would let repairs through for a moment.
func TestPauseOfAPausedClusterNeverResumes(t *testing.T) {
	const token = "op-token-0123456789abcdef0123456789"
	tokens, err := api.ParseTokens("test", []byte(token+" operator alice\n"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var writes []string
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				mu.Lock()
				writes = append(writes, r.URL.Path)
				mu.Unlock()
			}
			next.ServeHTTP(w, r)
		})
	}
	h, srv := startAPIHubWith(t, tokens, nil, wrap)
	if err := h.PauseCluster("c1", true); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	r, err := NewRemote(srv.URL, api.ClientOptions{Token: token}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Pause([]string{"c1"}, false, true, "INC-2"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"/api/v1/clusters/c1/pause"}; !slices.Equal(writes, want) {
		t.Errorf("requests %q, want %q", writes, want)
	}
	if c, _ := h.Snapshot().Cluster("c1"); !c.Paused || c.PauseReason != "INC-2" {
		t.Errorf("c1 = %+v, want paused with the new reason", c)
	}
}

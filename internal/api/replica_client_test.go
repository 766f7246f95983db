package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/hub"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
)

// recorder records the writes, and the reads of one NodeID, a replica's
// API receives.
type recorder struct {
	mu     sync.Mutex
	writes []string
	next   http.Handler
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet || strings.HasPrefix(req.URL.Path, "/api/v1/nodes/") {
		r.mu.Lock()
		r.writes = append(r.writes, req.Method+" "+req.URL.Path)
		r.mu.Unlock()
	}
	r.next.ServeHTTP(w, req)
}

func (r *recorder) got() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.writes, ";")
}

// replicaList is the list of replicas the test replicas' APIs answer, each
// replica marked Self in its own.
type replicaList struct {
	mu   sync.Mutex
	list []apiv1.Replica
}

// set replaces the list.
func (l *replicaList) set(list []apiv1.Replica) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = list
}

// view is replica self's answer (Options.Replicas).
func (l *replicaList) view(self string) func() []apiv1.Replica {
	return func() []apiv1.Replica {
		l.mu.Lock()
		defer l.mu.Unlock()
		out := make([]apiv1.Replica, len(l.list))
		for i, r := range l.list {
			r.Self = r.ID == self
			out[i] = r
		}
		return out
	}
}

// startReplicaHub runs a hub that knows the clusters c1 and c2.
func startReplicaHub(t *testing.T, id string) *hub.Hub {
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
	t.Cleanup(func() { cancel(); wg.Wait() })
	return h
}

// TestReplicaClient attaches to replica a of two (a manages c1, b c2):
// the merged view has both clusters with their owners, actions on c2 sent
// through a reach b and only b, with the caller's token, and once b is
// gone its cluster stays in the view, unreachable.
func TestReplicaClient(t *testing.T) {
	tokens, err := ParseTokens("test", []byte("op-token-0123456789abcdef0123456789 operator alice\n"))
	if err != nil {
		t.Fatal(err)
	}
	var replicas replicaList // a's and b's view alike, but Self
	ha, hb := startReplicaHub(t, "a"), startReplicaHub(t, "b")
	recA := &recorder{next: Handler(ha, Options{Tokens: tokens, Replicas: replicas.view("a")})}
	recB := &recorder{next: Handler(hb, Options{Tokens: tokens, Replicas: replicas.view("b")})}
	srvA, srvB := httptest.NewServer(recA), httptest.NewServer(recB)
	defer srvA.Close()
	defer srvB.Close()
	replicas.set([]apiv1.Replica{
		{ID: "a", Address: strings.TrimPrefix(srvA.URL, "http://"), State: apiv1.ReplicaLive, Clusters: []string{"c1"}},
		{ID: "b", Address: strings.TrimPrefix(srvB.URL, "http://"), State: apiv1.ReplicaLive, Clusters: []string{"c2"}},
	})

	c, err := NewClientWithOptions(srvA.URL, ClientOptions{Token: "op-token-0123456789abcdef0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	rc := NewReplicaClient(c, 50*time.Millisecond)
	snaps, stop := rc.Subscribe()
	defer stop()
	wait := func(what string, cond func(*hub.Snapshot) bool) {
		t.Helper()
		waitSnapshot(t, snaps, 10*time.Second, what, cond)
	}
	owner := func(s *hub.Snapshot, cluster string) (hub.ClusterStatus, bool) {
		c, ok := s.Cluster(cluster)
		return c, ok
	}
	wait("both clusters with their owners", func(s *hub.Snapshot) bool {
		c1, ok1 := owner(s, "c1")
		c2, ok2 := owner(s, "c2")
		return ok1 && ok2 && c1.Owner == "a" && c2.Owner == "b" && len(s.Replicas) == 2 && s.Replicas[0].Reachable && s.Replicas[1].Reachable
	})

	// Actions on b's cluster, sent through a.
	id2 := hub.NewNodeID("c2", "ns", "web", hub.KindDeployment)
	if err := rc.RepairNow(id2); err != nil {
		t.Fatal(err)
	}
	if err := rc.PauseCluster("c2", true); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Hold(hub.HoldTarget{Scope: hub.HoldNode, Name: id2.String()}, time.Hour, "maintenance"); err != nil {
		t.Fatal(err)
	}
	// A read of one of its NodeIDs (the node view's desired object).
	if n, err := rc.Node(t.Context(), id2); err != nil || n.ID != id2 {
		t.Fatalf("Node: %+v, %v", n, err)
	}
	// And one on a's own cluster.
	if err := rc.PauseCluster("c1", true); err != nil {
		t.Fatal(err)
	}
	wantB := "POST /api/v1/nodes/c2:ns/web:deployment/repair;POST /api/v1/clusters/c2/pause;POST /api/v1/holds;GET /api/v1/nodes/c2:ns/web:deployment"
	if got := recB.got(); got != wantB {
		t.Errorf("replica b received %q, want %q", got, wantB)
	}
	if got, want := recA.got(), "POST /api/v1/clusters/c1/pause"; got != want {
		t.Errorf("replica a received %q, want %q", got, want)
	}
	wait("c2 paused by b, c1 by a", func(s *hub.Snapshot) bool {
		c1, _ := owner(s, "c1")
		c2, _ := owner(s, "c2")
		return c1.Paused && c2.Paused
	})
	if c2, _ := ha.Snapshot().Cluster("c2"); c2.Paused {
		t.Error("replica a paused c2, which b manages")
	}

	// b goes away: its cluster stays, unreachable, its nodes unknown.
	srvB.CloseClientConnections()
	srvB.Close()
	wait("c2 unreachable", func(s *hub.Snapshot) bool {
		c2, ok := owner(s, "c2")
		n, _ := s.Node(id2)
		return ok && c2.State == hub.ClusterUnreachable && c2.Owner == "b" && n.Status == hub.StatusUnknown &&
			!s.Replicas[1].Reachable && s.Replicas[1].Err != ""
	})
}

// TestReplicaAddressFromLease: a replica's address comes from its Lease,
// which others may write: the token goes there over https, or over plain
// http to loopback when the first replica is reached that way too, and
// nowhere else.
func TestReplicaAddressFromLease(t *testing.T) {
	const token = "op-token-0123456789abcdef0123456789"
	for _, tt := range []struct {
		name, first, address string
		wantErr              string // "" means a client
	}{
		{"loopback host:port", "http://127.0.0.1:7070", "127.0.0.1:7071", ""},
		{"loopback URL", "http://127.0.0.1:7070", "http://[::1]:7071", ""},
		{"https URL", "http://127.0.0.1:7070", "https://hub-1.example:7070", ""},
		{"https host:port", "https://hub-0.example:7070", "hub-1.example:7070", ""},
		{"plain http elsewhere", "http://127.0.0.1:7070", "http://10.0.0.5:7070",
			`replica "b": address from its Lease: hub address "http://10.0.0.5:7070": refusing to send the token over plain http to 10.0.0.5`},
		{"host:port in plain http elsewhere", "http://localhost:7070", "203.0.113.9:7070",
			`refusing to send the token over plain http to 203.0.113.9`},
		{"downgrade from https", "https://hub-0.example:7070", "http://127.0.0.1:7071",
			`replica "b": address "http://127.0.0.1:7071" from its Lease is not https, unlike https://hub-0.example:7070: not used`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			first, err := NewClientWithOptions(tt.first, ClientOptions{Token: token})
			if err != nil {
				t.Fatal(err)
			}
			rc := NewReplicaClient(first, 0)
			c, err := rc.client(apiv1.Replica{ID: "b", Address: tt.address})
			if tt.wantErr == "" {
				if err != nil || c == nil {
					t.Fatalf("client = %v, %v", c, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("client error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestReplicaListHangMarksUnreachable: attached to replicas a and b
// through a, a's GET /api/v1/replicas stops answering (a wedged process, a
// proxy holding the connection). The list refresh and the health checks
// give up after their timeout: the merged view keeps coming, b's changes
// reach it, a is shown unreachable, and an action whose owner must be
// looked up fails instead of hanging.
func TestReplicaListHangMarksUnreachable(t *testing.T) {
	const token = "op-token-0123456789abcdef0123456789"
	tokens, err := ParseTokens("test", []byte(token+" operator alice\n"))
	if err != nil {
		t.Fatal(err)
	}
	var list atomic.Pointer[[]apiv1.Replica]
	view := func(self string) func() []apiv1.Replica {
		return func() []apiv1.Replica {
			var out []apiv1.Replica
			for _, r := range *list.Load() {
				r.Self = r.ID == self
				out = append(out, r)
			}
			return out
		}
	}
	ha, hb := startReplicaHub(t, "a"), startReplicaHub(t, "b")
	var hang atomic.Bool
	release := make(chan struct{})
	apiA := Handler(ha, Options{Tokens: tokens, Replicas: view("a")})
	srvA := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang.Load() && r.URL.Path == "/api/v1/replicas" {
			select { // wedged until the client gives up
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		apiA.ServeHTTP(w, r)
	}))
	srvB := httptest.NewServer(Handler(hb, Options{Tokens: tokens, Replicas: view("b")}))
	defer srvA.Close()
	defer srvB.Close()
	defer close(release)
	list.Store(&[]apiv1.Replica{
		{ID: "a", Address: strings.TrimPrefix(srvA.URL, "http://"), State: apiv1.ReplicaLive, Clusters: []string{"c1"}},
		{ID: "b", Address: strings.TrimPrefix(srvB.URL, "http://"), State: apiv1.ReplicaLive, Clusters: []string{"c2"}},
	})
	c, err := NewClientWithOptions(srvA.URL, ClientOptions{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	rc := NewReplicaClient(c, 50*time.Millisecond)
	rc.probeTimeout = 300 * time.Millisecond
	snaps, stop := rc.Subscribe()
	defer stop()
	wait := func(what string, cond func(*hub.Snapshot) bool) {
		t.Helper()
		waitSnapshot(t, snaps, 10*time.Second, what, cond)
	}
	wait("both replicas", func(s *hub.Snapshot) bool {
		c2, ok := s.Cluster("c2")
		return ok && c2.Owner == "b" && len(s.Replicas) == 2
	})
	hang.Store(true)
	time.Sleep(100 * time.Millisecond) // a resync now waits on a
	if err := hb.PauseCluster("c2", true); err != nil {
		t.Fatal(err)
	}
	wait("c2 paused (b's change) and a unreachable", func(s *hub.Snapshot) bool {
		c2, _ := s.Cluster("c2")
		return c2.Paused && len(s.Replicas) == 2 && s.Replicas[0].ID == "a" && !s.Replicas[0].Reachable && s.Replicas[1].Reachable
	})

	// An action on a cluster, with the list not known yet: bounded too.
	fresh := NewReplicaClient(c, 50*time.Millisecond)
	fresh.probeTimeout = 300 * time.Millisecond
	done := make(chan error, 1)
	var wg conc.WaitGroup
	wg.Go(func() { done <- fresh.PauseCluster("c2", false) })
	defer wg.Wait()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("an action succeeded while the list could not be read")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an action waits for good on a replica that does not answer")
	}
}

// TestReplicaClientSurvivesPanic: a panic in the merged view (here in
// its first merge) is recovered and logged with its stack, and the view
// starts again: merged snapshots keep coming, and stopping the
// subscription does not panic.
func TestReplicaClientSurvivesPanic(t *testing.T) {
	h := startReplicaHub(t, "a")
	list := []apiv1.Replica{{ID: "a", Self: true, State: apiv1.ReplicaLive, Clusters: []string{"c1", "c2"}}}
	srv := httptest.NewServer(Handler(h, Options{Replicas: func() []apiv1.Replica { return list }}))
	defer srv.Close()
	var logs authLogBuffer
	c, err := NewClientWithOptions(srv.URL, ClientOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	rc := NewReplicaClient(c, 50*time.Millisecond)
	var merges atomic.Int32
	rc.merge = func(l apiv1.ReplicaList, snaps map[string]*hub.Snapshot, errs map[string]error) *hub.Snapshot {
		if merges.Add(1) == 1 {
			panic("injected merge failure")
		}
		return Merge(l, snaps, errs)
	}
	snaps, stop := rc.Subscribe()
	stop = sync.OnceFunc(stop)
	defer stop()
	waitSnapshot(t, snaps, 10*time.Second, "a merged view after the panic", func(s *hub.Snapshot) bool {
		_, ok := s.Cluster("c2")
		return ok && len(s.Replicas) == 1 && s.Replicas[0].Reachable
	})
	stop() // waits for the view's goroutine: nothing re-panics
	if l := logs.String(); !strings.Contains(l, "injected merge failure") || !strings.Contains(l, `in="the replicas' view"`) ||
		!strings.Contains(l, "replica_client_test.go") {
		t.Errorf("the panic is not logged with its stack:\n%s", l)
	}
}

// waitSnapshot reads snaps until cond holds for a snapshot, failing the
// test after timeout with what it waited for.
func waitSnapshot(t testing.TB, snaps <-chan *hub.Snapshot, timeout time.Duration, what string, cond func(*hub.Snapshot) bool) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case s := <-snaps:
			if cond(s) {
				return
			}
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestReplicaClientSnapshot: one merged view at once, through replica a:
// both clusters with their owners; with b gone, its cluster unreachable
// and b named, only the list failing being an error.
func TestReplicaClientSnapshot(t *testing.T) {
	var replicas replicaList
	ha, hb := startReplicaHub(t, "a"), startReplicaHub(t, "b")
	srvA := httptest.NewServer(Handler(ha, Options{Replicas: replicas.view("a")}))
	srvB := httptest.NewServer(Handler(hb, Options{Replicas: replicas.view("b")}))
	defer srvA.Close()
	defer srvB.Close()
	replicas.set([]apiv1.Replica{
		{ID: "a", Address: strings.TrimPrefix(srvA.URL, "http://"), State: apiv1.ReplicaLive, Clusters: []string{"c1"}},
		{ID: "b", Address: strings.TrimPrefix(srvB.URL, "http://"), State: apiv1.ReplicaLive, Clusters: []string{"c2"}},
	})
	c, err := NewClient(srvA.URL)
	if err != nil {
		t.Fatal(err)
	}
	rc := NewReplicaClient(c, 50*time.Millisecond)
	s, err := rc.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	c1, _ := s.Cluster("c1")
	c2, _ := s.Cluster("c2")
	if c1.Owner != "a" || c2.Owner != "b" || len(s.Replicas) != 2 || !s.Replicas[0].Reachable || !s.Replicas[1].Reachable {
		t.Fatalf("merged: c1 %+v, c2 %+v, replicas %+v", c1, c2, s.Replicas)
	}

	srvB.CloseClientConnections()
	srvB.Close()
	if s, err = rc.Snapshot(t.Context()); err != nil {
		t.Fatal(err)
	}
	c2, _ = s.Cluster("c2")
	if c2.State != hub.ClusterUnreachable || !strings.Contains(c2.LastError, `"b"`) || s.Replicas[1].Reachable || !strings.Contains(s.Replicas[1].Err, `replica "b"`) {
		t.Fatalf("b gone: c2 %+v, replicas %+v", c2, s.Replicas)
	}

	srvA.CloseClientConnections()
	srvA.Close()
	if _, err := rc.Snapshot(t.Context()); err == nil {
		t.Fatal("no error with the first replica gone")
	}
}

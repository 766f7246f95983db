package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/hub"
)

// startHub runs a hub with no clusters (the API's own logic; the
// real-cluster tests in the main package cover serve end to end).
func startHub(t *testing.T) *hub.Hub {
	t.Helper()
	h := hub.New(hub.Options{ID: "api-test", SnapshotInterval: 10 * time.Millisecond})
	h.SetDesired([]hub.NodeSpec{{ID: hub.NewNodeID("c1", "ns", "web", hub.KindDeployment), Namespace: "ns", Name: "web",
		Kind: hub.KindDeployment, Application: "web", Policy: hub.PolicyRepair, Hash: "1"}})
	ctx, cancel := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	wg.Go(func() { _ = h.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return h
}

func TestAPIAndClient(t *testing.T) {
	h := startHub(t)
	srv := httptest.NewServer(Handler(h, Options{}))
	defer srv.Close()
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	snaps, stop := c.Subscribe()
	defer stop()
	waitSnap := func(what string, cond func(*hub.Snapshot) bool) {
		t.Helper()
		deadline := time.After(5 * time.Second)
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
	waitSnap("first snapshot", func(s *hub.Snapshot) bool {
		return s.HubID == "api-test" && len(s.Nodes) == 1 && s.Nodes[0].ID.String() == "c1:ns/web:deployment"
	})
	if err := c.PauseCluster("c1", true); err != nil {
		t.Fatal(err)
	}
	waitSnap("paused", func(s *hub.Snapshot) bool { cs, ok := s.Cluster("c1"); return ok && cs.Paused })
	if err := c.SetApplicationPolicy("web", hub.PolicyWarn); err != nil {
		t.Fatal(err)
	}
	waitSnap("warn override", func(s *hub.Snapshot) bool { return s.AppPolicies["web"] == hub.PolicyWarn })
	if err := c.SetApplicationPolicy("web", "bogus"); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("bad policy error = %v", err)
	}
	if err := c.RepairNow(hub.NewNodeID("c1", "ns", "nope", hub.KindService)); err == nil || !strings.Contains(err.Error(), "unknown node") {
		t.Fatalf("unknown node error = %v", err)
	}
	if err := c.RepairNow(hub.NewNodeID("c1", "ns", "web", hub.KindDeployment)); err != nil {
		t.Fatal(err)
	}
	s, err := c.Snapshot(t.Context())
	if err != nil || len(s.Nodes) != 1 {
		t.Fatalf("Snapshot = %v, %v", s, err)
	}
	resp, err := http.Get(srv.URL + "/api/v1/nodes/c1:ns%2Fweb:deployment")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("node endpoint: %v %v", resp, err)
	}
	resp.Body.Close()
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 200, "/api/v1/nodes/bad": 400} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d, want %d", path, resp.StatusCode, want)
		}
	}
}

func TestReadOnlyAndNotReady(t *testing.T) {
	h := startHub(t)
	srv := httptest.NewServer(Handler(h, Options{ReadOnly: true, Ready: func() error { return context.DeadlineExceeded }}))
	defer srv.Close()
	c, _ := NewClient(srv.URL)
	if err := c.PauseCluster("c1", true); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("read-only error = %v", err)
	}
	resp, err := http.Get(srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/readyz = %d", resp.StatusCode)
	}
	if _, err := NewClient("localhost:1"); err == nil {
		t.Fatal("want an address error")
	}
}

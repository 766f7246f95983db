package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/hub"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
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
		waitSnapshot(t, snaps, 5*time.Second, what, cond)
	}
	waitSnap("first snapshot", func(s *hub.Snapshot) bool {
		return s.HubID == "api-test" && len(s.Nodes) == 1 && s.Nodes[0].ID.String() == "c1:ns/web:deployment"
	})
	if err := c.PauseCluster("c1", true); err != nil {
		t.Fatal(err)
	}
	waitSnap("paused", func(s *hub.Snapshot) bool { cs, ok := s.Cluster("c1"); return ok && cs.Paused })
	// Paused again with a reason: the note names the caller ("local"
	// without tokens), whatever the client says.
	if err := c.PauseClusterNote("c1", hub.SwitchNote{By: "mallory", Reason: "  INC-4211: failover "}); err != nil {
		t.Fatal(err)
	}
	waitSnap("paused with a note", func(s *hub.Snapshot) bool {
		cs, ok := s.Cluster("c1")
		return ok && cs.Paused && cs.PausedBy == "local" && cs.PauseReason == "INC-4211: failover" && !cs.PausedAt.IsZero()
	})
	var refused *Error
	if err := c.PauseClusterNote("c1", hub.SwitchNote{Reason: strings.Repeat("x", hub.MaxSwitchNote+1)}); !errors.As(err, &refused) ||
		refused.StatusCode != http.StatusBadRequest || !strings.Contains(err.Error(), "at most 512 bytes") {
		t.Fatalf("pause with a long reason = %v, want 400", err)
	}
	if err := c.SetApplicationPolicyNote("web", hub.PolicyWarn, hub.SwitchNote{Reason: strings.Repeat("x", hub.MaxSwitchNote+1)}); !errors.As(err, &refused) ||
		refused.StatusCode != http.StatusBadRequest {
		t.Fatalf("policy with a long reason = %v, want 400", err)
	}
	if err := c.SetApplicationPolicy("web", hub.PolicyWarn); err != nil {
		t.Fatal(err)
	}
	waitSnap("warn override", func(s *hub.Snapshot) bool { return s.AppPolicies["web"] == hub.PolicyWarn })
	if err := c.SetApplicationPolicyNote("web", hub.PolicyWarn, hub.SwitchNote{By: "mallory", Reason: "INC-8"}); err != nil {
		t.Fatal(err)
	}
	waitSnap("warn override with its note", func(s *hub.Snapshot) bool {
		n := s.AppPolicyNotes["web"]
		return n.By == "local" && n.Reason == "INC-8" && !n.At.IsZero()
	})
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
	probes := httptest.NewServer(ProbeHandler(h, Options{}))
	defer probes.Close()
	for url, want := range map[string]int{
		probes.URL + "/healthz": 200, probes.URL + "/readyz": 200, probes.URL + "/metrics": 200,
		srv.URL + "/api/v1/nodes/bad": 400,
		// Probes are not on the API handler, nor the API on the probes'.
		srv.URL + "/healthz": 404, srv.URL + "/metrics": 404, probes.URL + "/api/v1/snapshot": 404,
	} {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d, want %d", url, resp.StatusCode, want)
		}
	}
}

func TestReadOnlyAndNotReady(t *testing.T) {
	h := startHub(t)
	opts := Options{ReadOnly: true, Ready: func() error { return context.DeadlineExceeded }}
	srv := httptest.NewServer(Handler(h, opts))
	defer srv.Close()
	probes := httptest.NewServer(ProbeHandler(h, opts))
	defer probes.Close()
	c, _ := NewClient(srv.URL)
	if err := c.PauseCluster("c1", true); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("read-only error = %v", err)
	}
	resp, err := http.Get(probes.URL + "/readyz")
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

func TestHolds(t *testing.T) {
	h := startHub(t)
	srv := httptest.NewServer(Handler(h, Options{}))
	defer srv.Close()
	c, _ := NewClient(srv.URL)
	node := hub.HoldTarget{Scope: hub.HoldNode, Name: "c1:ns/web:deployment"}

	hd, err := c.Hold(node, 30*time.Minute, "incident 42: hands off")
	if err != nil {
		t.Fatal(err)
	}
	if hd.Target != node || hd.Reason != "incident 42: hands off" || hd.By != "local" || hd.Until.Sub(hd.Since) != 30*time.Minute {
		t.Fatalf("hold = %+v", hd)
	}
	app := hub.HoldTarget{Scope: hub.HoldApplication, Name: "web"}
	if _, err := c.Hold(app, time.Hour, "release freeze"); err != nil {
		t.Fatal(err)
	}
	hs, err := c.Holds(t.Context())
	if err != nil || len(hs) != 2 || hs[0].Target != app || hs[1].Target != node {
		t.Fatalf("Holds = %+v, %v", hs, err)
	}
	if got := h.Snapshot().Holds; len(got) != 2 {
		t.Fatalf("snapshot holds = %+v", got)
	}

	// The raw API: the documented body, 201 with the hold.
	resp, err := http.Post(srv.URL+"/api/v1/holds", "application/json",
		strings.NewReader(`{"scope":"cluster","name":"c1","ttl":"15m","reason":"node pool upgrade"}`))
	if err != nil {
		t.Fatal(err)
	}
	var doc apiv1.HoldDocument
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, err := doc.ToHub(); err != nil || resp.StatusCode != http.StatusCreated || got.Target != (hub.HoldTarget{Scope: hub.HoldCluster, Name: "c1"}) {
		t.Fatalf("POST /api/v1/holds = %d %+v %v", resp.StatusCode, got, err)
	}

	for _, tt := range []struct{ body, want string }{
		{`{"scope":"node","name":"c1:ns/web:deployment","ttl":"30m"}`, "reason is required"},
		{`{"scope":"node","name":"c1:ns/web:deployment","reason":"x"}`, "ttl is required"},
		{`{"scope":"node","name":"c1:ns/web:deployment","ttl":"soon","reason":"x"}`, "want a Go duration"},
		{`{"scope":"node","name":"c1:ns/web:deployment","ttl":"-5m","reason":"x"}`, "must be positive"},
		{`{"scope":"namespace","name":"ns","ttl":"30m","reason":"x"}`, "scope must be node, application or cluster"},
		{`{"scope":"node","name":"web","ttl":"30m","reason":"x"}`, "hold target node/web"},
		{`{"scope":`, "hold body"},
	} {
		resp, err := http.Post(srv.URL+"/api/v1/holds", "application/json", strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), tt.want) {
			t.Errorf("POST %s = %d %s, want 400 with %q", tt.body, resp.StatusCode, b, tt.want)
		}
	}

	if err := c.ReleaseHold(node); err != nil {
		t.Fatal(err)
	}
	var apiErr *Error
	if err := c.ReleaseHold(node); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Fatalf("second release = %v, want a 404", err)
	}
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/api/v1/holds/cluster/c1", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE /api/v1/holds/cluster/c1 = %v, %v", resp, err)
	}
	req, _ = http.NewRequest(http.MethodDelete, srv.URL+"/api/v1/holds/pod/x", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("DELETE /api/v1/holds/pod/x = %v, %v", resp, err)
	}
	if hs, err := c.Holds(t.Context()); err != nil || len(hs) != 1 || hs[0].Target != app {
		t.Fatalf("Holds after the releases = %+v, %v", hs, err)
	}

	ro := httptest.NewServer(Handler(h, Options{ReadOnly: true}))
	defer ro.Close()
	rc, _ := NewClient(ro.URL)
	if _, err := rc.Hold(node, time.Minute, "x"); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusForbidden {
		t.Fatalf("read-only hold = %v", err)
	}
	if err := rc.ReleaseHold(app); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusForbidden {
		t.Fatalf("read-only release = %v", err)
	}
	if hs, err := rc.Holds(t.Context()); err != nil || len(hs) != 1 {
		t.Fatalf("read-only Holds = %+v, %v", hs, err)
	}
}

// lostRelease is a hub where another release of the same hold wins the
// race: it goes through between the handler's call and the hub's own check.
type lostRelease struct{ *hub.Hub }

func (h lostRelease) ReleaseHold(t hub.HoldTarget) error {
	if err := h.Hub.ReleaseHold(t); err != nil { // the other DELETE
		return err
	}
	return h.Hub.ReleaseHold(t)
}

// TestConcurrentReleasesOfOneHold: of two DELETEs of one hold, one answers
// 204 and the other 404, never 500 "released but not recorded": the one
// that loses the race (forced with lostRelease, then raced for real) finds
// no hold.
func TestConcurrentReleasesOfOneHold(t *testing.T) {
	h := startHub(t)
	target := hub.HoldTarget{Scope: hub.HoldCluster, Name: "c1"}
	del := func(url string) int {
		req, _ := http.NewRequest(http.MethodDelete, url+"/api/v1/holds/cluster/c1", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound && !strings.Contains(string(b), "no such hold") {
			t.Errorf("404 without the reason: %s", b)
		}
		return resp.StatusCode
	}

	lost := httptest.NewServer(Handler(lostRelease{h}, Options{}))
	defer lost.Close()
	if _, err := h.Hold(target, time.Hour, "x"); err != nil {
		t.Fatal(err)
	}
	if code := del(lost.URL); code != http.StatusNotFound {
		t.Fatalf("the release that lost the race = %d, want 404", code)
	}

	srv := httptest.NewServer(Handler(h, Options{}))
	defer srv.Close()
	for range 20 {
		if _, err := h.Hold(target, time.Hour, "x"); err != nil {
			t.Fatal(err)
		}
		var codes [2]int
		var wg conc.WaitGroup
		for i := range codes {
			wg.Go(func() { codes[i] = del(srv.URL) })
		}
		wg.Wait()
		slices.Sort(codes[:])
		if codes != [2]int{http.StatusNoContent, http.StatusNotFound} {
			t.Fatalf("two releases of one hold = %v, want 204 and 404", codes)
		}
	}
}

func TestReload(t *testing.T) {
	h := startHub(t)
	var calls []bool
	var answer error
	srv := httptest.NewServer(Handler(h, Options{Reload: func(allowPrune bool) error {
		calls = append(calls, allowPrune)
		return answer
	}}))
	defer srv.Close()
	c, _ := NewClient(srv.URL)

	if err := c.Reload(false); err != nil {
		t.Fatal(err)
	}
	answer = &hub.PruneRefusedError{Total: 3, Limit: 50, Clusters: []hub.PruneCount{{Cluster: "c1", Removing: 3, Managed: 3}}}
	err := c.Reload(false)
	var apiErr *Error
	if !errors.Is(err, hub.ErrPruneRefused) || !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusConflict ||
		!strings.Contains(err.Error(), `cluster "c1": 3 of 3 managed objects (all of them)`) || !strings.Contains(err.Error(), "--allow-prune") {
		t.Fatalf("refused reload = %v", err)
	}
	answer = nil
	if err := c.Reload(true); err != nil {
		t.Fatal(err)
	}
	answer = errors.New("reload dw.yaml: config rejected, still running the previous one:\ndw.yaml:3:12: hub.workers: want an integer")
	err = c.Reload(false)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnprocessableEntity || errors.Is(err, hub.ErrPruneRefused) ||
		!strings.Contains(err.Error(), "hub.workers") {
		t.Fatalf("invalid reload = %v", err)
	}
	if want := []bool{false, false, true, false}; !slices.Equal(calls, want) {
		t.Fatalf("allowPrune per call = %v, want %v", calls, want)
	}
	resp, err := http.Post(srv.URL+"/api/v1/reload?allowPrune=maybe", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || len(calls) != 4 {
		t.Fatalf("allowPrune=maybe = %d (calls %v)", resp.StatusCode, calls)
	}

	none := httptest.NewServer(Handler(h, Options{}))
	defer none.Close()
	nc, _ := NewClient(none.URL)
	if err := nc.Reload(false); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotImplemented {
		t.Fatalf("reload without a callback = %v", err)
	}
	ro := httptest.NewServer(Handler(h, Options{ReadOnly: true, Reload: func(bool) error { t.Error("read-only reload ran"); return nil }}))
	defer ro.Close()
	rc, _ := NewClient(ro.URL)
	if err := rc.Reload(true); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusForbidden {
		t.Fatalf("read-only reload = %v", err)
	}
}

// failingIntent is an intent store whose writes fail (a full disk).
type failingIntent struct{}

var errDiskFull = errors.New("write state: no space left on device")

func (failingIntent) Load() (hub.Intent, error)                               { return hub.Intent{}, nil }
func (failingIntent) SetPaused(string, bool, time.Time, hub.SwitchNote) error { return errDiskFull }
func (failingIntent) SetPolicy(string, hub.Policy, time.Time, hub.SwitchNote) error {
	return errDiskFull
}
func (failingIntent) PutHold(hub.Hold) error                       { return errDiskFull }
func (failingIntent) DeleteHold(hub.HoldTarget) error              { return errDiskFull }
func (failingIntent) DeleteExpiredHold(hub.Hold) error             { return errDiskFull }
func (failingIntent) PutDecommission(hub.DecommissionRecord) error { return errDiskFull }
func (failingIntent) DeleteDecommission(hub.NodeID) error          { return errDiskFull }
func (failingIntent) PutApplied(hub.SpecRef) error                 { return errDiskFull }
func (failingIntent) DeleteApplied(hub.NodeID) error               { return errDiskFull }
func (failingIntent) Close() error                                 { return nil }

// TestDurableWriteFailure: an action the hub could not record durably
// answers 500 with the error.
func TestDurableWriteFailure(t *testing.T) {
	h := hub.New(hub.Options{ID: "api-test", Intent: failingIntent{}})
	h.SetDesired([]hub.NodeSpec{{ID: hub.NewNodeID("c1", "ns", "web", hub.KindDeployment), Namespace: "ns", Name: "web",
		Kind: hub.KindDeployment, Application: "web", Policy: hub.PolicyRepair, Hash: "1"}})
	srv := httptest.NewServer(Handler(h, Options{}))
	defer srv.Close()
	c, _ := NewClient(srv.URL)
	target := hub.HoldTarget{Scope: hub.HoldCluster, Name: "c1"}
	// In order: the release needs the hold made before it.
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"pause", func() error { return c.PauseCluster("c1", true) }},
		{"resume", func() error { return c.PauseCluster("c1", false) }},
		{"policy", func() error { return c.SetApplicationPolicy("web", hub.PolicyWarn) }},
		{"hold", func() error { _, err := c.Hold(target, time.Hour, "x"); return err }},
		{"release", func() error { return c.ReleaseHold(target) }},
	} {
		name := tc.name
		err := tc.call()
		var apiErr *Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusInternalServerError || !strings.Contains(err.Error(), "no space left") {
			t.Errorf("%s = %v, want a 500 with the write error", name, err)
		}
	}
}

package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/hub"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
)

// TestReplicas checks GET /api/v1/replicas and the owner of each cluster
// of GET /api/v1/snapshot, for a hub of one process and for a replica.
func TestReplicas(t *testing.T) {
	h := startHub(t)
	two := []apiv1.Replica{
		{ID: "a", Address: "10.0.0.1:8080", Self: true, State: apiv1.ReplicaLive, Clusters: []string{"c2"}},
		{ID: "b", Address: "10.0.0.2:8080", State: apiv1.ReplicaLive, Clusters: []string{"c1"}},
	}
	for _, tc := range []struct {
		name      string
		replicas  func() []apiv1.Replica
		wantIDs   []string
		wantOwner string
	}{
		{name: "one process", replicas: nil, wantIDs: []string{}, wantOwner: ""},
		{name: "coordination not joined yet", replicas: func() []apiv1.Replica { return nil }, wantIDs: []string{}, wantOwner: ""},
		{name: "replica a", replicas: func() []apiv1.Replica { return two }, wantIDs: []string{"a", "b"}, wantOwner: "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(Handler(h, Options{Replicas: tc.replicas}))
			defer srv.Close()
			c, err := NewClient(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			l, err := c.Replicas(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range l.Replicas {
				ids = append(ids, r.ID)
			}
			if l.APIVersion != apiv1.APIVersion || l.Replicas == nil || !slices.Equal(ids, tc.wantIDs) && len(ids)+len(tc.wantIDs) > 0 {
				t.Fatalf("replicas = %+v, want ids %v", l, tc.wantIDs)
			}
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/api/v1/snapshot", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var snap apiv1.Snapshot
			if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(snap.Clusters, func(c apiv1.Cluster) bool { return c.ID == "c1" })
			if i < 0 {
				t.Fatalf("snapshot clusters %+v: no c1", snap.Clusters)
			}
			if got := snap.Clusters[i].Owner; got != tc.wantOwner {
				t.Errorf("c1 owner = %q, want %q", got, tc.wantOwner)
			}
			// A repair of another replica's cluster is refused, naming it.
			err = c.RepairNow(hub.NewNodeID("c1", "ns", "web", hub.KindDeployment))
			var ae *Error
			misdirected := errors.As(err, &ae) && ae.StatusCode == http.StatusMisdirectedRequest
			if wantRefused := tc.wantOwner != "" && tc.wantOwner != "a"; misdirected != wantRefused || (err != nil && !misdirected) {
				t.Errorf("repair of c1: %v, want refused with 421: %t", err, wantRefused)
			}
			if misdirected && !strings.Contains(err.Error(), `replica "b" at 10.0.0.2:8080`) {
				t.Errorf("refusal %q does not name the owner and its address", err)
			}
		})
	}
}

package app

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// TestClusterAPIRestart: a hub that applied objects on a discovered cluster
// restarts. The start must not judge that cluster's applied records before
// discovery has produced it (the prune guard used to refuse the whole start:
// "2 of 2 managed objects (all of them)"), must delete nothing, and must find
// the cluster still paused once discovery reports it again; resumed, an
// external delete is repaired.
func TestClusterAPIRestart(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 2, Names: []string{"mgmt", "w1"}})
	mgmt, w1 := set.Clusters[0], set.Clusters[1]
	ctx := t.Context()
	mk := managementCluster(t, mgmt)
	kc, err := os.ReadFile(w1.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	putCAPISecret(t, mk, "fleet", "prod-a", kc)
	createProvisionedCluster(t, dynamic.NewForConfigOrDie(mgmt.RESTConfig()), "fleet", "prod-a")

	path := filepath.Join(t.TempDir(), "capi.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, `hub:
  id: capi-restart
clusterAPI:
  - name: mgmt
    kubeconfig: %s
    namespaces: [fleet]
    labels: {source: capi}
applications:
  - id: edge
    namespace: edge
    selector: source=capi
    image: registry.example/edge:1
    port: 8080
`, mgmt.Kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state.db")
	dep := hub.NewNodeID("fleet-prod-a", "edge", "edge", hub.KindDeployment)
	a := startApp(t, path, withState(state))
	a.waitSnap(t, 60*time.Second, "discovered cluster in sync", func(s *hub.Snapshot) bool {
		n, ok := s.Node(dep)
		return ok && n.Status == hub.StatusInSync
	})
	if err := a.hub.PauseCluster("fleet-prod-a", true); err != nil {
		t.Fatal(err)
	}
	a.stop()

	b := startApp(t, path, withState(state)) // fails the test if New refuses
	b.waitSnap(t, 60*time.Second, "rediscovered, still paused", func(s *hub.Snapshot) bool {
		c, ok := s.Cluster("fleet-prod-a")
		n, nok := s.Node(dep)
		return ok && c.Paused && c.State == hub.ClusterSynced && nok && n.Status == hub.StatusInSync
	})
	wc := kubernetes.NewForConfigOrDie(w1.RESTConfig())
	if _, err := wc.AppsV1().Deployments("edge").Get(ctx, "edge", metav1.GetOptions{}); err != nil {
		t.Fatalf("the restart touched the discovered cluster's objects: %v", err)
	}
	// Paused: a delete is reported, not repaired.
	if err := wc.AppsV1().Deployments("edge").Delete(ctx, "edge", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	b.waitSnap(t, 20*time.Second, "delete on the paused cluster reported", statusIs(dep, hub.StatusPaused))
	t0 := time.Now()
	if err := b.hub.PauseCluster("fleet-prod-a", false); err != nil {
		t.Fatal(err)
	}
	b.waitSnap(t, 20*time.Second, "repaired once resumed", repairedAfter(dep, t0))
}

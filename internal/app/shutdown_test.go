package app

import (
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// shutdownBudget is how long a hub may take to stop (SIGTERM, SIGINT, a
// hangup), whatever its clusters do: the bar.
const shutdownBudget = 2 * time.Second

// TestShutdownBounded: the hub stops within two seconds when its only
// cluster has become unreachable with calls hanging on it (the apiserver
// frozen: connections open, no answers), and when a repair is on the wire
// at that moment; the repair is then either done or not made, never half.
func TestShutdownBounded(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	freeze := func(t *testing.T) func() {
		t.Helper()
		thaw, err := lc.FreezeAPIServer()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(thaw)
		return thaw
	}
	stopTimed := func(a *testApp) time.Duration {
		t0 := time.Now()
		a.stop()
		return time.Since(t0)
	}

	t.Run("unreachable cluster", func(t *testing.T) {
		const ns = "shut-unreachable"
		a := startApp(t, e2eConfig(t, set, ns, "", "api", "worker"), nil)
		a.waitSnap(t, 60*time.Second, "created", allInSync(3))
		id := hub.NewNodeID(lc.Name, ns, "web", hub.KindConfigMap)
		thaw := freeze(t)
		if err := a.hub.RepairNow(id); err != nil { // a pass that hangs on the frozen apiserver
			t.Fatal(err)
		}
		a.waitSnap(t, 30*time.Second, "the cluster seen unreachable", func(s *hub.Snapshot) bool {
			c, ok := s.Cluster(lc.Name)
			return ok && c.State == hub.ClusterUnreachable
		})
		took := stopTimed(a)
		thaw()
		t.Logf("stopped in %v with the cluster unreachable", took.Round(time.Millisecond))
		if took > shutdownBudget {
			t.Fatalf("the hub took %v to stop, want at most %v", took, shutdownBudget)
		}
	})

	t.Run("repair in flight", func(t *testing.T) {
		const ns = "shut-inflight"
		a := startApp(t, e2eConfig(t, set, ns, "", "api", "worker"), nil)
		a.waitSnap(t, 60*time.Second, "created", allInSync(3))
		id := hub.NewNodeID(lc.Name, ns, "web", hub.KindConfigMap)
		// Hold the drift with a pause, freeze the apiserver, then ask for
		// the repair: it reads from the watch cache and its apply hangs.
		if err := a.hub.PauseCluster(lc.Name, true); err != nil {
			t.Fatal(err)
		}
		if err := admin.CoreV1().ConfigMaps(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		a.waitSnap(t, 20*time.Second, "the drift held by the pause", statusIs(id, hub.StatusPaused))
		thaw := freeze(t)
		if err := a.hub.RepairNow(id); err != nil {
			t.Fatal(err)
		}
		a.waitSnap(t, 20*time.Second, "the repair on the wire", statusIs(id, hub.StatusRepairing))
		took := stopTimed(a)
		thaw()
		t.Logf("stopped in %v with a repair in flight", took.Round(time.Millisecond))
		if took > shutdownBudget {
			t.Fatalf("the hub took %v to stop, want at most %v", took, shutdownBudget)
		}
		// The cancelled apply either reached the apiserver whole or not at
		// all.
		cm, err := admin.CoreV1().ConfigMaps(ns).Get(t.Context(), "web", metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			t.Log("the repair was cancelled before the apiserver took it")
		case err != nil:
			t.Fatal(err)
		case cm.Data["LOG_LEVEL"] != "info" || len(cm.Data) != 1:
			t.Fatalf("half-made repair: data %v", cm.Data)
		default:
			t.Log("the repair landed whole")
		}
	})
}

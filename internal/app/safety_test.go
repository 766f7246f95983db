package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/e2etest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// safetyConfig writes a config with a state file (see e2etest.SafetyConfig).
func safetyConfig(t *testing.T, path, hubID, state string, pruneOrphans bool, set *localcluster.Set, ns string, apps ...string) string {
	t.Helper()
	return e2etest.SafetyConfig(t, path, hubID, state, pruneOrphans, set, ns, apps...)
}

// withState makes startApp open the given state file.
func withState(path string) func(*Options) {
	return func(o *Options) { o.StateFile = path }
}

// appIDs are the NodeIDs of a safetyApp on a cluster.
func appIDs(cluster, ns, app string) []hub.NodeID { return e2etest.AppIDs(cluster, ns, app) }

// exists reports whether the object of a NodeID exists on its cluster.
func exists(t *testing.T, c kubernetes.Interface, id hub.NodeID) bool {
	t.Helper()
	return e2etest.Exists(t, c, id)
}

func waitGone(t *testing.T, c kubernetes.Interface, id hub.NodeID, timeout time.Duration) {
	t.Helper()
	testwait.For(t, timeout, fmt.Sprintf("%s to be gone", id), func() error {
		return testwait.Check(!exists(t, c, id), "it still exists")
	})
}

// TestSafetyPruneGuard: an emptied applications list is refused with every
// object kept; removing one application of three is applied; an object
// recreated under a pruned name without our label survives the prune.
func TestSafetyPruneGuard(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	c1 := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(c1.RESTConfig())
	state := filepath.Join(t.TempDir(), "state.db")
	path := safetyConfig(t, "", "hub-a", state, false, set, "shop", "a", "b", "c")
	a := startApp(t, path, withState(state))
	a.waitSnap(t, 60*time.Second, "all in sync", allInSync(9))

	// Emptied: refused as a whole, nothing deleted, the old state runs on.
	safetyConfig(t, path, "hub-a", state, false, set, "shop")
	err := a.Reload(false)
	if !errors.Is(err, hub.ErrPruneRefused) || !strings.Contains(err.Error(), "9 of 9") {
		t.Fatalf("reload with applications: []: %v, want a prune refusal naming 9 of 9", err)
	}
	// Reload refused synchronously; a delete issued anyway would reach the
	// apiserver within tens of ms (repair p99 ~36 ms): a second is ample.
	time.Sleep(time.Second)
	for _, app := range []string{"a", "b", "c"} {
		for _, id := range appIDs(c1.Name, "shop", app) {
			if !exists(t, admin, id) {
				t.Fatalf("%s deleted by a refused reload", id)
			}
			if _, ok := a.hub.Desired(id); !ok {
				t.Fatalf("%s left the desired state of a refused reload", id)
			}
		}
	}

	// Hold application c, remove it from the config: held, "would prune".
	if _, err := a.hub.Hold(hub.HoldTarget{Scope: hub.HoldApplication, Name: "c"}, time.Hour, "recreate test"); err != nil {
		t.Fatal(err)
	}
	safetyConfig(t, path, "hub-a", state, false, set, "shop", "a", "b")
	if err := a.Reload(false); err != nil {
		t.Fatalf("removing one application of three: %v", err)
	}
	cmID := hub.NewNodeID(c1.Name, "shop", "c", hub.KindConfigMap)
	a.waitSnap(t, 20*time.Second, "c held", func(s *hub.Snapshot) bool {
		n, ok := s.Node(cmID)
		return ok && n.Status == hub.StatusHeld && strings.Contains(n.Reason, "would prune")
	})
	// Someone recreates c's ConfigMap under the same name, without our label.
	if err := admin.CoreV1().ConfigMaps("shop").Delete(t.Context(), "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, admin, cmID, 10*time.Second)
	mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "shop"}, Data: map[string]string{"mine": "yes"}}
	if _, err := admin.CoreV1().ConfigMaps("shop").Create(t.Context(), mine, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.hub.ReleaseHold(hub.HoldTarget{Scope: hub.HoldApplication, Name: "c"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range appIDs(c1.Name, "shop", "c")[:2] {
		waitGone(t, admin, id, 20*time.Second)
	}
	a.waitSnap(t, 20*time.Second, "c's NodeIDs gone", func(s *hub.Snapshot) bool {
		for _, id := range appIDs(c1.Name, "shop", "c") {
			if _, ok := s.Node(id); ok {
				return false
			}
		}
		return true
	})
	cm, err := admin.CoreV1().ConfigMaps("shop").Get(t.Context(), "c", metav1.GetOptions{})
	if err != nil || cm.Data["mine"] != "yes" {
		t.Fatalf("the recreated ConfigMap without our label did not survive the prune: %v %v", cm, err)
	}
	for _, app := range []string{"a", "b"} {
		for _, id := range appIDs(c1.Name, "shop", app) {
			if !exists(t, admin, id) {
				t.Fatalf("%s of a kept application deleted", id)
			}
		}
	}
}

// TestSafetyIntentSurvivesRestart: pause, hold and warn survive a restart;
// an application removed while the hub was down is decommissioned on start.
func TestSafetyIntentSurvivesRestart(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 2})
	c1, c2 := set.Clusters[0], set.Clusters[1]
	a1 := kubernetes.NewForConfigOrDie(c1.RESTConfig())
	a2 := kubernetes.NewForConfigOrDie(c2.RESTConfig())
	state := filepath.Join(t.TempDir(), "state.db")
	path := safetyConfig(t, "", "hub-a", state, false, set, "shop", "a", "b", "c")
	a := startApp(t, path, withState(state))
	a.waitSnap(t, 60*time.Second, "all in sync", allInSync(18))
	if err := a.hub.SetApplicationPolicy("a", hub.PolicyWarn); err != nil {
		t.Fatal(err)
	}
	if _, err := a.hub.Hold(hub.HoldTarget{Scope: hub.HoldApplication, Name: "b"}, time.Hour, "incident 7"); err != nil {
		t.Fatal(err)
	}
	if err := a.hub.PauseCluster(c2.Name, true); err != nil {
		t.Fatal(err)
	}
	a.stop()

	// Down: application c leaves the config.
	safetyConfig(t, path, "hub-a", state, false, set, "shop", "a", "b")
	b := startApp(t, path, withState(state))
	for _, id := range appIDs(c1.Name, "shop", "c") {
		waitGone(t, a1, id, 30*time.Second)
	}
	b.waitSnap(t, 30*time.Second, "intent restored", func(s *hub.Snapshot) bool {
		c, _ := s.Cluster(c2.Name)
		return c.Paused && s.AppPolicies["a"] == hub.PolicyWarn && len(s.Holds) == 1 && s.Holds[0].Reason == "incident 7"
	})
	// Drift on each: warn-only, held, paused; nothing repaired.
	scale := []byte(`{"spec":{"replicas":3}}`)
	for _, d := range []struct {
		c   kubernetes.Interface
		id  hub.NodeID
		st  hub.Status
		app string
	}{
		{a1, hub.NewNodeID(c1.Name, "shop", "a", hub.KindDeployment), hub.StatusWarnOnly, "a"},
		{a1, hub.NewNodeID(c1.Name, "shop", "b", hub.KindDeployment), hub.StatusHeld, "b"},
		{a2, hub.NewNodeID(c2.Name, "shop", "a", hub.KindDeployment), hub.StatusPaused, "a"},
	} {
		if _, err := d.c.AppsV1().Deployments("shop").Patch(t.Context(), d.app, types.MergePatchType, scale, metav1.PatchOptions{FieldManager: "kubectl-scale"}); err != nil {
			t.Fatal(err)
		}
		b.waitSnap(t, 20*time.Second, fmt.Sprintf("%s %s", d.id, d.st), statusIs(d.id, d.st))
	}
	if dep, err := a1.AppsV1().Deployments("shop").Get(t.Context(), "b", metav1.GetOptions{}); err != nil || *dep.Spec.Replicas != 3 {
		t.Fatalf("held deployment repaired after a restart: %v", err)
	}
}

// TestSafetyOrphansAndTwoHubs: with the state file deleted, objects of an
// application that left the config show as orphans and are pruned only with
// pruneOrphans; a second hub with another id on the same cluster never sees
// or touches them, nor the first its objects.
func TestSafetyOrphansAndTwoHubs(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	c1 := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(c1.RESTConfig())
	dir := t.TempDir()
	stateA, stateB := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")

	a := startApp(t, safetyConfig(t, "", "hub-a", stateA, false, set, "shop", "a", "b"), withState(stateA))
	a.waitSnap(t, 60*time.Second, "hub-a in sync", allInSync(6))
	a.stop()
	if err := os.Remove(stateA); err != nil {
		t.Fatal(err)
	}

	// Another hub manages application z in the same namespace.
	other := startApp(t, safetyConfig(t, "", "hub-b", stateB, true, set, "shop", "z"), withState(stateB))
	other.waitSnap(t, 60*time.Second, "hub-b in sync", allInSync(3))

	// hub-a, state lost, without application b: b's objects are orphans.
	pathA := safetyConfig(t, "", "hub-a", stateA, false, set, "shop", "a")
	a = startApp(t, pathA, withState(stateA))
	orphans := appIDs(c1.Name, "shop", "b")
	a.waitSnap(t, 30*time.Second, "b's objects as orphans", func(s *hub.Snapshot) bool {
		for _, id := range orphans {
			if n, ok := s.Node(id); !ok || n.Status != hub.StatusOrphan {
				return false
			}
		}
		return true
	})
	// No event marks "the orphan scan decided not to prune": 2 s covers the
	// scan that found them and the deletes it would have issued.
	time.Sleep(2 * time.Second)
	for _, id := range orphans {
		if !exists(t, admin, id) {
			t.Fatalf("orphan %s pruned without pruneOrphans", id)
		}
	}
	snap := a.hub.Snapshot()
	for _, n := range snap.Nodes {
		if n.ID.Name() == "z" {
			t.Fatalf("hub-a shows hub-b's object %s", n.ID)
		}
	}
	otherSnap := other.hub.Snapshot()
	if slices.ContainsFunc(otherSnap.Nodes, func(n hub.NodeStatus) bool { return n.ID.Name() == "a" || n.ID.Name() == "b" }) {
		t.Fatal("hub-b (pruneOrphans) shows hub-a's objects")
	}
	a.stop()

	// With pruneOrphans: they go; hub-b's objects stay.
	a = startApp(t, safetyConfig(t, pathA, "hub-a", stateA, true, set, "shop", "a"), withState(stateA))
	for _, id := range orphans {
		waitGone(t, admin, id, 30*time.Second)
	}
	a.waitSnap(t, 20*time.Second, "orphans gone from the snapshot", func(s *hub.Snapshot) bool {
		return !slices.ContainsFunc(s.Nodes, func(n hub.NodeStatus) bool { return n.ID.Name() == "b" })
	})
	for _, app := range []string{"a", "z"} {
		for _, id := range appIDs(c1.Name, "shop", app) {
			if !exists(t, admin, id) {
				t.Fatalf("%s deleted by an orphan prune", id)
			}
		}
	}
}

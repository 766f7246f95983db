package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// partialApp is an application compiling to a Deployment, a Service and a
// ConfigMap named "web" in namespace ns.
func partialApp(ns string) string {
	return `applications:
  - id: web
    namespace: ` + ns + `
    selector: env=prod
    image: registry.example/web:1
    replicas: 1
    port: 8080
    config: {LOG_LEVEL: info}
`
}

// managedVerbs are the verbs the hub uses on the kinds it manages.
func managedVerbs() []string {
	return []string{"get", "list", "watch", "create", "patch", "update", "delete"}
}

// grantLimited creates namespace ns and grants the user "limited" the
// rules there, in a Role and RoleBinding named name.
func grantLimited(t *testing.T, admin kubernetes.Interface, ns, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := t.Context()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: rules}
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "limited", APIGroup: "rbac.authorization.k8s.io"}}}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// writeClusterConfig writes a config with one entry per kubeconfig (cluster
// ids in order of ids) and the given applications section; it returns the
// file's path.
func writeClusterConfig(t *testing.T, path string, ids, kubeconfigs []string, apps string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("hub:\n  id: e2e-rbac\n  workers: 4\n  decommissionTimeout: 3s\nclusters:\n")
	for i, id := range ids {
		fmt.Fprintf(&b, "  - id: %s\n    kubeconfig: %s\n    labels: {env: prod}\n", id, kubeconfigs[i])
	}
	b.WriteString(apps)
	if path == "" {
		path = filepath.Join(t.TempDir(), "driftwatch.yaml")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// webIDs are the NodeIDs of partialApp's objects on a cluster.
func webIDs(cluster, ns string) (dep, svc, cm hub.NodeID) {
	return hub.NewNodeID(cluster, ns, "web", hub.KindDeployment),
		hub.NewNodeID(cluster, ns, "web", hub.KindService),
		hub.NewNodeID(cluster, ns, "web", hub.KindConfigMap)
}

// TestHubRBACPartial: the cluster's credentials may manage Services and
// ConfigMaps in the application's namespace but nothing about Deployments.
// The Service and the ConfigMap are created and in sync, the cluster is
// degraded with an error naming deployments, the Deployment's NodeID is
// forbidden (not failed, not in sync), and a ConfigMap deleted afterwards is
// still repaired: one forbidden kind never stops the rest of the cluster.
func TestHubRBACPartial(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1, Users: []string{"limited"}})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	ctx := t.Context()
	const ns = "team"
	grantLimited(t, admin, ns, "services-configmaps", rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"services", "configmaps"}, Verbs: managedVerbs()})
	kc := lc.UserKubeconfig("limited")
	if kc == "" {
		t.Fatal("no kubeconfig for user limited")
	}
	path := writeClusterConfig(t, "", []string{lc.Name}, []string{kc}, partialApp(ns))
	a := startApp(t, path, nil)

	depID, svcID, cmID := webIDs(lc.Name, ns)
	inSync := func(n hub.NodeStatus) bool { return n.Status == hub.StatusInSync || n.Status == hub.StatusRepaired }
	s := a.waitSnap(t, 60*time.Second, "service and configmap in sync, deployment forbidden, cluster degraded", func(s *hub.Snapshot) bool {
		svc, ok1 := s.Node(svcID)
		cm, ok2 := s.Node(cmID)
		dep, ok3 := s.Node(depID)
		cs, ok4 := s.Cluster(lc.Name)
		return ok1 && ok2 && ok3 && ok4 && inSync(svc) && inSync(cm) &&
			dep.Status == hub.StatusForbidden && cs.State == hub.ClusterDegraded
	})
	dep, _ := s.Node(depID)
	if !strings.Contains(dep.Reason, "forbidden") {
		t.Errorf("deployment reason %q does not mention forbidden", dep.Reason)
	}
	cs, _ := s.Cluster(lc.Name)
	for _, want := range []string{"forbidden", "deployments"} {
		if !strings.Contains(cs.LastError, want) {
			t.Errorf("cluster error %q does not mention %q", cs.LastError, want)
		}
	}
	t.Logf("deployment: %s (%s); cluster: %s (%s)", dep.Status, dep.Reason, cs.State, cs.LastError)

	// Checked with the admin client: the permitted kinds exist, the
	// forbidden one was never created.
	if _, err := admin.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Fatalf("service: %v", err)
	}
	cm, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("configmap: %v", err)
	}
	if cm.Data["LOG_LEVEL"] != "info" {
		t.Fatalf("configmap data %v", cm.Data)
	}
	if _, err := admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("deployment get by admin: %v, want not found", err)
	}

	// The rest of the cluster keeps being reconciled while one kind is
	// forbidden: a deleted ConfigMap is recreated.
	t0 := time.Now()
	if err := admin.CoreV1().ConfigMaps(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s = a.waitSnap(t, 20*time.Second, "configmap repaired while deployments are forbidden", repairedAfter(cmID, t0))
	n, _ := s.Node(cmID)
	if n.LastRepair.Drift.Class != hub.DriftMissing {
		t.Errorf("configmap drift class = %s, want %s", n.LastRepair.Drift.Class, hub.DriftMissing)
	}
	got, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("configmap not recreated: %v", err)
	}
	if got.UID == cm.UID || got.Data["LOG_LEVEL"] != "info" {
		t.Fatalf("configmap after repair: uid %s (was %s), data %v", got.UID, cm.UID, got.Data)
	}
	if d, ok := s.Node(depID); !ok || d.Status != hub.StatusForbidden {
		t.Fatalf("deployment after the repair: %+v", d)
	}
}

// TestReloadRemovingClusterKeepsItsObjects: a reload that drops a cluster
// from the config stops managing it and never deletes its objects: the
// cluster and its NodeIDs leave the hub, every object the application had
// there is still there (same UID, not being deleted) seconds later, and the
// other cluster stays untouched and in sync.
func TestReloadRemovingClusterKeepsItsObjects(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 2})
	c1, c2 := set.Clusters[0], set.Clusters[1]
	const ns = "keep"
	path := writeClusterConfig(t, "", []string{c1.Name, c2.Name}, []string{c1.Kubeconfig, c2.Kubeconfig}, partialApp(ns))
	a := startApp(t, path, nil)
	a.waitSnap(t, 60*time.Second, "every object created and in sync", allInSync(6))

	ctx := t.Context()
	type objects struct{ dep, svc, cm types.UID }
	uids := func(t *testing.T, c kubernetes.Interface) objects {
		t.Helper()
		var o objects
		d, err := c.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("deployment: %v", err)
		}
		s, err := c.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("service: %v", err)
		}
		cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("configmap: %v", err)
		}
		for _, m := range []metav1.Object{d, s, cm} {
			if m.GetDeletionTimestamp() != nil {
				t.Fatalf("%T %s/%s is being deleted", m, m.GetNamespace(), m.GetName())
			}
		}
		o.dep, o.svc, o.cm = d.UID, s.UID, cm.UID
		return o
	}
	k1 := kubernetes.NewForConfigOrDie(c1.RESTConfig())
	k2 := kubernetes.NewForConfigOrDie(c2.RESTConfig())
	before1, before2 := uids(t, k1), uids(t, k2)

	writeClusterConfig(t, path, []string{c1.Name}, []string{c1.Kubeconfig}, partialApp(ns))
	// A plain reload (no allowPrune): dropping a cluster is not a prune,
	// so the prune guard has nothing to refuse.
	if err := a.Reload(false); err != nil {
		t.Fatal(err)
	}
	a.waitSnap(t, 20*time.Second, c2.Name+" gone from the hub", func(s *hub.Snapshot) bool {
		if _, ok := s.Cluster(c2.Name); ok {
			return false
		}
		for _, n := range s.Nodes {
			if n.ID.Cluster == c2.Name {
				return false
			}
		}
		return true
	})
	// No delete may be issued, now or a little later (pruning is
	// asynchronous; its decommission timeout here is 3s).
	time.Sleep(3 * time.Second)
	if got := uids(t, k2); got != before2 {
		t.Fatalf("objects on the removed cluster changed: uids %+v, were %+v", got, before2)
	}
	if got := uids(t, k1); got != before1 {
		t.Fatalf("objects on the kept cluster changed: uids %+v, were %+v", got, before1)
	}
	s := a.waitSnap(t, 20*time.Second, c1.Name+" in sync after the reload", allInSync(3))
	for _, n := range s.Nodes {
		if n.ID.Cluster != c1.Name {
			t.Fatalf("unexpected NodeID %s after the reload", n.ID)
		}
	}
	for _, c := range s.Clusters {
		if c.Cluster == c2.Name {
			t.Fatalf("cluster %s still in the snapshot: %+v", c2.Name, c)
		}
	}
	if cs, ok := s.Cluster(c1.Name); !ok || cs.State != hub.ClusterSynced {
		t.Fatalf("cluster %s after the reload: %+v", c1.Name, cs)
	}
}

// TestStuckWithoutPodRights: credentials that may manage the application's
// kinds but not read pods still see a Deployment that cannot be scheduled
// reported stuck, and its diagnosis says that its pods cannot be read,
// naming the namespace and RBAC, instead of failing or saying nothing.
func TestStuckWithoutPodRights(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1, ControllerManager: true, Users: []string{"limited"}})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	const ns = "nopods"
	grantLimited(t, admin, ns, "no-pods",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services", "configmaps"}, Verbs: managedVerbs()},
		rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: managedVerbs()})
	path := writeClusterConfig(t, "", []string{lc.Name}, []string{lc.UserKubeconfig("limited")}, `applications:
  - id: web
    namespace: `+ns+`
    selector: env=prod
    image: registry.example/web:1
    progressDeadlineSeconds: 3
    nodeSelector: {disk: none}
`)
	a := startApp(t, path, nil)
	dep, _, _ := webIDs(lc.Name, ns)
	s := a.waitSnap(t, 60*time.Second, "the deployment stuck, with a diagnosis", func(s *hub.Snapshot) bool {
		n, _ := s.Node(dep)
		return n.Status == hub.StatusStuck && len(n.Diagnosis) > 0
	})
	n, _ := s.Node(dep)
	want := "its pods cannot be read: the credentials may not list pods in namespace " + ns + " (RBAC)"
	if len(n.Diagnosis) != 1 || n.Diagnosis[0] != want {
		t.Fatalf("diagnosis = %q, want %q", n.Diagnosis, want)
	}
}

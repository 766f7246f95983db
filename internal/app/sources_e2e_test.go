package app

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// TestSourcesEndToEnd: the demo's kustomize overlays as a manifest source
// on three real clusters with their controllers (StatefulSet, CronJob and
// HPA among them): each cluster gets its environment's overlay, every
// object is created and in sync, drift of several kinds is repaired and
// attributed, and the HPA that scales the StatefulSet on production is
// contested where the source has no ignore rule for it and quiet where it
// has one.
func TestSourcesEndToEnd(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 3, ControllerManager: true})
	overlays, err := filepath.Abs("demomanifests/overlays")
	if err != nil {
		t.Fatal(err)
	}
	c0, c1, c2 := set.Clusters[0].Name, set.Clusters[1].Name, set.Clusters[2].Name
	cfg := fmt.Sprintf(`hub:
  id: e2e
  workers: 4
clusters:
  - {id: %s, kubeconfig: %s, labels: {env: prod}}
  - {id: %s, kubeconfig: %s, labels: {env: staging}}
  - {id: %s, kubeconfig: %s, labels: {env: prod}}
sources:
  - id: inventory
    kustomize: %s/${cluster.labels.env}
    clusters: [%s, %s]
    namespace: inventory
    ignore:
      - name: autoscaler
        paths: ["/spec/replicas"]
        kinds: [StatefulSet.apps]
  - id: inventory-bare
    kustomize: %s/${cluster.labels.env}
    clusters: [%s]
    namespace: inventory
`, c0, set.Clusters[0].Kubeconfig, c1, set.Clusters[1].Kubeconfig, c2, set.Clusters[2].Kubeconfig,
		overlays, c0, c1, overlays, c2)
	path := filepath.Join(t.TempDir(), "driftwatch.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startApp(t, path, nil)
	id := func(cluster, name string, slug hub.Kind) hub.NodeID {
		return hub.NewNodeID(cluster, "inventory", name, slug)
	}
	sts := func(cluster string) hub.NodeID { return id(cluster, "inventory-db", "statefulset.apps") }
	// 8 objects per cluster: StatefulSet, Service, ConfigMap, CronJob,
	// HPA, ServiceAccount, Role, RoleBinding.
	a.waitSnap(t, 90*time.Second, "every object created and in sync", func(s *hub.Snapshot) bool {
		if len(s.Nodes) != 24 {
			return false
		}
		for _, n := range s.Nodes {
			if n.ID == sts(c2) {
				continue // the HPA may already fight it
			}
			if n.Status != hub.StatusInSync && n.Status != hub.StatusRepaired {
				return false
			}
		}
		return true
	})
	c := func(i int) kubernetes.Interface { return kubernetes.NewForConfigOrDie(set.Clusters[i].RESTConfig()) }
	ctx := t.Context()

	// Each cluster got its overlay.
	for i, want := range []string{"30 2 * * *", "0 */6 * * *", "30 2 * * *"} {
		cj, err := c(i).BatchV1().CronJobs("inventory").Get(ctx, "inventory-backup", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cj.Spec.Schedule != want {
			t.Errorf("cluster %d: schedule %q, want %q (its overlay's)", i, cj.Spec.Schedule, want)
		}
	}

	// The HPA scales production's StatefulSet to its minimum of 2: quiet
	// where the source ignores spec.replicas, contested where it does not.
	a.waitSnap(t, 90*time.Second, "the StatefulSet without an ignore rule contested", statusIs(sts(c2), hub.StatusContested))
	if n, _ := a.last.Node(sts(c0)); n.Status != hub.StatusInSync && n.Status != hub.StatusRepaired {
		t.Errorf("StatefulSet with the ignore rule: %s %q", n.Status, n.Reason)
	}
	testwait.For(t, 30*time.Second, "the HPA to scale the StatefulSet with the ignore rule", func() error {
		s, err := c(0).AppsV1().StatefulSets("inventory").Get(ctx, "inventory-db", metav1.GetOptions{})
		if err != nil {
			return testwait.Stop(err)
		}
		return testwait.Check(*s.Spec.Replicas == 2, "replicas %d", *s.Spec.Replicas)
	})

	// Drift of several kinds, each repaired from the watch.
	mp := func(m string) metav1.PatchOptions { return metav1.PatchOptions{FieldManager: m} }
	for _, d := range []struct {
		name    string
		id      hub.NodeID
		class   hub.DriftClass
		manager string
		do      func() error
	}{
		{name: "delete cronjob", id: id(c1, "inventory-backup", "cronjob.batch"), class: hub.DriftMissing,
			do: func() error {
				return c(1).BatchV1().CronJobs("inventory").Delete(ctx, "inventory-backup", metav1.DeleteOptions{})
			}},
		{name: "edit configmap", id: id(c0, "inventory-settings", hub.KindConfigMap), class: hub.DriftModified, manager: "kubectl-edit",
			do: func() error {
				_, err := c(0).CoreV1().ConfigMaps("inventory").Patch(ctx, "inventory-settings", types.MergePatchType, []byte(`{"data":{"LOG_LEVEL":"trace"}}`), mp("kubectl-edit"))
				return err
			}},
		{name: "env var added to the statefulset", id: sts(c1), class: hub.DriftAdded, manager: "kubectl-set",
			do: func() error {
				_, err := c(1).AppsV1().StatefulSets("inventory").Patch(ctx, "inventory-db", types.StrategicMergePatchType,
					[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"db","env":[{"name":"DEBUG","value":"1"}]}]}}}}`), mp("kubectl-set"))
				return err
			}},
		{name: "hpa edited", id: id(c1, "inventory-db", "horizontalpodautoscaler.autoscaling"), class: hub.DriftModified, manager: "kubectl-patch",
			do: func() error {
				_, err := c(1).AutoscalingV2().HorizontalPodAutoscalers("inventory").Patch(ctx, "inventory-db", types.MergePatchType, []byte(`{"spec":{"maxReplicas":9}}`), mp("kubectl-patch"))
				return err
			}},
		{name: "label removed from the role", id: id(c0, "inventory-reader", "role.rbac.authorization.k8s.io"), class: hub.DriftUnlabelled,
			do: func() error {
				_, err := c(0).RbacV1().Roles("inventory").Patch(ctx, "inventory-reader", types.MergePatchType,
					[]byte(`{"metadata":{"labels":{"`+kubeobj.ManagedByLabel+`":null}}}`), mp("kubectl-label"))
				return err
			}},
	} {
		t.Run(d.name, func(t *testing.T) {
			t0 := time.Now()
			if err := d.do(); err != nil {
				t.Fatal(err)
			}
			s := a.waitSnap(t, 30*time.Second, d.name+" repaired", repairedAfter(d.id, t0))
			n, _ := s.Node(d.id)
			if n.LastRepair.Drift.Class != d.class {
				t.Errorf("class %s, want %s", n.LastRepair.Drift.Class, d.class)
			}
			if d.manager != "" && (n.LastRepair.Attribution == nil || n.LastRepair.Attribution.Manager != d.manager) {
				t.Errorf("attribution %+v, want %s", n.LastRepair.Attribution, d.manager)
			}
		})
	}
	s, err := c(1).AppsV1().StatefulSets("inventory").Get(ctx, "inventory-db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if env := s.Spec.Template.Spec.Containers[0].Env; len(env) != 1 || env[0].Name != "MODE" {
		t.Errorf("statefulset env after the repair: %+v", env)
	}
}

// TestSourcePruneSafety: objects removed from a source are pruned through
// the hub on reload, except what must not be: the Namespace and the
// CustomResourceDefinition (annotated never to be pruned by the compiler)
// and an object a user annotated so; they stay in place and leave the
// hub's management with a feed line saying why. A source whose manifest
// breaks is left out on reload: it is named as failing, its last good
// objects stay managed, and the other source's change is applied.
func TestSourcePruneSafety(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1, ControllerManager: true})
	lc := set.Clusters[0]
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	if err := os.Mkdir(manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(manifests, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("namespace.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: pruning}\n")
	write("crd.yaml", `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
`)
	write("objects.yaml", `apiVersion: v1
kind: ConfigMap
metadata: {name: keep}
data: {a: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: drop}
data: {b: "2"}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: precious
  annotations: {driftwatch.io/prune: disabled}
data: {c: "3"}
---
apiVersion: example.com/v1
kind: Gadget
metadata: {name: sprocket}
spec: {teeth: 12}
`)
	other := filepath.Join(dir, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	writeOther := func(value string) {
		t.Helper()
		text := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {v: \"" + value + "\"}\n"
		if err := os.WriteFile(filepath.Join(other, "cm.yaml"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeOther("1")
	cfg := fmt.Sprintf(`hub:
  id: e2e
  resync: 2s
clusters:
  - {id: %s, kubeconfig: %s}
sources:
  - id: team
    path: manifests
    clusters: [%s]
    namespace: pruning
  - id: other
    path: other
    clusters: [%s]
    namespace: pruning
`, lc.Name, lc.Kubeconfig, lc.Name, lc.Name)
	path := filepath.Join(dir, "driftwatch.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startApp(t, path, nil)
	a.waitSnap(t, 60*time.Second, "every object created and in sync", allInSync(7))
	ctx := t.Context()
	c := kubernetes.NewForConfigOrDie(lc.RESTConfig())

	// A broken manifest: the reload goes through for the other source;
	// the broken one is named as failing and its last good objects stay
	// managed (a deleted one is repaired), none pruned.
	write("objects.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n")
	writeOther("2")
	if err := a.Reload(false); err != nil {
		t.Fatalf("reload with a broken source: %v", err)
	}
	a.waitSnap(t, 30*time.Second, "the broken source failing, the other applied", func(s *hub.Snapshot) bool {
		return len(s.Sources) == 1 && s.Sources[0].ID == "team" && strings.Contains(s.Sources[0].Error, "objects.yaml") &&
			s.Sources[0].KeptObjects == 6 && len(s.Nodes) == 7
	})
	// The failing source's kinds stay watched (its last good objects are
	// still repaired), so the reload did not restart the cluster's watch.
	if cc, ok := a.clusterConfig(lc.Name); !ok || !slices.ContainsFunc(cc.Kinds, func(k schema.GroupVersionKind) bool { return k.Kind == "Gadget" }) {
		t.Errorf("the failing source's kinds left the watch: %+v", cc.Kinds)
	}
	testwait.For(t, 30*time.Second, "the healthy source's change applied", func() error {
		cm, err := c.CoreV1().ConfigMaps("pruning").Get(ctx, "other", metav1.GetOptions{})
		if err != nil {
			return err
		}
		return testwait.Check(cm.Data["v"] == "2", "data %v", cm.Data)
	})
	t0 := time.Now()
	if err := c.CoreV1().ConfigMaps("pruning").Delete(ctx, "drop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	a.waitSnap(t, 30*time.Second, "the failing source's deleted object repaired", repairedAfter(hub.NewNodeID(lc.Name, "pruning", "drop", hub.KindConfigMap), t0))
	rec := httptest.NewRecorder()
	a.hub.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `driftwatch_source_failing{source="team"} 1`) {
		t.Errorf("metrics lack driftwatch_source_failing for team")
	}
	// Everything but keep leaves the source.
	write("objects.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: keep}\ndata: {a: \"1\"}\n")
	for _, f := range []string{"namespace.yaml", "crd.yaml"} {
		if err := os.Remove(filepath.Join(manifests, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Reload(false); err != nil {
		t.Fatal(err)
	}
	gadget := hub.NewNodeID(lc.Name, "pruning", "sprocket", "gadget.example.com")
	a.waitSnap(t, 30*time.Second, "only keep (and the other source's) left in the hub, no source failing", func(s *hub.Snapshot) bool {
		_, ok := s.Node(gadget)
		return len(s.Nodes) == 2 && !ok && len(s.Sources) == 0
	})
	if _, err := c.CoreV1().ConfigMaps("pruning").Get(ctx, "drop", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("drop not pruned: %v", err)
	}
	if _, err := c.CoreV1().ConfigMaps("pruning").Get(ctx, "precious", metav1.GetOptions{}); err != nil {
		t.Errorf("precious (annotated) pruned: %v", err)
	}
	if _, err := c.CoreV1().Namespaces().Get(ctx, "pruning", metav1.GetOptions{}); err != nil {
		t.Errorf("namespace pruned: %v", err)
	}
	retained := map[string]bool{}
	for _, e := range a.hub.Snapshot().Feed {
		if strings.HasPrefix(e.Action, "retained") {
			retained[e.ID.Name()] = true
		}
	}
	for _, name := range []string{"pruning", "gadgets.example.com", "precious"} {
		if !retained[name] {
			t.Errorf("no retained feed line for %s (feed: %v)", name, retained)
		}
	}

	// Retained, precious is no orphan at a later scan either (the
	// resync's, every 2 s here), while a stray object with our marks
	// that nothing wants is one, which shows that a scan ran.
	stray := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stray", Namespace: "pruning",
		Labels:      map[string]string{kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy},
		Annotations: map[string]string{kubeobj.HubAnnotation: "e2e"}}}
	if _, err := c.CoreV1().ConfigMaps("pruning").Create(ctx, stray, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	strayID := hub.NewNodeID(lc.Name, "pruning", "stray", hub.KindConfigMap)
	preciousID := hub.NewNodeID(lc.Name, "pruning", "precious", hub.KindConfigMap)
	a.waitSnap(t, 30*time.Second, "the stray object shown as an orphan", func(s *hub.Snapshot) bool {
		n, ok := s.Node(strayID)
		return ok && n.Status == hub.StatusOrphan
	})
	if n, ok := a.hub.Snapshot().Node(preciousID); ok {
		t.Errorf("precious, retained, shown again: %s (%s)", n.Status, n.Reason)
	}
}

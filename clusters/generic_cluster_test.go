package clusters

import (
	"errors"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// genericSpec turns a manifest into the NodeSpec a manifest source compiles
// it to: our label and node-id annotation on it, its slug from its group
// and kind.
func genericSpec(t *testing.T, cluster, manifest string) hub.NodeSpec {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(manifest), &m); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	gvk := u.GroupVersionKind()
	slug := hub.KindSlug(gvk.Group, gvk.Kind)
	id := hub.NewNodeID(cluster, u.GetNamespace(), u.GetName(), slug)
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[kubeobj.ManagedByLabel] = kubeobj.DefaultManagedBy
	u.SetLabels(labels)
	annots := u.GetAnnotations()
	if annots == nil {
		annots = map[string]string{}
	}
	annots[kubeobj.NodeIDAnnotation] = id.String()
	annots[kubeobj.HubAnnotation] = hub.DefaultHubID
	u.SetAnnotations(annots)
	// Integers as the apiserver's objects hold them.
	body := kubeobj.MustEncodeBody(u)
	return hub.NodeSpec{ID: id, Namespace: u.GetNamespace(), Name: u.GetName(), Kind: slug, Body: body}
}

const genericNS = "generic"

// genericManifests are objects of eight kinds beyond the applications'
// three, one of them cluster-scoped, plus a CRD and one of its custom
// resources.
var genericManifests = []string{
	`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: generic}
spec:
  serviceName: db
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: db
        image: registry.example/db:1
        ports: [{containerPort: 5432}]
        env: [{name: MODE, value: primary}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`,
	`apiVersion: batch/v1
kind: CronJob
metadata: {name: backup, namespace: generic}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: backup, image: registry.example/backup:1}]
`,
	`apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: generic}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}
`,
	`apiVersion: v1
kind: ServiceAccount
metadata: {name: reader, namespace: generic}
`,
	`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: generic}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list]
`,
	`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: generic-reader}
rules:
- apiGroups: [""]
  resources: [namespaces]
  verbs: [get]
`,
	`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              parts:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    count: {type: integer}
`,
	`apiVersion: example.com/v1
kind: Widget
metadata: {name: gear, namespace: generic}
spec:
  size: 3
  parts: [{name: axle, count: 1}]
`,
}

// genericKinds are the kinds of genericManifests, as the config gives them
// to a cluster's watch.
var genericKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "StatefulSet"},
	{Group: "batch", Version: "v1", Kind: "CronJob"},
	{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
	{Group: "example.com", Version: "v1", Kind: "Widget"},
}

// waitState polls be's cached read of spec until cond holds.
func waitState(t *testing.T, be hub.Backend, spec hub.NodeSpec, what string, cond func(hub.State, hub.Drift) bool) {
	t.Helper()
	testwait.For(t, 20*time.Second, fmt.Sprintf("%s: %s", spec.ID, what), func() error {
		st, err := be.ReadState(t.Context(), spec, false)
		if err != nil {
			return err
		}
		d, err := be.DetectDrift(t.Context(), spec, st)
		if err != nil {
			return err
		}
		return testwait.Check(cond(st, d), "exists %v, drift %s %v", st.Exists, d.Class, d.Fields)
	})
}

// TestGenericKindsOnARealControlPlane: objects of any kind are created by
// a repair (a custom resource once its CRD, applied by the same backend, is
// established: its watch starts then), watched by the managed-by label
// (cluster-scoped kinds too), in sync after server defaulting, and every
// drift is seen from the watch and repaired: a delete, a field edit, an
// added entry and a removed label.
func TestGenericKindsOnARealControlPlane(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	dyn := dynamic.NewForConfigOrDie(lc.RESTConfig())
	createNamespace(t, admin, genericNS)
	cc := clusterConfig(lc, genericNS)
	cc.Kinds = genericKinds
	cc.HubID = hub.DefaultHubID
	sink := newRecordingSink()
	r := runRegistry(t, sink, cc)
	// The Widget kind is not served yet: the cluster is degraded, naming
	// it, and every other kind is watched.
	sink.waitFor(t, 30*time.Second, "degraded by the missing CRD", func() bool {
		return sink.state(lc.Name) == hub.ClusterDegraded
	})
	sink.mu.Lock()
	lastErr := sink.health[lc.Name].LastError
	sink.mu.Unlock()
	if !strings.Contains(lastErr, "Widget.example.com") {
		t.Errorf("health error %q does not name the kind", lastErr)
	}
	be, _ := r.Backend(lc.Name)
	ctx := t.Context()
	specs := map[string]hub.NodeSpec{}
	for _, m := range genericManifests {
		s := genericSpec(t, lc.Name, m)
		specs[s.Name+":"+string(s.Kind)] = s
	}
	widget := specs["gear:widget.example.com"]
	// The custom resource before its CRD: a clear error.
	st, err := be.ReadState(ctx, widget, true)
	if err == nil {
		_, err = be.Repair(ctx, widget, st, hub.Drift{Class: hub.DriftMissing})
	}
	if err == nil || !strings.Contains(err.Error(), "Widget.example.com") || !strings.Contains(err.Error(), "CustomResourceDefinition") {
		t.Fatalf("custom resource without its CRD: %v", err)
	}
	if !errors.Is(err, hub.ErrKindNotServed) {
		t.Errorf("custom resource without its CRD: %v does not unwrap to hub.ErrKindNotServed (a first apply waits for its kind)", err)
	}
	for _, key := range []string{"widgets.example.com:customresourcedefinition.apiextensions.k8s.io",
		"db:statefulset.apps", "backup:cronjob.batch", "web:horizontalpodautoscaler.autoscaling",
		"reader:serviceaccount", "reader:role.rbac.authorization.k8s.io", "generic-reader:clusterrole.rbac.authorization.k8s.io"} {
		s := specs[key]
		if _, err := be.Repair(ctx, s, hub.State{Fresh: true}, hub.Drift{Class: hub.DriftMissing}); err != nil {
			t.Fatalf("create %s: %v", s.ID, err)
		}
	}
	// Once the CRD is established the Widget kind is watched (a new
	// generation) and the cluster synced.
	sink.waitFor(t, 30*time.Second, "synced once the CRD is established", func() bool {
		return sink.state(lc.Name) == hub.ClusterSynced
	})
	if _, err := be.Repair(ctx, widget, hub.State{Fresh: true}, hub.Drift{Class: hub.DriftMissing}); err != nil {
		t.Fatalf("create %s: %v", widget.ID, err)
	}
	for _, s := range specs {
		waitState(t, be, s, "in sync", func(st hub.State, d hub.Drift) bool { return st.Exists && d.Class == hub.DriftNone })
	}

	repair := func(s hub.NodeSpec) {
		t.Helper()
		st, err := be.ReadState(ctx, s, false)
		if err != nil {
			t.Fatal(err)
		}
		d, err := be.DetectDrift(ctx, s, st)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := be.Repair(ctx, s, st, d); err != nil {
			t.Fatalf("repair %s: %v", s.ID, err)
		}
		waitState(t, be, s, "in sync after the repair", func(st hub.State, d hub.Drift) bool { return st.Exists && d.Class == hub.DriftNone })
	}

	// A delete of a cluster-scoped object.
	cr := specs["generic-reader:clusterrole.rbac.authorization.k8s.io"]
	if err := admin.RbacV1().ClusterRoles().Delete(ctx, cr.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	sink.waitFor(t, 10*time.Second, "the ClusterRole's delete event", func() bool { return sink.hasEvent(cr.ID, hub.EventDeleted) })
	waitState(t, be, cr, "missing", func(st hub.State, d hub.Drift) bool { return d.Class == hub.DriftMissing })
	repair(cr)

	// A field edit of a custom resource.
	widgets := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace(genericNS)
	patch := []byte(`{"spec":{"size":9}}`)
	if _, err := widgets.Patch(ctx, widget.Name, "application/merge-patch+json", patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, be, widget, "modified", func(st hub.State, d hub.Drift) bool {
		return d.Class == hub.DriftModified && len(d.Fields) == 1 && d.Fields[0].Path == "spec.size"
	})
	st, _ = be.ReadState(ctx, widget, false)
	d, _ := be.DetectDrift(ctx, widget, st)
	if a, err := be.Attribute(ctx, widget, st, d); err != nil || a == nil || a.Manager != "kubectl-edit" {
		t.Errorf("attribution of the edit: %+v, %v", a, err)
	}
	repair(widget)

	// An env var added to the StatefulSet's container.
	sts := specs["db:statefulset.apps"]
	patch = []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"db","env":[{"name":"DEBUG","value":"1"}]}]}}}}`)
	if _, err := admin.AppsV1().StatefulSets(genericNS).Patch(ctx, sts.Name, "application/strategic-merge-patch+json", patch, metav1.PatchOptions{FieldManager: "kubectl-set"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, be, sts, "an added entry", func(st hub.State, d hub.Drift) bool {
		for _, f := range d.Fields {
			if f.Added && strings.Contains(f.Path, "DEBUG") {
				return true
			}
		}
		return false
	})
	repair(sts)
	live, err := admin.AppsV1().StatefulSets(genericNS).Get(ctx, sts.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if env := live.Spec.Template.Spec.Containers[0].Env; len(env) != 1 || env[0].Name != "MODE" {
		t.Errorf("env after the repair: %+v", env)
	}

	// The managed-by label removed from the Role: gone from the watch,
	// found without the label by the repair.
	role := specs["reader:role.rbac.authorization.k8s.io"]
	patch = []byte(`{"metadata":{"labels":{"` + kubeobj.ManagedByLabel + `":null}}}`)
	if _, err := admin.RbacV1().Roles(genericNS).Patch(ctx, role.Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// The repair finds the object without its label by the UID the watch
	// saw leave: the handler that records it runs once the delete event
	// is delivered (the hub's pass starts from that event too).
	sink.waitFor(t, 10*time.Second, "the Role's delete event", func() bool { return sink.hasEvent(role.ID, hub.EventDeleted) })
	waitState(t, be, role, "gone from the watch", func(st hub.State, d hub.Drift) bool { return !st.Exists })
	st, _ = be.ReadState(ctx, role, false)
	res, err := be.Repair(ctx, role, st, hub.Drift{Class: hub.DriftMissing})
	if err != nil {
		t.Fatal(err)
	}
	if res.Class != hub.DriftUnlabelled {
		t.Errorf("label removal repaired as %q, want unlabelled", res.Class)
	}
	waitState(t, be, role, "back in the watch", func(st hub.State, d hub.Drift) bool { return st.Exists && d.Class == hub.DriftNone })

	// Prune safety: an object annotated never to be pruned is retained; a
	// namespace holding an object we do not manage is never deleted.
	hpa := specs["web:horizontalpodautoscaler.autoscaling"]
	patch = []byte(`{"metadata":{"annotations":{"` + kubeobj.PruneAnnotation + `":"` + kubeobj.PruneDisabled + `"}}}`)
	if _, err := admin.AutoscalingV2().HorizontalPodAutoscalers(genericNS).Patch(ctx, hpa.Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitState(t, be, hpa, "retained", func(st hub.State, _ hub.Drift) bool { return st.Retain != "" })
	st, _ = be.ReadState(ctx, hpa, true)
	if err := be.Delete(ctx, hpa, st); !errors.Is(err, hub.ErrRefused) {
		t.Errorf("delete of an object annotated %s: %v, want refused", kubeobj.PruneAnnotation, err)
	}
	nsSpec := genericSpec(t, lc.Name, `apiVersion: v1
kind: Namespace
metadata: {name: generic}
`)
	if _, err := be.Repair(ctx, nsSpec, hub.State{Fresh: true}, hub.Drift{Class: hub.DriftMissing}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps(genericNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "not-ours"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	st, err = be.ReadState(ctx, nsSpec, true)
	if err != nil {
		t.Fatal(err)
	}
	err = be.Delete(ctx, nsSpec, st)
	if !errors.Is(err, hub.ErrRefused) || !strings.Contains(err.Error(), "ConfigMap not-ours") {
		t.Errorf("delete of a namespace holding an object we do not manage: %v", err)
	}
	if _, err := admin.CoreV1().Namespaces().Get(ctx, genericNS, metav1.GetOptions{}); err != nil {
		t.Errorf("namespace gone: %v", err)
	}

	// Every object is listed as ours (the orphan scan reads these), but
	// the one annotated never to be pruned: never an orphan.
	refs, err := be.(*Manager).ListOwned(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[hub.NodeID]bool{}
	for _, ref := range refs {
		got[ref.ID] = true
	}
	for _, s := range specs {
		if got[s.ID] != (s.ID != hpa.ID) {
			t.Errorf("ListOwned lists %s: %t, want %t", s.ID, got[s.ID], s.ID != hpa.ID)
		}
	}
}

// TestRemovedAPIVersionNamed: a manifest in a version of a kind the
// cluster no longer serves (autoscaling/v2beta2, removed in Kubernetes
// 1.26) is not mistaken for a custom resource without its CRD: the error
// names the versions the cluster serves the kind in, and says to change
// the manifest's apiVersion. It still waits as a kind not served.
func TestRemovedAPIVersionNamed(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	createNamespace(t, admin, genericNS)
	cc := clusterConfig(lc, genericNS)
	cc.HubID = hub.DefaultHubID
	_, m := runRegistryFor(t, cc)
	spec := genericSpec(t, lc.Name, `apiVersion: autoscaling/v2beta2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: generic}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 3
`)
	_, err := m.ReadState(t.Context(), spec, true)
	if err == nil || !strings.Contains(err.Error(), "only as autoscaling/v2") || !strings.Contains(err.Error(), "change the manifest's apiVersion") ||
		strings.Contains(err.Error(), "CustomResourceDefinition") {
		t.Errorf("a removed version: %v, want the versions served and what to change", err)
	}
	if !errors.Is(err, hub.ErrKindNotServed) {
		t.Errorf("%v does not unwrap to hub.ErrKindNotServed", err)
	}
}

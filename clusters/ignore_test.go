package clusters

import (
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/clusters/drift"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// deploymentSpec is a desired Deployment of 2 replicas with ignore rules.
func deploymentSpec(t testing.TB, cluster, ns, name string, rules ...hub.IgnoreRule) hub.NodeSpec {
	t.Helper()
	id := hub.NewNodeID(cluster, ns, name, hub.KindDeployment)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{
			"name": name, "namespace": ns,
			"labels":      map[string]any{kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy, "app": name},
			"annotations": map[string]any{kubeobj.NodeIDAnnotation: id.String()},
		},
		"spec": map[string]any{
			"replicas": int64(2),
			"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": name}},
				"spec": map[string]any{"containers": []any{
					map[string]any{"name": "app", "image": "nginx:1"},
				}},
			},
		},
	}}
	s := hub.NodeSpec{ID: id, Namespace: ns, Name: name, Kind: hub.KindDeployment, Body: kubeobj.MustEncodeBody(obj)}
	if len(rules) > 0 {
		s.Ignore = &hub.IgnoreSet{Rules: rules, Key: "test"}
	}
	return s
}

func mustParsePaths(t *testing.T, ps ...string) [][]string {
	t.Helper()
	var out [][]string
	for _, p := range ps {
		segs, err := drift.ParsePath(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, segs)
	}
	return out
}

// TestIgnoreRulesOnARealControlPlane: a path rule and a manager rule decide
// what is drift on a real apiserver. Ignored differences are reported as
// such and the object counts as in sync; a repair of the other differences
// keeps the live value of the ignored ones; a manager rule follows the
// field's current owner in managedFields.
func TestIgnoreRulesOnARealControlPlane(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	const ns = "ignore"
	createNamespace(t, admin, ns)
	sink := newRecordingSink()
	r := runRegistry(t, sink, clusterConfig(lc, ns))
	sink.waitFor(t, 30*time.Second, "synced", func() bool { return sink.state(lc.Name) == hub.ClusterSynced })
	be, ok := r.Backend(lc.Name)
	if !ok {
		t.Fatal("no backend")
	}
	ctx := t.Context()
	detect := func(t *testing.T, spec hub.NodeSpec) (hub.State, hub.Drift) {
		t.Helper()
		st, err := be.ReadState(ctx, spec, true)
		if err != nil {
			t.Fatal(err)
		}
		d, err := be.DetectDrift(ctx, spec, st)
		if err != nil {
			t.Fatal(err)
		}
		return st, d
	}
	create := func(t *testing.T, spec hub.NodeSpec) {
		t.Helper()
		st, d := detect(t, spec)
		if _, err := be.Repair(ctx, spec, st, d); err != nil {
			t.Fatal(err)
		}
		if _, d := detect(t, spec); !d.InSync() {
			t.Fatalf("after create: %s", d.Summary())
		}
	}
	patch := func(t *testing.T, name, manager, body string) {
		t.Helper()
		if _, err := admin.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, []byte(body),
			metav1.PatchOptions{FieldManager: manager}); err != nil {
			t.Fatal(err)
		}
	}
	live := func(t *testing.T, name string) (int32, string) {
		t.Helper()
		dep, err := admin.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *dep.Spec.Replicas, dep.Spec.Template.Spec.Containers[0].Image
	}

	t.Run("path rule", func(t *testing.T) {
		spec := deploymentSpec(t, lc.Name, ns, "by-path", hub.IgnoreRule{Name: "replicas", Paths: mustParsePaths(t, "/spec/replicas")})
		create(t, spec)
		patch(t, "by-path", "kubectl-scale", `{"spec":{"replicas":5}}`)
		_, d := detect(t, spec)
		if !d.InSync() || len(d.Ignored) != 1 || d.Ignored[0].Path != "spec.replicas" || d.Ignored[0].Rule != "replicas" {
			t.Fatalf("scaled to 5 under a path rule: %s, ignored %+v; want in sync with spec.replicas ignored", d.Summary(), d.Ignored)
		}
		// Another difference is drift; its repair keeps the 5 replicas.
		patch(t, "by-path", "kubectl-edit", `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:2"}]}}}}`)
		st, d := detect(t, spec)
		if d.Class != hub.DriftModified || len(d.Fields) != 1 || d.Fields[0].Path != "spec.template.spec.containers[app].image" {
			t.Fatalf("image changed: %s, want modified image only", d.Summary())
		}
		if _, err := be.Repair(ctx, spec, st, d); err != nil {
			t.Fatal(err)
		}
		if replicas, image := live(t, "by-path"); replicas != 5 || image != "nginx:1" {
			t.Fatalf("after the repair: replicas %d image %s, want 5 (ignored, kept) and nginx:1 (repaired)", replicas, image)
		}
		if _, d := detect(t, spec); !d.InSync() {
			t.Fatalf("after the repair: %s", d.Summary())
		}
	})

	t.Run("manager rule", func(t *testing.T) {
		spec := deploymentSpec(t, lc.Name, ns, "by-manager", hub.IgnoreRule{Name: "autoscaler", Managers: []string{"fake-autoscaler"}})
		create(t, spec)
		// A second field manager takes spec.replicas by server-side apply.
		apply := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"by-manager","namespace":"` + ns + `"},"spec":{"replicas":4}}`)
		force := true
		if _, err := admin.AppsV1().Deployments(ns).Patch(ctx, "by-manager", types.ApplyPatchType, apply,
			metav1.PatchOptions{FieldManager: "fake-autoscaler", Force: &force}); err != nil {
			t.Fatal(err)
		}
		_, d := detect(t, spec)
		if !d.InSync() || len(d.Ignored) != 1 || d.Ignored[0].Manager != "fake-autoscaler" || d.Ignored[0].Rule != "autoscaler" {
			t.Fatalf("replicas applied by fake-autoscaler: %s, ignored %+v; want in sync, spec.replicas ignored as owned by fake-autoscaler", d.Summary(), d.Ignored)
		}
		// The same field changed by another manager is drift again.
		patch(t, "by-manager", "kubectl-edit", `{"spec":{"replicas":6}}`)
		st, d := detect(t, spec)
		if d.Class != hub.DriftModified || len(d.Fields) != 1 || d.Fields[0].Path != "spec.replicas" || len(d.Ignored) != 0 {
			t.Fatalf("replicas edited by kubectl-edit: %s, ignored %+v; want modified spec.replicas", d.Summary(), d.Ignored)
		}
		if _, err := be.Repair(ctx, spec, st, d); err != nil {
			t.Fatal(err)
		}
		if replicas, _ := live(t, "by-manager"); replicas != 2 {
			t.Fatalf("after the repair: replicas %d, want 2", replicas)
		}
	})
}

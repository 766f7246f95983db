package clusters

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// recreateManifest is a Deployment whose selector (immutable) is app=sel,
// with the annotations given.
func recreateManifest(name, sel, annotations string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
  namespace: recreate
  annotations: {` + annotations + `}
spec:
  replicas: 1
  selector: {matchLabels: {app: ` + sel + `}}
  template:
    metadata: {labels: {app: ` + sel + `}}
    spec:
      containers: [{name: c, image: nginx}]
`
}

// TestRecreateOnImmutableChange: on a real apiserver, a desired change to
// a Deployment's selector (immutable) is refused by the apply. Without
// driftwatch.io/recreate: enabled the repair fails naming the field and
// how to allow the recreation, and the object stays as it was; with it the
// object is deleted in the foreground, its UID and resourceVersion as
// preconditions (the loop recreates it once gone), but never one whose
// pruning is disabled, and never twice within recreateEvery. A Job's
// template (a kind watched through the dynamic client) the same way.
func TestRecreateOnImmutableChange(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	createNamespace(t, admin, "recreate")
	cc := clusterConfig(lc, "recreate")
	cc.Kinds = []schema.GroupVersionKind{{Group: "batch", Version: "v1", Kind: "Job"}}
	cc.HubID = hub.DefaultHubID
	_, m := runRegistryFor(t, cc)
	ctx := t.Context()
	create := func(manifest string) hub.NodeSpec {
		t.Helper()
		spec := genericSpec(t, lc.Name, manifest)
		st, err := m.ReadState(ctx, spec, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Repair(ctx, spec, st, hub.Drift{Class: hub.DriftMissing}); err != nil {
			t.Fatal(err)
		}
		waitState(t, m, spec, "created and in sync", func(st hub.State, d hub.Drift) bool { return st.Exists && d.Class == hub.DriftNone })
		return spec
	}
	// change applies spec over what create made, from the watch cache.
	change := func(spec hub.NodeSpec) (hub.RepairResult, error) {
		t.Helper()
		st, err := m.ReadState(ctx, spec, false)
		if err != nil {
			t.Fatal(err)
		}
		d, err := m.DetectDrift(ctx, spec, st)
		if err != nil {
			t.Fatal(err)
		}
		return m.Repair(ctx, spec, st, d)
	}
	uidOf := func(name string) (string, *metav1.Time) {
		t.Helper()
		d, err := admin.AppsV1().Deployments("recreate").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return string(d.UID), d.DeletionTimestamp
	}

	create(recreateManifest("plain", "a", ""))
	plainUID, _ := uidOf("plain")
	_, err := change(genericSpec(t, lc.Name, recreateManifest("plain", "b", "")))
	if err == nil || !strings.Contains(err.Error(), "spec.selector") || !strings.Contains(err.Error(), "recreate: true") || !strings.Contains(err.Error(), "driftwatch.io/recreate: enabled") {
		t.Errorf("an immutable change without recreation allowed: %v, want an error naming spec.selector and how to allow it", err)
	}
	if uid, deleting := uidOf("plain"); uid != plainUID || deleting != nil {
		t.Errorf("recreation not allowed, yet the object was replaced or is being deleted (uid %s, was %s; deleting %v)", uid, plainUID, deleting)
	}

	create(recreateManifest("kept", "a", "driftwatch.io/prune: disabled"))
	_, err = change(genericSpec(t, lc.Name, recreateManifest("kept", "b", "driftwatch.io/prune: disabled, driftwatch.io/recreate: enabled")))
	if err == nil || !strings.Contains(err.Error(), "forbids") {
		t.Errorf("recreating an object whose pruning is disabled: %v, want a refusal", err)
	}
	if _, deleting := uidOf("kept"); deleting != nil {
		t.Error("an object whose pruning is disabled is being deleted")
	}

	spec := create(recreateManifest("web", "a", ""))
	webUID, _ := uidOf("web")
	changed := genericSpec(t, lc.Name, recreateManifest("web", "b", "driftwatch.io/recreate: enabled"))
	res, err := change(changed)
	if err != nil || res.Action != "recreate" {
		t.Fatalf("recreation allowed: %+v, %v", res, err)
	}
	// No garbage collector runs here: the foreground deletion waits on
	// its finalizer, the object still there, deleting.
	d, err := admin.AppsV1().Deployments("recreate").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(d.UID) != webUID || d.DeletionTimestamp == nil || !strings.Contains(strings.Join(d.Finalizers, ","), metav1.FinalizerDeleteDependents) {
		t.Errorf("after the recreation's delete: uid %s (was %s), deleting %v, finalizers %v; want the same object deleting in the foreground", d.UID, webUID, d.DeletionTimestamp, d.Finalizers)
	}
	waitState(t, m, spec, "seen deleting", func(st hub.State, _ hub.Drift) bool { return st.Exists && st.Deleting })
	// Not twice within recreateEvery: the object is created anew (as the
	// loop would once it is gone) and the apiserver refuses the change
	// again.
	d.Finalizers = nil
	if _, err := admin.AppsV1().Deployments("recreate").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 20*time.Second, "web gone", func() error {
		_, err := admin.AppsV1().Deployments("recreate").Get(ctx, "web", metav1.GetOptions{})
		return testwait.Check(err != nil, "still there")
	})
	create(recreateManifest("web", "a", ""))
	if _, err := change(changed); err == nil || !strings.Contains(err.Error(), "recreated the object at") {
		t.Errorf("a second recreation at once: %v, want a refusal", err)
	}

	// A Job's template, through the dynamic client.
	job := func(arg, annotations string) string {
		return `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: recreate, annotations: {` + annotations + `}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, args: [` + arg + `]}]
`
	}
	create(job("v1", ""))
	res, err = change(genericSpec(t, lc.Name, job("v2", "driftwatch.io/recreate: enabled")))
	if err != nil || res.Action != "recreate" {
		t.Fatalf("a Job's template, recreation allowed: %+v, %v", res, err)
	}
	j, err := admin.BatchV1().Jobs("recreate").Get(ctx, "migrate", metav1.GetOptions{})
	if err == nil && j.DeletionTimestamp == nil {
		t.Errorf("the Job is not being deleted: %+v", j.ObjectMeta)
	}
}

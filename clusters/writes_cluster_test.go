package clusters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"net/http"
	"path"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// beforeWrite is a transport wrapper that runs a hook once, right before
// the first request of a given patch type goes out: another writer that
// gets in between a read and the write that depends on it.
type beforeWrite struct {
	mu   sync.Mutex
	pt   types.PatchType
	hook func()
}

// arm makes the next patch of type pt run hook first.
func (b *beforeWrite) arm(pt types.PatchType, hook func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pt, b.hook = pt, hook
}

func (b *beforeWrite) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodPatch {
			b.mu.Lock()
			var hook func()
			if b.hook != nil && types.PatchType(req.Header.Get("Content-Type")) == b.pt {
				hook, b.hook = b.hook, nil
			}
			b.mu.Unlock()
			if hook != nil {
				hook()
			}
		}
		return rt.RoundTrip(req)
	})
}

// TestApiserverConflictAnswers pins down what a real apiserver answers to
// a write whose precondition met a concurrent change, and that the
// backend's checks match exactly those answers: a JSON patch whose test op
// fails (the soak's "the server rejected our request due to an error in
// our request"), an apply and a delete with a stale resourceVersion, a
// field manager conflict (not a precondition), a validation error (not a
// failed test op). It also checks that an apply carrying the current
// resourceVersion goes through (the guard of a pinned apply).
func TestApiserverConflictAnswers(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	c := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	ctx := t.Context()
	const ns = "answers"
	createNamespace(t, c, ns)
	dep := deployment(ns, "web", labelled(nil))
	dep.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "DEBUG", Value: "1"}}
	created, err := c.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{FieldManager: "creator"})
	if err != nil {
		t.Fatal(err)
	}
	stale := created.ResourceVersion
	bumped, err := c.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"annotations":{"touched":"1"}}}`),
		metav1.PatchOptions{FieldManager: "kubectl-annotate"})
	if err != nil {
		t.Fatal(err)
	}
	status := func(err error) metav1.Status {
		var se apierrors.APIStatus
		if !errors.As(err, &se) {
			t.Fatalf("%v is not an API status", err)
		}
		s := se.Status()
		t.Logf("answer: code %d reason %q message %q details %+v", s.Code, s.Reason, s.Message, s.Details)
		return s
	}

	t.Run("JSON patch whose test op fails", func(t *testing.T) {
		patch, err := repairPatch(stale, []string{"/spec/template/spec/containers/0/env/0"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.AppsV1().Deployments(ns).Patch(ctx, "web", types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: "driftwatch"})
		s := status(err)
		if s.Code != http.StatusUnprocessableEntity || s.Reason != metav1.StatusReasonInvalid ||
			s.Message != "the server rejected our request due to an error in our request" {
			t.Fatalf("answer %+v", s)
		}
		if !isPatchNotApplicable(err) || isPreconditionConflict(err) || isFieldConflict(err) {
			t.Fatal("not recognised as a JSON patch that does not apply")
		}
	})

	t.Run("JSON patch whose path is gone", func(t *testing.T) {
		patch, err := repairPatch(bumped.ResourceVersion, []string{"/spec/template/spec/containers/0/env/5"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.AppsV1().Deployments(ns).Patch(ctx, "web", types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: "driftwatch"})
		status(err)
		if !isPatchNotApplicable(err) {
			t.Fatal("not recognised as a JSON patch that does not apply")
		}
	})

	apply := func(rv string, replicas int, manager string, force bool) error {
		body := fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":%q,"resourceVersion":%q},"spec":{"replicas":%d}}`, ns, rv, replicas)
		_, err := c.AppsV1().Deployments(ns).Patch(ctx, "web", types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: manager, Force: &force})
		return err
	}

	t.Run("apply with a stale resourceVersion", func(t *testing.T) {
		err := apply(stale, 4, "driftwatch", true)
		s := status(err)
		if s.Code != http.StatusConflict || s.Reason != metav1.StatusReasonConflict {
			t.Fatalf("answer %+v", s)
		}
		if !isPreconditionConflict(err) || isFieldConflict(err) || isPatchNotApplicable(err) {
			t.Fatal("not recognised as a precondition conflict")
		}
	})

	t.Run("apply with the current resourceVersion", func(t *testing.T) {
		if err := apply(bumped.ResourceVersion, 4, "driftwatch", true); err != nil {
			t.Fatalf("an apply guarded by the current resourceVersion: %v", err)
		}
	})

	t.Run("field manager conflict", func(t *testing.T) {
		err := apply("", 6, "kubectl-scale", false)
		status(err)
		if !isFieldConflict(err) || isPreconditionConflict(err) {
			t.Fatal("not recognised as a field manager conflict")
		}
		// The hub annotation's field as a conflict names it.
		if _, err := c.AppsV1().Deployments(ns).Patch(ctx, "web", types.ApplyPatchType,
			[]byte(fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":%q,"annotations":{%q:"hub-b"}}}`, ns, kubeobj.HubAnnotation)),
			metav1.PatchOptions{FieldManager: "driftwatch-hub-b"}); err != nil {
			t.Fatal(err)
		}
		_, err = c.AppsV1().Deployments(ns).Patch(ctx, "web", types.ApplyPatchType,
			[]byte(fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":%q,"annotations":{%q:"hub-a"}}}`, ns, kubeobj.HubAnnotation)),
			metav1.PatchOptions{FieldManager: "driftwatch-hub-a"})
		if cs := conflictsOf(err); !slices.ContainsFunc(cs, func(c hub.Conflict) bool { return c.Field == hubAnnotationField && c.Manager == "driftwatch-hub-b" }) {
			t.Fatalf("conflicts %+v, want %s of driftwatch-hub-b", cs, hubAnnotationField)
		}
	})

	t.Run("validation error", func(t *testing.T) {
		err := apply("", -1, "driftwatch", true)
		status(err)
		if !apierrors.IsInvalid(err) || isPatchNotApplicable(err) {
			t.Fatal("a validation error taken for a JSON patch that does not apply")
		}
	})

	t.Run("delete with a stale resourceVersion", func(t *testing.T) {
		err := c.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &stale}})
		status(err)
		if !isPreconditionConflict(err) {
			t.Fatal("not recognised as a precondition conflict")
		}
	})

	// A repair's forced apply pinned to the version the state held
	// (apply, pinned) must not land on an object created again under the
	// same name since: the answer must be a precondition conflict, so the
	// repair reads the object again (and refuses it if another hub's).
	// An object deleted since is created, as an unpinned apply creates it:
	// the pin guards the object the hub checked, not its existence.
	t.Run("forced apply pinned to a deleted object", func(t *testing.T) {
		cur, err := c.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pinned := func() error {
			whole := deployment(ns, "web", labelled(nil))
			whole.APIVersion, whole.Kind, whole.ResourceVersion = "apps/v1", "Deployment", cur.ResourceVersion
			body, err := json.Marshal(whole)
			if err != nil {
				t.Fatal(err)
			}
			force := true
			_, err = c.AppsV1().Deployments(ns).Patch(ctx, "web", types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "driftwatch", Force: &force})
			return err
		}
		if err := c.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AppsV1().Deployments(ns).Create(ctx, deployment(ns, "web", labelled(nil)), metav1.CreateOptions{FieldManager: "creator"}); err != nil {
			t.Fatal(err)
		}
		err = pinned()
		status(err)
		if !isPreconditionConflict(err) {
			t.Fatal("an apply pinned to the version of a deleted object, sent to the object created again, not recognised as a precondition conflict")
		}
		if err := c.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := pinned(); err != nil {
			t.Fatalf("an apply pinned to the version of a deleted object: %v (it creates the object, as an unpinned one does)", err)
		}
	})
}

// TestPinnedRepairOnARealControlPlane: the repair of an edit is one forced
// apply, pinned to the version the watch cache showed, and names the field
// it took over from the editor's managedFields. When another hub takes the
// object over between the hub's read and its write, the pinned apply meets
// the change, the fresh read shows the other hub, and nothing is written.
func TestPinnedRepairOnARealControlPlane(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	const ns = "pinned-repair"
	createNamespace(t, admin, ns)
	var mu sync.Mutex
	var forced []bool
	cc := clusterConfig(lc, ns)
	cc.HubID = "hub-a"
	cc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPatch && types.PatchType(req.Header.Get("Content-Type")) == types.ApplyPatchType {
				mu.Lock()
				forced = append(forced, req.URL.Query().Get("force") == "true")
				mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	}
	applies := func() []bool {
		mu.Lock()
		defer mu.Unlock()
		out := forced
		forced = nil
		return out
	}
	_, be := runRegistryFor(t, cc)
	ctx := t.Context()
	spec := deploymentSpec(t, lc.Name, ns, "api")
	obj, err := kubeobj.Object(spec)
	if err != nil {
		t.Fatal(err)
	}
	annots := obj.GetAnnotations()
	annots[kubeobj.HubAnnotation] = "hub-a"
	obj.SetAnnotations(annots)
	spec.Body = kubeobj.MustEncodeBody(obj)
	st, d := readDetect(t, be, spec, true)
	if _, err := be.Repair(ctx, spec, st, d); err != nil {
		t.Fatal(err)
	}
	applies()

	edit := func(manager, patch string) {
		t.Helper()
		if _, err := admin.AppsV1().Deployments(ns).Patch(ctx, "api", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: manager}); err != nil {
			t.Fatal(err)
		}
	}
	cachedDrift := func() (hub.State, hub.Drift) {
		t.Helper()
		var st hub.State
		var d hub.Drift
		testwait.For(t, 10*time.Second, "the cache to show the edit", func() error {
			st, d = readDetect(t, be, spec, false)
			return testwait.Check(!d.InSync(), "in sync")
		})
		return st, d
	}

	edit("kubectl-scale", `{"spec":{"replicas":5}}`)
	st, d = cachedDrift()
	res, err := be.Repair(ctx, spec, st, d)
	if err != nil {
		t.Fatal(err)
	}
	if got := applies(); !slices.Equal(got, []bool{true}) {
		t.Fatalf("applies (forced or not) %v, want one forced apply", got)
	}
	if !slices.Contains(res.Conflicts, hub.Conflict{Field: "spec.replicas", Manager: "kubectl-scale"}) {
		t.Fatalf("conflicts %+v, want spec.replicas taken from kubectl-scale", res.Conflicts)
	}
	live, err := admin.AppsV1().Deployments(ns).Get(ctx, "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *live.Spec.Replicas == 5 {
		t.Fatal("the edit is still there")
	}

	// Another edit; then, before the repair is written, another hub
	// takes the object over.
	edit("kubectl-scale", `{"spec":{"replicas":6}}`)
	st, d = cachedDrift()
	edit("driftwatch-hub-b", fmt.Sprintf(`{"metadata":{"annotations":{%q:"hub-b"}}}`, kubeobj.HubAnnotation))
	taken, err := admin.AppsV1().Deployments(ns).Get(ctx, "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = be.Repair(ctx, spec, st, d)
	var o hub.OwnedByOtherError
	if !errors.Is(err, hub.ErrOwnedByOther) || !errors.As(err, &o) || o.Hub != "hub-b" {
		t.Fatalf("err = %v, want owned by hub-b", err)
	}
	if got := applies(); !slices.Equal(got, []bool{true}) {
		t.Fatalf("applies (forced or not) %v, want only the pinned one, refused", got)
	}
	after, err := admin.AppsV1().Deployments(ns).Get(ctx, "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != taken.ResourceVersion || *after.Spec.Replicas != 6 {
		t.Fatalf("the other hub's object changed: resourceVersion %s (was %s), replicas %d", after.ResourceVersion, taken.ResourceVersion, *after.Spec.Replicas)
	}
}

// runRegistryFor starts a registry of cfg (whose metrics are read through
// r.metrics) and returns its synced backend.
func runRegistryFor(t *testing.T, cfg ClusterConfig) (*Registry, *Manager) {
	t.Helper()
	sink := newRecordingSink()
	r := runRegistry(t, sink, cfg)
	sink.waitFor(t, 30*time.Second, "synced", func() bool { return sink.state(cfg.ID) == hub.ClusterSynced })
	be, ok := r.Backend(cfg.ID)
	if !ok {
		t.Fatal("no backend")
	}
	return r, be.(*Manager)
}

// readDetect reads spec's state (cached or fresh) and classifies it.
func readDetect(t *testing.T, be hub.Backend, spec hub.NodeSpec, fresh bool) (hub.State, hub.Drift) {
	t.Helper()
	st, err := be.ReadState(t.Context(), spec, fresh)
	if err != nil {
		t.Fatal(err)
	}
	d, err := be.DetectDrift(t.Context(), spec, st)
	if err != nil {
		t.Fatal(err)
	}
	return st, d
}

// TestWriteConflictsOnARealControlPlane: the soak's case. Someone adds an
// env entry to a Deployment we own; while the repair removes it (a JSON
// patch guarded by a test of the resourceVersion), someone writes the
// Deployment again. The repair re-reads, retries and succeeds, the conflict
// is counted as retried, and the entry is gone.
func TestWriteConflictsOnARealControlPlane(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	const ns = "conflicts"
	createNamespace(t, admin, ns)
	bw := &beforeWrite{}
	cc := clusterConfig(lc, ns)
	cc.WrapTransport = bw.wrap
	r, be := runRegistryFor(t, cc)
	ctx := t.Context()
	spec := deploymentSpec(t, lc.Name, ns, "catalog")
	st, d := readDetect(t, be, spec, true)
	if _, err := be.Repair(ctx, spec, st, d); err != nil {
		t.Fatal(err)
	}
	patch := []byte(`[{"op":"add","path":"/spec/template/spec/containers/0/env","value":[{"name":"DEBUG","value":"1"}]}]`)
	if _, err := admin.AppsV1().Deployments(ns).Patch(ctx, "catalog", types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
		t.Fatal(err)
	}
	st, d = readDetect(t, be, spec, true)
	if !hasAddedEntries(d) {
		t.Fatalf("drift %s lists no added entry", d.Summary())
	}
	// Right before the removal goes out, someone writes the Deployment.
	bw.arm(types.JSONPatchType, func() {
		if _, err := admin.AppsV1().Deployments(ns).Patch(context.Background(), "catalog", types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"touched":"yes"}}}`), metav1.PatchOptions{FieldManager: "kubectl-annotate"}); err != nil {
			t.Error(err)
		}
	})
	res, err := be.Repair(ctx, spec, st, d)
	if err != nil {
		t.Fatalf("repair: %v (the conflict must be retried)", err)
	}
	if res.Action != actionRemoveApply {
		t.Fatalf("action %q", res.Action)
	}
	live, err := admin.AppsV1().Deployments(ns).Get(ctx, "catalog", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if env := live.Spec.Template.Spec.Containers[0].Env; len(env) != 0 {
		t.Fatalf("env %v: the added entry is still there", env)
	}
	if live.Annotations["touched"] != "yes" {
		t.Fatal("the concurrent write did not happen")
	}
	if got := testutil.ToFloat64(r.metrics.conflicts.WithLabelValues(lc.Name, conflictRetried)); got != 1 {
		t.Fatalf("retried conflicts = %v, want 1", got)
	}
	if got := testutil.ToFloat64(r.metrics.conflicts.WithLabelValues(lc.Name, conflictGaveUp)); got != 0 {
		t.Fatalf("given-up conflicts = %v, want 0", got)
	}
}

// TestPinnedFieldsOnARealControlPlane: an autoscaler owns spec.replicas,
// which an ignore rule covers. The loop read the Deployment from the cache
// at 3 replicas; the autoscaler has scaled it to 7 since. The repair of the
// image must keep 7 (the old code wrote the cached 3 back). When the
// autoscaler scales again right before the apply, the apply's guard
// refuses the stale value and the retry keeps the newest.
func TestPinnedFieldsOnARealControlPlane(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	const ns = "pinned"
	createNamespace(t, admin, ns)
	bw := &beforeWrite{}
	cc := clusterConfig(lc, ns)
	cc.WrapTransport = bw.wrap
	r, be := runRegistryFor(t, cc)
	ctx := t.Context()
	spec := deploymentSpec(t, lc.Name, ns, "api", hub.IgnoreRule{Name: "hpa", Managers: []string{"fake-autoscaler"}})
	st, d := readDetect(t, be, spec, true)
	if _, err := be.Repair(ctx, spec, st, d); err != nil {
		t.Fatal(err)
	}
	scale := func(n int) {
		body := fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api","namespace":%q},"spec":{"replicas":%d}}`, ns, n)
		force := true
		if _, err := admin.AppsV1().Deployments(ns).Patch(context.Background(), "api", types.ApplyPatchType, []byte(body),
			metav1.PatchOptions{FieldManager: "fake-autoscaler", Force: &force}); err != nil {
			t.Error(err)
		}
	}
	edit := func() {
		if _, err := admin.AppsV1().Deployments(ns).Patch(ctx, "api", types.StrategicMergePatchType,
			[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:2"}]}}}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatal(err)
		}
	}
	replicas := func() int32 {
		dep, err := admin.AppsV1().Deployments(ns).Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *dep.Spec.Replicas
	}
	// cachedAt waits until the cache shows n replicas and an edited image,
	// and returns that read.
	cachedAt := func(n int64) (st hub.State, d hub.Drift) {
		testwait.For(t, 10*time.Second, fmt.Sprintf("the cache to show %d replicas and the edit", n), func() error {
			st, d = readDetect(t, be, spec, false)
			if st.Exists && !st.Fresh && d.Class == hub.DriftModified {
				if live := LiveObject(st); live != nil {
					if got, _, _ := unstructured.NestedInt64(live.Object, "spec", "replicas"); got == n {
						return nil
					}
				}
			}
			return fmt.Errorf("drift %s", d.Summary())
		})
		return st, d
	}

	t.Run("stale cached read", func(t *testing.T) {
		scale(3)
		edit()
		st, d := cachedAt(3)
		scale(7) // after the loop's read
		if _, err := be.Repair(ctx, spec, st, d); err != nil {
			t.Fatal(err)
		}
		if n := replicas(); n != 7 {
			t.Fatalf("replicas %d after the repair, want the autoscaler's 7 (the cached read said 3)", n)
		}
		if _, d := readDetect(t, be, spec, true); !d.InSync() {
			t.Fatalf("after the repair: %s", d.Summary())
		}
	})

	t.Run("scaled again before the apply", func(t *testing.T) {
		edit()
		st, d := cachedAt(7)
		before := testutil.ToFloat64(r.metrics.conflicts.WithLabelValues(lc.Name, conflictRetried))
		bw.arm(types.ApplyPatchType, func() { scale(9) })
		if _, err := be.Repair(ctx, spec, st, d); err != nil {
			t.Fatalf("repair: %v (the guarded apply's conflict must be retried)", err)
		}
		if n := replicas(); n != 9 {
			t.Fatalf("replicas %d after the repair, want the autoscaler's 9", n)
		}
		if got := testutil.ToFloat64(r.metrics.conflicts.WithLabelValues(lc.Name, conflictRetried)) - before; got != 1 {
			t.Fatalf("retried conflicts = %v, want 1", got)
		}
	})
}

// TestTwoHubsOnARealControlPlane: two hubs with their own ids share a
// cluster, a namespace and the managed-by value. Each writes under its own
// field manager; hub A never lists hub B's object as its own, counts it as
// foreign, and refuses to repair it (whether its cache shows the object or
// only the apply's conflict over the hub annotation does) or to delete it:
// B's object is left as B wrote it. Two hubs with the default id cannot be
// told apart by their marks: the first write by the other one is seen, and
// from then on the orphan scan is refused.
func TestTwoHubsOnARealControlPlane(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	ctx := t.Context()

	t.Run("own ids", func(t *testing.T) {
		const ns = "two-hubs"
		createNamespace(t, admin, ns)
		ca, cb := clusterConfig(lc, ns), clusterConfig(lc, ns)
		ca.HubID, cb.HubID = "hub-a", "hub-b"
		ra, a := runRegistryFor(t, ca)
		_, b := runRegistryFor(t, cb)
		specFor := func(hubID string) hub.NodeSpec {
			s := deploymentSpec(t, lc.Name, ns, "shared")
			obj, err := kubeobj.Object(s)
			if err != nil {
				t.Fatal(err)
			}
			annots := obj.GetAnnotations()
			annots[kubeobj.HubAnnotation] = hubID
			obj.SetAnnotations(annots)
			s.Body = kubeobj.MustEncodeBody(obj)
			return s
		}
		specA, specB := specFor("hub-a"), specFor("hub-b")
		st, d := readDetect(t, b, specB, true)
		if _, err := b.Repair(ctx, specB, st, d); err != nil {
			t.Fatal(err)
		}
		written, err := admin.AppsV1().Deployments(ns).Get(ctx, "shared", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var managers []string
		for _, e := range written.ManagedFields {
			managers = append(managers, e.Manager)
		}
		if !slices.Contains(managers, "driftwatch-hub-b") || slices.Contains(managers, kubeobj.FieldManager) {
			t.Fatalf("managers %v, want driftwatch-hub-b and not %s", managers, kubeobj.FieldManager)
		}

		// Hub A's view: not its own, foreign.
		waitCached(t, a, specA)
		refs, err := a.ListOwned(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(refs) != 0 {
			t.Fatalf("hub A lists %+v as its own", refs)
		}
		if got := testutil.ToFloat64(ra.metrics.foreign.WithLabelValues(lc.Name)); got != 1 {
			t.Fatalf("driftwatch_foreign_objects = %v, want 1", got)
		}
		stA, dA := readDetect(t, a, specA, false)
		if stA.Owned {
			t.Fatal("hub A reads hub B's object as owned")
		}
		check := func(err error) {
			t.Helper()
			var o hub.OwnedByOtherError
			if !errors.Is(err, hub.ErrOwnedByOther) || !errors.As(err, &o) || o.Hub != "hub-b" {
				t.Fatalf("err = %v, want owned by hub-b", err)
			}
		}
		_, err = a.Repair(ctx, specA, stA, dA)
		check(err)
		// Even when hub A's read missed it: the apply's conflict over the
		// annotation stops it, unforced.
		_, err = a.Repair(ctx, specA, hub.State{}, hub.Drift{Class: hub.DriftMissing})
		check(err)
		stA.Owned = true
		check(a.Delete(ctx, specA, stA))
		after, err := admin.AppsV1().Deployments(ns).Get(ctx, "shared", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if after.ResourceVersion != written.ResourceVersion || after.Annotations[kubeobj.HubAnnotation] != "hub-b" {
			t.Fatalf("hub B's object changed: resourceVersion %s (was %s), hub %q", after.ResourceVersion, written.ResourceVersion, after.Annotations[kubeobj.HubAnnotation])
		}
	})

	t.Run("the same id", func(t *testing.T) {
		const ns = "same-id"
		createNamespace(t, admin, ns)
		c1, c2 := clusterConfig(lc, ns), clusterConfig(lc, ns)
		c1.HubID, c2.HubID = hub.DefaultHubID, hub.DefaultHubID
		r1, one := runRegistryFor(t, c1)
		_, two := runRegistryFor(t, c2)
		mine := deploymentSpec(t, lc.Name, ns, "mine")
		st, d := readDetect(t, one, mine, true)
		if _, err := one.Repair(ctx, mine, st, d); err != nil {
			t.Fatal(err)
		}
		waitCached(t, one, mine)
		if _, err := one.ListOwned(ctx); err != nil {
			t.Fatalf("ListOwned after our own write: %v", err)
		}
		if got := testutil.ToFloat64(r1.metrics.sameIDWrites.WithLabelValues(lc.Name)); got != 0 {
			t.Fatalf("same-id writes = %v after our own write", got)
		}
		// The other hub creates its object.
		theirs := deploymentSpec(t, lc.Name, ns, "theirs")
		st, d = readDetect(t, two, theirs, true)
		if _, err := two.Repair(ctx, theirs, st, d); err != nil {
			t.Fatal(err)
		}
		testwait.For(t, 10*time.Second, "the other hub's write to be seen", func() error {
			n := testutil.ToFloat64(r1.metrics.sameIDWrites.WithLabelValues(lc.Name))
			return testwait.Check(n == 1, "%v writes with our id seen, want 1", n)
		})
		if _, err := one.ListOwned(ctx); !errors.Is(err, hub.ErrOwnedByOther) {
			t.Fatalf("ListOwned after another hub with our id wrote: %v", err)
		}
	})
}

// waitCached waits until be's cache holds spec's object.
func waitCached(t *testing.T, be hub.Backend, spec hub.NodeSpec) {
	t.Helper()
	testwait.For(t, 10*time.Second, fmt.Sprintf("%s in the cache", spec.ID), func() error {
		st, _ := readDetect(t, be, spec, false)
		return testwait.Check(st.Exists, "not cached")
	})
}

// TestAttributeReadsTheClassifiedState: the manager that edited a
// Deployment is told from the managedFields of the state the drift was
// classified from, without a request: a cached state's (the watch cache
// keeps the entries), a fresh read's for an object the cache does not hold
// (another namespace, not watched). A state read before a later edit still
// names the first editor once the cache shows the second, a fresh read of
// the later edit names its editor whatever the cache holds, and a missing
// object has no attribution.
func TestAttributeReadsTheClassifiedState(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	const ns, other = "attribute", "attribute-unwatched"
	createNamespace(t, admin, ns)
	createNamespace(t, admin, other)
	var mu sync.Mutex
	gets := 0
	cc := clusterConfig(lc, ns)
	cc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet && req.URL.Query().Get("watch") == "" && path.Base(req.URL.Path) == "api" {
				mu.Lock()
				gets++
				mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	}
	countGets := func() int {
		mu.Lock()
		defer mu.Unlock()
		return gets
	}
	_, be := runRegistryFor(t, cc)
	ctx := t.Context()
	for _, n := range []string{ns, other} {
		spec := deploymentSpec(t, lc.Name, n, "api")
		st, d := readDetect(t, be, spec, true)
		if _, err := be.Repair(ctx, spec, st, d); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.AppsV1().Deployments(n).Patch(ctx, "api", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatal(err)
		}
	}

	spec := deploymentSpec(t, lc.Name, ns, "api")
	var st hub.State
	var d hub.Drift
	testwait.For(t, 10*time.Second, "the cache to show the edit", func() error {
		// Not only out of sync: a cache that has not seen the create yet
		// says missing.
		if st, d = readDetect(t, be, spec, false); d.Class != hub.DriftModified {
			return fmt.Errorf("cache says %s", d.Class)
		}
		return nil
	})
	before := countGets()
	a, err := be.Attribute(ctx, spec, st, d)
	if err != nil || a == nil || a.Manager != "kubectl-edit" || a.At.IsZero() {
		t.Fatalf("attribution from the cache = %+v, %v", a, err)
	}
	if n := countGets() - before; n != 0 {
		t.Errorf("attribution from the cache sent %d GETs", n)
	}

	// A later edit by someone else: the earlier state still names the
	// first editor once the cache holds the later object.
	if _, err := admin.AppsV1().Deployments(ns).Patch(ctx, "api", types.MergePatchType, []byte(`{"spec":{"replicas":6}}`), metav1.PatchOptions{FieldManager: "kubectl-scale"}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "the cache to show the second edit", func() error {
		later, _ := readDetect(t, be, spec, false)
		return testwait.Check(later.Version != st.Version, "still version %s", st.Version)
	})
	if a, err := be.Attribute(ctx, spec, st, d); err != nil || a == nil || a.Manager != "kubectl-edit" {
		t.Fatalf("attribution of the earlier state = %+v, %v", a, err)
	}
	fresh, fd := readDetect(t, be, spec, true)
	if a, err := be.Attribute(ctx, spec, fresh, fd); err != nil || a == nil || a.Manager != "kubectl-scale" {
		t.Fatalf("attribution of a fresh read = %+v, %v", a, err)
	}

	unwatched := deploymentSpec(t, lc.Name, other, "api")
	st, d = readDetect(t, be, unwatched, true)
	before = countGets()
	if a, err := be.Attribute(ctx, unwatched, st, d); err != nil || a == nil || a.Manager != "kubectl-edit" {
		t.Fatalf("attribution of an object the cache does not hold = %+v, %v", a, err)
	}
	if n := countGets() - before; n != 0 {
		t.Errorf("attribution of a fresh read sent %d GETs", n)
	}
	if err := admin.AppsV1().Deployments(other).Delete(ctx, "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone, _ := readDetect(t, be, unwatched, true)
	if a, err := be.Attribute(ctx, unwatched, gone, d); a != nil || err != nil {
		t.Fatalf("attribution of a deleted object = %+v, %v", a, err)
	}
}

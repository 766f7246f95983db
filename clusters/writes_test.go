package clusters

import (
	"encoding/json"
	"errors"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/hub"
)

// The apiserver's answers to a write whose precondition met a concurrent
// change, built as the apiserver builds them (see conflict.go; checked on
// a real one by TestWriteConflictsOnARealControlPlane).
var (
	deploymentsGR = schema.GroupResource{Group: "apps", Resource: "deployments"}
	// errTestOpFailed is the answer to a JSON patch whose test op failed.
	errTestOpFailed = apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "",
		"testing value /metadata/resourceVersion failed: test failed", 0, false)
)

// errModified is the answer to an apply or update with a stale
// resourceVersion, or a delete with a stale precondition.
func errModified(gr schema.GroupResource, name string) error {
	return apierrors.NewConflict(gr, name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
}

// fakeAPI is a fake clientset whose patches and deletes a test sees and
// answers: queued errors first, then the tracker's current object (a patch
// changes nothing; an apply whose metadata.resourceVersion is not the
// current one is refused as the apiserver refuses it).
type fakeAPI struct {
	cs *fake.Clientset
	mu sync.Mutex
	// bodies are the patches sent, by type.
	bodies map[types.PatchType][][]byte
	// errs are answered, in order, before any other answer, by verb
	// ("apply", "json-patch", "delete").
	errs map[string][]error
	// onErr runs after a queued error was answered (an intervening
	// write).
	onErr   func(verb string)
	deletes []metav1.DeleteOptions
}

func newFakeAPI(t *testing.T, objs ...runtime.Object) *fakeAPI {
	t.Helper()
	f := &fakeAPI{cs: fake.NewClientset(objs...), bodies: make(map[types.PatchType][][]byte), errs: make(map[string][]error)}
	f.cs.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchAction)
		verb := "json-patch"
		if pa.GetPatchType() == types.ApplyPatchType {
			verb = "apply"
		}
		f.mu.Lock()
		f.bodies[pa.GetPatchType()] = append(f.bodies[pa.GetPatchType()], pa.GetPatch())
		if err := f.popLocked(verb); err != nil {
			f.mu.Unlock()
			return true, nil, err
		}
		f.mu.Unlock()
		obj, err := f.cs.Tracker().Get(a.GetResource(), a.GetNamespace(), pa.GetName())
		if err != nil {
			return true, nil, err
		}
		if verb == "apply" {
			var body struct {
				Metadata struct {
					ResourceVersion string `json:"resourceVersion"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(pa.GetPatch(), &body); err != nil {
				return true, nil, err
			}
			cur := obj.(metav1.Object).GetResourceVersion()
			if rv := body.Metadata.ResourceVersion; rv != "" && rv != cur {
				return true, nil, errModified(a.GetResource().GroupResource(), pa.GetName())
			}
		}
		return true, obj, nil
	})
	f.cs.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		da := a.(k8stesting.DeleteAction)
		f.mu.Lock()
		f.deletes = append(f.deletes, da.GetDeleteOptions())
		err := f.popLocked("delete")
		f.mu.Unlock()
		if err != nil {
			return true, nil, err
		}
		return false, nil, nil
	})
	return f
}

func (f *fakeAPI) popLocked(verb string) error {
	q := f.errs[verb]
	if len(q) == 0 {
		return nil
	}
	f.errs[verb] = q[1:]
	if f.onErr != nil {
		defer f.onErr(verb)
	}
	return q[0]
}

func (f *fakeAPI) queue(verb string, errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[verb] = append(f.errs[verb], errs...)
}

func (f *fakeAPI) sent(pt types.PatchType) [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[pt]
}

// fakeManager is a connected Manager of cluster c1 on api, with metrics
// on a registry of its own.
func fakeManager(api *fakeAPI, hubID string) (*Manager, *metrics) {
	m := newManager(ClusterConfig{ID: "c1", HubID: hubID}, newRecordingSink(), discardLogger(), HealthOptions{}, nil)
	m.client = api.cs
	m.metrics = newMetrics(prometheus.NewRegistry())
	return m, m.metrics
}

// liveDeployment is the Deployment "web" in "shop" as an apiserver holds
// it: our marks (hub hubID), replicas, resourceVersion rv.
func liveDeployment(hubID string, replicas int32, rv string) *appsv1.Deployment {
	d := deployment("shop", "web", labelled(nil))
	d.UID = "uid-web"
	d.ResourceVersion = rv
	d.Spec.Replicas = &replicas
	d.Annotations = map[string]string{kubeobj.NodeIDAnnotation: hub.NewNodeID("c1", "shop", "web", hub.KindDeployment).String(), kubeobj.HubAnnotation: hubID}
	return d
}

// stateOf is what the loop read: the object as ReadState returns it.
func stateOf(t *testing.T, m *Manager, obj runtime.Object, fresh bool) hub.State {
	t.Helper()
	kind, err := kindOf(hub.KindDeployment)
	if err != nil {
		t.Fatal(err)
	}
	st, err := m.stateOf(kind, hub.NodeSpec{Kind: hub.KindDeployment}, obj.DeepCopyObject(), nil, fresh)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// webSpec is the desired Deployment "web": 2 replicas, image app:2, hub
// hubID, with the given ignore rules.
func webSpec(t *testing.T, hubID string, rules ...hub.IgnoreRule) hub.NodeSpec {
	t.Helper()
	d := liveDeployment(hubID, 2, "")
	d.UID = ""
	d.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	d.Spec.Template.Spec.Containers[0].Image = "registry.example/app:2"
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(obj.Object, "spec", "template", "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(obj.Object, "spec", "strategy")
	unstructured.RemoveNestedField(obj.Object, "status")
	s := hub.NodeSpec{ID: hub.NewNodeID("c1", "shop", "web", hub.KindDeployment), Namespace: "shop", Name: "web",
		Kind: hub.KindDeployment, Body: kubeobj.MustEncodeBody(obj)}
	if len(rules) > 0 {
		s.Ignore = &hub.IgnoreSet{Rules: rules, Key: "test"}
	}
	return s
}

// appliedReplicas reads spec.replicas and metadata.resourceVersion of an
// apply body.
func appliedReplicas(t *testing.T, body []byte) (int64, string) {
	t.Helper()
	var obj unstructured.Unstructured
	if err := obj.UnmarshalJSON(body); err != nil {
		t.Fatal(err)
	}
	n, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	return n, obj.GetResourceVersion()
}

// TestPinnedValuesComeFromAFreshRead: an autoscaler owns spec.replicas
// (ignored). The loop's read came from a cache that still shows 3 replicas
// while the live object has 7: the repair of another difference must keep
// 7, from a GET taken right before the apply, and guard the apply with the
// resourceVersion of that GET. When the autoscaler writes again before the
// apply lands, the apply's conflict is retried from a new read.
func TestPinnedValuesComeFromAFreshRead(t *testing.T) {
	rule := hub.IgnoreRule{Name: "hpa", Paths: mustParsePaths(t, "/spec/replicas")}
	cached := liveDeployment("hub-a", 3, "5")

	t.Run("stale cache", func(t *testing.T) {
		api := newFakeAPI(t, liveDeployment("hub-a", 7, "10"))
		m, _ := fakeManager(api, "hub-a")
		spec := webSpec(t, "hub-a", rule)
		st := stateOf(t, m, cached, false)
		d, err := m.DetectDrift(t.Context(), spec, st)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Repair(t.Context(), spec, st, d); err != nil {
			t.Fatal(err)
		}
		applies := api.sent(types.ApplyPatchType)
		if len(applies) != 1 {
			t.Fatalf("%d applies, want 1", len(applies))
		}
		if n, rv := appliedReplicas(t, applies[0]); n != 7 || rv != "10" {
			t.Fatalf("applied replicas %d guarded by resourceVersion %q; want the live 7 guarded by 10 (the cached read said 3)", n, rv)
		}
	})

	t.Run("written again before the apply", func(t *testing.T) {
		api := newFakeAPI(t, liveDeployment("hub-a", 7, "10"))
		m, met := fakeManager(api, "hub-a")
		// The first apply meets the autoscaler's next write (9 replicas).
		api.queue("apply", errModified(deploymentsGR, "web"))
		api.onErr = func(string) {
			if err := api.cs.Tracker().Update(appsv1.SchemeGroupVersion.WithResource("deployments"), liveDeployment("hub-a", 9, "11"), "shop"); err != nil {
				t.Error(err)
			}
		}
		spec := webSpec(t, "hub-a", rule)
		st := stateOf(t, m, cached, false)
		d, err := m.DetectDrift(t.Context(), spec, st)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Repair(t.Context(), spec, st, d); err != nil {
			t.Fatalf("repair: %v (a conflict must be retried)", err)
		}
		applies := api.sent(types.ApplyPatchType)
		if len(applies) != 2 {
			t.Fatalf("%d applies, want 2", len(applies))
		}
		if n, rv := appliedReplicas(t, applies[1]); n != 9 || rv != "11" {
			t.Fatalf("retried apply: replicas %d guarded by %q, want 9 guarded by 11", n, rv)
		}
		if got := testutil.ToFloat64(met.conflicts.WithLabelValues("c1", conflictRetried)); got != 1 {
			t.Fatalf("retried conflicts = %v, want 1", got)
		}
	})

	t.Run("no ignore rules: one forced apply pinned to the state's object", func(t *testing.T) {
		api := newFakeAPI(t, liveDeployment("hub-a", 7, "10"))
		m, _ := fakeManager(api, "hub-a")
		spec := webSpec(t, "hub-a")
		st := stateOf(t, m, liveDeployment("hub-a", 7, "10"), false)
		if _, err := m.Repair(t.Context(), spec, st, hub.Drift{Class: hub.DriftModified}); err != nil {
			t.Fatal(err)
		}
		for _, a := range api.cs.Actions() {
			if a.GetVerb() == "get" {
				t.Fatalf("a repair without ignore rules or added entries read the object: %v", a)
			}
		}
		if forced := appliesForced(api); !slices.Equal(forced, []bool{true}) {
			t.Fatalf("applies forced %v, want one forced apply", forced)
		}
		if n, rv := appliedReplicas(t, api.sent(types.ApplyPatchType)[0]); n != 2 || rv != "10" {
			t.Fatalf("applied replicas %d, resourceVersion %q; want the desired 2, pinned to the state's 10", n, rv)
		}
	})

	t.Run("no ignore rules, stale state: the pin meets the change, then a fresh read", func(t *testing.T) {
		api := newFakeAPI(t, liveDeployment("hub-a", 7, "10"))
		m, met := fakeManager(api, "hub-a")
		spec := webSpec(t, "hub-a")
		st := stateOf(t, m, cached, false)
		if _, err := m.Repair(t.Context(), spec, st, hub.Drift{Class: hub.DriftModified}); err != nil {
			t.Fatalf("repair: %v (a conflict must be retried)", err)
		}
		if forced := appliesForced(api); !slices.Equal(forced, []bool{true, false}) {
			t.Fatalf("applies forced %v, want the pinned forced apply, then an unforced one", forced)
		}
		applies := api.sent(types.ApplyPatchType)
		if _, rv := appliedReplicas(t, applies[0]); rv != "5" {
			t.Fatalf("first apply pinned to %q, want the state's 5", rv)
		}
		if n, rv := appliedReplicas(t, applies[1]); n != 2 || rv != "" {
			t.Fatalf("retried apply: replicas %d, resourceVersion %q; want the desired 2, unpinned", n, rv)
		}
		if got := testutil.ToFloat64(met.conflicts.WithLabelValues("c1", conflictRetried)); got != 1 {
			t.Fatalf("retried conflicts = %v, want 1", got)
		}
	})
}

// appliesForced returns the force option of each server-side apply api
// received, in order.
func appliesForced(api *fakeAPI) []bool {
	var out []bool
	for _, a := range api.cs.Actions() {
		pa, ok := a.(k8stesting.PatchActionImpl)
		if !ok || pa.GetPatchType() != types.ApplyPatchType {
			continue
		}
		out = append(out, pa.PatchOptions.Force != nil && *pa.PatchOptions.Force)
	}
	return out
}

// addedEnvDrift is a Deployment with an env entry someone added, and its
// drift.
func addedEnvDrift(t *testing.T, m *Manager) (hub.NodeSpec, *appsv1.Deployment, hub.State, hub.Drift) {
	t.Helper()
	live := liveDeployment("hub-a", 2, "10")
	live.Spec.Template.Spec.Containers[0].Image = "registry.example/app:2"
	live.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "DEBUG", Value: "1"}}
	spec := webSpec(t, "hub-a")
	st := stateOf(t, m, live, true)
	d, err := m.DetectDrift(t.Context(), spec, st)
	if err != nil {
		t.Fatal(err)
	}
	if !hasAddedEntries(d) {
		t.Fatalf("drift %s lists no added entry", d.Summary())
	}
	return spec, live, st, d
}

// TestRemovalConflictIsRetried: the JSON patch that removes an added entry
// is guarded by a test of the resourceVersion. When someone writes in
// between, the apiserver answers 422 (a failed test op); the repair reads
// again and retries at once instead of failing, and counts the conflict.
// After conflictRetries retries it gives up with an error that says what
// conflicted.
func TestRemovalConflictIsRetried(t *testing.T) {
	if !isPatchNotApplicable(errTestOpFailed) || isPreconditionConflict(errTestOpFailed) {
		t.Fatal("the apiserver's answer to a failed test op is not recognised")
	}
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web", nil)
	if isPatchNotApplicable(invalid) {
		t.Fatal("a validation error taken for a failed test op")
	}

	t.Run("retried", func(t *testing.T) {
		m0, _ := fakeManager(newFakeAPI(t), "hub-a")
		spec, live, st, d := addedEnvDrift(t, m0)
		api := newFakeAPI(t, live)
		m, met := fakeManager(api, "hub-a")
		api.queue("json-patch", errTestOpFailed)
		res, err := m.Repair(t.Context(), spec, st, d)
		if err != nil {
			t.Fatalf("repair: %v (a failed test op must be retried)", err)
		}
		if res.Action != actionRemoveApply {
			t.Fatalf("action %q, want %q", res.Action, actionRemoveApply)
		}
		if n := len(api.sent(types.JSONPatchType)); n != 2 {
			t.Fatalf("%d removals sent, want 2", n)
		}
		if n := len(api.sent(types.ApplyPatchType)); n != 1 {
			t.Fatalf("%d applies sent, want 1", n)
		}
		if got := testutil.ToFloat64(met.conflicts.WithLabelValues("c1", conflictRetried)); got != 1 {
			t.Fatalf("retried conflicts = %v, want 1", got)
		}
		if got := testutil.ToFloat64(met.conflicts.WithLabelValues("c1", conflictGaveUp)); got != 0 {
			t.Fatalf("given-up conflicts = %v, want 0", got)
		}
	})

	t.Run("gives up", func(t *testing.T) {
		m0, _ := fakeManager(newFakeAPI(t), "hub-a")
		spec, live, st, d := addedEnvDrift(t, m0)
		api := newFakeAPI(t, live)
		m, met := fakeManager(api, "hub-a")
		for range conflictRetries + 1 {
			api.queue("json-patch", errTestOpFailed)
		}
		_, err := m.Repair(t.Context(), spec, st, d)
		if err == nil || !isConflictError(err) || !strings.Contains(err.Error(), "changed since it was read") {
			t.Fatalf("repair: %v, want a conflict error after %d retries", err, conflictRetries)
		}
		if n := len(api.sent(types.JSONPatchType)); n != conflictRetries+1 {
			t.Fatalf("%d removals sent, want %d", n, conflictRetries+1)
		}
		if n := len(api.sent(types.ApplyPatchType)); n != 0 {
			t.Fatalf("%d applies sent after the removal failed, want 0", n)
		}
		if got := testutil.ToFloat64(met.conflicts.WithLabelValues("c1", conflictRetried)); got != conflictRetries {
			t.Fatalf("retried conflicts = %v, want %d", got, conflictRetries)
		}
		if got := testutil.ToFloat64(met.conflicts.WithLabelValues("c1", conflictGaveUp)); got != 1 {
			t.Fatalf("given-up conflicts = %v, want 1", got)
		}
	})
}

// TestDeleteConflictIsRetried: a delete whose resourceVersion precondition
// met a concurrent change is retried with the preconditions of a fresh
// read of the same object; an object replaced meanwhile (another UID) is
// not deleted.
func TestDeleteConflictIsRetried(t *testing.T) {
	spec := webSpec(t, "hub-a")
	gvr := appsv1.SchemeGroupVersion.WithResource("deployments")

	t.Run("changed", func(t *testing.T) {
		api := newFakeAPI(t, liveDeployment("hub-a", 2, "10"))
		m, met := fakeManager(api, "hub-a")
		st := stateOf(t, m, liveDeployment("hub-a", 2, "9"), true)
		api.queue("delete", errModified(deploymentsGR, "web"))
		if err := m.Delete(t.Context(), spec, st); err != nil {
			t.Fatalf("delete: %v (a precondition conflict must be retried)", err)
		}
		if len(api.deletes) != 2 || *api.deletes[1].Preconditions.ResourceVersion != "10" || *api.deletes[1].Preconditions.UID != "uid-web" {
			t.Fatalf("deletes %+v, want a retry with resourceVersion 10", api.deletes)
		}
		if _, err := api.cs.Tracker().Get(gvr, "shop", "web"); !apierrors.IsNotFound(err) {
			t.Fatalf("after delete: %v", err)
		}
		if got := testutil.ToFloat64(met.conflicts.WithLabelValues("c1", conflictRetried)); got != 1 {
			t.Fatalf("retried conflicts = %v, want 1", got)
		}
	})

	t.Run("replaced", func(t *testing.T) {
		replaced := liveDeployment("hub-a", 2, "10")
		replaced.UID = "uid-new"
		api := newFakeAPI(t, replaced)
		m, met := fakeManager(api, "hub-a")
		st := stateOf(t, m, liveDeployment("hub-a", 2, "9"), true)
		api.queue("delete", errModified(deploymentsGR, "web"))
		err := m.Delete(t.Context(), spec, st)
		if err == nil || !isConflictError(err) || !apierrors.IsConflict(err) {
			t.Fatalf("delete of a replaced object: %v, want a conflict", err)
		}
		if _, err := api.cs.Tracker().Get(gvr, "shop", "web"); err != nil {
			t.Fatalf("the replaced object is gone: %v", err)
		}
		if got := testutil.ToFloat64(met.conflicts.WithLabelValues("c1", conflictGaveUp)); got != 1 {
			t.Fatalf("given-up conflicts = %v, want 1", got)
		}
	})
}

// TestOtherHubsObjectsAreRefused: Repair and Delete refuse an object whose
// hub annotation names another hub, with an error that unwraps to
// hub.ErrOwnedByOther and names the other hub, whether the loop's read, a
// fresh read or a non-forced apply's conflict shows it; nothing is written.
func TestOtherHubsObjectsAreRefused(t *testing.T) {
	theirs := liveDeployment("hub-b", 2, "10")
	check := func(t *testing.T, api *fakeAPI, err error) {
		t.Helper()
		var o hub.OwnedByOtherError
		if !errors.Is(err, hub.ErrOwnedByOther) || !errors.As(err, &o) || o.Hub != "hub-b" {
			t.Fatalf("err = %v, want owned by hub-b", err)
		}
		if !strings.Contains(err.Error(), `cluster "c1"`) || !strings.Contains(err.Error(), "deployments web") {
			t.Fatalf("err = %v, want the cluster and the object named", err)
		}
		if n := len(api.sent(types.JSONPatchType)); n != 0 {
			t.Fatalf("%d JSON patches sent", n)
		}
		if len(api.deletes) != 0 {
			t.Fatalf("deletes sent: %v", api.deletes)
		}
	}

	t.Run("repair: the loop's read", func(t *testing.T) {
		api := newFakeAPI(t, theirs)
		m, _ := fakeManager(api, "hub-a")
		spec := webSpec(t, "hub-a")
		st := stateOf(t, m, theirs, false)
		if st.Owned {
			t.Fatal("another hub's object read as owned")
		}
		_, err := m.Repair(t.Context(), spec, st, hub.Drift{Class: hub.DriftModified})
		check(t, api, err)
		if n := len(api.sent(types.ApplyPatchType)); n != 0 {
			t.Fatalf("%d applies", n)
		}
	})

	t.Run("repair: a fresh read", func(t *testing.T) {
		api := newFakeAPI(t, theirs)
		m, _ := fakeManager(api, "hub-a")
		spec := webSpec(t, "hub-a", hub.IgnoreRule{Name: "hpa", Paths: mustParsePaths(t, "/spec/replicas")})
		st := stateOf(t, m, liveDeployment("hub-a", 2, "9"), false) // the cache is behind
		_, err := m.Repair(t.Context(), spec, st, hub.Drift{Class: hub.DriftModified})
		check(t, api, err)
		if n := len(api.sent(types.ApplyPatchType)); n != 0 {
			t.Fatalf("%d applies", n)
		}
	})

	t.Run("repair: the state is behind, the pinned apply meets the takeover", func(t *testing.T) {
		api := newFakeAPI(t, theirs)
		m, _ := fakeManager(api, "hub-a")
		spec := webSpec(t, "hub-a")
		// The loop read our object at version 9; hub-b has taken it since.
		st := stateOf(t, m, liveDeployment("hub-a", 2, "9"), false)
		_, err := m.Repair(t.Context(), spec, st, hub.Drift{Class: hub.DriftModified})
		check(t, api, err)
		applies := api.sent(types.ApplyPatchType)
		if len(applies) != 1 {
			t.Fatalf("%d applies, want the one pinned to version 9", len(applies))
		}
		if _, rv := appliedReplicas(t, applies[0]); rv != "9" {
			t.Fatalf("the forced apply was pinned to %q, want 9", rv)
		}
	})

	t.Run("repair: the apply's conflict", func(t *testing.T) {
		api := newFakeAPI(t, theirs)
		m, _ := fakeManager(api, "hub-a")
		api.queue("apply", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusConflict,
			Reason: metav1.StatusReasonConflict, Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{
				Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "driftwatch-hub-b"`,
				Field: ".metadata.annotations." + kubeobj.HubAnnotation}}}}})
		spec := webSpec(t, "hub-a")
		// The cache did not show it (another managed-by value): missing.
		_, err := m.Repair(t.Context(), spec, hub.State{}, hub.Drift{Class: hub.DriftMissing})
		check(t, api, err)
		if n := len(api.sent(types.ApplyPatchType)); n != 1 {
			t.Fatalf("%d applies, want 1 (never forced)", n)
		}
	})

	t.Run("delete", func(t *testing.T) {
		api := newFakeAPI(t, theirs)
		m, _ := fakeManager(api, "hub-a")
		spec := webSpec(t, "hub-a")
		st := stateOf(t, m, theirs, true)
		check(t, api, m.Delete(t.Context(), spec, st))
		st.Owned = true // even if the loop got it wrong
		check(t, api, m.Delete(t.Context(), spec, st))
	})
}

// syncedInformer is an informer that never runs, holding objs in its
// cache as the transform would.
func syncedInformer(t *testing.T, shared *cacheShared, objs ...protoObject) cache.SharedIndexInformer {
	t.Helper()
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.ConfigMap{}, 0, cache.Indexers{})
	for _, o := range objs {
		c, err := shared.compact(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := inf.GetIndexer().Add(c); err != nil {
			t.Fatal(err)
		}
	}
	return inf
}

// configMap is a ConfigMap in "shop" with our label, the given hub
// annotation ("" none) and managedFields entries.
func configMap(name, hubID string, mf ...metav1.ManagedFieldsEntry) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name),
		ResourceVersion: "1", Labels: labelled(nil), ManagedFields: mf,
		CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		Annotations:       map[string]string{kubeobj.NodeIDAnnotation: hub.NewNodeID("c1", "shop", name, hub.KindConfigMap).String()}}}
	if hubID != "" {
		cm.Annotations[kubeobj.HubAnnotation] = hubID
	}
	return cm
}

// applied is a managedFields entry of an apply by manager at t.
func applied(manager string, at time.Time) metav1.ManagedFieldsEntry {
	e := mfEntry(manager, "", `{"f:data":{"f:a":{}}}`)
	e.Operation = metav1.ManagedFieldsOperationApply
	e.Time = &metav1.Time{Time: at}
	return e
}

// TestListOwnedLeavesOtherHubsAlone: objects whose annotation names
// another hub, and objects another hub's field manager wrote, are never
// listed as ours (never orphans); they are counted in
// driftwatch_foreign_objects.
func TestListOwnedLeavesOtherHubsAlone(t *testing.T) {
	at := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	m, met := fakeManager(newFakeAPI(t), "hub-a")
	info, err := kindOf(hub.KindConfigMap)
	if err != nil {
		t.Fatal(err)
	}
	shared := &cacheShared{cluster: "c1", namespace: "shop", kind: hub.KindConfigMap, info: info,
		managedBy: kubeobj.DefaultManagedBy, hubID: "hub-a", fieldManager: m.fieldManager}
	inf := syncedInformer(t, shared,
		configMap("ours", "hub-a", applied("driftwatch-hub-a", at)),
		// Our own entries of before the hub had an id are not another hub's.
		configMap("ours-legacy", "hub-a", applied(kubeobj.FieldManager, at)),
		configMap("theirs", "hub-b", applied("driftwatch-hub-b", at)),
		configMap("written-by-c", "hub-a", applied("driftwatch-hub-a", at), applied("driftwatch-hub-c", at)),
		configMap("unannotated", "", applied("driftwatch-hub-a", at)),
		retainedMap("kept", "c1"),
		// Unusual marks (a NodeID annotation naming another cluster) keep
		// the retain mark too.
		retainedMap("kept-unusual", "c2"),
	)
	m.informers[informerKey{namespace: "shop", kind: hub.KindConfigMap}] = &informerState{informer: inf, synced: true}
	refs, err := m.ListOwned(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range refs {
		names = append(names, r.Name)
	}
	if strings.Join(names, ",") != "ours,ours-legacy" && strings.Join(names, ",") != "ours-legacy,ours" {
		t.Fatalf("ListOwned = %v, want ours and ours-legacy", names)
	}
	if got := testutil.ToFloat64(met.foreign.WithLabelValues("c1")); got != 2 {
		t.Fatalf("driftwatch_foreign_objects = %v, want 2", got)
	}
}

// retainedMap is one of our ConfigMaps in "shop" annotated never to be
// pruned, whose NodeID annotation names cluster.
func retainedMap(name, cluster string) *corev1.ConfigMap {
	cm := configMap(name, "hub-a")
	cm.Annotations[kubeobj.PruneAnnotation] = kubeobj.PruneDisabled
	cm.Annotations[kubeobj.NodeIDAnnotation] = hub.NewNodeID(cluster, "shop", name, hub.KindConfigMap).String()
	return cm
}

// TestSameIDWriterIsDetected: two hubs with the default id share the
// annotation and the field manager. A watched write by our field manager
// that this hub did not make is another hub with our id: it is counted,
// and ListOwned refuses from then on. The hub's own writes (echoes before
// or after the call returned, a remove and an apply in different seconds)
// and the initial list are never taken for one; an object back in the
// cache after its label was restored is not a creation.
func TestSameIDWriterIsDetected(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	api := newFakeAPI(t)
	m, met := fakeManager(api, hub.DefaultHubID)
	if m.fieldManager != kubeobj.FieldManager {
		t.Fatalf("field manager of the default id = %q", m.fieldManager)
	}
	info, err := kindOf(hub.KindConfigMap)
	if err != nil {
		t.Fatal(err)
	}
	shared := &cacheShared{cluster: "c1", namespace: "shop", kind: hub.KindConfigMap, info: info,
		managedBy: kubeobj.DefaultManagedBy, hubID: hub.DefaultHubID, fieldManager: m.fieldManager}
	m.informers[informerKey{namespace: "shop", kind: hub.KindConfigMap}] = &informerState{
		informer: syncedInformer(t, shared), synced: true}
	h := m.handler(hub.KindConfigMap).(cache.ResourceEventHandlerDetailedFuncs)
	obj := func(name string, created time.Time, mf ...metav1.ManagedFieldsEntry) *cachedObject {
		cm := configMap(name, hub.DefaultHubID, mf...)
		cm.CreationTimestamp = metav1.NewTime(created)
		c, err := shared.compact(cm)
		if err != nil {
			t.Fatal(err)
		}
		return c.(*cachedObject)
	}
	key := goneKey{kind: hub.KindConfigMap, namespace: "shop", name: "web"}
	written := func(at time.Time) runtime.Object { return configMap("web", "", applied(kubeobj.FieldManager, at)) }
	seen := func() float64 { return testutil.ToFloat64(met.sameIDWrites.WithLabelValues("c1")) }
	// The log keeps a record only while an echo is still to come.
	logged := func(want int, when string) {
		t.Helper()
		m.writes.mu.Lock()
		defer m.writes.mu.Unlock()
		if n := len(m.writes.writes); n != want {
			t.Fatalf("%s: the write log keeps %d records, want %d", when, n, want)
		}
	}

	// The initial list: whatever wrote it.
	h.OnAdd(obj("web", t0, applied(kubeobj.FieldManager, t0)), true)
	// Our write: its echo before the call returns, then after.
	m.beginWrite(key)
	h.OnUpdate(obj("web", t0, applied(kubeobj.FieldManager, t0)), obj("web", t0, applied(kubeobj.FieldManager, t0.Add(time.Second))))
	logged(1, "a write on the wire")
	m.endWrite(key, written(t0.Add(time.Second)), nil)
	logged(0, "a write whose echo came before it returned")
	m.beginWrite(key)
	m.endWrite(key, written(t0.Add(3*time.Second)), nil)
	m.beginWrite(key)
	m.endWrite(key, written(t0.Add(4*time.Second)), nil)
	// Echoes of both, after both returned (a remove and an apply).
	h.OnUpdate(obj("web", t0, applied(kubeobj.FieldManager, t0.Add(time.Second))), obj("web", t0, applied(kubeobj.FieldManager, t0.Add(3*time.Second))))
	logged(1, "the echo of the first of two writes")
	h.OnUpdate(obj("web", t0, applied(kubeobj.FieldManager, t0.Add(3*time.Second))), obj("web", t0, applied(kubeobj.FieldManager, t0.Add(4*time.Second))))
	logged(0, "the echo of the last write")
	// A write refused with an answer never landed: nothing to wait for.
	m.beginWrite(key)
	m.endWrite(key, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "web", errors.New("changed")))
	logged(0, "a refused write")
	// Someone else's write that does not touch our entry.
	other := mfEntry("kubectl-edit", "", `{"f:data":{"f:b":{}}}`)
	h.OnUpdate(obj("web", t0, applied(kubeobj.FieldManager, t0.Add(4*time.Second))), obj("web", t0, applied(kubeobj.FieldManager, t0.Add(4*time.Second)), other))
	// A write that failed without an answer may have landed.
	m.beginWrite(key)
	m.endWrite(key, nil, errors.New("connection reset"))
	logged(1, "a write that may have landed")
	h.OnUpdate(obj("web", t0, applied(kubeobj.FieldManager, t0.Add(4*time.Second))), obj("web", t0, applied(kubeobj.FieldManager, t0.Add(5*time.Second))))
	logged(0, "the change a write without an answer is taken for")
	// An object whose label was removed and restored.
	back := obj("back", t0, applied(kubeobj.FieldManager, t0))
	m.trackGone(hub.KindConfigMap, hub.EventDeleted, back)
	h.OnAdd(back, false)
	if got := seen(); got != 0 {
		t.Fatalf("same-id writes = %v after only our own writes", got)
	}
	if _, err := m.ListOwned(t.Context()); err != nil {
		t.Fatalf("ListOwned: %v", err)
	}

	// Another hub with our id writes the object.
	h.OnUpdate(obj("web", t0, applied(kubeobj.FieldManager, t0.Add(5*time.Second))), obj("web", t0, applied(kubeobj.FieldManager, t0.Add(9*time.Second))))
	if got := seen(); got != 1 {
		t.Fatalf("same-id writes = %v, want 1", got)
	}
	// ... and creates one.
	created := t0.Add(time.Hour)
	h.OnAdd(obj("new", created, applied(kubeobj.FieldManager, created)), false)
	if got := seen(); got != 2 {
		t.Fatalf("same-id writes = %v, want 2", got)
	}
	_, err = m.ListOwned(t.Context())
	if !errors.Is(err, hub.ErrOwnedByOther) || !strings.Contains(err.Error(), "configmaps shop/web") {
		t.Fatalf("ListOwned after a same-id write: %v, want a refusal naming the object", err)
	}
}

// Replicas of one hub share its id and field manager: a write another
// replica made (the owner before a takeover) is not another hub.
func TestSameIDWriterIgnoredForReplicas(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	api := newFakeAPI(t)
	m, met := fakeManager(api, hub.DefaultHubID)
	m.cfg.Replicated = true
	info, err := kindOf(hub.KindConfigMap)
	if err != nil {
		t.Fatal(err)
	}
	shared := &cacheShared{cluster: "c1", namespace: "shop", kind: hub.KindConfigMap, info: info,
		managedBy: kubeobj.DefaultManagedBy, hubID: hub.DefaultHubID, fieldManager: m.fieldManager}
	m.informers[informerKey{namespace: "shop", kind: hub.KindConfigMap}] = &informerState{
		informer: syncedInformer(t, shared), synced: true}
	h := m.handler(hub.KindConfigMap).(cache.ResourceEventHandlerDetailedFuncs)
	obj := func(at time.Time) *cachedObject {
		cm := configMap("web", hub.DefaultHubID, applied(kubeobj.FieldManager, at))
		cm.CreationTimestamp = metav1.NewTime(t0)
		c, err := shared.compact(cm)
		if err != nil {
			t.Fatal(err)
		}
		return c.(*cachedObject)
	}
	h.OnAdd(obj(t0), true)
	h.OnUpdate(obj(t0), obj(t0.Add(9*time.Second))) // written by another replica
	if got := testutil.ToFloat64(met.sameIDWrites.WithLabelValues("c1")); got != 0 {
		t.Fatalf("same-id writes = %v for a replicated hub, want 0", got)
	}
	if _, err := m.ListOwned(t.Context()); err != nil {
		t.Fatalf("ListOwned: %v", err)
	}
}

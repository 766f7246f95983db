package clusters

import (
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/pack"
)

func mfEntry(manager, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		Time: &metav1.Time{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, FieldsType: "FieldsV1",
		Subresource: subresource, FieldsV1: metav1.NewFieldsV1(fields)}
}

// TestCompactManagedFields: our own entries, status-subresource entries and
// status-only entries go; other managers' spec and metadata entries
// (kubectl scale's scale subresource included) stay.
func TestCompactManagedFields(t *testing.T) {
	ours := mfEntry(kubeobj.FieldManager, "", `{"f:spec":{"f:replicas":{}}}`)
	ours.Operation = metav1.ManagedFieldsOperationApply
	edit := mfEntry("kubectl-edit", "", `{"f:spec":{"f:template":{}}}`)
	scale := mfEntry("kubectl", "scale", `{"f:spec":{"f:replicas":{}}}`)
	kcmStatus := mfEntry("kube-controller-manager", "status", `{"f:status":{"f:replicas":{}}}`)
	kcmMeta := mfEntry("kube-controller-manager", "", `{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}}}}`)
	oldStatus := mfEntry("old-controller", "", `{"f:status":{"f:ready":{}}}`)
	mixed := mfEntry("mixed", "", `{"f:metadata":{"f:labels":{}},"f:status":{"f:ready":{}}}`)
	for _, tc := range []struct {
		name string
		in   []metav1.ManagedFieldsEntry
		want []metav1.ManagedFieldsEntry
	}{
		{"none", nil, nil},
		{"only ours", []metav1.ManagedFieldsEntry{ours}, nil},
		{"ours and status", []metav1.ManagedFieldsEntry{ours, kcmStatus, oldStatus}, nil},
		{"others kept", []metav1.ManagedFieldsEntry{ours, edit, kcmStatus, kcmMeta, scale}, []metav1.ManagedFieldsEntry{edit, kcmMeta, scale}},
		{"spec and status", []metav1.ManagedFieldsEntry{mixed}, []metav1.ManagedFieldsEntry{mixed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := compactManagedFields(tc.in, kubeobj.FieldManager); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("kept %v, want %v", managers(got), managers(tc.want))
			}
		})
	}
}

func managers(es []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Manager+"/"+e.Subresource)
	}
	return out
}

// TestCompactRoundTrip: the compact form decodes to the object it was built
// from, minus what drift detection never reads (status, the last-applied
// annotation, our own and status managedFields entries), with the identity
// fields and ownership marks put back, usual or not; its metadata accessor
// keys it as the object; the transform passes compact objects and tombstones
// through unchanged.
func TestCompactRoundTrip(t *testing.T) {
	id := func(name string, kind hub.Kind) string { return hub.NewNodeID("c1", "shop", name, kind).String() }
	edit := mfEntry("kubectl-edit", "", `{"f:spec":{"f:template":{}}}`)
	ours := mfEntry(kubeobj.FieldManager, "", `{"f:spec":{}}`)
	status := mfEntry("kube-controller-manager", "status", `{"f:status":{}}`)
	deletedAt := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	meta := func(name string, kind hub.Kind, labels, annots map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name), ResourceVersion: "42", Generation: 3,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
			Labels:            labels, Annotations: annots, Finalizers: []string{"example.com/keep"},
			ManagedFields: []metav1.ManagedFieldsEntry{ours, edit, status}}
	}
	usual := func(name string, kind hub.Kind) (map[string]string, map[string]string) {
		return map[string]string{kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy, "app": name},
			map[string]string{kubeobj.HubAnnotation: "hub-a", kubeobj.NodeIDAnnotation: id(name, kind), lastAppliedAnnotation: "{}", "note": "x"}
	}
	depLabels, depAnnots := usual("web", hub.KindDeployment)
	dep := deployment("shop", "web", nil)
	dep.ObjectMeta = meta("web", hub.KindDeployment, depLabels, depAnnots)
	dep.DeletionTimestamp = &deletedAt
	dep.Status = appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 1, Conditions: []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: progressDeadlineExceeded, Message: "too slow"}}}
	cmLabels, cmAnnots := usual("cfg", hub.KindConfigMap)
	cm := &corev1.ConfigMap{ObjectMeta: meta("cfg", hub.KindConfigMap, cmLabels, cmAnnots), Data: map[string]string{"a": "1"}}
	// Marks that are not the usual ones: another hub, a node-id that is not
	// the derived one, another managed-by value.
	odd := &corev1.ConfigMap{ObjectMeta: meta("odd", hub.KindConfigMap,
		map[string]string{kubeobj.ManagedByLabel: "someone-else"},
		map[string]string{kubeobj.HubAnnotation: "hub-b", kubeobj.NodeIDAnnotation: "c1:shop/acme:eu/odd:configmap"}), Data: map[string]string{"b": "2"}}
	svc := &corev1.Service{ObjectMeta: meta("svc", hub.KindService, nil, nil),
		Spec:   corev1.ServiceSpec{Selector: map[string]string{"app": "svc"}, Ports: []corev1.ServicePort{{Port: 80}}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "10.0.0.1"}}}}}

	// Packed (one dictionary per kind, shared: odd packs against cm) and
	// not (no dictionaries).
	for _, dicts := range []*pack.Dicts[hub.Kind]{{}, nil} {
		for _, tc := range []compactCase{
			{hub.KindDeployment, dep, &hub.Progress{Ready: 1, Desired: 1, Stuck: progressDeadlineExceeded + ": too slow"}, false},
			{hub.KindConfigMap, cm, nil, false},
			{hub.KindConfigMap, odd, nil, true},
			{hub.KindService, svc, nil, false},
		} {
			t.Run(fmt.Sprintf("%s packed %v", tc.obj.GetName(), dicts != nil), func(t *testing.T) {
				tc.obj = tc.obj.DeepCopyObject().(protoObject) // compact changes it
				compactRoundTrip(t, tc, dicts, edit)
			})
		}
	}
}

// compactCase is a case of TestCompactRoundTrip: an object of a kind, its
// expected progress and whether its ownership marks are unusual.
type compactCase struct {
	kind     hub.Kind
	obj      protoObject
	progress *hub.Progress
	unusual  bool
}

// compactRoundTrip checks one case of TestCompactRoundTrip; edit is the
// managedFields entry the compact form keeps.
func compactRoundTrip(t *testing.T, tc compactCase, dicts *pack.Dicts[hub.Kind], edit metav1.ManagedFieldsEntry) {
	t.Helper()
	info, err := kindOf(tc.kind)
	if err != nil {
		t.Fatal(err)
	}
	shared := &cacheShared{cluster: "c1", namespace: "shop", kind: tc.kind, info: info, managedBy: kubeobj.DefaultManagedBy, hubID: "hub-a", fieldManager: kubeobj.FieldManager, dicts: dicts}
	// What the decoded object must be: the original, minus what
	// the compact form drops.
	want := tc.obj.DeepCopyObject().(protoObject)
	if info.dropStatus != nil {
		info.dropStatus(want)
	}
	want.SetManagedFields([]metav1.ManagedFieldsEntry{edit})
	annots := want.GetAnnotations()
	delete(annots, lastAppliedAnnotation)
	want.SetAnnotations(annots)

	out, err := shared.compact(tc.obj)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := out.(*cachedObject)
	if !ok {
		t.Fatalf("transform returned %T", out)
	}
	if (c.dict != nil) != (dicts != nil) {
		t.Errorf("packed %v with dictionaries %v", c.dict != nil, dicts != nil)
	}
	if (c.unusual != nil) != tc.unusual {
		t.Errorf("unusual marks = %+v, want unusual %v", c.unusual, tc.unusual)
	}
	if !reflect.DeepEqual(c.progress, tc.progress) {
		t.Errorf("progress = %+v, want %+v", c.progress, tc.progress)
	}
	got, err := c.object()
	if err != nil {
		t.Fatal(err)
	}
	// Semantic: proto leaves empty collections empty, not nil.
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", got, want)
	}
	// The informer's key functions and our handlers see the
	// identity and the ownership marks.
	if key, err := cache.MetaNamespaceKeyFunc(c); err != nil || key != "shop/"+want.GetName() {
		t.Errorf("key = %q, %v", key, err)
	}
	m := c.GetObjectMeta()
	if m.GetResourceVersion() != "42" || m.GetUID() != want.GetUID() || m.GetGeneration() != 3 ||
		!reflect.DeepEqual(m.GetDeletionTimestamp(), want.GetDeletionTimestamp()) {
		t.Errorf("meta = %+v", m)
	}
	for _, k := range ownershipLabelKeys {
		if m.GetLabels()[k] != want.GetLabels()[k] {
			t.Errorf("label %s = %q, want %q", k, m.GetLabels()[k], want.GetLabels()[k])
		}
	}
	for _, k := range ownershipAnnotationKeys {
		if m.GetAnnotations()[k] != want.GetAnnotations()[k] {
			t.Errorf("annotation %s = %q, want %q", k, m.GetAnnotations()[k], want.GetAnnotations()[k])
		}
	}
	if NodeIDFor("c1", tc.kind, m) != NodeIDFor("c1", tc.kind, want) {
		t.Errorf("NodeID %s, want %s", NodeIDFor("c1", tc.kind, m), NodeIDFor("c1", tc.kind, want))
	}
	// Compact objects and tombstones pass the transform unchanged.
	if again, err := shared.compact(c); err != nil || again != any(c) {
		t.Errorf("compact of a compact object = %v, %v", again, err)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "shop/x", Obj: c}
	if again, err := shared.compact(tomb); err != nil || again != any(tomb) {
		t.Errorf("compact of a tombstone = %v, %v", again, err)
	}
}

// TestCompactJSONManagedFields: a dynamic informer's object has its
// managedFields cut on its raw entries to what compactManagedFields keeps
// of the typed entries, and the same writers found.
func TestCompactJSONManagedFields(t *testing.T) {
	at := func(sec int) *metav1.Time { return &metav1.Time{Time: time.Date(2026, 1, 2, 3, 4, sec, 0, time.UTC)} }
	ours := mfEntry(kubeobj.FieldManager, "", `{"f:spec":{"f:size":{}}}`)
	ours.Operation, ours.Time = metav1.ManagedFieldsOperationApply, at(9)
	oursOld := mfEntry(kubeobj.FieldManager, "", `{"f:metadata":{"f:labels":{}}}`)
	oursOld.Time = at(7)
	edit := mfEntry("kubectl-edit", "", `{"f:spec":{"f:color":{}}}`)
	status := mfEntry("controller", "status", `{"f:status":{"f:ready":{}}}`)
	statusOnly := mfEntry("old-controller", "", `{"f:status":{"f:ready":{}}}`)
	mixed := mfEntry("mixed", "", `{"f:metadata":{"f:labels":{}},"f:status":{"f:ready":{}}}`)
	otherHub := mfEntry(kubeobj.FieldManagerFor("hub-b"), "", `{"f:spec":{}}`)
	noTime := mfEntry("no-time", "", `{"f:spec":{}}`)
	noTime.Time = nil
	for _, tc := range []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
	}{
		{"none", nil},
		{"only ours", []metav1.ManagedFieldsEntry{ours, oursOld}},
		{"all dropped", []metav1.ManagedFieldsEntry{ours, status, statusOnly}},
		{"some kept", []metav1.ManagedFieldsEntry{ours, edit, status, mixed, statusOnly, noTime}},
		{"none dropped", []metav1.ManagedFieldsEntry{edit, mixed}},
		{"another hub", []metav1.ManagedFieldsEntry{ours, otherHub, edit}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := widget("ns", 1)
			u.SetManagedFields(tc.entries)
			wantOwn, wantOther := writers(u.GetManagedFields(), kubeobj.FieldManager)
			want := compactManagedFields(u.GetManagedFields(), kubeobj.FieldManager)
			o := &jsonObject{Unstructured: *u}
			own, other := o.compactManagedFields(kubeobj.FieldManager)
			if own != wantOwn || other != wantOther {
				t.Errorf("writers %d %q, want %d %q", own, other, wantOwn, wantOther)
			}
			if got := o.GetManagedFields(); !equality.Semantic.DeepEqual(got, want) && (len(got) > 0 || len(want) > 0) {
				t.Errorf("kept %v, want %v", managers(got), managers(want))
			}
			if _, found, _ := unstructured.NestedFieldNoCopy(o.Object, "metadata", "managedFields"); found != (len(want) > 0) {
				t.Errorf("managedFields present %v with %d kept", found, len(want))
			}
		})
	}
}

// TestCachedProgressIsShared: Deployments with the same rollout progress
// share one record in the cache, a stuck one keeps its own, an informer
// interns at most maxInternedProgress values, and a read hands out a copy,
// so a caller changing it changes no other object's.
func TestCachedProgressIsShared(t *testing.T) {
	info, err := kindOf(hub.KindDeployment)
	if err != nil {
		t.Fatal(err)
	}
	shared := &cacheShared{cluster: "c1", namespace: "shop", kind: hub.KindDeployment, info: info, managedBy: kubeobj.DefaultManagedBy, hubID: "hub-a", fieldManager: kubeobj.FieldManager}
	cached := func(name string, ready int32, stuck bool) *cachedObject {
		t.Helper()
		d := deployment("shop", name, labelled(nil))
		d.Status.ReadyReplicas = ready
		if stuck {
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: progressDeadlineExceeded, Message: "too slow"}}
		}
		out, err := shared.compact(d)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*cachedObject)
	}
	a, b := cached("a", 1, false), cached("b", 1, false)
	if a.progress == nil || a.progress != b.progress || *a.progress != (hub.Progress{Ready: 1, Desired: 1}) {
		t.Fatalf("progress of two alike Deployments: %p %+v and %p %+v, want one shared record", a.progress, a.progress, b.progress, b.progress)
	}
	if c := cached("c", 0, false); c.progress == a.progress || c.progress.Ready != 0 {
		t.Fatalf("another progress value shares %+v", c.progress)
	}
	s1, s2 := cached("s1", 0, true), cached("s2", 0, true)
	if s1.progress == s2.progress || s1.progress.Stuck == "" {
		t.Fatalf("stuck progress %p %+v and %p: want a record each", s1.progress, s1.progress, s2.progress)
	}
	for i := range maxInternedProgress + 10 {
		cached(fmt.Sprintf("n%d", i), int32(i+2), false)
	}
	if n := len(shared.progresses); n != maxInternedProgress {
		t.Fatalf("interned %d progress values, want at most %d", n, maxInternedProgress)
	}

	// A read's progress is the caller's own.
	m, _ := fakeManager(newFakeAPI(t), "hub-a")
	m.informers[informerKey{namespace: "shop", kind: hub.KindDeployment}] = &informerState{informer: syncedInformer(t, shared), synced: true}
	for _, c := range []*cachedObject{a, b} {
		if err := m.informers[informerKey{namespace: "shop", kind: hub.KindDeployment}].informer.GetIndexer().Add(c); err != nil {
			t.Fatal(err)
		}
	}
	st, err := m.ReadState(t.Context(), hub.NodeSpec{ID: hub.NewNodeID("c1", "shop", "a", hub.KindDeployment), Namespace: "shop", Name: "a", Kind: hub.KindDeployment}, false)
	if err != nil || st.Progress == nil || st.Fresh {
		t.Fatalf("cached read: %+v, %v", st, err)
	}
	st.Progress.Ready = 99
	if b.progress.Ready != 1 {
		t.Fatalf("changing a read's progress changed the cache's: %+v", b.progress)
	}
}

// TestCachedMetaLazy checks that a cached object's metadata builds its
// ownership marks only when asked for, and that a Set on one copy stays in
// that copy.
func TestCachedMetaLazy(t *testing.T) {
	info, err := kindOf(hub.KindDeployment)
	if err != nil {
		t.Fatal(err)
	}
	shared := &cacheShared{cluster: "c1", namespace: "shop", kind: hub.KindDeployment, info: info, managedBy: kubeobj.DefaultManagedBy, hubID: "hub-a", fieldManager: kubeobj.FieldManager}
	out, err := shared.compact(sampleObject(string(hub.KindDeployment), 3))
	if err != nil {
		t.Fatal(err)
	}
	c := out.(*cachedObject)
	m := c.GetObjectMeta().(*cachedMeta)
	if key, err := cache.MetaNamespaceKeyFunc(c); err != nil || key != "shop/app-3" {
		t.Errorf("key = %q, %v", key, err)
	}
	if ev, ok := eventFor("c1", hub.KindDeployment, hub.EventUpdated, c, time.Now()); !ok || ev.ID != hub.NewNodeID("c1", "shop", "app-3", hub.KindDeployment) || ev.ResourceVersion != "123459" {
		t.Errorf("event = %+v, %v", ev, ok)
	}
	_ = m.GetName() + m.GetNamespace() + m.GetResourceVersion()
	if m.marked || m.Labels != nil || m.Annotations != nil {
		t.Fatalf("marks built before anyone asked: %+v", m)
	}
	if got := m.GetLabels()[kubeobj.ManagedByLabel]; got != kubeobj.DefaultManagedBy {
		t.Errorf("managed-by label = %q", got)
	}
	if got := m.GetAnnotations()[kubeobj.NodeIDAnnotation]; got != "c1:shop/app-3:deployment" {
		t.Errorf("node-id annotation = %q", got)
	}
	m.SetAnnotations(nil)
	m.SetLabels(map[string]string{"x": "y"})
	if m.GetAnnotations() != nil || m.GetLabels()["x"] != "y" {
		t.Errorf("after Set: labels %v, annotations %v", m.GetLabels(), m.GetAnnotations())
	}
	fresh := c.GetObjectMeta()
	if fresh.GetLabels()["x"] != "" || fresh.GetAnnotations()[kubeobj.HubAnnotation] != "hub-a" {
		t.Errorf("a Set on one copy reached another: labels %v, annotations %v", fresh.GetLabels(), fresh.GetAnnotations())
	}
	// A Set before any Get is kept too.
	other := c.GetObjectMeta()
	other.SetLabels(nil)
	if other.GetLabels() != nil {
		t.Errorf("labels after SetLabels(nil) = %v", other.GetLabels())
	}
}

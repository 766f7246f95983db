package clusters

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/driftwatch/driftwatch/hub"
)

// TestKindTable: every managed kind has a complete entry whose GVK, resource,
// informer and typed client agree with each other; nothing else is in the
// table.
func TestKindTable(t *testing.T) {
	client, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range hub.Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			info, err := kindOf(kind)
			if err != nil {
				t.Fatal(err)
			}
			if info.gvk.Kind == "" || info.gvk.Version == "" {
				t.Fatalf("gvk = %v", info.gvk)
			}
			if strings.ToLower(info.gvk.Kind) != string(kind) {
				t.Errorf("gvk kind %s does not match %s", info.gvk.Kind, kind)
			}
			if plural, _ := meta.UnsafeGuessKindToResource(info.gvk); plural.Resource != info.resource {
				t.Errorf("resource = %q, want %q", info.resource, plural.Resource)
			}
			if resourceOf(kind) != info.resource || (informerKey{kind: kind}).resource() != info.resource {
				t.Errorf("resourceOf(%s) = %q", kind, resourceOf(kind))
			}
			if info.newInformer == nil || info.newInformer(client, "ns", nil) == nil {
				t.Fatal("no informer")
			}
			if info.newObject == nil || info.newObject().GetObjectKind() == nil {
				t.Fatal("no typed object")
			}
			if got, _, err := scheme.Scheme.ObjectKinds(info.newObject()); err != nil || len(got) == 0 || got[0] != info.gvk {
				t.Fatalf("newObject is %v, want %v (%v)", got, info.gvk, err)
			}
			if info.client == nil || info.client(client, "ns") == nil {
				t.Fatal("no typed client")
			}
			// The GVK names a registered typed object, and conversion sets it
			// without touching the input.
			obj, err := scheme.Scheme.New(info.gvk)
			if err != nil {
				t.Fatalf("gvk %v is not a registered type: %v", info.gvk, err)
			}
			acc, _ := meta.Accessor(obj)
			acc.SetName("x")
			acc.SetLabels(map[string]string{"a": "b"})
			u, err := info.toUnstructured(obj)
			if err != nil {
				t.Fatal(err)
			}
			if u.GroupVersionKind() != info.gvk || u.GetName() != "x" {
				t.Fatalf("converted %v %q", u.GroupVersionKind(), u.GetName())
			}
			u.SetLabels(map[string]string{"c": "d"}) // a copy: obj keeps its labels
			if acc.GetLabels()["a"] != "b" || obj.GetObjectKind().GroupVersionKind() != (schema.GroupVersionKind{}) {
				t.Fatal("toUnstructured modified its input")
			}
		})
	}
	if len(kindTable) != len(hub.Kinds()) {
		t.Errorf("kind table has %d entries, hub.Kinds() %d", len(kindTable), len(hub.Kinds()))
	}
	if _, err := kindOf("widget"); err == nil || !strings.Contains(err.Error(), `"widget"`) {
		t.Errorf("kindOf(widget) error = %v", err)
	}
	if resourceOf("widget") != "widget" {
		t.Errorf("resourceOf(widget) = %q", resourceOf("widget"))
	}
}

func TestProgress(t *testing.T) {
	dep := func(replicas *int32, ready int32, conds ...appsv1.DeploymentCondition) *appsv1.Deployment {
		return &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: replicas},
			Status: appsv1.DeploymentStatus{ReadyReplicas: ready, Conditions: conds}}
	}
	progressing := func(status corev1.ConditionStatus, reason, msg string) appsv1.DeploymentCondition {
		return appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: status, Reason: reason, Message: msg}
	}
	tests := []struct {
		name string
		kind hub.Kind
		obj  runtime.Object
		want *hub.Progress
	}{
		{"rolling out", hub.KindDeployment, dep(ptr.To[int32](3), 2, progressing(corev1.ConditionTrue, "ReplicaSetUpdated", "")),
			&hub.Progress{Ready: 2, Desired: 3}},
		{"available", hub.KindDeployment, dep(ptr.To[int32](3), 3,
			appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue},
			progressing(corev1.ConditionTrue, "NewReplicaSetAvailable", "done")),
			&hub.Progress{Ready: 3, Desired: 3}},
		{"replicas default to one", hub.KindDeployment, dep(nil, 0), &hub.Progress{Desired: 1}},
		{"scaled to zero", hub.KindDeployment, dep(ptr.To[int32](0), 0), &hub.Progress{}},
		{"stuck", hub.KindDeployment, dep(ptr.To[int32](2), 0,
			progressing(corev1.ConditionFalse, "ProgressDeadlineExceeded", `ReplicaSet "web-5d8" has timed out progressing.`)),
			&hub.Progress{Desired: 2, Stuck: `ProgressDeadlineExceeded: ReplicaSet "web-5d8" has timed out progressing.`}},
		{"not progressing for another reason", hub.KindDeployment, dep(ptr.To[int32](2), 1, progressing(corev1.ConditionFalse, "Other", "x")),
			&hub.Progress{Ready: 1, Desired: 2}},
		{"unknown progressing status", hub.KindDeployment, dep(ptr.To[int32](2), 1, progressing(corev1.ConditionUnknown, "ProgressDeadlineExceeded", "x")),
			&hub.Progress{Ready: 1, Desired: 2}},
		{"service", hub.KindService, &corev1.Service{}, nil},
		{"configmap", hub.KindConfigMap, &corev1.ConfigMap{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := kindOf(tt.kind)
			if err != nil {
				t.Fatal(err)
			}
			var got *hub.Progress
			if info.progress != nil {
				got = info.progress(tt.obj)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) || (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
				t.Fatalf("progress = %+v, want %+v", got, tt.want)
			}
		})
	}
	if deploymentProgress(&corev1.ConfigMap{}) != nil {
		t.Error("progress of a non-Deployment")
	}
}

func TestBackendErrors(t *testing.T) {
	m := newManager(ClusterConfig{ID: "c1"}, newRecordingSink(), discardLogger(), HealthOptions{}, nil)
	spec := hub.NodeSpec{Namespace: "shop", Name: "web", Kind: hub.KindDeployment}
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	tests := []struct {
		name      string
		err       error
		forbidden bool
		want      []string
	}{
		{"forbidden", apierrors.NewForbidden(gr, "web", errors.New("no")), true,
			[]string{`cluster "c1"`, "forbidden", "apply", "deployments web", `namespace "shop"`}},
		{"conflict", apierrors.NewConflict(gr, "web", errors.New("precondition")), false,
			[]string{`cluster "c1"`, "apply deployments web", `namespace "shop"`}},
		{"not connected", errNotConnected, false, []string{`cluster "c1": apply deployments web in namespace "shop": the cluster's watch manager is restarting (not connected)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := m.callError("apply", spec, tt.err)
			if errors.Is(err, hub.ErrForbidden) != tt.forbidden {
				t.Errorf("errors.Is(ErrForbidden) = %v", !tt.forbidden)
			}
			if restarting := errors.Is(tt.err, errNotConnected); errors.Is(err, hub.ErrRestarting) != restarting {
				t.Errorf("errors.Is(ErrRestarting) = %v, want %v", !restarting, restarting)
			}
			if !errors.Is(err, tt.err) {
				t.Error("the client error does not unwrap")
			}
			if apierrors.IsConflict(tt.err) && !apierrors.IsConflict(err) {
				t.Error("apierrors.IsConflict lost")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	// Calls before Run connected fail clearly.
	ctx := t.Context()
	if _, err := m.ReadState(ctx, spec, false); !errors.Is(err, errNotConnected) {
		t.Errorf("ReadState before connect: %v", err)
	}
	// Any other kind is looked up in the cluster's discovery: not before
	// the manager connected.
	if _, err := m.ReadState(ctx, hub.NodeSpec{Kind: "widget.example.com"}, true); !errors.Is(err, errNotConnected) {
		t.Errorf("ReadState of a generic kind before connect: %v", err)
	}
	if _, err := m.Repair(ctx, spec, hub.State{}, hub.Drift{}); err == nil {
		t.Error("Repair without a desired object")
	}
	if _, err := m.DetectDrift(ctx, spec, hub.State{}); err == nil {
		t.Error("DetectDrift without a desired object")
	}
	if err := m.Delete(ctx, spec, hub.State{}); err != nil {
		t.Errorf("Delete of a missing object: %v", err)
	}
	if err := m.Delete(ctx, spec, hub.State{Exists: true}); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("Delete of an unowned object: %v", err)
	}
}

func TestConflictsAndNamespaceErrors(t *testing.T) {
	conflict := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 409, Reason: metav1.StatusReasonConflict,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{
			{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl-edit" using apps/v1`, Field: ".spec.template.spec.containers[name=\"app\"].image"},
			{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl-scale" using apps/v1`, Field: ".spec.replicas"},
		}}}}
	got := conflictsOf(fmt.Errorf("wrapped: %w", conflict))
	if len(got) != 2 || got[0].Manager != "kubectl-scale" || got[0].Field != "spec.replicas" || got[1].Manager != "kubectl-edit" {
		t.Fatalf("conflicts = %+v", got)
	}
	if got := conflictsOf(errors.New("plain")); len(got) != 1 || got[0].Manager != "plain" {
		t.Fatalf("conflicts of a plain error = %+v", got)
	}
	tests := []struct {
		err  error
		want bool
	}{
		{apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "shop"), true},
		{apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web"), false},
		{errors.New(`namespaces "shop" not found`), false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := isNamespaceNotFound(tt.err); got != tt.want {
			t.Errorf("isNamespaceNotFound(%v) = %v", tt.err, got)
		}
	}
}

// TestTrackGone: the UID of an object the watch reported deleted is kept
// until a Repair takes it or the object is back in the cache; the record is
// bounded.
func TestTrackGone(t *testing.T) {
	m := newManager(ClusterConfig{ID: "c1"}, newRecordingSink(), discardLogger(), HealthOptions{}, nil)
	cm := func(name, uid string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(uid)}}
	}
	key := func(name string) goneKey { return goneKey{kind: hub.KindConfigMap, namespace: "ns", name: name} }
	steps := []struct {
		name    string
		typ     hub.EventType
		obj     any
		take    string // the object to take after the event, if any
		want    string // the UID taken
		records int    // records left after the step
	}{
		{name: "an added object is not recorded", typ: hub.EventAdded, obj: cm("a", "u1"), take: "a"},
		{name: "a delete is recorded and taken once", typ: hub.EventDeleted, obj: cm("a", "u1"), take: "a", want: "u1"},
		{name: "taken already", typ: hub.EventUpdated, obj: cm("z", "u0"), take: "a"},
		{name: "a tombstone is unwrapped", typ: hub.EventDeleted, obj: cacheTombstone("ns/b", cm("b", "u2")), take: "b", want: "u2"},
		{name: "an empty tombstone records nothing", typ: hub.EventDeleted, obj: cacheTombstone("ns/c", nil)},
		{name: "no UID, no record", typ: hub.EventDeleted, obj: cm("d", "")},
		{name: "a delete is kept until used", typ: hub.EventDeleted, obj: cm("e", "u4"), records: 1},
		{name: "the object's return drops the record", typ: hub.EventAdded, obj: cm("e", "u4"), take: "e"},
		{name: "another delete", typ: hub.EventDeleted, obj: cm("f", "u5"), records: 1},
		{name: "an update drops it too", typ: hub.EventUpdated, obj: cm("f", "u5"), take: "f"},
		{name: "not an object", typ: hub.EventDeleted, obj: "junk"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			m.trackGone(hub.KindConfigMap, s.typ, s.obj)
			if s.take != "" {
				if got := m.takeGone(key(s.take)); got != s.want {
					t.Fatalf("takeGone = %q, want %q", got, s.want)
				}
			}
			if len(m.gone) != s.records {
				t.Fatalf("%d records, want %d: %v", len(m.gone), s.records, m.gone)
			}
		})
	}
	// A failed Repair puts the UID back unless a newer record exists.
	m.restoreGone(key("g"), "u6")
	m.restoreGone(key("g"), "u-old")
	m.restoreGone(key("h"), "")
	if got := m.takeGone(key("g")); got != "u6" || len(m.gone) != 0 {
		t.Fatalf("restored = %q, records %v", got, m.gone)
	}
	// Bounded: the oldest record goes first.
	for i := range maxGone + 10 {
		m.trackGone(hub.KindConfigMap, hub.EventDeleted, cm(fmt.Sprint(i), fmt.Sprint("u", i)))
	}
	if len(m.gone) != maxGone {
		t.Fatalf("%d records, want %d", len(m.gone), maxGone)
	}
	if m.takeGone(key("9")) != "" || m.takeGone(key("10")) != "u10" || m.takeGone(key(fmt.Sprint(maxGone+9))) == "" {
		t.Fatal("eviction did not drop the oldest records")
	}
}

package clusters

import (
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/hub"
)

func TestGVKOf(t *testing.T) {
	for _, tc := range []struct {
		spec hub.NodeSpec
		want schema.GroupVersionKind
	}{
		{hub.NodeSpec{Kind: "statefulset.apps", Body: []byte(`{"apiVersion":"apps/v1","kind":"StatefulSet"}`)}, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}},
		{hub.NodeSpec{Kind: "statefulset.apps"}, schema.GroupVersionKind{Group: "apps", Kind: "statefulset"}},
		{hub.NodeSpec{Kind: "namespace"}, schema.GroupVersionKind{Kind: "namespace"}},
		{hub.NodeSpec{Kind: "widget.example.com", Body: []byte(`not json`)}, schema.GroupVersionKind{Group: "example.com", Kind: "widget"}},
	} {
		if got := gvkOf(tc.spec); got != tc.want {
			t.Errorf("gvkOf(%s, %s) = %v, want %v", tc.spec.Kind, tc.spec.Body, got, tc.want)
		}
	}
}

// A dynamic informer's object is kept compact as JSON: the identity and
// ownership marks apart, status, type meta and our managedFields dropped;
// decoded back it is the object again, integers as int64.
func TestCompactGenericObject(t *testing.T) {
	mapping := &meta.RESTMapping{
		Resource:         schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"},
		GroupVersionKind: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"},
		Scope:            meta.RESTScopeNamespace,
	}
	info := newGenericKind(mapping, nil)
	id := hub.NewNodeID("c1", "ns", "gear", "widget.example.com")
	s := &cacheShared{cluster: "c1", namespace: "ns", kind: "widget.example.com", info: info, managedBy: kubeobj.DefaultManagedBy, fieldManager: kubeobj.FieldManager}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{
			"name": "gear", "namespace": "ns", "uid": "u1", "resourceVersion": "7", "generation": int64(2),
			"labels":      map[string]any{kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy, "team": "a"},
			"annotations": map[string]any{kubeobj.NodeIDAnnotation: id.String()},
		},
		"spec":   map[string]any{"size": int64(3), "parts": []any{map[string]any{"name": "axle"}}},
		"status": map[string]any{"ready": true},
	}}
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: kubeobj.FieldManager, Operation: metav1.ManagedFieldsOperationApply}})
	out, err := s.compact(u)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := out.(*cachedObject)
	if !ok {
		t.Fatalf("compact returned %T", out)
	}
	obj, err := c.object()
	if err != nil {
		t.Fatal(err)
	}
	live, err := info.toUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	if live.GetAPIVersion() != "example.com/v1" || live.GetKind() != "Widget" || live.GetName() != "gear" || live.GetNamespace() != "ns" ||
		live.GetResourceVersion() != "7" || live.GetLabels()["team"] != "a" || live.GetAnnotations()[kubeobj.NodeIDAnnotation] != id.String() {
		t.Errorf("decoded %v", live.Object)
	}
	if size, _, _ := unstructured.NestedInt64(live.Object, "spec", "size"); size != 3 {
		t.Errorf("spec.size %v", live.Object["spec"])
	}
	if _, ok := live.Object["status"]; ok {
		t.Error("status kept")
	}
	if len(live.GetManagedFields()) != 0 {
		t.Error("our managedFields kept")
	}
}

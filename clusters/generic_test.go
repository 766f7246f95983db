package clusters

import (
	"errors"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/pack"
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
	for _, dicts := range []*pack.Dicts[hub.Kind]{{}, nil} {
		t.Run(fmt.Sprintf("packed %v", dicts != nil), func(t *testing.T) { compactGeneric(t, dicts) })
	}
}

func compactGeneric(t *testing.T, dicts *pack.Dicts[hub.Kind]) {
	mapping := &meta.RESTMapping{
		Resource:         schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"},
		GroupVersionKind: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"},
		Scope:            meta.RESTScopeNamespace,
	}
	info := newGenericKind(mapping, nil)
	id := hub.NewNodeID("c1", "ns", "gear", "widget.example.com")
	s := &cacheShared{cluster: "c1", namespace: "ns", kind: "widget.example.com", info: info, managedBy: kubeobj.DefaultManagedBy, fieldManager: kubeobj.FieldManager, dicts: dicts}
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

// widget returns the i-th object of a family of custom resources as a
// dynamic informer hands it over.
func widget(ns string, i int) *unstructured.Unstructured {
	name := fmt.Sprintf("gear-%05d", i)
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{
			"name": name, "namespace": ns, "uid": fmt.Sprintf("uid-%d", i), "resourceVersion": fmt.Sprint(100 + i),
			"creationTimestamp": "2026-12-01T21:46:43Z",
			"labels":            map[string]any{kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy, "app": name, kubeobj.ApplicationLabel: "widgets"},
			"annotations":       map[string]any{kubeobj.NodeIDAnnotation: hub.NewNodeID("c1", ns, name, "widget.example.com").String()},
		},
		"spec": map[string]any{"size": int64(1 + i%5), "color": "blue", "parts": []any{
			map[string]any{"name": "axle", "count": int64(1)}, map[string]any{"name": "gear", "count": int64(1 + i%3)}}},
	}}
}

// TestCompactPacked: the objects of one kind pack against the dictionary
// of the first (shared by the informers of every namespace) to a fraction
// of their JSON, and decode back; a damaged body is an error of object(),
// never a panic.
func TestCompactPacked(t *testing.T) {
	info := newGenericKind(&meta.RESTMapping{
		Resource:         schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"},
		GroupVersionKind: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"},
		Scope:            meta.RESTScopeNamespace,
	}, nil)
	dicts := &pack.Dicts[hub.Kind]{}
	shared := func(ns string) *cacheShared {
		return &cacheShared{cluster: "c1", namespace: ns, kind: "widget.example.com", info: info, managedBy: kubeobj.DefaultManagedBy, fieldManager: kubeobj.FieldManager, dicts: dicts}
	}
	a, b := shared("ns"), shared("other")
	var first *pack.Dict
	for i := range 50 {
		s := a
		if i%2 == 1 {
			s = b
		}
		u := widget(s.namespace, i)
		out, err := s.compact(u)
		if err != nil {
			t.Fatal(err)
		}
		c := out.(*cachedObject)
		if first == nil {
			first = c.dict
		}
		if c.dict == nil || c.dict != first {
			t.Fatalf("object %d: dictionary %p, the kind's is %p", i, c.dict, first)
		}
		raw, err := c.dict.Unpack([]byte(c.body()))
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && len(c.body())*4 > len(raw) {
			t.Errorf("object %d: %d bytes of JSON packed to %d", i, len(raw), len(c.body()))
		}
		obj, err := c.object()
		if err != nil {
			t.Fatal(err)
		}
		live, err := info.toUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		want := widget(s.namespace, i)
		if live.GetName() != want.GetName() || live.GetNamespace() != s.namespace || live.GetUID() != want.GetUID() ||
			!reflect.DeepEqual(live.Object["spec"], want.Object["spec"]) || live.GetLabels()["app"] != want.GetName() {
			t.Errorf("object %d decoded as %v", i, live.Object)
		}
	}

	out, err := a.compact(widget("ns", 99))
	if err != nil {
		t.Fatal(err)
	}
	c := out.(*cachedObject)
	packed := []byte(c.body())
	for _, body := range [][]byte{packed[:len(packed)/2], {0xff, 0xff, 0xff, 0xff, 0x0f}, []byte(`{"spec":{}}`)} {
		bad := *c
		bad.setData(body)
		if _, err := bad.object(); !errors.Is(err, pack.ErrCorrupt) {
			t.Errorf("body %q: err %v, want pack.ErrCorrupt", body, err)
		}
	}
}

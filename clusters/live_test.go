package clusters

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/driftwatch/driftwatch/hub"
)

func TestLiveStateSplit(t *testing.T) {
	obj := sampleObject(string(hub.KindDeployment), 3).(runtime.Object)
	full, err := kindTable[hub.KindDeployment].toUnstructured(obj.DeepCopyObject())
	if err != nil {
		t.Fatal(err)
	}
	acc, _ := meta.Accessor(obj)
	want := acc.GetManagedFields()

	ls, err := newLiveState(kindTable[hub.KindDeployment], obj)
	if err != nil {
		t.Fatal(err)
	}
	st := hub.State{Exists: true, Live: ls}
	if _, ok, _ := unstructured.NestedSlice(LiveObject(st).Object, "metadata", "managedFields"); ok {
		t.Error("the live content holds managedFields")
	}
	unstructured.RemoveNestedField(full.Object, "metadata", "managedFields")
	if !reflect.DeepEqual(LiveObject(st).Object, full.Object) {
		t.Errorf("the live content differs from the full conversion without managedFields:\n%v\n%v", LiveObject(st).Object, full.Object)
	}
	if got := managedFieldsOf(st); len(got) != 2 || !reflect.DeepEqual(got, want) {
		t.Errorf("managedFieldsOf = %v, want %v", managers(got), managers(want))
	}
	owners, err := ownersOf(st)
	if err != nil || len(owners) != 2 || owners[0].Manager != "driftwatch" || owners[0].Fields == nil {
		t.Errorf("ownersOf = %+v, %v", owners, err)
	}

	// A custom resource keeps its entries in its content.
	w := benchObject(widgetKind, 1).(*unstructured.Unstructured)
	ls, err = newLiveState(kindInfo{gvk: w.GroupVersionKind(), generic: true}, w)
	if err != nil {
		t.Fatal(err)
	}
	st = hub.State{Exists: true, Live: ls}
	if got := managedFieldsOf(st); len(got) != 1 || got[0].Manager != "driftwatch" {
		t.Errorf("custom resource: managedFieldsOf = %v", managers(got))
	}
	if len(LiveObject(st).GetManagedFields()) != 1 {
		t.Error("custom resource: the live content lost its managedFields")
	}
	if LiveObject(st) == w {
		t.Error("custom resource: the live object is the caller's, not a copy")
	}

	// A plain unstructured live object (as tests build states) and none.
	st = hub.State{Exists: true, Live: w}
	if LiveObject(st) != w || len(managedFieldsOf(st)) != 1 {
		t.Error("a plain unstructured live object is not read as one")
	}
	for _, st := range []hub.State{{}, {Live: (*liveState)(nil)}, {Live: "x"}} {
		if LiveObject(st) != nil || managedFieldsOf(st) != nil {
			t.Errorf("state %+v: a live object from nothing", st)
		}
	}
}

// BenchmarkLiveState measures the conversion a classification reads: a
// cached Deployment with our entry and another manager's, as a drift by
// another writer leaves it, converted with its managedFields kept apart
// (split, as ReadState does) and, as the baseline, converted whole.
func BenchmarkLiveState(b *testing.B) {
	kind := kindTable[hub.KindDeployment]
	src := sampleObject(string(hub.KindDeployment), 1).(runtime.Object)
	for _, split := range []bool{true, false} {
		b.Run(map[bool]string{true: "split", false: "whole"}[split], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				obj := src.DeepCopyObject()
				b.StartTimer()
				var err error
				if split {
					_, err = newLiveState(kind, obj)
				} else {
					_, err = kind.toUnstructured(obj)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package clusters

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/driftwatch/driftwatch/hub"
)

// liveState is what a Manager's State holds as its live object
// (hub.State.Live): the object as unstructured content and, for a typed
// kind, its managedFields entries kept apart in their typed form.
//
// Converting a typed object's managedFields to unstructured content parses
// each entry's field set into nested maps: for a Deployment with one entry
// of another manager that is most of the conversion (about 70% of its time
// and half of its garbage, BenchmarkLiveState), on every event the hub
// classifies. Drift classification never reads them; only attribution, an
// ignore rule naming a manager and a repair's taken-over fields do, and
// they read the typed entries (managedFieldsOf).
type liveState struct {
	obj *unstructured.Unstructured
	// managed are the managedFields entries of a typed object, not in
	// obj's content; split says so (a custom resource's entries stay in
	// its content, already unstructured).
	managed []metav1.ManagedFieldsEntry
	split   bool
}

// newLiveState converts obj, a typed object of kind the caller owns (its
// managedFields are moved out of it) or an unstructured one (copied), to a
// liveState.
func newLiveState(kind kindInfo, obj runtime.Object) (*liveState, error) {
	switch obj.(type) {
	case *jsonObject, *unstructured.Unstructured:
		u, err := kind.toUnstructured(obj)
		if err != nil {
			return nil, err
		}
		return &liveState{obj: u}, nil
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	mf := acc.GetManagedFields()
	acc.SetManagedFields(nil)
	u, err := kind.toUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &liveState{obj: u, managed: mf, split: true}, nil
}

// LiveObject returns the live object of a State a Manager's ReadState
// returned, as unstructured content (without the managedFields of a typed
// kind: see managedFieldsOf); nil when the state holds none.
func LiveObject(st hub.State) *unstructured.Unstructured {
	switch l := st.Live.(type) {
	case *liveState:
		if l != nil {
			return l.obj
		}
	case *unstructured.Unstructured:
		return l
	}
	return nil
}

// managedFieldsOf returns the managedFields entries of st's live object
// (those ReadState keeps); nil when it has none.
func managedFieldsOf(st hub.State) []metav1.ManagedFieldsEntry {
	switch l := st.Live.(type) {
	case *liveState:
		if l == nil {
			return nil
		}
		if l.split {
			return l.managed
		}
		return l.obj.GetManagedFields()
	case *unstructured.Unstructured:
		if l != nil {
			return l.GetManagedFields()
		}
	}
	return nil
}

package clusters

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"github.com/driftwatch/driftwatch/hub"
)

// actionRecreate is the repair action of an object deleted to be created
// anew (see recreate).
const actionRecreate = "recreate"

// recreateEvery is the least time between two recreations of one object:
// an object the apiserver refuses again once recreated (a mutating webhook
// that changes an immutable field back, on every create) is not deleted
// over and over; its repair fails instead, saying so.
const recreateEvery = 10 * time.Minute

// immutableFields returns the fields the apiserver refused to change in
// place, when err is such a refusal: a 422 (Invalid) whose causes say a
// field is immutable ("field is immutable", a custom resource's "Value is
// immutable", a Service's "may not change once set") or that updates to a
// part of the object are forbidden (a StatefulSet's spec beyond its
// template, replicas and update strategy, a PersistentVolumeClaim's spec,
// a Pod's). ok is false for any other error.
func immutableFields(err error) (fields []string, ok bool) {
	var se apierrors.APIStatus
	if !errors.As(err, &se) || !apierrors.IsInvalid(err) {
		return nil, false
	}
	st := se.Status()
	if st.Details == nil {
		return nil, false
	}
	for _, c := range st.Details.Causes {
		msg := strings.ToLower(c.Message)
		if strings.Contains(msg, "immutable") || strings.Contains(msg, "may not change once set") ||
			strings.Contains(msg, "updates to") && strings.Contains(msg, "forbidden") ||
			strings.Contains(msg, "updates may not change") {
			if c.Field != "" && !slices.Contains(fields, c.Field) {
				fields = append(fields, c.Field)
			}
			ok = true
		}
	}
	return fields, ok
}

// immutableWhat names the fields of immutableFields for messages.
func immutableWhat(fields []string) string {
	if len(fields) == 0 {
		return "a field it keeps immutable"
	}
	return strings.Join(fields, ", ")
}

// recreateAllowed reports whether spec's desired object allows its
// recreation (kubeobj.RecreateAnnotation).
func recreateAllowed(spec hub.NodeSpec) bool {
	desired, err := kubeobj.Object(spec)
	return err == nil && desired.GetAnnotations()[kubeobj.RecreateAnnotation] == kubeobj.RecreateEnabled
}

// notAllowedToRecreate is the error of a write the apiserver refused as
// changing what (immutableWhat) in place, on an object that does not
// allow its recreation: it says how to allow it.
func (m *Manager) notAllowedToRecreate(spec hub.NodeSpec, what string, applyErr error) error {
	return m.callError("apply", spec, fmt.Errorf("the apiserver refuses to change %s in place; set recreate: true on its source, or annotate the object %s: %s, to let driftwatch delete and recreate it, or delete it yourself: %w",
		what, kubeobj.RecreateAnnotation, kubeobj.RecreateEnabled, applyErr))
}

// recreate answers an apply the apiserver refused because it changes
// fields it keeps immutable (applyErr; see immutableFields). When the
// desired object allows it (kubeobj.RecreateAnnotation) and the live
// object may be deleted (it carries our managed-by label and the NodeID's
// annotation, as for any delete, its pruning is not disabled, and it was
// not recreated within recreateEvery), it deletes the live
// object, the very one the write was classified from (its UID and
// resourceVersion as preconditions), in the foreground, so that its
// dependents (a Deployment's ReplicaSets and Pods, a Job's Pods) are gone
// before it is: the loop then sees it deleting and creates it anew once it
// is gone, through the write gate as any repair. A precondition that meets
// a concurrent change is a conflict (the loop tries again from a fresh
// read). Otherwise the refusal is returned, saying which fields and how to
// allow the recreation.
func (m *Manager) recreate(ctx context.Context, kc kindClient, spec hub.NodeSpec, live *unstructured.Unstructured, fields []string, applyErr error) (hub.RepairResult, error) {
	res := hub.RepairResult{Action: actionRecreate}
	what := immutableWhat(fields)
	if !recreateAllowed(spec) {
		return res, m.notAllowedToRecreate(spec, what, applyErr)
	}
	if live == nil || live.GetUID() == "" {
		return res, m.callError("apply", spec, fmt.Errorf("the apiserver refuses to change %s in place, and the object to recreate was not read: %w", what, applyErr))
	}
	// The marks every delete checks (see Delete): another hub's object
	// was refused before the apply.
	if got := live.GetLabels()[kubeobj.ManagedByLabel]; got != m.cfg.ManagedBy {
		return res, m.callError("apply", spec, fmt.Errorf("the apiserver refuses to change %s in place, and the object does not carry the label %s=%s: not deleted to recreate it: %w",
			what, kubeobj.ManagedByLabel, m.cfg.ManagedBy, applyErr))
	}
	if got := live.GetAnnotations()[kubeobj.NodeIDAnnotation]; got != spec.ID.String() {
		return res, m.callError("apply", spec, fmt.Errorf("the apiserver refuses to change %s in place, and the object's %s annotation is %q, not %q: not deleted to recreate it: %w",
			what, kubeobj.NodeIDAnnotation, got, spec.ID.String(), applyErr))
	}
	if live.GetAnnotations()[kubeobj.PruneAnnotation] == kubeobj.PruneDisabled {
		return res, m.callError("apply", spec, fmt.Errorf("the apiserver refuses to change %s in place, and recreating it would delete it, which its %s annotation %q forbids: delete it yourself: %w",
			what, kubeobj.PruneAnnotation, kubeobj.PruneDisabled, applyErr))
	}
	if last, ok := m.lastRecreated(spec.ID); ok && m.now().Sub(last) < recreateEvery {
		return res, m.callError("apply", spec, fmt.Errorf("the apiserver refuses to change %s in place, and driftwatch recreated the object at %s already: not again within %s (does an admission webhook change the field back?): %w",
			what, last.Format(time.RFC3339), recreateEvery, applyErr))
	}
	uid, rv := live.GetUID(), live.GetResourceVersion()
	pre := metav1.Preconditions{UID: &uid}
	if rv != "" {
		pre.ResourceVersion = &rv
	}
	prop := metav1.DeletePropagationForeground
	err := kc.delete(ctx, spec.Name, metav1.DeleteOptions{PropagationPolicy: &prop, Preconditions: &pre})
	if err != nil && !apierrors.IsNotFound(err) {
		// A precondition that met a concurrent change too: the next
		// pass reads the object again.
		return res, m.callError("delete", spec, fmt.Errorf("to recreate it (the apiserver refuses to change %s in place): %w", what, err))
	}
	m.noteRecreated(spec.ID)
	m.log.Info("deleted to be recreated: the apiserver refuses to change a field it keeps immutable",
		"node", spec.ID.String(), "fields", what, "uid", uid)
	return res, nil
}

// lastRecreated returns when id was last deleted to be recreated, within
// recreateEvery.
func (m *Manager) lastRecreated(id hub.NodeID) (time.Time, bool) {
	m.nsMu.Lock()
	defer m.nsMu.Unlock()
	t, ok := m.recreated[id]
	return t, ok
}

// noteRecreated notes that id was deleted to be recreated now, and forgets
// the notes past recreateEvery.
func (m *Manager) noteRecreated(id hub.NodeID) {
	now := m.now()
	m.nsMu.Lock()
	defer m.nsMu.Unlock()
	if m.recreated == nil {
		m.recreated = make(map[hub.NodeID]time.Time)
	}
	for k, t := range m.recreated {
		if now.Sub(t) >= recreateEvery {
			delete(m.recreated, k)
		}
	}
	m.recreated[id] = now
}

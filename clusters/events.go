package clusters

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/driftwatch/driftwatch/hub"
)

// eventMessageLen bounds the message of a Kubernetes Event the hub writes
// (the apiserver refuses a new-style event's note past 1 kB).
const eventMessageLen = 1000

// EventComponent is the source component and reporting controller of the
// Kubernetes Events the hub writes.
const EventComponent = "driftwatch"

// RecordEvent writes a Kubernetes Event on the managed object id, as a
// controller does, so kubectl describe and the cluster's event exporters
// show it: typ is Normal or Warning, reason a CamelCase word, message one
// line (bounded to 1000 bytes). The object is found in the watch's cache,
// for its UID; one that is not there (gone, or its kind not watched) has
// nothing to carry it: no Event, no error. An event of a cluster-scoped
// object goes to the namespace default, as kubectl looks for it. retry
// says whether another attempt may succeed (not after a refusal: RBAC, a
// namespace being deleted, an invalid event).
func (m *Manager) RecordEvent(ctx context.Context, id hub.NodeID, typ, reason, message string) (retry bool, err error) {
	spec := hub.NodeSpec{ID: id, Namespace: id.Namespace(), Name: id.Name(), Kind: id.Kind}
	st, err := m.ReadState(ctx, spec, false)
	if err != nil {
		return true, err
	}
	live := LiveObject(st)
	if !st.Exists || live == nil {
		return false, nil
	}
	c := m.clientset()
	if c == nil {
		return true, m.callError("record an event on", spec, errNotConnected)
	}
	ns := live.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	now := metav1.NewTime(m.now())
	e := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: live.GetKind(), APIVersion: live.GetAPIVersion(), Namespace: live.GetNamespace(),
			Name: live.GetName(), UID: live.GetUID(), ResourceVersion: live.GetResourceVersion()},
		Type: typ, Reason: reason, Message: oneLine(message, eventMessageLen),
		Source:         corev1.EventSource{Component: EventComponent},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: EventComponent, ReportingInstance: m.cfg.HubID,
	}
	e.Name = fmt.Sprintf("%s.%x", live.GetName(), now.UnixNano())
	// Correlated as a controller's events are (client-go's
	// EventCorrelator): the same event again counts on the first, ten
	// similar ones (same object and reason) within ten minutes become one
	// "(combined from similar events)", and an object gets at most 25 in a
	// burst, then one per five minutes.
	res, err := m.eventCorrelator().EventCorrelate(e)
	if err != nil || res.Skip {
		return false, nil
	}
	events := c.CoreV1().Events(ns)
	var written *corev1.Event
	if res.Event.Count > 1 {
		written, err = events.Patch(ctx, res.Event.Name, types.StrategicMergePatchType, res.Patch, metav1.PatchOptions{})
	}
	if res.Event.Count <= 1 || apierrors.IsNotFound(err) {
		res.Event.ResourceVersion = ""
		written, err = events.Create(ctx, res.Event, metav1.CreateOptions{})
	}
	if err != nil {
		refused := apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsNotFound(err) || apierrors.IsBadRequest(err) || apierrors.IsAlreadyExists(err)
		return !refused, m.resourceError("create", "events", ns, err)
	}
	m.eventCorrelator().UpdateState(written)
	return false, nil
}

// eventCorrelator returns the manager's event correlator, made on first
// use (a hub that writes no events keeps none).
func (m *Manager) eventCorrelator() *record.EventCorrelator {
	m.eventsOnce.Do(func() {
		m.events = record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{LRUCacheSize: eventCacheSize})
	})
	return m.events
}

// eventCacheSize bounds what a manager's event correlator remembers (its
// three caches, by event).
const eventCacheSize = 1024

package clusters

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
)

// namespaceCheck is one namespace's check by ensureNamespace: done is
// closed once it ended, and the namespace then needs no other.
type namespaceCheck struct{ done chan struct{} }

// ensureNamespace makes sure spec's namespace exists before the first
// object the manager creates in it, once per namespace: the first caller
// creates it (an AlreadyExists answer is as good) while the others wait
// for that call instead of each sending an apply that fails for the
// missing namespace, then a create of their own. A namespace the watch
// cache already holds an object of spec's kind in needs no request.
//
// It never fails the caller: a create refused (RBAC, an admission
// webhook) leaves the namespace as it is for good, and the apply says
// what is wrong; a create that failed for another reason (a timeout, a
// closed connection) is tried again by the next caller. apply still
// creates a namespace deleted since (its NotFound answer).
func (m *Manager) ensureNamespace(ctx context.Context, c kubernetes.Interface, spec hub.NodeSpec) {
	if spec.Namespace == "" {
		return
	}
	m.nsMu.Lock()
	check, seen := m.namespaces[spec.Namespace]
	if !seen {
		check = &namespaceCheck{done: make(chan struct{})}
		if m.namespaces == nil {
			m.namespaces = make(map[string]*namespaceCheck)
		}
		m.namespaces[spec.Namespace] = check
	}
	m.nsMu.Unlock()
	if seen {
		select {
		case <-check.done:
		case <-ctx.Done():
		}
		return
	}
	defer close(check.done)
	if m.holdsKindIn(spec) {
		return
	}
	switch err := m.createNamespace(ctx, c, spec.Namespace); {
	case err == nil, apierrors.IsAlreadyExists(err), apierrors.IsForbidden(err), apierrors.IsInvalid(err):
	default:
		m.log.Debug("namespace not created ahead of its first object", "namespace", spec.Namespace, "err", err)
		m.nsMu.Lock()
		delete(m.namespaces, spec.Namespace)
		m.nsMu.Unlock()
	}
}

// createNamespace creates the namespace name with the hub's field manager.
func (m *Manager) createNamespace(ctx context.Context, c kubernetes.Interface, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: m.fieldManager})
	return err
}

// holdsKindIn says whether the watch cache holds an object of spec's kind
// in spec's namespace: the namespace exists.
func (m *Manager) holdsKindIn(spec hub.NodeSpec) bool {
	inf := m.informerFor(spec.Namespace, spec.Kind)
	return inf != nil && len(inf.GetStore().ListKeys()) > 0
}

package clusters

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftwatch/driftwatch/hub"
)

// DryRunRepair asks the apiserver to validate the write a repair of spec
// would make, without persisting it: a forced server-side apply with the
// hub's field manager and dryRun=All, as `kubectl diff --server-side`
// does, so that admission webhooks and policies, validation and immutable
// fields answer as they would to the repair. It returns nil when the write
// would go through, and a note when it would only after a step of its
// own: the namespace created (a missing one), or the object deleted and
// recreated (a change to fields the apiserver keeps immutable, on an
// object that allows its recreation). The error says why the repair would
// fail; it needs the patch verb on the object's kind, where reading needs
// only get.
func (m *Manager) DryRunRepair(ctx context.Context, spec hub.NodeSpec) (note string, err error) {
	kind, err := m.kindFor(spec)
	if err != nil {
		return "", m.callError("apply", spec, err)
	}
	c := m.clientset()
	if c == nil {
		return "", m.callError("apply", spec, errNotConnected)
	}
	body, err := spec.JSON()
	if err != nil {
		return "", m.callError("apply", spec, err)
	}
	force := true
	_, err = kind.clientFor(c, spec.Namespace).patch(ctx, spec.Name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: m.fieldManager, Force: &force, DryRun: []string{metav1.DryRunAll}})
	switch {
	case err == nil:
		return "", nil
	case spec.Namespace != "" && isNamespaceNotFound(err):
		// The repair creates the namespace first; a dry run cannot.
		return fmt.Sprintf("its namespace %q would be created first (not validated further)", spec.Namespace), nil
	}
	if fields, ok := immutableFields(err); ok {
		what := immutableWhat(fields)
		if recreateAllowed(spec) {
			return fmt.Sprintf("would be deleted and recreated: the apiserver refuses to change %s in place", what), nil
		}
		return "", m.notAllowedToRecreate(spec, what, err)
	}
	err = m.callError("apply", spec, err)
	if errors.Is(err, hub.ErrTerminating) {
		return "waits for a deletion in progress: " + err.Error(), nil
	}
	return "", err
}

package clusters

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/hub"
)

// Writes with a precondition.
//
// The backend guards a write with what it read when the write depends on
// it: a JSON patch that removes added entries starts with a test of the
// resourceVersion, an apply that pins ignored fields carries the
// resourceVersion in metadata, and a delete carries the UID and
// resourceVersion as preconditions. When someone writes the object in
// between, the apiserver refuses the write, and the refusal is a retry, not
// a failure. The apiserver answers (checked on a real one):
//
//   - an apply or an update whose metadata.resourceVersion is not the
//     current one: 409, reason Conflict, "Operation cannot be fulfilled on
//     <resource> "<name>": the object has been modified; please apply your
//     changes to the latest version and try again", without causes;
//   - a delete whose resourceVersion precondition fails: 409, reason
//     Conflict, "Operation cannot be fulfilled on <Kind> "<name>": the
//     ResourceVersion in the precondition (N) does not match the
//     ResourceVersion in record (M). The object might have been modified",
//     without causes;
//   - a JSON patch it cannot apply to the current object (a test op that
//     failed, or a path that is no longer there): 422, reason Invalid, "the
//     server rejected our request due to an error in our request", with
//     empty details: the apiserver builds this answer with
//     NewGenericServerResponse and drops the JSON patch library's message.
//     A validation error, the other 422, always names the kind, the object
//     and the invalid fields (causes).
//
// A server-side apply conflict between field managers is a 409 too, but
// with FieldManagerConflict causes: it is settled by a forced apply, not a
// retry. client-go's retry.RetryOnConflict matches 409 only, so the
// backend has its own loop (see conflictRetries).

// isFieldConflict reports whether err is a server-side apply conflict
// between field managers.
func isFieldConflict(err error) bool {
	var se apierrors.APIStatus
	if !apierrors.IsConflict(err) || !errors.As(err, &se) || se.Status().Details == nil {
		return false
	}
	for _, c := range se.Status().Details.Causes {
		if c.Type == metav1.CauseTypeFieldManagerConflict {
			return true
		}
	}
	return false
}

// isPreconditionConflict reports whether err is a 409 Conflict that is not
// a conflict between field managers: a resourceVersion or UID precondition
// met a concurrent change.
func isPreconditionConflict(err error) bool {
	return apierrors.IsConflict(err) && !isFieldConflict(err)
}

// isPatchNotApplicable reports whether err is the apiserver's answer to a
// JSON patch it could not apply to the object's current version: 422,
// reason Invalid, without causes, kind or name.
func isPatchNotApplicable(err error) bool {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return false
	}
	st := se.Status()
	if st.Code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid {
		return false
	}
	d := st.Details
	return d == nil || len(d.Causes) == 0 && d.Kind == "" && d.Name == ""
}

// conflictError describes a failed write on the object of spec whose
// precondition met a concurrent change (isConflictError holds).
func (m *Manager) conflictError(verb string, spec hub.NodeSpec, err error) error {
	return &backendError{msg: describe(m.cfg.ID, verb, resourceOf(spec.Kind)+" "+spec.Name, spec.Namespace, err), err: err, conflict: true}
}

// isConflictError reports whether err is a backend error of a write whose
// precondition met a concurrent change.
func isConflictError(err error) bool {
	var be *backendError
	return errors.As(err, &be) && be.conflict
}

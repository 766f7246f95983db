package clusters

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/hub"
)

// TestBackendErrorKinds: the backend's errors tell the loop what a failure
// means: RBAC denials are ErrForbidden, an unreachable apiserver or refused
// credentials ErrUnreachable (so the NodeID's backoff does not grow),
// refused credentials ErrUnauthorized too, a write refused while its
// namespace or its CRD is being deleted ErrTerminating (not a denial), and
// our own cancellation, an ordinary API error or a 429 none of them.
func TestBackendErrorKinds(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	// As the NamespaceLifecycle admission plugin answers.
	nsTerminating := apierrors.NewForbidden(gr, "web", errors.New("unable to create new content in namespace shop because it is being terminated"))
	nsTerminating.ErrStatus.Details.Causes = append(nsTerminating.ErrStatus.Details.Causes,
		metav1.StatusCause{Type: corev1.NamespaceTerminatingCause, Message: "namespace shop is being terminated", Field: "metadata.namespace"})
	// As apiextensions-apiserver answers an apply (admission: 403) and a
	// create (405) of a custom resource whose CRD is being deleted.
	wr := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	crdTerminating := apierrors.NewForbidden(wr, "w1", errors.New("create not allowed while custom resource definition is terminating"))
	crdTerminatingCreate := apierrors.NewMethodNotSupported(wr, "create")
	crdTerminatingCreate.ErrStatus.Message = "create not allowed while custom resource definition is terminating"
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}}
	tests := []struct {
		name                                 string
		err                                  error
		forbidden, unreachable, unauthorized bool
		// terminating is what the message says is being deleted ("": not
		// ErrTerminating).
		terminating string
	}{
		{"forbidden", apierrors.NewForbidden(gr, "web", errors.New(`User "ci" cannot patch resource "configmaps" in API group "" in the namespace "shop"`)), true, false, false, ""},
		{"connection refused", refused, false, true, false, ""},
		{"deadline", context.DeadlineExceeded, false, true, false, ""},
		{"unauthorized", apierrors.NewUnauthorized("bad token"), false, true, true, ""},
		{"cancelled by us", context.Canceled, false, false, false, ""},
		{"conflict", apierrors.NewConflict(gr, "web", errors.New("changed")), false, false, false, ""},
		{"invalid", apierrors.NewBadRequest("bad"), false, false, false, ""},
		// A 429 left after client-go's Retry-After retries: the server is
		// up and shedding load; the NodeID backs off like any failure.
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), false, false, false, ""},
		{"namespace terminating", nsTerminating, false, false, false, "its namespace is being deleted"},
		{"crd terminating", crdTerminating, false, false, false, "its kind's CustomResourceDefinition is being deleted"},
		{"crd terminating, create", crdTerminatingCreate, false, false, false, "its kind's CustomResourceDefinition is being deleted"},
		// An admission webhook's denial is a 403 too: as slow to retry,
		// but not blamed on RBAC.
		{"webhook denial", apierrors.NewForbidden(gr, "web", errors.New(`admission webhook "validation.gatekeeper.sh" denied the request: [no-blue] blue is not allowed`)), true, false, false, ""},
		// The same words in another 403 (a webhook quoting them) are
		// still a denial, without the cause.
		{"forbidden quoting a namespace", apierrors.NewForbidden(gr, "web", errors.New("unable to create new content in namespace shop because it is being terminated")), true, false, false, ""},
	}
	m := &Manager{cfg: ClusterConfig{ID: "c1"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := m.resourceError("get", "configmaps web", "shop", tt.err)
			if got := errors.Is(err, hub.ErrForbidden); got != tt.forbidden {
				t.Errorf("ErrForbidden = %v, want %v (%v)", got, tt.forbidden, err)
			}
			if got := errors.Is(err, hub.ErrUnreachable); got != tt.unreachable {
				t.Errorf("ErrUnreachable = %v, want %v (%v)", got, tt.unreachable, err)
			}
			if got := errors.Is(err, hub.ErrUnauthorized); got != tt.unauthorized {
				t.Errorf("ErrUnauthorized = %v, want %v (%v)", got, tt.unauthorized, err)
			}
			if got := errors.Is(err, hub.ErrTerminating); got != (tt.terminating != "") {
				t.Errorf("ErrTerminating = %v, want %v (%v)", got, tt.terminating != "", err)
			}
			if rbac := strings.Contains(err.Error(), "(RBAC)"); rbac != (tt.name == "forbidden") {
				t.Errorf("message %q blames RBAC: %v, want %v", err, rbac, tt.name == "forbidden")
			}
			if tt.terminating != "" && (!strings.Contains(err.Error(), tt.terminating) || strings.Contains(err.Error(), "RBAC")) {
				t.Errorf("message %q does not say %q, or blames RBAC", err, tt.terminating)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("the cause is lost: %v", err)
			}
		})
	}
}

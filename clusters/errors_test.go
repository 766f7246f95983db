package clusters

import (
	"context"
	"errors"
	"net"
	"net/url"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/hub"
)

// TestBackendErrorKinds: the backend's errors tell the loop what a failure
// means: RBAC denials are ErrForbidden, an unreachable apiserver or refused
// credentials ErrUnreachable (so the NodeID's backoff does not grow),
// refused credentials ErrUnauthorized too, and our own cancellation, an
// ordinary API error or a 429 none of them.
func TestBackendErrorKinds(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}}
	tests := []struct {
		name                                 string
		err                                  error
		forbidden, unreachable, unauthorized bool
	}{
		{"forbidden", apierrors.NewForbidden(gr, "web", errors.New("rbac")), true, false, false},
		{"connection refused", refused, false, true, false},
		{"deadline", context.DeadlineExceeded, false, true, false},
		{"unauthorized", apierrors.NewUnauthorized("bad token"), false, true, true},
		{"cancelled by us", context.Canceled, false, false, false},
		{"conflict", apierrors.NewConflict(gr, "web", errors.New("changed")), false, false, false},
		{"invalid", apierrors.NewBadRequest("bad"), false, false, false},
		// A 429 left after client-go's Retry-After retries: the server is
		// up and shedding load; the NodeID backs off like any failure.
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), false, false, false},
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
			if !errors.Is(err, tt.err) {
				t.Errorf("the cause is lost: %v", err)
			}
		})
	}
}

package hub

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestFieldManagerFor: the default id keeps the field manager hubs always
// had; any other id gets its own, which the apiserver accepts even for the
// longest hub id (a DNS label of 63 bytes), and which is told from
// everything that is not a hub's.
func TestFieldManagerFor(t *testing.T) {
	long := strings.Repeat("h", 63)
	for _, tt := range []struct{ id, want string }{
		{"", "driftwatch"},
		{DefaultHubID, "driftwatch"},
		{"hub-a", "driftwatch-hub-a"},
		{long, "driftwatch-" + long},
	} {
		got := FieldManagerFor(tt.id)
		if got != tt.want {
			t.Errorf("FieldManagerFor(%q) = %q, want %q", tt.id, got, tt.want)
		}
		if errs := metavalidation.ValidateFieldManager(got, field.NewPath("fieldManager")); len(errs) > 0 {
			t.Errorf("FieldManagerFor(%q) = %q: the apiserver refuses it: %v", tt.id, got, errs)
		}
		if !IsHubFieldManager(got) {
			t.Errorf("IsHubFieldManager(%q) = false", got)
		}
	}
	for _, m := range []string{"", "kubectl-edit", "driftwatch-", "driftwatchx", "drift-generator"} {
		if IsHubFieldManager(m) {
			t.Errorf("IsHubFieldManager(%q) = true", m)
		}
	}
}

// TestOwnedByOtherError: the contract the loop relies on.
func TestOwnedByOtherError(t *testing.T) {
	err := fmt.Errorf(`cluster "c1": apply configmaps x: %w`, OwnedByOtherError{Hub: "hub-b"})
	if !errors.Is(err, ErrOwnedByOther) {
		t.Fatalf("errors.Is(%v, ErrOwnedByOther) = false", err)
	}
	var o OwnedByOtherError
	if !errors.As(err, &o) || o.Hub != "hub-b" {
		t.Fatalf("errors.As = %+v", o)
	}
	if got := (OwnedByOtherError{Hub: "hub-b"}).Error(); got != `owned by hub "hub-b"` {
		t.Fatalf("Error() = %q", got)
	}
}

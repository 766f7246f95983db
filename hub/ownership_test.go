package hub

import (
	"errors"
	"fmt"
	"testing"
)

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

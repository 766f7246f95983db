package terraform

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// ctxOnlyErr is shaped like terraform-exec's error of a command that ended
// with its context without failing itself: it has no cause, says it is the
// context's error, and its Error method panics.
type ctxOnlyErr struct{ ctxErr error }

func (e ctxOnlyErr) Error() string { var err error; return err.Error() }

func (e ctxOnlyErr) Unwrap() error { return nil }

func (e ctxOnlyErr) Is(target error) bool { return target == e.ctxErr }

// TestTfErr: an error that cannot print itself becomes the context's error;
// every other error is kept as it is.
func TestTfErr(t *testing.T) {
	for _, ctxErr := range []error{context.DeadlineExceeded, context.Canceled} {
		got := tfErr(ctxOnlyErr{ctxErr: ctxErr})
		if got != ctxErr {
			t.Errorf("tfErr(context-only %v) = %#v", ctxErr, got)
		}
		// It prints, wrapped as the repair wraps it.
		if msg := fmt.Errorf("show plan: %w", got).Error(); msg != "show plan: "+ctxErr.Error() {
			t.Errorf("wrapped: %q", msg)
		}
	}
	plain := errors.New("exit status 1")
	wrapped := fmt.Errorf("plan: %w", context.DeadlineExceeded)
	for _, err := range []error{nil, plain, wrapped, context.Canceled} {
		if got := tfErr(err); got != err {
			t.Errorf("tfErr(%v) = %v, want it unchanged", err, got)
		}
	}
}

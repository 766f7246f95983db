// Package rescue keeps a panic in one of the hub's goroutines from going
// unseen or taking the process down: Call recovers a panic in a function,
// logs it with its stack and returns it as an error; Loop runs a
// long-lived loop again after a panic, as the hub's own loops are (see
// hub's supervise). A goroutine's owner still waits for it: rescue only
// decides what a panic does.
package rescue

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"
)

// PanicError is a panic recovered by Call.
type PanicError struct {
	// What names the code that panicked ("the notifier's delivery").
	What string
	// Value is the value the code panicked with.
	Value any
	// Stack is the panicking goroutine's stack.
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic in %s: %v", e.What, e.Value) }

// Unwrap returns the panic's value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Call runs fn. A panic in it is recovered, logged at error level with its
// stack (what names the code: "the notifier's delivery") and returned as a
// *PanicError; otherwise Call returns nil. log may be nil.
func Call(log *slog.Logger, what string, fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			pe := &PanicError{What: what, Value: r, Stack: debug.Stack()}
			if log != nil {
				log.Error("panic recovered", "in", what, "err", pe.Error(), "stack", string(pe.Stack))
			}
			err = pe
		}
	}()
	fn()
	return nil
}

// Loop runs fn(ctx) until it returns without a panic or ctx ends. A panic
// is recovered and logged (see Call), then fn runs again after restart
// (at once when restart is 0): a loop that panics on one bad input lives
// on, and one that panics at once each time does not spin. It returns the
// number of panics recovered.
func Loop(ctx context.Context, log *slog.Logger, what string, restart time.Duration, fn func(context.Context)) (panics int) {
	for {
		if Call(log, what, func() { fn(ctx) }) == nil {
			return panics
		}
		panics++
		if restart <= 0 {
			if ctx.Err() != nil {
				return panics
			}
			continue
		}
		t := time.NewTimer(restart)
		select {
		case <-ctx.Done():
			t.Stop()
			return panics
		case <-t.C:
		}
	}
}

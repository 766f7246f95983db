package rescue

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestCall: a panic is recovered, logged with its stack under the name
// given and returned; an error it panicked with is unwrapped; no panic
// returns nil.
func TestCall(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	if err := Call(log, "nothing", func() {}); err != nil {
		t.Fatalf("no panic: %v", err)
	}
	cause := errors.New("bad input")
	err := Call(log, "the parser", func() { panic(cause) })
	var pe *PanicError
	if !errors.As(err, &pe) || pe.What != "the parser" || !errors.Is(err, cause) {
		t.Fatalf("panic: %v (%T)", err, err)
	}
	if got := err.Error(); got != "panic in the parser: bad input" {
		t.Errorf("message %q", got)
	}
	out := buf.String()
	if !strings.Contains(out, "panic recovered") || !strings.Contains(out, "in=\"the parser\"") || !strings.Contains(out, "rescue_test.go") {
		t.Errorf("log lacks the panic, its place or its stack:\n%s", out)
	}
	if err := Call(nil, "no logger", func() { panic("x") }); err == nil {
		t.Error("a panic without a logger: no error")
	}
}

// TestLoop: a loop that panics runs again after the restart delay, until
// it returns; one that keeps panicking stops when ctx ends.
func TestLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		runs := 0
		began := time.Now()
		n := Loop(t.Context(), nil, "the loop", time.Second, func(context.Context) {
			runs++
			if runs < 3 {
				panic("again")
			}
		})
		if n != 2 || runs != 3 {
			t.Errorf("panics %d, runs %d: want 2 and 3", n, runs)
		}
		if took := time.Since(began); took != 2*time.Second {
			t.Errorf("took %s: want two restart delays", took)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 3500*time.Millisecond)
		defer cancel()
		if n := Loop(ctx, nil, "the loop", time.Second, func(context.Context) { panic("always") }); n != 4 {
			t.Errorf("panics before ctx ended: %d, want 4", n)
		}
		ctx2, cancel2 := context.WithCancel(t.Context())
		calls := 0
		if n := Loop(ctx2, nil, "the loop", 0, func(context.Context) {
			calls++
			if calls == 5 {
				cancel2()
			}
			panic("at once")
		}); n != 5 {
			t.Errorf("restart 0: panics %d, want 5 (until ctx ended)", n)
		}
	})
}

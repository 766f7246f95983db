package testwait

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeTB records a failure instead of failing the test that runs it; its
// Fatalf ends the calling goroutine as testing's does.
type fakeTB struct {
	testing.TB
	ctx    context.Context
	mu     sync.Mutex
	failed string
}

func (f *fakeTB) Helper()                  {}
func (f *fakeTB) Context() context.Context { return f.ctx }
func (f *fakeTB) Fatal(args ...any)        { f.Fatalf("%s", fmt.Sprint(args...)) }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.failed = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

// run calls fn with a fake TB whose context is ctx, in a goroutine it
// waits for, and returns the failure message ("" when fn did not fail).
func run(ctx context.Context, fn func(testing.TB)) string {
	f := &fakeTB{ctx: ctx}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

// TestForReturnsOnceTheConditionHolds: For polls until cond holds and does
// not fail; the interval grows from 5 ms, doubling, to 100 ms.
func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var at []time.Duration
		msg := run(t.Context(), func(tb testing.TB) {
			For(tb, time.Minute, "the seventh call", func() error {
				at = append(at, time.Since(start))
				return Check(len(at) == 8, "call %d", len(at))
			})
		})
		if msg != "" {
			t.Fatalf("For failed: %s", msg)
		}
		want := []time.Duration{0, 5, 15, 35, 75, 155, 255, 355}
		if len(at) != len(want) {
			t.Fatalf("cond called at %v, want %d calls", at, len(want))
		}
		for i, ms := range want {
			if at[i] != ms*time.Millisecond {
				t.Errorf("call %d at %v, want %v", i, at[i], ms*time.Millisecond)
			}
		}
	})
}

// TestForFailsAfterTheTimeout: a condition that never holds fails the test
// after the timeout with what and the condition's last error.
func TestForFailsAfterTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := 0
		msg := run(t.Context(), func(tb testing.TB) {
			For(tb, 2*time.Second, "the door to open", func() error {
				n++
				return fmt.Errorf("still shut (%d)", n)
			})
		})
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("For gave up after %v, want 2s", took)
		}
		want := fmt.Sprintf("waiting for the door to open: not reached after 2s: still shut (%d)", n)
		if msg != want {
			t.Errorf("failure = %q, want %q", msg, want)
		}
	})
}

// TestForStopsAtAStopError: an error made by Stop fails at once, without
// polling again.
func TestForStopsAtAStopError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 0
		msg := run(t.Context(), func(tb testing.TB) {
			For(tb, time.Minute, "the child's answer", func() error {
				n++
				if n == 3 {
					return Stop(errors.New("the child exited"))
				}
				return errors.New("no answer yet")
			})
		})
		if n != 3 || msg != "waiting for the child's answer: the child exited" {
			t.Errorf("after %d calls, failure = %q", n, msg)
		}
		if Stop(nil) != nil {
			t.Error("Stop(nil) is not nil")
		}
	})
}

// TestForStopsWhenTheContextEnds: For fails, without waiting out its
// timeout, when the test's context ends.
func TestForStopsWhenTheContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		start := time.Now()
		msg := run(ctx, func(tb testing.TB) {
			For(tb, time.Hour, "nothing", func() error { return errors.New("never") })
		})
		if took := time.Since(start); took != time.Second {
			t.Errorf("For gave up after %v, want 1s", took)
		}
		if msg != "waiting for nothing: context canceled (last: never)" {
			t.Errorf("failure = %q", msg)
		}
	})
}

// slowReader yields its chunks one per read, then nothing (as a program's
// output that has not been drawn yet), or err once drained when set.
type slowReader struct {
	chunks []string
	err    error
}

func (r *slowReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		return 0, io.EOF
	}
	n := copy(p, r.chunks[0])
	r.chunks = r.chunks[1:]
	return n, nil
}

// TestScreen: screen returns once the text was drawn, even split over
// reads, and fails with the end of the drawing when it never is.
func TestScreen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &slowReader{chunks: []string{"over", "view ready"}}
		if msg := run(t.Context(), func(tb testing.TB) { screen(tb, out, "overview", time.Second) }); msg != "" {
			t.Errorf("screen failed: %s", msg)
		}
		out = &slowReader{chunks: []string{"loading"}}
		msg := run(t.Context(), func(tb testing.TB) { screen(tb, out, "overview", time.Second) })
		if !strings.Contains(msg, `the screen to show "overview"`) || !strings.Contains(msg, `"loading"`) {
			t.Errorf("failure = %q", msg)
		}
		out = &slowReader{err: errors.New("closed")}
		msg = run(t.Context(), func(tb testing.TB) { screen(tb, out, "overview", time.Minute) })
		if !strings.Contains(msg, "reading the program's output: closed") {
			t.Errorf("failure = %q", msg)
		}
	})
}

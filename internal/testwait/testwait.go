// Package testwait is the one polling helper of the tests: For waits until
// a condition holds, Screen until a terminal program has drawn a text.
// Tests only: no product code imports it.
package testwait

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest/v2"
)

// The polling interval starts at firstInterval and doubles up to
// maxInterval: quick conditions are seen within milliseconds, slow ones
// are not polled more than ten times a second.
const (
	firstInterval = 5 * time.Millisecond
	maxInterval   = 100 * time.Millisecond
)

// stopError marks an error that ends the wait at once.
type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }
func (e stopError) Unwrap() error { return e.err }

// Stop wraps err so that For fails at once with it instead of polling on:
// for a condition that can no longer hold (the child process exited, the
// object was deleted). Stop(nil) is nil.
func Stop(err error) error {
	if err == nil {
		return nil
	}
	return stopError{err}
}

// Check returns nil when ok, else the formatted error: the form of a
// yes/no condition for For, its message saying what was seen instead.
func Check(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf(format, args...)
}

// For calls cond until it returns nil, first at once, then with an
// interval growing from 5 ms to 100 ms. It fails t with what and cond's
// last error when timeout passes first, when cond returns an error made by
// Stop, or when t's context ends.
func For(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	if err := poll(t.Context(), timeout, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// poll is For's loop; it returns nil once cond held, else why it stopped.
func poll(ctx context.Context, timeout time.Duration, cond func() error) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	interval := firstInterval
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if se := (stopError{}); errors.As(err, &se) {
			return err
		}
		tick := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			tick.Stop()
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-timer.C:
			tick.Stop()
			return fmt.Errorf("not reached after %v: %w", timeout, err)
		case <-tick.C:
		}
		interval = min(2*interval, maxInterval)
	}
}

// Screen waits until the program of tm has drawn s since the previous wait
// on its output (the output read while waiting is consumed), failing t
// after timeout with the end of what was drawn.
func Screen(t testing.TB, tm *teatest.TestModel, s string, timeout time.Duration) {
	t.Helper()
	screen(t, tm.Output(), s, timeout)
}

// screen is Screen over the program's output stream.
func screen(t testing.TB, out io.Reader, s string, timeout time.Duration) {
	t.Helper()
	var seen []byte
	For(t, timeout, fmt.Sprintf("the screen to show %q", s), func() error {
		b, err := io.ReadAll(out)
		seen = append(seen, b...)
		if bytes.Contains(seen, []byte(s)) {
			return nil
		}
		if err != nil {
			return Stop(fmt.Errorf("reading the program's output: %w", err))
		}
		return fmt.Errorf("drawn so far, last bytes: %q", seen[max(0, len(seen)-400):])
	})
}

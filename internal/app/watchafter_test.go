package app

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestWaitToWatch: the clusters' watches wait for the UI's first frame,
// for at most the limit, and no longer once the app stops.
func TestWaitToWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		for _, c := range []struct {
			name  string
			close time.Duration // when the gate closes (0: never)
			stop  time.Duration // when ctx ends (0: never)
			want  string
			after time.Duration
		}{
			{"first frame", 30 * time.Millisecond, 0, "first frame", 30 * time.Millisecond},
			{"no frame", 0, 0, "limit", WatchAfterLimit},
			{"late frame", 2 * WatchAfterLimit, 0, "limit", WatchAfterLimit},
			{"stopped", 0, 10 * time.Millisecond, "stop", 10 * time.Millisecond},
		} {
			gate := make(chan struct{})
			if c.close > 0 {
				time.AfterFunc(c.close, func() { close(gate) })
			}
			cctx, cancel := context.WithCancel(ctx)
			if c.stop > 0 {
				time.AfterFunc(c.stop, cancel)
			}
			start := time.Now()
			got := waitToWatch(cctx, gate, WatchAfterLimit)
			if d := time.Since(start); got != c.want || d != c.after {
				t.Errorf("%s: %q after %v, want %q after %v", c.name, got, d, c.want, c.after)
			}
			cancel()
			synctest.Wait()
		}
	})
}

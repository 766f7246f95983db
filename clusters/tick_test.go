package clusters

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestUntilBoundary(t *testing.T) {
	base := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		now  time.Time
		d    time.Duration
		want time.Duration
	}{
		{base.Add(300 * time.Millisecond), time.Second, 700 * time.Millisecond},
		{base, time.Second, time.Second}, // on a boundary: the next one
		{base.Add(999 * time.Millisecond), time.Second, time.Millisecond},
		{base.Add(7 * time.Second), 10 * time.Second, 3 * time.Second},
	} {
		if got := untilBoundary(tc.now, tc.d); got != tc.want {
			t.Errorf("untilBoundary(%s, %s) = %s, want %s", tc.now.Format(time.StampMilli), tc.d, got, tc.want)
		}
	}
}

// Managers started at different moments tick at the same instants (the
// boundaries of the interval), so that a hub of many clusters wakes once
// an interval for all of their reports.
func TestTickAlignedSharesInstants(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = time.Second
		ctx, cancel := context.WithCancel(t.Context())
		var mu sync.Mutex
		ticks := map[string][]time.Time{}
		var wg sync.WaitGroup
		for _, tc := range []struct {
			name  string
			start time.Duration
		}{{"a", 300 * time.Millisecond}, {"b", 750 * time.Millisecond}, {"c", 1900 * time.Millisecond}} {
			wg.Go(func() {
				time.Sleep(tc.start)
				tickAligned(ctx, d, func() {
					mu.Lock()
					ticks[tc.name] = append(ticks[tc.name], time.Now())
					mu.Unlock()
				})
			})
		}
		time.Sleep(5*time.Second + 100*time.Millisecond)
		cancel()
		wg.Wait()
		for name, got := range ticks {
			for _, at := range got {
				if !at.Equal(at.Truncate(d)) {
					t.Errorf("%s ticked at %s, not on a boundary of %s", name, at.Format(time.StampMilli), d)
				}
			}
		}
		// a and b ticked at 1s..5s, c (started at 1.9s) at 2s..5s.
		if len(ticks["a"]) != 5 || len(ticks["b"]) != 5 || len(ticks["c"]) != 4 {
			t.Fatalf("ticks: a %d, b %d, c %d; want 5, 5, 4", len(ticks["a"]), len(ticks["b"]), len(ticks["c"]))
		}
		for i, at := range ticks["c"] {
			if !at.Equal(ticks["a"][i+1]) || !at.Equal(ticks["b"][i+1]) {
				t.Errorf("tick %d: c at %s, a at %s, b at %s: not the same instant", i, at.Format(time.StampMilli),
					ticks["a"][i+1].Format(time.StampMilli), ticks["b"][i+1].Format(time.StampMilli))
			}
		}
	})
}

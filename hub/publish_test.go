package hub

import (
	"testing"
	"time"
)

func TestPublishPause(t *testing.T) {
	for _, tc := range []struct{ interval, took, want time.Duration }{
		{100 * time.Millisecond, 0, 100 * time.Millisecond},
		{100 * time.Millisecond, 5 * time.Millisecond, 100 * time.Millisecond},
		{100 * time.Millisecond, 20 * time.Millisecond, 180 * time.Millisecond},
		{100 * time.Millisecond, 200 * time.Millisecond, 1800 * time.Millisecond},
	} {
		if got := publishPause(tc.interval, tc.took); got != tc.want {
			t.Errorf("publishPause(%s, %s) = %s, want %s", tc.interval, tc.took, got, tc.want)
		}
	}
}

package hub

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
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

// With nobody subscribed, snapshots only refresh the gauges: changes are
// published at most once per unwatchedPublishPause (the first after a quiet
// spell at once). A subscriber that joins
// meanwhile gets its first snapshot at once, and from then on changes are
// published at the normal pace.
func TestUnwatchedPublishPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		s := spec("c1", "app", "v1")
		s.Policy = PolicyWarn
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		gauge := func(st Status) float64 {
			return testutil.ToFloat64(f.h.metrics.objects.WithLabelValues("c1", string(st)))
		}
		// Quiet: the start's changes (desired state, health, the first
		// pass) are published, each at most one pause after the other in
		// whichever order the goroutines run; then a quiet spell of more
		// than a pause.
		time.Sleep(10 * unwatchedPublishPause)
		synctest.Wait()
		if gauge(StatusInSync) != 1 {
			t.Fatalf("in-sync gauge = %v after the first publishes, want 1", gauge(StatusInSync))
		}
		// After a quiet spell the first change is published at once; the
		// next one waits out the pause.
		b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
		synctest.Wait()
		if gauge(StatusWarnOnly) != 1 {
			// The publisher ran between the event (the first change,
			// published at once) and its classification (the next,
			// which waits out the pause).
			if gauge(StatusInSync) != 1 {
				t.Fatalf("in-sync gauge = %v after the event alone, want 1", gauge(StatusInSync))
			}
			time.Sleep(unwatchedPublishPause)
			synctest.Wait()
		}
		if got := gauge(StatusWarnOnly); got != 1 {
			t.Fatalf("warn-only gauge = %v after the first change, want 1 (published at once, or a pause after the event)", got)
		}
		b.put(s.ID, func(o *fakeObject) { o.content = "v1" })
		synctest.Wait()
		if got := gauge(StatusWarnOnly); got != 1 {
			t.Errorf("warn-only gauge = %v right after the second change, want still 1 (nobody subscribed: it waits for the pause)", got)
		}
		time.Sleep(unwatchedPublishPause)
		synctest.Wait()
		if got := gauge(StatusWarnOnly); got != 0 || gauge(StatusInSync) != 1 {
			t.Errorf("after the pause: warn-only %v, in-sync %v; want 0 and 1", got, gauge(StatusInSync))
		}

		b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
		synctest.Wait()
		b.put(s.ID, func(o *fakeObject) { o.content = "v1" })
		synctest.Wait()
		snaps, unsubscribe := f.h.Subscribe()
		defer unsubscribe()
		synctest.Wait()
		select {
		case snap := <-snaps:
			if n, _ := snap.Node(s.ID); n.Status != StatusInSync {
				t.Errorf("the new subscriber's first snapshot shows %s, want the latest state (in-sync)", n.Status)
			}
		default:
			t.Fatal("a new subscriber got no snapshot without waiting out the unwatched pause")
		}
		b.put(s.ID, func(o *fakeObject) { o.content = "again" })
		time.Sleep(200 * time.Millisecond) // two default snapshot intervals
		synctest.Wait()
		select {
		case snap := <-snaps:
			if n, _ := snap.Node(s.ID); n.Status != StatusWarnOnly {
				t.Errorf("subscribed: %s, want warn-only within two snapshot intervals", n.Status)
			}
		default:
			t.Error("subscribed: no snapshot within two snapshot intervals of a change")
		}
	})
}

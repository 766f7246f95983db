package hub

import (
	"context"
	"sync"
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
		// A publish that took 3 s of wall time (its goroutine waiting
		// for a core on a busy machine) pauses maxPublishPause, not 27 s;
		// a longer interval set on purpose still holds.
		{100 * time.Millisecond, 3 * time.Second, maxPublishPause},
		{5 * time.Second, 3 * time.Second, 5 * time.Second},
		{5 * time.Second, 10 * time.Second, 5 * time.Second},
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

func TestUrgentPublishPause(t *testing.T) {
	for _, tc := range []struct{ took, want time.Duration }{
		{0, minUrgentPause},
		{time.Millisecond, minUrgentPause},
		{5 * time.Millisecond, 45 * time.Millisecond},
		{100 * time.Millisecond, 900 * time.Millisecond},
		{200 * time.Millisecond, maxUrgentPause},
		{3 * time.Second, maxUrgentPause},
	} {
		if got := urgentPublishPause(tc.took); got != tc.want {
			t.Errorf("urgentPublishPause(%s) = %s, want %s", tc.took, got, tc.want)
		}
	}
}

// A changed status (a drift classified) arriving while the publisher
// pauses after a publish is published minUrgentPause after it, not a whole
// SnapshotInterval later; other changes wait out the interval.
func TestChangedStatusPublishedSoon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		const interval = time.Second
		f := start(t, b, Options{SnapshotInterval: interval})
		s := spec("c1", "app", "v1")
		s.Policy = PolicyWarn
		b.put(s.ID, func(o *fakeObject) { o.content = "v1" })
		f.h.SetDesired([]NodeSpec{s})
		snaps, unsubscribe := f.h.Subscribe()
		defer unsubscribe()
		f.ready("c1", 1, 1)
		latest := func() *Snapshot {
			select {
			case snap := <-snaps:
				return snap
			default:
				return nil
			}
		}
		time.Sleep(10 * interval) // the start's publishes, then a quiet spell
		synctest.Wait()
		if snap := latest(); snap == nil {
			t.Fatal("no snapshot after the start")
		} else if n, _ := snap.Node(s.ID); n.Status != StatusInSync {
			t.Fatalf("after the start: %s, want in-sync", n.Status)
		}
		// A change that is no status (a health report) is published at
		// once after the quiet spell: the publisher then pauses.
		f.ready("c1", 1, 2)
		synctest.Wait()
		if latest() == nil {
			t.Fatal("the health report after a quiet spell was not published at once")
		}
		b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
		synctest.Wait()
		if snap := latest(); snap != nil {
			t.Fatalf("published during the pause with no wait: %+v", snap.Nodes)
		}
		time.Sleep(minUrgentPause)
		synctest.Wait()
		snap := latest()
		if snap == nil {
			t.Fatalf("the drift was not published %s after the last publish (the pause is %s)", minUrgentPause, interval)
		}
		if n, _ := snap.Node(s.ID); n.Status != StatusWarnOnly {
			t.Fatalf("%s after the last publish: %s, want warn-only", minUrgentPause, n.Status)
		}
		// Another health report waits out the whole pause.
		f.ready("c1", 1, 3)
		time.Sleep(interval / 2)
		synctest.Wait()
		if snap := latest(); snap != nil {
			t.Errorf("a health report was published %s after the last publish, before the pause (%s) ended", interval/2, interval)
		}
		time.Sleep(interval)
		synctest.Wait()
		if latest() == nil {
			t.Fatal("the health report was not published after the pause")
		}
		// A new NodeID's first classification (from unknown) waits out
		// the pause too: a start classifies thousands at once.
		s2 := spec("c1", "app2", "v1")
		s2.Policy = PolicyWarn
		b.put(s2.ID, func(o *fakeObject) { o.content = "v1" })
		f.h.SetDesired([]NodeSpec{s, s2})
		synctest.Wait()
		if snap := latest(); snap != nil {
			t.Errorf("a first classification was published during the pause (%s)", interval)
		}
		time.Sleep(interval)
		synctest.Wait()
		if snap := latest(); snap == nil {
			t.Error("the new NodeID was not published after the pause")
		} else if n, _ := snap.Node(s2.ID); n.Status != StatusInSync {
			t.Errorf("the new NodeID after the pause: %s, want in-sync", n.Status)
		}
	})
}

// slowSnapshots is a snapshotter whose first snapshot takes 3 s (a publish
// whose goroutine waited for a core on a busy machine).
type slowSnapshots struct{ n uint64 }

func (s *slowSnapshots) refreshGauges(time.Time) {}

func (s *slowSnapshots) snapshot(time.Time) *Snapshot {
	s.n++
	if s.n == 1 {
		time.Sleep(3 * time.Second)
	}
	return &Snapshot{Seq: s.n}
}

// After a publish that took 3 s of wall time, a changed status is
// published within maxUrgentPause of it, and another change within
// maxPublishPause: not nine times 3 s later.
func TestSlowPublishBoundsThePause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dirty, changed := make(chan struct{}, 1), make(chan struct{}, 1)
		p := newPublisher(Options{SnapshotInterval: 100 * time.Millisecond, Now: time.Now}, &slowSnapshots{}, dirty, changed)
		snaps, unsubscribe := p.subscribe()
		defer unsubscribe()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); p.run(ctx) }()
		defer func() { cancel(); <-done }()

		first := <-snaps // the subscribe asked for it; built in 3 s
		began := time.Now()
		changed <- struct{}{}
		dirty <- struct{}{}
		second := <-snaps
		if waited := time.Since(began); waited > maxUrgentPause {
			t.Errorf("a changed status published %s after a 3 s publish, want at most %s", waited, maxUrgentPause)
		}
		began = time.Now()
		dirty <- struct{}{}
		third := <-snaps
		if waited := time.Since(began); waited > maxPublishPause {
			t.Errorf("a change published %s after the one before, want at most %s", waited, maxPublishPause)
		}
		if first.Seq != 1 || second.Seq != 2 || third.Seq != 3 {
			t.Errorf("snapshots %d, %d, %d", first.Seq, second.Seq, third.Seq)
		}
	})
}

// countingSnapshots is a snapshotter that counts what the publisher asked
// of it.
type countingSnapshots struct {
	mu                sync.Mutex
	snapshots, gauges int
}

func (s *countingSnapshots) snapshot(time.Time) *Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snapshots++
	return &Snapshot{Seq: uint64(s.snapshots)}
}

func (s *countingSnapshots) refreshGauges(time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gauges++
}

func (s *countingSnapshots) counts() (snapshots, gauges int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshots, s.gauges
}

// While nobody subscribes, a change refreshes the gauges without building
// a snapshot; a subscriber that joins gets a snapshot at once.
func TestUnwatchedPublishBuildsNoSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dirty, changed := make(chan struct{}, 1), make(chan struct{}, 1)
		store := &countingSnapshots{}
		p := newPublisher(Options{SnapshotInterval: 100 * time.Millisecond, Now: time.Now}, store, dirty, changed)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); p.run(ctx) }()
		defer func() { cancel(); <-done }()

		for range 3 {
			changed <- struct{}{}
			dirty <- struct{}{}
			time.Sleep(unwatchedPublishPause)
			synctest.Wait()
		}
		if snaps, gauges := store.counts(); snaps != 0 || gauges != 3 {
			t.Fatalf("unwatched: %d snapshots and %d gauge refreshes, want 0 and 3", snaps, gauges)
		}
		snaps, unsubscribe := p.subscribe()
		defer unsubscribe()
		synctest.Wait()
		select {
		case snap := <-snaps:
			if snap.Seq != 1 {
				t.Errorf("the subscriber's first snapshot is #%d, want 1", snap.Seq)
			}
		default:
			t.Fatal("a new subscriber got no snapshot at once")
		}
	})
}

// A subscription made before the publisher runs (the terminal UI holds one
// from before the hub starts until its first frame) makes the first pass a
// snapshot, not a refresh of the gauges alone; a subscriber that joins
// after it gets that snapshot at once, without waiting for a new one.
func TestSubscribedBeforeRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dirty, changed := make(chan struct{}, 1), make(chan struct{}, 1)
		store := &countingSnapshots{}
		p := newPublisher(Options{SnapshotInterval: 100 * time.Millisecond, Now: time.Now}, store, dirty, changed)
		held, release := p.subscribe() // also asks for a publish
		select {
		case dirty <- struct{}{}: // the desired state, set before the hub runs
		default:
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); p.run(ctx) }()
		defer func() { cancel(); <-done }()
		synctest.Wait()
		if snaps, gauges := store.counts(); snaps != 1 || gauges != 0 {
			t.Fatalf("first pass: %d snapshots and %d gauge refreshes, want 1 and 0", snaps, gauges)
		}
		if s := <-held; s.Seq != 1 {
			t.Fatalf("the held subscription got snapshot #%d, want 1", s.Seq)
		}
		ui, unsubscribe := p.subscribe()
		defer unsubscribe()
		select {
		case s := <-ui:
			if s.Seq != 1 {
				t.Errorf("the UI's first snapshot is #%d, want the first pass's (1)", s.Seq)
			}
		default:
			t.Fatal("the UI got no snapshot at once when it subscribed")
		}
		release()
		release() // again: nothing more
		synctest.Wait()
		if !p.watched() {
			t.Error("releasing the held subscription ended the UI's")
		}
	})
}

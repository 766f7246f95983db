package hub

import (
	"context"
	"sync"
	"time"
)

// snapshotter builds immutable snapshots: the read side of the status
// store, the only one the publisher uses.
type snapshotter interface {
	snapshot(now time.Time) *Snapshot
	// refreshGauges sets the gauges a snapshot sets, without building
	// one (nobody subscribes).
	refreshGauges(now time.Time)
}

// publisher hands the status store's snapshots to subscribers: the TUI, the
// API's streams and the notifier. It publishes when the store says it
// changed (dirty), at most every Options.SnapshotInterval, and keeps the
// latest snapshot for a new subscriber while anyone subscribes.
type publisher struct {
	opts  Options
	store snapshotter
	// dirty is signalled by the store after every change; changed after
	// a change of a NodeID's known status.
	dirty, changed <-chan struct{}

	mu      sync.Mutex
	subs    map[int]chan *Snapshot
	nextSub int
	latest  *Snapshot
	// joined wakes a publisher pausing while nobody subscribed.
	joined chan struct{}
	// ask asks for a publish (a new subscriber waits for its first
	// snapshot); the same channel as dirty.
	ask chan<- struct{}
}

// newPublisher returns a publisher of store's snapshots; dirty is the
// store's change signal, changed its status-change signal.
func newPublisher(opts Options, store snapshotter, dirty, changed chan struct{}) *publisher {
	return &publisher{
		opts:    opts,
		store:   store,
		dirty:   dirty,
		changed: changed,
		ask:     dirty,
		subs:    make(map[int]chan *Snapshot),
		joined:  make(chan struct{}, 1),
	}
}

// subscribe registers a subscriber. The latest snapshot is handed over
// under the lock with a non-blocking send, so a concurrent publish can never
// fill the channel first and block the caller.
func (p *publisher) subscribe() (<-chan *Snapshot, func()) {
	ch := make(chan *Snapshot, 1)
	p.mu.Lock()
	id := p.nextSub
	p.nextSub++
	p.subs[id] = ch
	if p.latest != nil {
		ch <- p.latest // the channel is new and empty: never blocks
	}
	p.mu.Unlock()
	select {
	case p.ask <- struct{}{}:
	default:
	}
	select {
	case p.joined <- struct{}{}:
	default:
	}
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			p.mu.Lock()
			delete(p.subs, id)
			if len(p.subs) == 0 {
				// The last subscriber left: nobody needs the kept
				// snapshot (a copy of every NodeID's status) any
				// more; the next subscriber asks for a new one.
				p.latest = nil
			}
			p.mu.Unlock()
		})
	}
}

// watched reports whether anyone subscribes to snapshots.
func (p *publisher) watched() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.subs) > 0
}

// publish builds a snapshot and hands it to every subscriber, replacing one
// it has not read yet: a slow subscriber only misses intermediate snapshots.
func (p *publisher) publish(now time.Time) {
	snap := p.store.snapshot(now)
	p.mu.Lock()
	// Kept for the next subscriber only while someone subscribes: a
	// snapshot nobody reads would hold a copy of every NodeID's status
	// (a new subscriber without one gets the next, which subscribe asks
	// for at once).
	p.latest = nil
	if len(p.subs) > 0 {
		p.latest = snap
	}
	for _, ch := range p.subs {
		select {
		case <-ch:
		default:
		}
		select {
		case ch <- snap:
		default:
		}
	}
	p.mu.Unlock()
}

// run publishes after every change until ctx ends (see publishPause).
func (p *publisher) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.dirty:
		}
		select {
		case <-p.changed: // this publish shows it
		default:
		}
		start := time.Now()
		if p.watched() {
			p.publish(p.opts.Now())
		} else {
			// Nobody reads a snapshot: only the gauges need the
			// store (a subscriber that joins now asks for a publish,
			// and joined ends the pause below).
			p.store.refreshGauges(p.opts.Now())
		}
		took := time.Since(start)
		pause := publishPause(p.opts.SnapshotInterval, took)
		changed := p.changed
		if !p.watched() {
			// Nobody reads the snapshots: they only refresh the
			// gauges, which scrapes read every 15 s or more.
			pause = max(pause, unwatchedPublishPause)
			changed = nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-p.joined:
			t.Stop() // a new subscriber waits for its first snapshot
		case <-changed:
			// A status changed (a drift seen, a repair done): shown
			// after the shorter pause, which keeps publishing's share.
			t.Stop()
			if !sleepUntil(ctx, start.Add(took+urgentPublishPause(took))) {
				return
			}
		}
	}
}

// minUrgentPause is the least time between a publish and the next one
// that shows a changed status: bursts of changes are coalesced.
const minUrgentPause = 20 * time.Millisecond

// urgentPublishPause is how long after a publish that took took a changed
// status may be published: at least minUrgentPause, and long enough that
// publishing still takes at most 1/publishShare of the time, up to
// maxUrgentPause. Other changes
// (health, counters, timelines) wait out publishPause: on a hub with fewer
// than about ten thousand NodeIDs a drift reaches the UI within tens of
// milliseconds instead of up to SnapshotInterval.
func urgentPublishPause(took time.Duration) time.Duration {
	return min(max(minUrgentPause, (publishShare-1)*took), maxUrgentPause)
}

// maxUrgentPause and maxPublishPause bound the pauses publishShare asks
// for. The time a publish took is wall time: on a busy machine a publish
// of 25,000 NodeIDs that needs 50 ms of CPU can take seconds while its
// goroutine waits for a core, and nine times that would leave every
// subscriber (the TUI, the API's streams, the notifier) without a change
// for half a minute. A changed status is shown at most maxUrgentPause
// after the publish before it, anything else at most maxPublishPause
// after it (or SnapshotInterval, when that is set longer).
const (
	maxUrgentPause  = time.Second
	maxPublishPause = 2 * time.Second
)

// sleepUntil waits until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// unwatchedPublishPause is the least time between publishes while nobody
// subscribes (a headless hub with no TUI or stream attached): an idle fleet
// hub's health reports would otherwise rebuild a snapshot of every NodeID
// several times a second for the gauges alone.
const unwatchedPublishPause = 2 * time.Second

// publishShare is the most of the wall time snapshot publishing may take:
// building a snapshot walks every NodeID under the store's lock, so at
// fleet scale (25,000 NodeIDs) publishing at a fixed 10 per second would
// take a large share of a core and keep workers waiting for the lock.
const publishShare = 10

// publishPause is how long the publisher waits after a publish that took
// took: at least interval, and long enough that publishing takes at most
// 1/publishShare of the time, up to maxPublishPause.
func publishPause(interval, took time.Duration) time.Duration {
	return min(max(interval, (publishShare-1)*took), max(interval, maxPublishPause))
}

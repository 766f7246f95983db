package hub

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// feedLog is the part of the status store that holds the live feed, newest
// line at the end, bounded to length lines. It shares the store's lock (mu)
// and change signal (dirty).
type feedLog struct {
	mu       *sync.Mutex
	dirty    chan<- struct{}
	length   int
	feedRing []FeedEntry // newest at the end
}

// feedRepeatWindow is how soon after an identical entry of the same NodeID
// a feed entry is folded into it (see FeedEntry.Count) instead of taking a
// line of its own.
const feedRepeatWindow = 10 * time.Second

// feed adds a line to the live feed, or folds it into the NodeID's latest
// line when it repeats it (see repeatLocked): that line then counts one
// more, takes the new time and latency, and moves to the top.
func (f *feedLog) feed(e FeedEntry) {
	e.Count = max(e.Count, 1)
	f.mu.Lock()
	if i := f.repeatLocked(e); i >= 0 {
		prev := f.feedRing[i]
		e.Count += prev.Times()
		e.First = prev.Started()
		f.feedRing = slices.Delete(f.feedRing, i, i+1)
	} else if len(f.feedRing) >= f.length {
		copy(f.feedRing, f.feedRing[1:])
		f.feedRing = f.feedRing[:len(f.feedRing)-1]
	}
	f.feedRing = append(f.feedRing, e)
	f.mu.Unlock()
	signal(f.dirty)
}

// writer is a feed entry's who without the time of the write
// (Attribution.String's " at 15:04:05"): the same writer's next write.
func writer(who string) string {
	if i := strings.LastIndex(who, " at "); i >= 0 {
		return who[:i]
	}
	return who
}

// heldBack reports whether a feed action is that of a drift the hub saw
// and did not write for: a fight it backs off from, a pause, a hold,
// warn-only, a deletion it waits for.
func heldBack(action string) bool {
	switch action {
	case "backoff", "paused", "held", "warn", "waiting", "wait-deletion":
		return true
	}
	return false
}

// repeatLocked returns the position in the feed of the line e repeats, -1
// when none: the NodeID's latest line, when it is the same happening (same
// class, fields, who, action, error and why) and its last time is at most
// feedRepeatWindow from e'f. While the hub holds back (heldBack), the
// fields and the time of the write may differ: an autoscaler whose
// writes keep moving a value (4, then 5, then 4) is one line with its
// latest change, not a line each time. Callers hold f.mu.
func (f *feedLog) repeatLocked(e FeedEntry) int {
	for i := len(f.feedRing) - 1; i >= 0; i-- {
		p := &f.feedRing[i]
		gap := e.At.Sub(p.At).Abs()
		if p.ID != e.ID {
			if gap > feedRepeatWindow && p.At.Before(e.At) {
				return -1 // older lines are further away still
			}
			continue
		}
		held := heldBack(e.Action)
		if gap > feedRepeatWindow || p.Class != e.Class || p.Action != e.Action || p.Err != e.Err || p.Why != e.Why ||
			!held && (p.Who != e.Who || !slices.Equal(p.Fields, e.Fields)) || held && writer(p.Who) != writer(e.Who) {
			return -1
		}
		return i
	}
	return -1
}

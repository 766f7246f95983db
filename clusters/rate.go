package clusters

import (
	"sync"
	"time"
)

// rateWindow counts events in one-second buckets over a short window.
type rateWindow struct {
	mu      sync.Mutex
	buckets [10]int64
	secs    [10]int64
	last    time.Time
}

func (r *rateWindow) add(now time.Time) {
	s := now.Unix()
	i := s % int64(len(r.buckets))
	r.mu.Lock()
	if r.secs[i] != s {
		r.secs[i] = s
		r.buckets[i] = 0
	}
	r.buckets[i]++
	r.last = now
	r.mu.Unlock()
}

// rate returns events per second over the last full seconds, and the time of
// the last event.
func (r *rateWindow) rate(now time.Time) (float64, time.Time) {
	s := now.Unix()
	var n int64
	const window = int64(len(r.buckets)) - 1
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.buckets {
		if age := s - r.secs[i]; age >= 1 && age <= window {
			n += r.buckets[i]
		}
	}
	return float64(n) / float64(window), r.last
}

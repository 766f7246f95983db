package clusters

import (
	"sync"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// recordingSink records everything a registry reports, for tests.
type recordingSink struct {
	mu     sync.Mutex
	events []hub.Event
	health map[string]hub.ClusterHealth
	notify chan struct{}
}

func newRecordingSink() *recordingSink {
	return &recordingSink{health: make(map[string]hub.ClusterHealth), notify: make(chan struct{}, 1)}
}

func (s *recordingSink) Observe(ev hub.Event) {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
	s.poke()
}

func (s *recordingSink) ClusterChanged(h hub.ClusterHealth) {
	s.mu.Lock()
	s.health[h.Cluster] = h
	s.mu.Unlock()
	s.poke()
}

func (s *recordingSink) poke() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// waitFor blocks until cond holds (checked after every report) or the
// timeout passes.
func (s *recordingSink) waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ok := cond()
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-s.notify:
		case <-time.After(100 * time.Millisecond):
		case <-deadline.C:
			s.mu.Lock()
			defer s.mu.Unlock()
			t.Fatalf("timed out after %s waiting for %s; health %+v", timeout, what, s.health)
		}
	}
}

// hasEvent reports whether an event of typ for id was recorded (call with
// mu held, i.e. inside waitFor's cond).
func (s *recordingSink) hasEvent(id hub.NodeID, typ hub.EventType) bool {
	for _, e := range s.events {
		if e.ID == id && e.Type == typ {
			return true
		}
	}
	return false
}

func (s *recordingSink) state(cluster string) hub.ClusterState { return s.health[cluster].State }

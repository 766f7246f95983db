package clusters

import (
	"sync"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// recordingSink records everything a registry reports, for tests.
type recordingSink struct {
	mu     sync.Mutex
	events []hub.Event
	health map[string]hub.ClusterHealth
}

func newRecordingSink() *recordingSink {
	return &recordingSink{health: make(map[string]hub.ClusterHealth)}
}

func (s *recordingSink) Observe(ev hub.Event) {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
}

func (s *recordingSink) ClusterChanged(h hub.ClusterHealth) {
	s.mu.Lock()
	s.health[h.Cluster] = h
	s.mu.Unlock()
}

// waitFor polls until cond, called with mu held, holds or the timeout
// passes.
func (s *recordingSink) waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, timeout, what, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		return testwait.Check(cond(), "health %+v", s.health)
	})
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

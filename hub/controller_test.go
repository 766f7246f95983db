package hub

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// scriptedRunner is a pass runner whose passes follow a script, one entry
// per pass: "panic", "error", "write" (hands off a write) or "ok".
type scriptedRunner struct {
	mu     sync.Mutex
	script []string
	passes int
	writes int
	panics []NodeID
}

func (s *scriptedRunner) reconcile(context.Context, NodeID) (Result, writeStep, error) {
	s.mu.Lock()
	step := "ok"
	if s.passes < len(s.script) {
		step = s.script[s.passes]
	}
	s.passes++
	s.mu.Unlock()
	switch step {
	case "panic":
		panic("scripted")
	case "error":
		return Result{}, nil, errors.New("scripted")
	case "write":
		return Result{}, func(context.Context) (Result, error) {
			s.mu.Lock()
			s.writes++
			s.mu.Unlock()
			return Result{}, nil
		}, nil
	}
	return Result{}, nil, nil
}

func (s *scriptedRunner) panicked(id NodeID, _ error, _ time.Time) {
	s.mu.Lock()
	s.panics = append(s.panics, id)
	s.mu.Unlock()
}

// TestControllerDrivesInjectedRunner: the controller alone (no Hub) runs
// the pass runner it is given: a panicking pass is reported to the runner
// and retried, a failed one is retried with backoff, a handed-off write runs
// on a writer, and a pass that succeeds forgets the NodeID's failures.
func TestControllerDrivesInjectedRunner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(Options{Workers: 1, Writers: 1}.withDefaults(), newMetrics())
		run := &scriptedRunner{script: []string{"panic", "error", "write"}}
		c.rec = run
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		c.start(ctx)
		id := NewNodeID("c1", "ns", "a", KindConfigMap)
		c.add(id)
		// The retries wait out the failure backoff (100ms, then 200ms):
		// a second of fake time covers both.
		time.Sleep(time.Second)
		synctest.Wait()
		run.mu.Lock()
		passes, writes, panicked := run.passes, run.writes, run.panics
		run.mu.Unlock()
		if passes != 3 || writes != 1 {
			t.Errorf("passes %d, writes %d: want 3 passes (panic, error, write) and 1 write", passes, writes)
		}
		if len(panicked) != 1 || panicked[0] != id {
			t.Errorf("panics reported %v, want one on %s", panicked, id)
		}
		if n := c.queue.NumRequeues(id); n != 0 {
			t.Errorf("requeues of %s after a success: %d, want 0 (forgotten)", id, n)
		}
		c.shutDown()
		c.wait()
	})
}

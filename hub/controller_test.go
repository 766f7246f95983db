package hub

import (
	"context"
	"errors"
	"fmt"
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

func (s *scriptedRunner) reconcile(context.Context, NodeID) (Result, *writeStep, error) {
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
		return Result{}, &writeStep{run: func(context.Context) (Result, error) {
			s.mu.Lock()
			s.writes++
			s.mu.Unlock()
			return Result{}, nil
		}}, nil
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

// aheadRunner hands off, for every NodeID, a write with an ahead step that
// waits until release is closed (counting the ahead steps waiting at once)
// and a write that checks its ahead step ran; a NodeID in panicOnce panics
// in its first ahead step.
type aheadRunner struct {
	release   chan struct{}
	panicOnce map[NodeID]bool

	mu                sync.Mutex
	waiting, maxWait  int
	aheadDone         map[NodeID]bool
	writes, outOfTurn int
	panics            []NodeID
}

func (a *aheadRunner) reconcile(_ context.Context, id NodeID) (Result, *writeStep, error) {
	return Result{}, &writeStep{
		ahead: func() {
			a.mu.Lock()
			if a.panicOnce[id] {
				delete(a.panicOnce, id)
				a.mu.Unlock()
				panic("scripted ahead")
			}
			a.waiting++
			a.maxWait = max(a.maxWait, a.waiting)
			a.mu.Unlock()
			<-a.release
			a.mu.Lock()
			a.waiting--
			a.aheadDone[id] = true
			a.mu.Unlock()
		},
		run: func(context.Context) (Result, error) {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.writes++
			if !a.aheadDone[id] {
				a.outOfTurn++
			}
			return Result{}, nil
		},
	}, nil
}

func (a *aheadRunner) panicked(id NodeID, _ error, _ time.Time) {
	a.mu.Lock()
	a.panics = append(a.panics, id)
	a.mu.Unlock()
}

// TestControllerRunsAheadStepsOffTheWorkers: the ahead steps of handed-off
// writes (a first apply's state file record) run neither on the worker nor
// on a writer: with one worker and one writer, the ahead steps of every
// NodeID wait at once (so they can share one fsync), each write runs after
// its own ahead step, and an ahead step that panics is reported and its
// NodeID retried, its write not run.
func TestControllerRunsAheadStepsOffTheWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(Options{Workers: 1, Writers: 1}.withDefaults(), newMetrics())
		ids := make([]NodeID, 10)
		for i := range ids {
			ids[i] = NewNodeID("c1", "ns", fmt.Sprintf("o%d", i), KindConfigMap)
		}
		run := &aheadRunner{release: make(chan struct{}), panicOnce: map[NodeID]bool{ids[3]: true}, aheadDone: map[NodeID]bool{}}
		c.rec = run
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		c.start(ctx)
		c.add(ids...)
		// The panicked NodeID's retry waits out the failure backoff
		// (100ms): a second of fake time covers it.
		time.Sleep(time.Second)
		synctest.Wait()
		run.mu.Lock()
		waiting := run.waiting
		run.mu.Unlock()
		if waiting != len(ids) {
			t.Errorf("%d ahead steps waiting at once with one worker and one writer, want %d (one per NodeID)", waiting, len(ids))
		}
		close(run.release)
		synctest.Wait()
		run.mu.Lock()
		defer run.mu.Unlock()
		if run.writes != len(ids) || run.outOfTurn != 0 {
			t.Errorf("writes %d (%d before their ahead step), want %d, none before", run.writes, run.outOfTurn, len(ids))
		}
		if len(run.panics) != 1 || run.panics[0] != ids[3] {
			t.Errorf("panics reported %v, want one on %s", run.panics, ids[3])
		}
		c.shutDown()
		c.wait()
	})
}

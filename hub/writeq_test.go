package hub

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The write queue serves clusters in turn, and a cluster never runs more
// than all writers but one at once.
func TestWriteQueueTurnsAndLimits(t *testing.T) {
	q := newWriteQueue(3) // a cluster may run 2 at once
	var got []string
	job := func(name string) writeJob { return func(context.Context) { got = append(got, name) } }
	for _, n := range []string{"a1", "a2", "a3", "a4"} {
		q.submit("a", job(n))
	}
	q.submit("b", job("b1"))
	q.submit("b", job("b2"))
	for range 4 { // a1, b1, a2, b2: in turn; a1 and a2 are still running
		j, _, ok := q.next()
		if !ok {
			t.Fatal("closed")
		}
		j(t.Context())
	}
	if s := strings.Join(got, ","); s != "a1,b1,a2,b2" {
		t.Fatalf("order %s, want a1,b1,a2,b2", s)
	}
	// a has 2 running: its next write waits until one returns.
	ready := make(chan struct{})
	go func() {
		j, _, _ := q.next()
		j(t.Context())
		close(ready)
	}()
	select {
	case <-ready:
		t.Fatal("a third write of cluster a ran while two were running")
	case <-time.After(50 * time.Millisecond):
	}
	q.done("a") // a1 returns
	<-ready
	if got[len(got)-1] != "a3" {
		t.Fatalf("got %v, want a3 last", got)
	}
	q.done("a") // a2 and a3 return
	q.done("a")
	q.close()
	if j, _, ok := q.next(); !ok || j == nil {
		t.Fatal("a waiting write was dropped at close")
	}
	if _, _, ok := q.next(); ok {
		t.Fatal("next after close and drain")
	}
}

// A reserved place keeps its cluster's order: the cluster's later writes
// wait until it is given its job, other clusters' writes do not.
func TestWriteQueueReservedKeepsOrder(t *testing.T) {
	q := newWriteQueue(4)
	var got []string
	job := func(name string) writeJob { return func(context.Context) { got = append(got, name) } }
	give := q.reserve("a")
	q.submit("a", job("a2"))
	q.submit("b", job("b1"))
	run := func() {
		t.Helper()
		j, c, ok := q.next()
		if !ok {
			t.Fatal("closed")
		}
		j(t.Context())
		q.done(c)
	}
	run()
	if s := strings.Join(got, ","); s != "b1" {
		t.Fatalf("ran %s before a's reserved place was given, want b1 alone", s)
	}
	give(job("a1"))
	run()
	run()
	if s := strings.Join(got, ","); s != "b1,a1,a2" {
		t.Fatalf("order %s, want b1,a1,a2", s)
	}
}

// Detection never waits for repairs: with every writer held by one
// cluster's slow writes, every drift of that cluster is still classified
// and shown (repairing) at once, and another cluster's drift is classified
// and repaired meanwhile.
func TestClassifiedWhileWritesWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{Workers: 2, Writers: 3, CallTimeout: time.Hour})
		var specs []NodeSpec
		for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
			specs = append(specs, spec("c1", n, "v1"))
		}
		other := spec("c2", "x", "v1")
		f.h.SetDesired(append(specs, other))
		f.ready("c1", 1, 1)
		f.ready("c2", 1, 1)
		synctest.Wait()
		release := make(chan struct{})
		var mu sync.Mutex
		blocked := 0
		b.onWrite = func(_ context.Context, id NodeID) error {
			if id.Cluster == "c1" {
				mu.Lock()
				blocked++
				mu.Unlock()
				<-release
			}
			return nil
		}
		for _, s := range specs {
			b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
		}
		synctest.Wait()
		for _, s := range specs {
			if st := f.node(s.ID).Status; st != StatusRepairing {
				t.Errorf("%s: %s while writes wait, want repairing (classified)", s.ID, st)
			}
		}
		mu.Lock()
		if blocked != 2 {
			t.Errorf("%d writes of c1 running, want 2 (all writers but one)", blocked)
		}
		mu.Unlock()
		b.put(other.ID, func(o *fakeObject) { o.content = "edited" })
		synctest.Wait()
		if got := b.repairCount(other.ID); got != 2 {
			t.Errorf("c2's drift repaired %d times while c1's writes hang, want the first apply and the repair", got-1)
		}
		close(release)
		synctest.Wait()
		for _, s := range specs {
			if got := b.repairCount(s.ID); got != 2 {
				t.Errorf("%s: %d writes, want the first apply and one repair", s.ID, got)
			}
		}
	})
}

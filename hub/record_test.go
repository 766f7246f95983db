package hub

import (
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestOneRecordPerNode: the loop keeps one record per NodeID, holding the
// desired spec, the decommission and the spec it applied (the same shared
// spec, not a copy); a pruned NodeID and a forgotten cluster leave no record
// behind; a snapshot nobody subscribed to is not kept.
func TestOneRecordPerNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		a, gone, other := spec("c1", "a", "v1"), spec("c1", "b", "v1"), spec("c2", "x", "v1")
		f.h.SetDesired([]NodeSpec{a, gone, other})
		f.ready("c1", 1, 0)
		f.ready("c2", 1, 0)
		synctest.Wait()
		records := func() map[NodeID]*node {
			f.h.mu.Lock()
			defer f.h.mu.Unlock()
			out := make(map[NodeID]*node, f.h.nodes.len())
			for id, n := range f.h.nodes.all() {
				cp := *n
				out[id] = &cp
			}
			return out
		}
		got := records()
		if len(got) != 3 {
			t.Fatalf("%d records, want 3", len(got))
		}
		for id, n := range got {
			if n.spec == nil || n.dec != nil || n.applied != n.spec {
				t.Errorf("%s: spec %p, dec %v, applied %p: want the desired spec applied", id, n.spec, n.dec, n.applied)
			}
		}

		// b leaves the config: decommissioned, pruned, its record gone.
		f.h.SetDesired([]NodeSpec{a, other})
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		if b.exists(gone.ID) {
			t.Fatalf("%s not pruned", gone.ID)
		}
		if _, ok := records()[gone.ID]; ok {
			t.Errorf("the pruned %s still has a record", gone.ID)
		}
		f.h.ForgetCluster("c2")
		if got := records(); len(got) != 1 || got[a.ID] == nil {
			t.Errorf("records after forgetting c2: %v, want only %s", got, a.ID)
		}

		// No subscriber: the published snapshot is not kept; a
		// subscriber gets one.
		f.h.pub.publish(f.h.opts.Now())
		f.h.pub.mu.Lock()
		kept := f.h.pub.latest
		f.h.pub.mu.Unlock()
		if kept != nil {
			t.Error("a snapshot is kept with no subscriber")
		}
		ch, cancel := f.h.Subscribe()
		defer cancel()
		// The publisher may be in its pause after the snapshot
		// ForgetCluster asked for: the new subscriber's comes after it.
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case snap := <-ch:
			if _, ok := snap.Node(a.ID); !ok {
				t.Errorf("the subscriber's snapshot lacks %s", a.ID)
			}
		default:
			t.Fatal("a new subscriber got no snapshot")
		}
	})
}

// TestRepairBookkeepingOnlyAfterDrift: a NodeID that is created and stays
// in sync carries no repair bookkeeping, in the loop or in the status
// store; the first drift allocates it and the repair is counted there.
func TestRepairBookkeepingOnlyAfterDrift(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		calm, drifted := spec("c1", "calm", "v1"), spec("c1", "drifted", "v1")
		f.h.SetDesired([]NodeSpec{calm, drifted})
		f.ready("c1", 1, 0)
		synctest.Wait()
		repairs := func(id NodeID) *nodeRepairs {
			f.h.mu.Lock()
			defer f.h.mu.Unlock()
			r := f.h.nodes.at(id).rep
			if r == nil {
				return nil
			}
			cp := *r
			return &cp
		}
		for _, id := range []NodeID{calm.ID, drifted.ID} {
			if r := repairs(id); r != nil {
				t.Errorf("%s: repair bookkeeping %+v after a first apply, want none", id, r)
			}
		}
		b.put(drifted.ID, func(o *fakeObject) { o.content = "edited" })
		synctest.Wait()
		if n := f.node(drifted.ID); n.Repairs != 1 {
			t.Fatalf("%s: %d repairs, want 1", drifted.ID, n.Repairs)
		}
		if r := repairs(drifted.ID); r == nil || r.fight.repairs != 1 || len(r.recent) != 1 {
			t.Errorf("%s: repair bookkeeping %+v, want one repair", drifted.ID, r)
		}
		if r := repairs(calm.ID); r != nil {
			t.Errorf("%s: repair bookkeeping %+v, want none", calm.ID, r)
		}
		extra := func(id NodeID) *nodeExtra {
			f.h.store.mu.Lock()
			defer f.h.store.mu.Unlock()
			x := f.h.store.nodeLocked(id).extra
			if x == nil {
				return nil
			}
			cp := *x
			return &cp
		}
		if x := extra(calm.ID); x != nil {
			t.Errorf("%s: status extra %+v, want none", calm.ID, x)
		}
		if x := extra(drifted.ID); x == nil || x.repairs != 1 || x.repair == nil || x.repairedAt.IsZero() {
			t.Errorf("%s: status extra %+v, want the verified repair", drifted.ID, x)
		}
		if n := f.node(drifted.ID); n.LastRepair == nil || n.LastRepair.VerifiedAt.IsZero() {
			t.Errorf("%s: last repair %+v in the snapshot, want it verified", drifted.ID, n.LastRepair)
		}
	})
}

// TestLastUnsubscribeDropsSnapshot: the snapshot kept for late subscribers
// is dropped when the last subscriber leaves (not at the next publish,
// which an idle hub may never make); a new subscriber still gets one.
func TestLastUnsubscribeDropsSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		a := spec("c1", "a", "v1")
		f.h.SetDesired([]NodeSpec{a})
		f.ready("c1", 1, 0)
		synctest.Wait()
		kept := func() *Snapshot {
			f.h.pub.mu.Lock()
			defer f.h.pub.mu.Unlock()
			return f.h.pub.latest
		}
		_, cancel1 := f.h.Subscribe()
		_, cancel2 := f.h.Subscribe()
		time.Sleep(time.Second) // past the publisher's pause
		synctest.Wait()
		if kept() == nil {
			t.Fatal("no snapshot kept while two subscribe")
		}
		cancel1()
		if kept() == nil {
			t.Error("the snapshot was dropped while one subscriber is left")
		}
		cancel2()
		cancel2() // idempotent
		if kept() != nil {
			t.Error("a snapshot is kept after the last subscriber left")
		}
		ch, cancel3 := f.h.Subscribe()
		defer cancel3()
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case snap := <-ch:
			if _, ok := snap.Node(a.ID); !ok {
				t.Errorf("the new subscriber's snapshot lacks %s", a.ID)
			}
		default:
			t.Fatal("a new subscriber got no snapshot")
		}
	})
}

// TestFIFO: first in, first out, and the array goes once the queue runs
// empty, however large a burst made it.
func TestFIFO(t *testing.T) {
	var q fifo[int]
	next := 0
	for _, burst := range []int{1, 1000, 3} {
		for i := range burst {
			q.Push(next + i)
		}
		for i := range burst {
			if got := q.Pop(); got != next+i {
				t.Fatalf("pop %d of the burst of %d: %d, want %d", i, burst, got, next+i)
			}
			if q.Len() != burst-i-1 {
				t.Fatalf("len %d after %d pops of %d", q.Len(), i+1, burst)
			}
		}
		next += burst
		if q.items != nil {
			t.Fatalf("after the burst of %d: the array (cap %d) is kept", burst, cap(q.items))
		}
	}
	q.Push(1)
	q.Push(2)
	q.Pop()
	q.Push(3)
	if got := []int{q.Pop(), q.Pop()}; got[0] != 2 || got[1] != 3 || q.Len() != 0 {
		t.Errorf("interleaved: %v, len %d", got, q.Len())
	}
}

// TestQueueSemantics: the loop's queue is client-go's: an item waiting is
// added once, an item being processed is handed out again only after Done,
// and AddAfter and AddRateLimited delay it.
func TestQueueSemantics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := newQueue(Options{}.withDefaults())
		defer q.ShutDown()
		a, b := NewNodeID("c1", "ns", "a", KindConfigMap), NewNodeID("c1", "ns", "b", KindConfigMap)
		q.Add(a)
		q.Add(b)
		q.Add(a)
		if q.Len() != 2 {
			t.Fatalf("len %d, want 2", q.Len())
		}
		got, _ := q.Get()
		if got != a {
			t.Fatalf("first out %s, want %s", got, a)
		}
		q.Add(a) // while processing: waits for Done
		if got, _ := q.Get(); got != b || q.Len() != 0 {
			t.Fatalf("second out %s (len %d), want %s and an empty queue", got, q.Len(), b)
		}
		q.Done(b)
		q.Done(a)
		if q.Len() != 1 {
			t.Fatalf("len %d after Done, want a back", q.Len())
		}
		if got, _ := q.Get(); got != a {
			t.Fatalf("out %s, want %s", got, a)
		}
		q.Done(a)
		q.AddAfter(b, time.Second)
		q.AddRateLimited(a)
		synctest.Wait()
		if q.Len() != 0 {
			t.Fatalf("len %d before the delays ran out, want 0", q.Len())
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if q.Len() != 2 || q.NumRequeues(a) != 1 {
			t.Errorf("len %d, requeues of a %d: want both back, a requeued once", q.Len(), q.NumRequeues(a))
		}
	})
}

// TestRenewingQueue: once drained after a burst, the queue is replaced by
// a fresh one; a worker waiting in Get at that moment gets the next item
// from the new queue; an item re-added while processing keeps the queue
// from renewing until it is processed again.
func TestRenewingQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRenewing(3)
		defer r.ShutDown()
		ids := []NodeID{NewNodeID("c", "ns", "a", KindConfigMap), NewNodeID("c", "ns", "b", KindConfigMap), NewNodeID("c", "ns", "c", KindConfigMap)}
		for _, id := range ids {
			r.Add(id)
		}
		first := r.cur
		got := make(chan NodeID, 1)
		for i, id := range ids {
			item, shutdown := r.Get()
			if shutdown || item != id {
				t.Fatalf("get %d: %s (shutdown %v), want %s", i, item, shutdown, id)
			}
			if i == len(ids)-1 {
				r.Add(id) // again, while processing
			}
			r.Done(item)
		}
		if r.cur != first || r.Len() != 1 {
			t.Fatalf("renewed with an item re-added while processing (len %d)", r.Len())
		}
		item, _ := r.Get()
		go func() {
			item, _ := r.Get() // waits across the renewal
			got <- item
		}()
		synctest.Wait()
		r.Done(item)
		if r.cur == first || r.renewals != 1 {
			t.Fatalf("not renewed once drained after a burst of 3 (%d renewals)", r.renewals)
		}
		if !first.ShuttingDown() {
			t.Error("the old queue was not shut down")
		}
		r.Add(ids[0])
		synctest.Wait()
		select {
		case item := <-got:
			if item != ids[0] {
				t.Errorf("the waiting worker got %s, want %s", item, ids[0])
			}
			r.Done(item)
		default:
			t.Fatal("the worker waiting across the renewal got nothing")
		}
		second := r.cur
		r.Add(ids[1])
		item, _ = r.Get()
		r.Done(item)
		if r.cur != second {
			t.Error("renewed after holding 1 item, below the threshold")
		}
		r.ShutDown()
		if _, shutdown := r.Get(); !shutdown || !r.ShuttingDown() {
			t.Error("Get after ShutDown did not report the shutdown")
		}
	})
}

// TestRenewingQueueConcurrent: with renewals all along, no NodeID is ever
// processed by two workers at once, and each one added is processed after
// its last Add.
func TestRenewingQueueConcurrent(t *testing.T) {
	r := newRenewing(4)
	const workers, keys, adds = 4, 16, 4000
	var (
		mu        sync.Mutex
		busy      = map[NodeID]bool{}
		lastAdd   = map[NodeID]int{}
		processed = map[NodeID]int{} // the add count seen when processing started
		seq       int
		wg        sync.WaitGroup
	)
	id := func(i int) NodeID { return NewNodeID("c", "ns", strconv.Itoa(i), KindConfigMap) }
	for range workers {
		wg.Go(func() {
			for {
				item, shutdown := r.Get()
				if shutdown {
					return
				}
				mu.Lock()
				if busy[item] {
					t.Errorf("%s processed by two workers at once", item)
				}
				busy[item] = true
				processed[item] = lastAdd[item]
				mu.Unlock()
				time.Sleep(time.Microsecond)
				mu.Lock()
				busy[item] = false
				mu.Unlock()
				r.Done(item)
			}
		})
	}
	for i := range adds {
		k := id(i % keys)
		mu.Lock()
		seq++
		lastAdd[k] = seq
		mu.Unlock()
		r.Add(k)
		if i%97 == 0 {
			time.Sleep(100 * time.Microsecond) // let it drain now and then
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		done := true
		for k, last := range lastAdd {
			if processed[k] != last {
				done = false
			}
		}
		mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	r.ShutDown()
	wg.Wait()
	r.mu.Lock()
	renewals := r.renewals
	r.mu.Unlock()
	if renewals == 0 {
		t.Error("the queue was never renewed: the test proves nothing")
	}
	for k, last := range lastAdd {
		if processed[k] != last {
			t.Errorf("%s: last processed after add %d, last added at %d", k, processed[k], last)
		}
	}
}

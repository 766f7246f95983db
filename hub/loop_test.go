package hub

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The startup race seen in the bench: two goroutines of a watch manager
// report health, and the older report (connecting) reaches the hub after the
// newer one (synced, generation 1). Before the fix the hub overwrote the
// health with the stale report, workers dropped every NodeID they met while
// the cluster looked not ready, and nothing enqueued them again until the
// 5-minute resync: the whole cluster stayed unreconciled.
func TestStartupHealthReportsOutOfOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		specs := []NodeSpec{spec("c1", "a", "v1"), spec("c1", "b", "v1"), spec("c1", "c", "v1")}
		f.h.SetDesired(specs)
		// Newer report first, then the stale one.
		f.ready("c1", 1, 2)
		f.h.ClusterChanged(ClusterHealth{Cluster: "c1", State: ClusterConnecting, Seq: 1})
		synctest.Wait()
		for _, s := range specs {
			if !b.exists(s.ID) {
				t.Errorf("%s never created: the cluster was left unreconciled", s.ID)
			}
			if got := f.node(s.ID).Status; got != StatusInSync {
				t.Errorf("%s: status %s, want in-sync", s.ID, got)
			}
		}
		if got := testutil.ToFloat64(f.h.metrics.staleHealth.WithLabelValues("c1")); got != 1 {
			t.Errorf("stale health reports counted %v, want 1", got)
		}
	})
}

// Even an unordered report (no Seq, e.g. from discovery) that makes the
// cluster look not ready never loses work: NodeIDs met meanwhile are parked
// and released when the cluster is ready again, with or without a new
// generation.
func TestNodeIDsParkedWhileClusterNotReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		s := spec("c1", "a", "v1")
		f.ready("c1", 1, 0)
		f.h.ClusterChanged(ClusterHealth{Cluster: "c1", State: ClusterConnecting})
		f.h.SetDesired([]NodeSpec{s}) // enqueued while not ready
		synctest.Wait()
		if b.exists(s.ID) {
			t.Fatal("applied while the cluster was not ready")
		}
		if got := f.node(s.ID).Status; got != StatusUnknown {
			t.Fatalf("status %s while connecting, want unknown", got)
		}
		// Ready again, same generation (a report that only changed state).
		f.ready("c1", 1, 0)
		synctest.Wait()
		if !b.exists(s.ID) {
			t.Fatal("a parked NodeID was not released when the cluster became ready")
		}
	})
}

// Health arriving before the desired state, and desired state arriving
// before any health, both end with every object created.
func TestDesiredAndHealthInEitherOrder(t *testing.T) {
	for _, healthFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("healthFirst=%v", healthFirst), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newFake(true)
				f := start(t, b, Options{})
				s := spec("c1", "a", "v1")
				if healthFirst {
					f.ready("c1", 1, 1)
					synctest.Wait()
					f.h.SetDesired([]NodeSpec{s})
				} else {
					f.h.SetDesired([]NodeSpec{s})
					synctest.Wait()
					f.ready("c1", 1, 1)
				}
				synctest.Wait()
				if !b.exists(s.ID) {
					t.Fatal("not created")
				}
				if n := f.steps(s.ID, StepCreated); n != 1 {
					t.Fatalf("created %d times, want 1", n)
				}
			})
		})
	}
}

// One drift, one repair: a second event reaches the worker before the
// cache shows the repair (the stale cache still holds the drifted object).
// Expectations make the second pass read fresh instead of repairing again,
// and the attribution of the first pass is kept.
func TestExpectationsOneRepairPerDrift(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(false)
		b.attrib = &Attribution{Manager: "drift-generator", Operation: "Update"}
		f := start(t, b, Options{})
		s := spec("c1", "a", "v1")
		b.put(s.ID, func(o *fakeObject) { o.content = "v1" })
		b.catchUp(s.ID)
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()

		// Someone edits it; the watch delivers the change.
		b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
		b.catchUp(s.ID)
		synctest.Wait()
		if got := b.repairCount(s.ID); got != 1 {
			t.Fatalf("repairs after the drift: %d, want 1", got)
		}
		// Another event arrives (e.g. a status update) while the cache
		// still shows the drifted version.
		f.h.Observe(Event{ID: s.ID, Type: EventUpdated, ObservedAt: time.Now()})
		synctest.Wait()
		if got := b.repairCount(s.ID); got != 1 {
			t.Fatalf("repaired %d times from a stale cache, want 1", got)
		}
		if got := testutil.ToFloat64(f.h.metrics.staleReads.WithLabelValues("c1")); got != 1 {
			t.Errorf("stale cache reads %v, want 1", got)
		}
		// The cache catches up: the echo is counted, nothing else happens.
		b.catchUp(s.ID)
		synctest.Wait()
		if got := b.repairCount(s.ID); got != 1 {
			t.Fatalf("repairs after the echo: %d, want 1", got)
		}
		n := f.node(s.ID)
		if got := f.steps(s.ID, StepApplied); got != 1 {
			t.Errorf("timeline has %d %q entries, want 1", got, StepApplied)
		}
		if n.LastRepair == nil || n.LastRepair.Attribution == nil || n.LastRepair.Attribution.Manager != "drift-generator" {
			t.Errorf("attribution lost: %+v", n.LastRepair)
		}
		if n.Status != StatusRepaired {
			t.Errorf("status %s, want repaired", n.Status)
		}
	})
}

// A drift that re-occurs after our write (a newer version in the cache) is
// real drift and is repaired again.
func TestNewDriftAfterRepairIsRepaired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		s := spec("c1", "a", "v1")
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		for i := range 3 {
			b.put(s.ID, func(o *fakeObject) { o.content = fmt.Sprintf("edit-%d", i) })
			synctest.Wait()
		}
		if got := b.repairCount(s.ID); got != 4 { // create + 3 repairs
			t.Fatalf("repair calls %d, want 4", got)
		}
	})
}

// ForgetCluster while a worker is inside a repair of one of its NodeIDs:
// it returns once that write has, the worker finishes without touching
// status of a forgotten NodeID, and nothing else of that cluster is
// reconciled.
func TestForgetClusterMidPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		inRepair := make(chan struct{})
		release := make(chan struct{})
		var once sync.Once
		b.onRepair = func(id NodeID) {
			if id.Name() == "a" {
				once.Do(func() {
					close(inRepair)
					<-release
				})
			}
		}
		f := start(t, b, Options{Workers: 1})
		a, c := spec("c1", "a", "v1"), spec("c1", "c", "v1")
		f.h.SetDesired([]NodeSpec{a, spec("c2", "x", "v1")})
		f.ready("c1", 1, 1)
		f.ready("c2", 2, 1)
		<-inRepair
		// c is wanted while a's create holds the one writer: c's pass
		// hands its create off to wait behind it.
		f.h.SetDesired([]NodeSpec{a, c, spec("c2", "x", "v1")})
		synctest.Wait()
		if b.exists(c.ID) {
			t.Fatal("c was created while the one writer was busy")
		}
		forgotten := make(chan struct{})
		go func() {
			defer close(forgotten)
			f.h.ForgetCluster("c1")
		}()
		synctest.Wait()
		select {
		case <-forgotten:
			t.Fatal("ForgetCluster returned while a write on the cluster was in flight")
		default:
		}
		close(release)
		<-forgotten // the write returned: nothing on c1 can be written now
		writes := func() int {
			return b.repairCount(a.ID) + b.repairCount(c.ID) + b.deleteCount(a.ID) + b.deleteCount(c.ID)
		}
		before := writes()
		synctest.Wait()
		if after := writes(); after != before {
			t.Errorf("%d writes on c1 after ForgetCluster returned", after-before)
		}
		snap := f.h.Snapshot()
		for _, n := range snap.Nodes {
			if n.ID.Cluster == "c1" {
				t.Errorf("forgotten cluster still shows %s", n.ID)
			}
		}
		if _, ok := snap.Cluster("c1"); ok {
			t.Error("forgotten cluster still in the snapshot")
		}
		if b.exists(c.ID) {
			t.Error("a NodeID of the forgotten cluster was applied after ForgetCluster", b.calls)
		}
		if !b.exists(spec("c2", "x", "v1").ID) {
			t.Error("the other cluster was not reconciled")
		}
		// Its objects were never deleted.
		if b.deleteCount(a.ID) != 0 {
			t.Error("forgetting a cluster deleted an object")
		}
	})
}

// A panic in one pass is recovered, shown on the NodeID, counted, and the
// worker goes on with the other NodeIDs; the NodeID is retried.
func TestWorkerPanicRecovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		var panicked sync.Once
		b.onRead = func(id NodeID, _ bool) {
			if id.Name() == "bad" {
				fired := false
				panicked.Do(func() { fired = true })
				if fired {
					panic("boom")
				}
			}
		}
		f := start(t, b, Options{Workers: 1})
		bad, good := spec("c1", "bad", "v1"), spec("c1", "good", "v1")
		f.h.SetDesired([]NodeSpec{bad, good})
		f.ready("c1", 1, 1)
		synctest.Wait()
		if !b.exists(good.ID) {
			t.Fatal("the worker died with the panic")
		}
		if got := testutil.ToFloat64(f.h.metrics.panics); got != 1 {
			t.Errorf("panics counted %v, want 1", got)
		}
		if f.steps(bad.ID, StepPanic) != 1 {
			t.Error("the panic is not on the NodeID's timeline")
		}
		time.Sleep(time.Second) // the rate-limited retry
		synctest.Wait()
		if !b.exists(bad.ID) {
			t.Error("the panicked NodeID was not retried")
		}
		if got := f.node(bad.ID).Status; got != StatusInSync {
			t.Errorf("status after retry %s, want in-sync", got)
		}
	})
}

// Another writer undoes every repair at once: after FightThreshold repairs
// within the window, repairs back off 2s, 4s, ... and the status says with
// whom it fights.
func TestFightBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		b.attrib = &Attribution{Manager: "hpa"}
		s := spec("c1", "a", "v1")
		var mu sync.Mutex
		var times []time.Time
		fighting := true
		b.onRepair = func(NodeID) {
			mu.Lock()
			times = append(times, time.Now())
			mu.Unlock()
		}
		f := start(t, b, Options{Workers: 1, FightThreshold: 3, FightWindow: time.Minute})
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		// The other controller reverts each repair after 10ms.
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
				mu.Lock()
				on := fighting
				mu.Unlock()
				if on {
					b.mu.Lock()
					o := b.truth[s.ID]
					drifted := o != nil && o.content == s.Hash
					b.mu.Unlock()
					if drifted {
						b.put(s.ID, func(o *fakeObject) { o.content = "hpa" })
					}
				}
			}
		}()
		time.Sleep(20 * time.Second)
		n := f.node(s.ID)
		if n.Status != StatusContested || n.Contested == nil || n.Contested.Manager != "hpa" || !strings.Contains(n.Reason, "contested with hpa") {
			t.Errorf("status %s %q (%+v), want contested with hpa", n.Status, n.Reason, n.Contested)
		}
		close(stop)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		// create + 3 quick repairs, then spaced by at least 2s, 4s, 8s.
		if len(times) < 6 || len(times) > 8 {
			t.Fatalf("%d repairs in 20s of fighting, want 6-8: %v", len(times), times)
		}
		for i, want := range []time.Duration{2 * time.Second, 4 * time.Second} {
			gap := times[4+i].Sub(times[3+i])
			if gap < want {
				t.Errorf("gap before repair %d: %s, want >= %s", 4+i, gap, want)
			}
		}
	})
}

// A failed repair is retried with exponential backoff and shows as failed;
// a permission error shows as forbidden and is retried slowly, not
// hammered.
func TestFailuresAndForbidden(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		var mu sync.Mutex
		fails := map[string]int{"flaky": 2}
		b.repErr = func(id NodeID) error {
			mu.Lock()
			defer mu.Unlock()
			if id.Name() == "denied" {
				return fmt.Errorf("cluster %q: apply configmaps denied: %w", id.Cluster, ErrForbidden)
			}
			if fails[id.Name()] > 0 {
				fails[id.Name()]--
				return errors.New("apiserver hiccup")
			}
			return nil
		}
		f := start(t, b, Options{ForbiddenRetry: time.Minute})
		flaky, denied := spec("c1", "flaky", "v1"), spec("c1", "denied", "v1")
		f.ready("c1", 1, 1)
		synctest.Wait()
		f.h.SetDesired([]NodeSpec{flaky, denied})
		synctest.Wait()
		if got := f.node(flaky.ID).Status; got != StatusFailed {
			t.Errorf("flaky: %s, want failed", got)
		}
		if got := f.node(denied.ID).Status; got != StatusForbidden {
			t.Errorf("denied: %s, want forbidden", got)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := f.node(flaky.ID).Status; got != StatusInSync {
			t.Errorf("flaky after retries: %s, want in-sync", got)
		}
		if got := f.steps(denied.ID, StepFailed); got != 1 {
			t.Errorf("denied tried %d times in 2s, want 1 (slow retry)", got)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := f.steps(denied.ID, StepFailed); got != 2 {
			t.Errorf("denied tried %d times after a minute, want 2", got)
		}
	})
}

// A NodeID whose reads fail because the cluster cannot be reached
// (ErrUnreachable) is retried at a fixed pace, its backoff never grows: it
// is repaired within a second of the cluster answering again, however long
// the outage, while an ordinary failure backs off exponentially.
func TestUnreachableDoesNotGrowBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		var mu sync.Mutex
		fails := map[string]int{"outage": 12, "broken": 12}
		b.readErr = func(id NodeID) error {
			mu.Lock()
			defer mu.Unlock()
			if fails[id.Name()] == 0 {
				return nil
			}
			fails[id.Name()]--
			if id.Name() == "outage" {
				return fmt.Errorf("cluster %q: cannot reach the apiserver: %w", id.Cluster, ErrUnreachable)
			}
			return errors.New("apiserver hiccup")
		}
		f := start(t, b, Options{UnreachableRetry: time.Second})
		outage, broken := spec("c1", "outage", "v1"), spec("c1", "broken", "v1")
		f.ready("c1", 1, 1)
		synctest.Wait()
		f.h.SetDesired([]NodeSpec{outage, broken})
		synctest.Wait()
		// 12 failures at one a second, then the 13th pass creates it.
		time.Sleep(12*time.Second + 500*time.Millisecond)
		synctest.Wait()
		if got := f.node(outage.ID).Status; got != StatusInSync {
			t.Errorf("outage after 12.5s: %s, want in-sync (12 retries a second apart)", got)
		}
		// The ordinary failure's backoff doubles from 100ms: 12 failures
		// take over 6 minutes.
		if got := f.node(broken.ID).Status; got != StatusFailed {
			t.Errorf("broken after 12.5s: %s, want still failed (exponential backoff)", got)
		}
		if got := f.steps(outage.ID, StepFailed); got != 12 {
			t.Errorf("outage failed %d times, want 12", got)
		}
	})
}

// Warn-only and paused report drift without repairing; a manual repair
// overrides both once; resuming a paused cluster repairs.
func TestPoliciesPauseAndManualRepair(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		warn, paused := spec("c1", "warn", "v1"), spec("c2", "held", "v1")
		warn.Policy = PolicyWarn
		f.h.SetDesired([]NodeSpec{warn, paused})
		f.ready("c1", 1, 1)
		f.ready("c2", 2, 1)
		synctest.Wait()
		f.h.PauseCluster("c2", true)
		b.put(warn.ID, func(o *fakeObject) { o.content = "edited" })
		b.put(paused.ID, func(o *fakeObject) { o.content = "edited" })
		synctest.Wait()
		if got := f.node(warn.ID).Status; got != StatusWarnOnly {
			t.Errorf("warn: %s", got)
		}
		if got := f.node(paused.ID).Status; got != StatusPaused {
			t.Errorf("paused: %s", got)
		}
		if b.repairCount(warn.ID) != 1 || b.repairCount(paused.ID) != 1 {
			t.Fatal("repaired despite warn-only or pause")
		}
		if err := f.h.RepairNow(warn.ID); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if b.repairCount(warn.ID) != 2 {
			t.Error("manual repair did not override warn-only")
		}
		if err := f.h.RepairNow(NewNodeID("c1", "shop", "nope", KindConfigMap)); !errors.Is(err, ErrUnknownNode) {
			t.Errorf("RepairNow of an unknown NodeID: %v", err)
		}
		f.h.PauseCluster("c2", false)
		synctest.Wait()
		if b.repairCount(paused.ID) != 2 {
			t.Error("resuming the cluster did not repair")
		}
		// An application switched to warn at runtime stops repairs.
		f.h.SetApplicationPolicy("held", PolicyWarn)
		b.put(paused.ID, func(o *fakeObject) { o.content = "again" })
		synctest.Wait()
		if b.repairCount(paused.ID) != 2 {
			t.Error("runtime warn override ignored")
		}
		if snap := f.h.Snapshot(); snap.AppPolicies["held"] != PolicyWarn {
			t.Errorf("snapshot overrides %v", snap.AppPolicies)
		}
		f.h.SetApplicationPolicy("held", "")
		synctest.Wait()
		if b.repairCount(paused.ID) != 3 {
			t.Error("removing the override did not repair")
		}
	})
}

// The label-filtered watch reports a removed label as a delete. Repairing
// at once, the backend tells unlabelled from deleted; not repairing
// (warn-only), the loop confirms with a fresh read before reporting.
func TestUnlabelledVersusDeleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		var mu sync.Mutex
		var records []Repair
		f := start(t, b, Options{OnRecord: func(r Repair) {
			mu.Lock()
			records = append(records, r)
			mu.Unlock()
		}})
		fix, warn, gone := spec("c1", "fix", "v1"), spec("c1", "warn", "v1"), spec("c1", "gone", "v1")
		warn.Policy = PolicyWarn
		f.h.SetDesired([]NodeSpec{fix, warn, gone})
		f.ready("c1", 1, 1)
		synctest.Wait()
		b.put(fix.ID, func(o *fakeObject) { o.owned = false })
		b.put(warn.ID, func(o *fakeObject) { o.owned = false })
		b.remove(gone.ID)
		synctest.Wait()
		if got := f.node(fix.ID).LastRepair.Drift.Class; got != DriftUnlabelled {
			t.Errorf("fix: class %s, want unlabelled", got)
		}
		if got := f.node(gone.ID).LastRepair.Drift.Class; got != DriftMissing {
			t.Errorf("gone: class %s, want missing", got)
		}
		w := f.node(warn.ID)
		if w.Status != StatusWarnOnly || w.LastRepair.Drift.Class != DriftUnlabelled {
			t.Errorf("warn: %s %s, want warn-only unlabelled", w.Status, w.LastRepair.Drift.Class)
		}
		if !b.exists(gone.ID) {
			t.Error("deleted object not recreated")
		}
		if got := testutil.ToFloat64(f.h.metrics.drift.WithLabelValues("c1", "configmap", "unlabelled")); got != 2 {
			t.Errorf("unlabelled drift counted %v, want 2", got)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(records) == 0 {
			t.Error("OnRecord never called")
		}
	})
}

// Decommission: the object is deleted with the version just read and the
// NodeID disappears; one held by a finalizer becomes stuck after the
// timeout; one that lost our label is released, never deleted.
func TestDecommission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{DecommissionTimeout: time.Minute})
		keep, drop, held, foreign := spec("c1", "keep", "v1"), spec("c1", "drop", "v1"), spec("c1", "held", "v1"), spec("c1", "foreign", "v1")
		f.h.SetDesired([]NodeSpec{keep, drop, held, foreign})
		f.ready("c1", 1, 1)
		synctest.Wait()
		b.put(held.ID, func(o *fakeObject) { o.stuck = "finalizer example.com/hold" })
		b.mu.Lock()
		b.truth[foreign.ID].owned = false // someone took it over; the cache still has it
		b.mu.Unlock()
		synctest.Wait()
		_, removed := f.h.SetDesired([]NodeSpec{keep})
		if len(removed) != 3 {
			t.Fatalf("removed %v", removed)
		}
		synctest.Wait()
		if b.exists(drop.ID) {
			t.Error("decommissioned object not deleted")
		}
		if _, ok := f.h.Snapshot().Node(drop.ID); ok {
			t.Error("pruned NodeID still shown")
		}
		if b.deleteCount(foreign.ID) != 0 || !b.exists(foreign.ID) {
			t.Error("an object without our label was deleted")
		}
		if got := f.node(held.ID).Status; got != StatusDecommissioning {
			t.Errorf("held: %s, want decommissioning", got)
		}
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		if n := f.node(held.ID); n.Status != StatusStuck || !strings.Contains(n.Reason, "not finished") {
			t.Errorf("held after the timeout: %s %q, want stuck", n.Status, n.Reason)
		}
		// Wanted again: the decommission ends, nothing more is deleted.
		f.h.SetDesired([]NodeSpec{keep, held})
		synctest.Wait()
		if b.deleteCount(held.ID) != 1 {
			t.Errorf("held deleted %d times, want 1", b.deleteCount(held.ID))
		}
	})
}

// A cluster that becomes unreachable shows its NodeIDs as unknown (never
// stale data as in sync); its next generation catches up with fresh reads.
func TestUnreachableThenCatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(false)
		f := start(t, b, Options{})
		s := spec("c1", "a", "v1")
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		b.catchUp(s.ID)
		synctest.Wait()
		f.h.ClusterChanged(ClusterHealth{Cluster: "c1", State: ClusterUnreachable, LastError: "dial tcp: refused", Seq: 2})
		if n := f.node(s.ID); n.Status != StatusUnknown || !strings.Contains(n.Reason, "refused") {
			t.Errorf("while unreachable: %s %q", n.Status, n.Reason)
		}
		// Drift made during the outage; the cache has not seen it.
		b.put(s.ID, func(o *fakeObject) { o.content = "outage" })
		f.ready("c1", 2, 3)
		synctest.Wait()
		if got := b.repairCount(s.ID); got != 2 {
			t.Errorf("repairs after catch-up %d, want 2 (create + the outage drift)", got)
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if !strings.Contains(strings.Join(b.calls, "\n"), "read a fresh=true") {
			t.Error("the catch-up pass did not read fresh")
		}
	})
}

// Rollout progress: a stuck Deployment is reported stuck; deleting objects
// are waited for.
func TestStuckAndDeleting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		stuck, del := spec("c1", "stuck", "v1"), spec("c1", "del", "v1")
		f.h.SetDesired([]NodeSpec{stuck, del})
		f.ready("c1", 1, 1)
		synctest.Wait()
		b.put(stuck.ID, func(o *fakeObject) { o.stuck = "ProgressDeadlineExceeded: no nodes" })
		b.put(del.ID, func(o *fakeObject) { o.deleting = true })
		synctest.Wait()
		if n := f.node(stuck.ID); n.Status != StatusStuck || f.steps(stuck.ID, StepStuck) != 1 {
			t.Errorf("stuck: %s, %d stuck steps", n.Status, f.steps(stuck.ID, StepStuck))
		}
		if n := f.node(del.ID); n.Status != StatusDrifted || n.LastRepair.Action != "wait-deletion" {
			t.Errorf("deleting: %s %+v", n.Status, n.LastRepair)
		}
		b.remove(del.ID)
		synctest.Wait()
		if !b.exists(del.ID) {
			t.Error("not recreated once gone")
		}
	})
}

// No backend registered yet for a ready cluster (its manager is being
// replaced): the NodeID is retried shortly, not dropped.
func TestNoBackendYet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		sw := &switchable{}
		f := start(t, b, Options{Workers: 1})
		f.h.SetBackends(sw)
		h := f.h
		s := spec("c1", "a", "v1")
		h.SetDesired([]NodeSpec{s})
		h.ClusterChanged(ClusterHealth{Cluster: "c1", State: ClusterSynced, Generation: 1})
		synctest.Wait()
		sw.set(b)
		time.Sleep(noBackendRetry)
		synctest.Wait()
		if !b.exists(s.ID) {
			t.Error("NodeID dropped while its backend was missing")
		}
	})
}

type switchable struct {
	mu sync.Mutex
	b  Backend
}

func (s *switchable) set(b Backend) { s.mu.Lock(); s.b = b; s.mu.Unlock() }
func (s *switchable) Backend(string) (Backend, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b, s.b != nil
}

// Subscribe never blocks, even racing with publishes; a slow subscriber
// gets the latest snapshot.
func TestSubscribeNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{SnapshotInterval: time.Millisecond})
		f.h.SetDesired([]NodeSpec{spec("c1", "a", "v1")})
		f.ready("c1", 1, 1)
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				ch, cancel := f.h.Subscribe()
				defer cancel()
				defer cancel() // idempotent
				select {
				case <-ch:
				case <-time.After(time.Second):
					t.Error("no snapshot within a second")
				}
			})
		}
		wg.Wait()
		synctest.Wait()
		ch, cancel := f.h.Subscribe()
		defer cancel()
		time.Sleep(10 * time.Millisecond) // the publisher's next turn
		synctest.Wait()
		var last *Snapshot
		for len(ch) > 0 {
			last = <-ch
		}
		if last == nil {
			t.Fatal("no snapshot")
		}
		if n, ok := last.Node(spec("c1", "a", "v1").ID); !ok || n.Status != StatusInSync {
			t.Errorf("latest snapshot: %+v", n)
		}
	})
}

// A removed cluster leaves the snapshot; its desired NodeIDs stay unknown.
func TestClusterRemovedReport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		s := spec("c1", "a", "v1")
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		if _, ok := f.h.Health("c1"); !ok {
			t.Fatal("no health")
		}
		f.h.ClusterChanged(ClusterHealth{Cluster: "c1", State: ClusterRemoved, Seq: 5})
		if _, ok := f.h.Health("c1"); ok {
			t.Error("health of a removed cluster")
		}
		if got := f.node(s.ID).Status; got != StatusUnknown {
			t.Errorf("status %s, want unknown", got)
		}
		if got, ok := f.h.Desired(s.ID); !ok || got.ID != s.ID {
			t.Error("desired state lost")
		}
	})
}

// Run refuses a second start and ends with every goroutine it started.
func TestRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := start(t, newFake(true), Options{})
		synctest.Wait()
		if !f.h.Running() {
			t.Fatal("not running")
		}
		if err := f.h.Run(t.Context()); err == nil {
			t.Error("second Run did not fail")
		}
		f.stop()
		if f.h.Running() {
			t.Error("still running after stop")
		}
	})
}

// The periodic resync is a safety net: it re-checks every NodeID and
// repairs drift whose event was lost.
func TestResyncSafetyNet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(false)
		f := start(t, b, Options{Resync: time.Minute})
		s := spec("c1", "a", "v1")
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		b.catchUp(s.ID)
		synctest.Wait()
		// A change whose event is lost: the cache shows it, no event.
		b.put(s.ID, func(o *fakeObject) { o.content = "lost" })
		b.mu.Lock()
		c := *b.truth[s.ID]
		b.cache[s.ID] = &c
		b.mu.Unlock()
		time.Sleep(67 * time.Second)
		synctest.Wait()
		if got := b.repairCount(s.ID); got != 2 {
			t.Errorf("repairs %d, want 2 (create + resync repair)", got)
		}
	})
}

// A resync that comes due while the queue is busy (a write in flight here,
// as in a cold sync longer than the period) waits until the queue is idle,
// and runs then; kept busy, it runs anyway one period later. The cluster's
// first sync came before the last resync, so the postponed one covers it.
func TestResyncWaitsForABusyQueue(t *testing.T) {
	for _, release := range []bool{true, false} {
		t.Run(map[bool]string{true: "runs once idle", false: "runs after one more period"}[release], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newFake(true)
				idle, busy := spec("c1", "idle", "v1"), spec("c1", "busy", "v1")
				count := countReads(b)
				f := start(t, b, Options{Resync: time.Minute, CallTimeout: time.Hour})
				f.h.SetDesired([]NodeSpec{idle, busy})
				f.ready("c1", 1, 1)
				synctest.Wait()
				first := count(idle.ID)
				reads := func() int { return count(idle.ID) - first }
				time.Sleep(67 * time.Second) // past the first resync
				synctest.Wait()
				if got := reads(); got != 1 {
					t.Fatalf("the first resync read the idle NodeID %d times, want 1", got)
				}
				// An edit of busy whose repair stays in flight.
				held := holdWrites(b, busy.ID)
				b.put(busy.ID, func(o *fakeObject) { o.content = "edited" })
				synctest.Wait()
				time.Sleep(67 * time.Second) // past the second resync's due time
				synctest.Wait()
				if got := reads(); got != 1 {
					t.Fatalf("the resync ran while a write was in flight: %d reads of an idle NodeID, want the first resync's alone", got)
				}
				if got := testutil.ToFloat64(f.h.metrics.resyncsPostponed); got != 1 {
					t.Errorf("driftwatch_resyncs_postponed_total %v, want 1", got)
				}
				if release {
					close(held)
					synctest.Wait()
					time.Sleep(2 * resyncIdlePoll)
					synctest.Wait()
					if got := reads(); got != 2 {
						t.Errorf("once the queue was idle: %d reads of the idle NodeID, want 2 (the resyncs)", got)
					}
					return
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				if got := reads(); got != 2 {
					t.Errorf("one period later, the write still in flight: %d reads of the idle NodeID, want 2 (the resyncs)", got)
				}
				close(held)
				synctest.Wait()
			})
		})
	}
}

// holdWrites makes every write of id wait until the returned channel is
// closed (or its call's context ends). Set it before the write's trigger.
func holdWrites(b *fakeBackend, id NodeID) chan struct{} {
	held := make(chan struct{})
	b.onWrite = func(ctx context.Context, got NodeID) error {
		if got == id {
			select {
			case <-held:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	return held
}

// countReads counts the backend's reads by NodeID. Set it before the hub
// starts: the workers read b.onRead without a lock.
func countReads(b *fakeBackend) func(NodeID) int {
	var mu sync.Mutex
	reads := map[NodeID]int{}
	b.onRead = func(id NodeID, _ bool) {
		mu.Lock()
		reads[id]++
		mu.Unlock()
	}
	return func(id NodeID) int {
		mu.Lock()
		defer mu.Unlock()
		return reads[id]
	}
}

// A resync that waited for a busy queue leaves out a cluster passed over in
// full since the last resync (here a catch-up after a reconnect), whose
// objects were just checked and which was scanned for orphans then, and
// covers the other clusters; the next resync, which does not wait, covers
// it again. A resync that does not
// wait covers a cluster passed over in full as any other (the first one
// here, after both clusters' first syncs).
func TestPostponedResyncLeavesOutAClusterPassedInFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		caught, other, busy := spec("c1", "caught", "v1"), spec("c2", "other", "v1"), spec("c2", "busy", "v1")
		count := countReads(b)
		var mu sync.Mutex
		lists := 0 // orphan scans, of either cluster
		b.onList = func() {
			mu.Lock()
			lists++
			mu.Unlock()
		}
		listsNow := func() int {
			mu.Lock()
			defer mu.Unlock()
			return lists
		}
		f := start(t, b, Options{Resync: time.Minute, CallTimeout: time.Hour})
		f.h.SetDesired([]NodeSpec{caught, other, busy})
		f.ready("c1", 1, 1)
		f.ready("c2", 1, 1)
		synctest.Wait()
		first := map[NodeID]int{caught.ID: count(caught.ID), other.ID: count(other.ID)} // the first syncs'
		readsOf := func(id NodeID) int { return count(id) - first[id] }
		time.Sleep(67 * time.Second) // past the first resync, which does not wait
		synctest.Wait()
		if readsOf(caught.ID) != 1 || readsOf(other.ID) != 1 {
			t.Fatalf("the first resync read caught %d and other %d times, want 1 each", readsOf(caught.ID), readsOf(other.ID))
		}
		// c1 reconnects (its catch-up reads everything fresh) while a
		// repair on c2 stays in flight past the second resync's due time.
		held := holdWrites(b, busy.ID)
		b.put(busy.ID, func(o *fakeObject) { o.content = "edited" })
		f.ready("c1", 2, 2)
		synctest.Wait()
		if readsOf(caught.ID) != 2 {
			t.Fatalf("the catch-up read caught %d times in all, want 2", readsOf(caught.ID))
		}
		time.Sleep(67 * time.Second)
		synctest.Wait()
		scans := listsNow() // the catch-up's scan of c1 among them
		close(held)
		synctest.Wait()
		time.Sleep(2 * resyncIdlePoll)
		synctest.Wait()
		if got := testutil.ToFloat64(f.h.metrics.resyncsPostponed); got != 1 {
			t.Fatalf("driftwatch_resyncs_postponed_total %v, want 1", got)
		}
		if got := listsNow() - scans; got != 1 {
			t.Errorf("the postponed resync scanned %d clusters for orphans, want 1 (c2; c1 was scanned at its catch-up)", got)
		}
		if got := readsOf(caught.ID); got != 2 {
			t.Errorf("the postponed resync read caught, passed over in full since the last resync: %d reads in all, want 2", got)
		}
		if got := readsOf(other.ID); got != 2 {
			t.Errorf("the postponed resync did not cover the other cluster: %d reads of other in all, want 2", got)
		}
		if got := testutil.ToFloat64(f.h.metrics.resyncsLeftOut.WithLabelValues("c1")); got != 1 {
			t.Errorf("driftwatch_resync_clusters_left_out_total{cluster=c1} %v, want 1", got)
		}
		if got := testutil.ToFloat64(f.h.metrics.resyncsLeftOut.WithLabelValues("c2")); got != 0 {
			t.Errorf("driftwatch_resync_clusters_left_out_total{cluster=c2} %v, want 0", got)
		}
		time.Sleep(67 * time.Second) // the third resync, which does not wait
		synctest.Wait()
		if got := readsOf(caught.ID); got != 3 {
			t.Errorf("the next resync did not cover the cluster left out: %d reads of caught in all, want 3", got)
		}
	})
}

// A backend's note on a spec is the status reason when the loop has none,
// and a changed note reaches the snapshot without a change of the body.
func TestSpecNoteIsTheReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		s := spec("c1", "gone", "v1")
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		if n := f.node(s.ID); n.Status != StatusInSync || n.Reason != "" {
			t.Fatalf("before the note: %s %q", n.Status, n.Reason)
		}
		s.Policy, s.Note = PolicyWarn, "removed from config"
		f.h.SetDesired([]NodeSpec{s})
		synctest.Wait()
		if n := f.node(s.ID); n.Reason != "removed from config" || n.Policy != PolicyWarn {
			t.Errorf("with the note: reason %q, policy %s", n.Reason, n.Policy)
		}
		b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
		synctest.Wait()
		if n := f.node(s.ID); n.Status != StatusWarnOnly || n.Reason == "" {
			t.Errorf("drifted with the note: %s %q", n.Status, n.Reason)
		}
		if b.repairCount(s.ID) != 1 {
			t.Errorf("repairs = %d, want only the first apply", b.repairCount(s.ID))
		}
	})
}

// An object the backend retains (annotated never to be pruned) or refuses
// to delete (a Namespace holding objects we do not manage) is left in place
// by a prune: the NodeID leaves the hub, the feed says why, nothing is
// deleted and nothing is retried.
func TestDecommissionRetains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{DecommissionTimeout: time.Minute})
		keep, ns, crd := spec("c1", "keep", "v1"), spec("c1", "ns", "v1"), spec("c1", "crd", "v1")
		f.h.SetDesired([]NodeSpec{keep, ns, crd})
		f.ready("c1", 1, 1)
		synctest.Wait()
		b.put(crd.ID, func(o *fakeObject) { o.retain = "its driftwatch.io/prune annotation is disabled" })
		b.put(ns.ID, func(o *fakeObject) { o.refuse = true })
		synctest.Wait()
		f.h.SetDesired([]NodeSpec{keep})
		synctest.Wait()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		for _, id := range []NodeID{ns.ID, crd.ID} {
			if !b.exists(id) {
				t.Errorf("%s deleted", id)
			}
			if _, ok := f.h.Snapshot().Node(id); ok {
				t.Errorf("%s still shown after its prune was refused", id)
			}
		}
		if b.deleteCount(crd.ID) != 0 {
			t.Errorf("retained object: %d deletes, want none", b.deleteCount(crd.ID))
		}
		var retained []string
		for _, e := range f.h.Snapshot().Feed {
			if strings.HasPrefix(e.Action, "retained") {
				retained = append(retained, e.ID.Name()+": "+e.Action)
			}
		}
		if len(retained) != 2 {
			t.Errorf("feed: %q, want two retained entries", retained)
		}
	})
}

// NodeIDs are enqueued by apply phase (NodeSpec.Order), both when the
// desired state changes on a synced cluster and when a cluster becomes
// synced with the desired state already set: with one worker, the first
// phase's objects are created first. (Which of the two enqueues an ID is
// settled before the other starts: an ID in a worker's hands when the
// other enqueues it goes back behind the rest, a best-effort order that a
// failed apply's retry covers.)
func TestSyncAppliesByOrder(t *testing.T) {
	for _, desiredFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("desired first %v", desiredFirst), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newFake(true)
				var created []string
				b.onRepair = func(id NodeID) { created = append(created, id.Name()) }
				f := start(t, b, Options{Workers: 1})
				first, second, last := spec("c1", "z-namespace", "v1"), spec("c1", "a-app", "v1"), spec("c1", "b-webhook", "v1")
				first.Order, second.Order, last.Order = 0, 1, 2
				if desiredFirst {
					f.h.SetDesired([]NodeSpec{last, second, first})
					synctest.Wait()
					f.ready("c1", 1, 1)
				} else {
					f.ready("c1", 1, 1)
					synctest.Wait()
					f.h.SetDesired([]NodeSpec{last, second, first})
				}
				synctest.Wait()
				if want := []string{"z-namespace", "a-app", "b-webhook"}; !slices.Equal(created, want) {
					t.Errorf("created %v, want %v", created, want)
				}
			})
		})
	}
}

// The echo of a write is counted once whether its watch event arrives after
// the write returned (Observe meets the expectation) or before it (the
// pass the event queued finds the write's version in the cache): under
// load the echo often beats the apply's answer, and the counter missed it.
func TestEchoCountedWhicheverComesFirst(t *testing.T) {
	for _, early := range []bool{true, false} {
		t.Run(map[bool]string{true: "echo before the write returns", false: "echo after"}[early], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newFake(early) // auto: the event is delivered inside Repair
				f := start(t, b, Options{})
				s := spec("c1", "a", "v1")
				// One pass creates it: a second pass between the write
				// and its echo reads stale (TestEchoCountedAfterAFreshRead),
				// which this test's stale-read count rules out.
				createOnce(t, f, b, s)
				if !early {
					b.catchUp(s.ID)
					synctest.Wait()
				}
				if got := testutil.ToFloat64(f.h.metrics.echoes.WithLabelValues("c1")); got != 1 {
					t.Errorf("echoes counted %v, want 1", got)
				}
				// Another event of the same version is no second echo.
				b.catchUp(s.ID)
				synctest.Wait()
				if got := testutil.ToFloat64(f.h.metrics.echoes.WithLabelValues("c1")); got != 1 {
					t.Errorf("echoes counted %v after a second event, want 1", got)
				}
				if got := testutil.ToFloat64(f.h.metrics.staleReads.WithLabelValues("c1")); got != 0 {
					t.Errorf("stale reads %v, want 0", got)
				}
			})
		})
	}
}

// TestEchoCountedAfterAFreshRead: a pass that runs between a write and its
// echo reads the cache before the echo (a stale read), then fresh: the
// fresh read shows the write's own version, so the expectation stands and
// the echo that follows is counted; a cached read before it is still stale.
func TestEchoCountedAfterAFreshRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(false) // the cache lags until catchUp
		f := start(t, b, Options{})
		s := spec("c1", "a", "v1")
		createOnce(t, f, b, s)
		stale := func() float64 { return testutil.ToFloat64(f.h.metrics.staleReads.WithLabelValues("c1")) }
		echoes := func() float64 { return testutil.ToFloat64(f.h.metrics.echoes.WithLabelValues("c1")) }
		// Two passes before the echo: each reads the cache, which does
		// not have the object yet, and reads again fresh.
		for i := 1; i <= 2; i++ {
			f.h.Observe(Event{ID: s.ID, Type: EventUpdated, ObservedAt: time.Now()})
			synctest.Wait()
			if got := stale(); got != float64(i) {
				t.Fatalf("after pass %d before the echo: stale reads %v, want %d", i, got, i)
			}
		}
		if got := echoes(); got != 0 {
			t.Errorf("echoes counted %v before the echo, want 0", got)
		}
		if n := b.repairCount(s.ID); n != 1 {
			t.Errorf("%d writes, want the create only", n)
		}
		b.catchUp(s.ID)
		synctest.Wait()
		if got := echoes(); got != 1 {
			t.Errorf("echoes counted %v after the echo, want 1", got)
		}
		// The expectation is met: the cache is trusted again.
		f.h.Observe(Event{ID: s.ID, Type: EventUpdated, ObservedAt: time.Now()})
		synctest.Wait()
		if got := stale(); got != 2 {
			t.Errorf("stale reads %v after the echo, want still 2", got)
		}
	})
}

// createOnce makes the cluster ready, then s desired, so that one pass
// creates its object (a cluster made ready after would queue a second pass
// while the create is in flight).
func createOnce(t *testing.T, f *fixture, b *fakeBackend, s NodeSpec) {
	t.Helper()
	f.ready(s.ID.Cluster, 1, 1)
	synctest.Wait()
	f.h.SetDesired([]NodeSpec{s})
	synctest.Wait()
	if !b.exists(s.ID) {
		t.Fatal("not created")
	}
}

// A NodeID leaves the desired state while its cluster does not serve its
// kind (a custom resource whose CRD never came, or went away with its
// objects): nothing can be read or deleted, so its decommission ends at
// once with a feed line saying so, never a failed prune retried for ever.
func TestDecommissionOfAKindNotServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		keep, cr := spec("c1", "keep", "v1"), spec("c1", "gear", "v1")
		b.readErr = func(id NodeID) error {
			if id == cr.ID {
				return fmt.Errorf("cluster \"c1\": read widget.example.com gear: the cluster serves no kind Widget.example.com/v1: %w", ErrKindNotServed)
			}
			return nil
		}
		f := start(t, b, Options{DecommissionTimeout: time.Minute})
		f.h.SetDesired([]NodeSpec{keep, cr})
		f.ready("c1", 1, 1)
		synctest.Wait()
		f.h.SetDesired([]NodeSpec{keep})
		synctest.Wait()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if _, ok := f.h.Snapshot().Node(cr.ID); ok {
			t.Error("still shown after it left the desired state")
		}
		if got := testutil.ToFloat64(f.h.metrics.repairs.WithLabelValues("c1", "failure")); got != 0 {
			t.Errorf("failures counted: %v", got)
		}
		var lines []string
		for _, e := range f.h.Snapshot().Feed {
			if e.ID == cr.ID {
				lines = append(lines, e.Action+" "+e.Err)
			}
		}
		if len(lines) != 1 || lines[0] != "nothing to prune: its kind is not served " {
			t.Errorf("feed: %q, want one line saying there is nothing to prune", lines)
		}
	})
}

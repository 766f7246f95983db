package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// decide is the one rule of the write gate: every switch, every kind of
// write, and "a manual repair overrides what was set before it, never what
// was set after it".
func TestDecide(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	hold := &Hold{Target: HoldTarget{HoldCluster, "c1"}, Reason: "incident", Until: now.Add(time.Hour)}
	for _, tc := range []struct {
		name   string
		kind   writeKind
		in     intentView
		allow  bool
		action string
		manual bool
	}{
		{"repair, nothing set", writeRepair, intentView{current: true}, true, "", false},
		{"stopping", writeRepair, intentView{current: true, stopping: true}, false, "stopping", false},
		{"stale pass", writeRepair, intentView{}, false, "stale", false},
		{"paused repair", writeRepair, intentView{current: true, paused: 3}, false, "paused", false},
		{"paused create", writeCreate, intentView{current: true, paused: 3}, false, "paused", false},
		{"paused prune", writeDelete, intentView{current: true, paused: 3}, false, "paused", false},
		{"held repair", writeRepair, intentView{current: true, hold: hold, holdSeq: 2}, false, "held", false},
		{"held create", writeCreate, intentView{current: true, hold: hold, holdSeq: 2}, false, "held", false},
		{"held prune", writeDelete, intentView{current: true, hold: hold, holdSeq: 2}, false, "held", false},
		{"warn repair", writeRepair, intentView{current: true, policy: PolicyWarn}, false, "warn", false},
		{"warn prune", writeDelete, intentView{current: true, policy: PolicyWarn}, false, "warn", false},
		{"warn create", writeCreate, intentView{current: true, policy: PolicyWarn}, true, "", false},
		{"manual after pause", writeRepair, intentView{current: true, paused: 3, manual: 4}, true, "", true},
		{"pause after manual", writeRepair, intentView{current: true, paused: 5, manual: 4}, false, "paused", false},
		{"manual after hold", writeRepair, intentView{current: true, hold: hold, holdSeq: 2, manual: 4}, true, "", true},
		{"hold after manual", writeRepair, intentView{current: true, hold: hold, holdSeq: 6, manual: 4}, false, "held", false},
		{"manual over config warn", writeRepair, intentView{current: true, policy: PolicyWarn, manual: 1}, true, "", true},
		{"warn override after manual", writeRepair, intentView{current: true, policy: PolicyWarn, policySeq: 7, manual: 4}, false, "warn", false},
		{"manual never prunes over a pause", writeDelete, intentView{current: true, paused: 3, manual: 4}, false, "paused", false},
		{"manual over pause, later hold", writeRepair, intentView{current: true, paused: 3, hold: hold, holdSeq: 9, manual: 4}, false, "held", false},
		{"manual never overrides stopping", writeRepair, intentView{current: true, stopping: true, manual: 4}, false, "stopping", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := decide(tc.kind, tc.in, now)
			if v.allow != tc.allow || v.action != tc.action || v.manual != tc.manual {
				t.Fatalf("decide = allow %v action %q manual %v, want %v %q %v", v.allow, v.action, v.manual, tc.allow, tc.action, tc.manual)
			}
			if !v.allow && v.status != "" && v.reason == "" {
				t.Errorf("refusal %q without a reason", v.action)
			}
			if tc.kind == writeDelete && !v.allow && v.status != "" && !strings.Contains(v.reason, "would prune") {
				t.Errorf("prune refusal reason %q does not say 'would prune'", v.reason)
			}
		})
	}
}

// gated is a fixture whose backend blocks at a chosen point of a pass until
// the test lets it go on.
type gated struct {
	*fixture
	at      chan NodeID   // a pass reached the blocking point
	proceed chan struct{} // let it go on
}

// midPass starts a hub whose NodeID c1:shop/a is created, then drifted,
// and returns once the drift's pass is blocked in attribution: it began
// and classified the drift and is about to write. close(g.proceed) lets it
// go on. It must be called inside synctest.Test.
func midPass(t *testing.T) (*gated, NodeSpec) {
	t.Helper()
	b := newFake(true)
	b.attrib = &Attribution{Manager: "kubectl-edit"}
	g := &gated{fixture: start(t, b, Options{}), at: make(chan NodeID, 1), proceed: make(chan struct{})}
	s := spec("c1", "a", "v1")
	g.h.SetDesired([]NodeSpec{s})
	g.ready("c1", 1, 1)
	synctest.Wait()
	var once sync.Once
	b.onAttribute = func(id NodeID) {
		once.Do(func() {
			g.at <- id
			<-g.proceed
		})
	}
	b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
	<-g.at
	return g, s
}

// A switch set while a pass is between its read and its write holds at the
// write: the pass is blocked in attribution (after the pass began and
// classified the drift, before it writes), the operator pauses, holds or
// switches to warn-only, and the pass must not write. Before the write
// gate the pass repaired with the intent it read when it began.
func TestSwitchSetMidPassHoldsAtTheWrite(t *testing.T) {
	for _, sw := range []string{"pause", "hold", "warn"} {
		t.Run(sw, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g, s := midPass(t)
				b := g.b
				switch sw {
				case "pause":
					if err := g.h.PauseCluster("c1", true); err != nil {
						t.Fatal(err)
					}
				case "hold":
					if _, err := g.h.Hold(HoldTarget{HoldNode, s.ID.String()}, time.Hour, "incident"); err != nil {
						t.Fatal(err)
					}
				case "warn":
					if err := g.h.SetApplicationPolicy("a", PolicyWarn); err != nil {
						t.Fatal(err)
					}
				}
				close(g.proceed)
				synctest.Wait()
				if got := b.repairCount(s.ID); got != 1 { // the first apply only
					t.Fatalf("%s set mid-pass: %d writes, want only the first apply", sw, got)
				}
				want := map[string]Status{"pause": StatusPaused, "hold": StatusHeld, "warn": StatusWarnOnly}[sw]
				if got := g.node(s.ID).Status; got != want {
					t.Errorf("status %s, want %s", got, want)
				}
				if got := testutil.ToFloat64(g.h.metrics.refused.WithLabelValues("c1", map[string]string{"pause": "paused", "hold": "held", "warn": "warn"}[sw])); got < 1 {
					t.Errorf("refused writes counted %v, want at least 1", got)
				}
			})
		})
	}
}

// A pause set while a write is in flight returns only once that write has
// returned: after PauseCluster returns, nothing on the cluster can still be
// written. The write's own context is not cancelled while it finishes
// within IntentWait.
func TestPauseWaitsForTheWriteInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{IntentWait: time.Minute})
		s := spec("c1", "a", "v1")
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		inWrite, finish := make(chan struct{}), make(chan struct{})
		var once sync.Once
		b.onWrite = func(ctx context.Context, _ NodeID) error {
			once.Do(func() {
				close(inWrite)
				<-finish
			})
			return ctx.Err()
		}
		b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
		<-inWrite
		paused := make(chan struct{})
		go func() {
			defer close(paused)
			if err := f.h.PauseCluster("c1", true); err != nil {
				t.Error(err)
			}
		}()
		synctest.Wait()
		select {
		case <-paused:
			t.Fatal("PauseCluster returned while a write on the cluster was still in flight")
		default:
		}
		close(finish)
		synctest.Wait()
		select {
		case <-paused:
		default:
			t.Fatal("PauseCluster did not return once the write finished")
		}
		if got := b.repairCount(s.ID); got != 2 {
			t.Fatalf("repairs %d, want the first apply and the repair in flight", got)
		}
		// Paused now: the next drift is not repaired.
		b.put(s.ID, func(o *fakeObject) { o.content = "again" })
		synctest.Wait()
		if got := b.repairCount(s.ID); got != 2 {
			t.Errorf("repaired on a paused cluster: %d", got)
		}
	})
}

// A write that does not finish within IntentWait (a hung connection) is
// cancelled, and the pause returns once it has returned.
func TestPauseCancelsAHungWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{IntentWait: 2 * time.Second, CallTimeout: time.Hour})
		s := spec("c1", "a", "v1")
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		inWrite := make(chan struct{})
		var once sync.Once
		b.onWrite = func(ctx context.Context, _ NodeID) error {
			once.Do(func() { close(inWrite) })
			<-ctx.Done() // hangs until cancelled
			return ctx.Err()
		}
		b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
		<-inWrite
		start := time.Now()
		if err := f.h.PauseCluster("c1", true); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != 2*time.Second {
			t.Errorf("the pause waited %s, want IntentWait (2s) then the cancelled write", waited)
		}
		synctest.Wait()
		if got := testutil.ToFloat64(f.h.metrics.drains); got != 1 {
			t.Errorf("drains %v, want 1", got)
		}
	})
}

// A prune in flight when a hold is placed: the hold returns once the delete
// returned; a decommission whose delete has not started is held.
func TestHoldStopsPrunes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		a, c := spec("c1", "a", "v1"), spec("c1", "c", "v1")
		keep := spec("c1", "keep", "v1")
		f.h.SetDesired([]NodeSpec{a, c, keep})
		f.ready("c1", 1, 1)
		synctest.Wait()
		inDelete, finish := make(chan NodeID, 2), make(chan struct{})
		b.onWrite = func(_ context.Context, id NodeID) error {
			if id == a.ID {
				inDelete <- id
				<-finish
			}
			return nil
		}
		f.h.SetDesired([]NodeSpec{c, keep}) // a leaves: decommissioned
		<-inDelete
		held := make(chan struct{})
		go func() {
			defer close(held)
			if _, err := f.h.Hold(HoldTarget{HoldCluster, "c1"}, time.Hour, "incident"); err != nil {
				t.Error(err)
			}
		}()
		synctest.Wait()
		select {
		case <-held:
			t.Fatal("the hold returned while a prune in its scope was in flight")
		default:
		}
		close(finish)
		synctest.Wait()
		<-held
		// Held now: c leaves, and is not deleted.
		f.h.SetDesired([]NodeSpec{keep})
		synctest.Wait()
		if !b.exists(c.ID) {
			t.Fatal("pruned under a hold")
		}
		if n := f.node(c.ID); n.Status != StatusHeld || !strings.Contains(n.Reason, "would prune") {
			t.Errorf("held decommission: %s %q", n.Status, n.Reason)
		}
	})
}

// A manual repair is an intent like the others: one pending when the
// cluster is paused (its repair failed and waits for the retry) does not
// override the later pause; one asked for after the pause does.
func TestLaterPauseBeatsPendingManualRepair(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		s := spec("c1", "a", "v1")
		s.Policy = PolicyWarn
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
		synctest.Wait()
		failing := true
		var mu sync.Mutex
		b.repErr = func(NodeID) error {
			mu.Lock()
			defer mu.Unlock()
			if failing {
				return errors.New("apiserver said no")
			}
			return nil
		}
		if err := f.h.RepairNow(s.ID); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the manual repair failed; its retry is pending
		if err := f.h.PauseCluster("c1", true); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		failing = false
		mu.Unlock()
		time.Sleep(time.Minute) // every retry runs
		synctest.Wait()
		if got := b.repairCount(s.ID); got != 1 {
			t.Fatalf("a manual repair asked for before the pause repaired on the paused cluster (%d writes)", got)
		}
		if got := f.node(s.ID).Status; got != StatusPaused {
			t.Errorf("status %s, want paused", got)
		}
		// Asked for after the pause: it overrides it, once.
		if err := f.h.RepairNow(s.ID); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := b.repairCount(s.ID); got != 2 {
			t.Errorf("a manual repair after the pause did not repair (%d writes)", got)
		}
	})
}

// First applies pass the gate: a paused or held cluster creates nothing
// (shown "would create"); warn-only creates what was never applied.
func TestFirstApplyPassesTheGate(t *testing.T) {
	for _, sw := range []string{"pause", "hold", "warn"} {
		t.Run(sw, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newFake(true)
				f := start(t, b, Options{})
				s := spec("c1", "a", "v1")
				switch sw {
				case "pause":
					_ = f.h.PauseCluster("c1", true)
				case "hold":
					_, _ = f.h.Hold(HoldTarget{HoldApplication, "a"}, time.Hour, "not yet")
				case "warn":
					s.Policy = PolicyWarn
				}
				f.h.SetDesired([]NodeSpec{s})
				f.ready("c1", 1, 1)
				synctest.Wait()
				if created := b.exists(s.ID); created != (sw == "warn") {
					t.Fatalf("%s: created=%v", sw, created)
				}
				if sw != "warn" {
					if n := f.node(s.ID); !strings.Contains(n.Reason, "would create") {
						t.Errorf("reason %q, want would create", n.Reason)
					}
				}
			})
		})
	}
}

// A replica taking a cluster over reads the applied records another
// replica wrote after this one started: a missing object is then drift,
// held by the pause recorded meanwhile (never created as a first apply),
// and repaired in the feed and metrics once resumed.
func TestTakeOverReadsSharedRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemIntent()
		b := newFake(true)
		s := spec("c1", "a", "v1")
		f := startWithIntent(t, b, store) // started before the other replica wrote
		f.h.SetDesired([]NodeSpec{s})
		// The other replica applied it, then the operator paused c1 through
		// it; the object was deleted meanwhile.
		_ = store.PutApplied(RefOf(s))
		_ = store.SetPaused("c1", true, time.Now(), SwitchNote{})
		if err := f.h.TakeOver("c1"); err != nil {
			t.Fatal(err)
		}
		f.ready("c1", 1, 1)
		synctest.Wait()
		if b.exists(s.ID) {
			t.Fatal("the new owner created an object of a paused cluster")
		}
		if got := f.node(s.ID).Status; got != StatusPaused {
			t.Fatalf("status %s, want paused", got)
		}
		if err := f.h.PauseCluster("c1", false); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !b.exists(s.ID) {
			t.Fatal("not repaired once resumed")
		}
		if got := testutil.ToFloat64(f.h.metrics.repairs.WithLabelValues("c1", "success")); got != 1 {
			t.Errorf("repairs counted %v, want 1 (a repair, not a first apply)", got)
		}
		feed := f.h.Snapshot().Feed
		if len(feed) == 0 || feed[0].Action != "apply" || feed[0].Class != DriftMissing {
			t.Errorf("feed %+v, want the repair of the missing object", feed)
		}
	})
}

// A pause outlives the cluster's loop state: a cluster forgotten (deleted
// from Cluster API, moved) or removed and discovered again is still paused,
// in the gate and in the snapshot, whether its first health report or its
// NodeIDs' first pass (which parks them) comes first.
func TestPauseSurvivesForgetAndReturn(t *testing.T) {
	for _, tc := range []struct {
		name      string
		removed   bool // a removed health report instead of ForgetCluster
		passFirst bool // the NodeIDs' first pass runs before the cluster is ready
	}{
		{name: "forgotten, ready first"},
		{name: "forgotten, pass first", passFirst: true},
		{name: "removed, ready first", removed: true},
		{name: "removed, pass first", removed: true, passFirst: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newFake(true)
				f := start(t, b, Options{})
				s := spec("c1", "a", "v1")
				f.h.SetDesired([]NodeSpec{s})
				f.ready("c1", 1, 1)
				synctest.Wait()
				_ = f.h.PauseCluster("c1", true)
				if tc.removed {
					f.h.ClusterChanged(ClusterHealth{Cluster: "c1", State: ClusterRemoved, Seq: 2})
				} else {
					f.h.ForgetCluster("c1")
					f.h.SetDesiredCluster("c1", []NodeSpec{s})
				}
				b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
				if tc.passFirst {
					f.h.ctrl.add(s.ID)
					synctest.Wait()
				}
				if c, _ := f.h.Snapshot().Cluster("c1"); !c.Paused {
					t.Error("the snapshot lost the pause of a cluster while it was gone")
				}
				f.ready("c1", 2, 3)
				synctest.Wait()
				if got := b.repairCount(s.ID); got != 1 {
					t.Fatalf("repaired a paused cluster after it came back (%d writes)", got)
				}
				if c, _ := f.h.Snapshot().Cluster("c1"); !c.Paused {
					t.Error("the snapshot lost the pause of a cluster that came back")
				}
			})
		})
	}
}

// Orphan pruning goes through the guard, for the whole hub: never more than
// PruneLimit objects in one scan across clusters, never on a cluster where
// the hub wants nothing (it would delete everything of ours there), never
// under a warn-only cluster or hub policy or a pause.
func TestOrphansThroughTheGuard(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    Options
		setup   func(f *fixture)
		desired []NodeSpec
		pruned  bool
		reason  string
		keep    []string // DesiredOptions.Keep: a failing source
	}{
		{"within the limit", Options{PruneLimit: 4}, nil, append(appSpecs("c1", "a"), appSpecs("c2", "b")...), true, "", nil},
		{"over the limit across clusters", Options{PruneLimit: 3}, nil, append(appSpecs("c1", "a"), appSpecs("c2", "b")...), false, "across the hub", nil},
		{"everything of ours on a cluster", Options{PruneLimit: 50}, nil, appSpecs("c1", "a"), false, "wants nothing", nil},
		{"warn-only cluster", Options{PruneLimit: 50}, func(f *fixture) { f.h.SetClusterPolicy("c2", PolicyWarn) },
			append(appSpecs("c1", "a"), appSpecs("c2", "b")...), false, "warn-only", nil},
		{"warn-only hub", Options{PruneLimit: 50, Policy: PolicyWarn}, nil, append(appSpecs("c1", "a"), appSpecs("c2", "b")...), false, "warn-only", nil},
		{"paused cluster", Options{PruneLimit: 50}, func(f *fixture) { _ = f.h.PauseCluster("c2", true) },
			append(appSpecs("c1", "a"), appSpecs("c2", "b")...), false, "paused", nil},
		{"a source failing", Options{PruneLimit: 50}, nil, append(appSpecs("c1", "a"), appSpecs("c2", "b")...), false,
			"refused while a source fails (broken)", []string{"broken"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newFake(true)
				tc.opts.PruneOrphans = true
				f := start(t, b, tc.opts)
				if tc.setup != nil {
					tc.setup(f)
				}
				if _, _, err := f.h.ReplaceDesired(tc.desired, DesiredOptions{AllowPrune: true, Keep: tc.keep}); err != nil {
					t.Fatal(err)
				}
				f.ready("c1", 1, 1)
				f.ready("c2", 1, 1)
				synctest.Wait()
				// The strays appear once each cluster's first scan is
				// done (those scans run one cluster at a time, as the
				// clusters get ready), so one scan finds them all.
				var strays []NodeID
				for _, c := range []string{"c1", "c2"} {
					for i := range 2 {
						id := spec(c, fmt.Sprintf("stray%d", i), "v1").ID
						strays = append(strays, id)
						b.put(id, func(o *fakeObject) { o.content = "old" })
					}
				}
				synctest.Wait()
				// One scan of both clusters: the resync's.
				f.h.requestScanAll()
				synctest.Wait()
				for _, id := range strays {
					if !tc.pruned && id.Cluster == "c1" && tc.name != "over the limit across clusters" && tc.keep == nil {
						continue // only c2 is refused: c1's strays may go
					}
					if tc.pruned == b.exists(id) {
						t.Errorf("%s exists=%v, want pruned=%v", id, b.exists(id), tc.pruned)
					}
					if !tc.pruned {
						n := f.node(id)
						if n.Status != StatusOrphan || !strings.Contains(n.Reason, tc.reason) {
							t.Errorf("%s: %s %q, want orphan saying %q", id, n.Status, n.Reason, tc.reason)
						}
					}
				}
			})
		})
	}
}

// A panic in a background loop (here the orphan scan, through a backend
// that panics) is recovered, logged and counted; the loop starts again and
// keeps working, and Run returns normally.
func TestLoopPanicRecovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		var once sync.Once
		b.onList = func() { once.Do(func() { panic("list exploded") }) }
		stray := spec("c1", "stray", "v1").ID
		b.put(stray, func(o *fakeObject) { o.content = "old" })
		f := start(t, b, Options{})
		f.h.SetDesired(appSpecs("c1", "a"))
		f.ready("c1", 1, 1)
		synctest.Wait()
		if got := testutil.ToFloat64(f.h.metrics.loopPanics.WithLabelValues("orphans")); got != 1 {
			t.Fatalf("loop panics %v, want 1", got)
		}
		time.Sleep(loopRestartDelay)
		f.h.requestScanAll()
		synctest.Wait()
		if n, ok := f.h.Snapshot().Node(stray); !ok || n.Status != StatusOrphan {
			t.Error("the orphan loop did not work again after its panic")
		}
		f.stop() // Run must return, not re-panic
	})
}

// A hold is for an incident: longer than MaxHoldTTL is refused.
func TestHoldTTLBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := start(t, newFake(true), Options{})
		if _, err := f.h.Hold(HoldTarget{HoldCluster, "c1"}, MaxHoldTTL+time.Second, "forever"); err == nil ||
			!strings.Contains(err.Error(), "longest hold") {
			t.Errorf("a hold past the bound: %v", err)
		}
		if _, err := f.h.Hold(HoldTarget{HoldCluster, "c1"}, MaxHoldTTL, "a week"); err != nil {
			t.Errorf("a hold at the bound: %v", err)
		}
	})
}

// A desired-state change that leaves a NodeID's body as it was (a reload, a
// rediscovery, a workspace's new plan) while its pass is about to write does
// not drop the repair; one that changes the body does (the change enqueued
// the NodeID: the next pass writes the new body).
func TestUnchangedReloadMidPassStillRepairs(t *testing.T) {
	for _, changed := range []bool{false, true} {
		t.Run(fmt.Sprintf("changed=%v", changed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g, s := midPass(t)
				b := g.b
				next := spec("c1", "a", "v1")
				if changed {
					next = spec("c1", "a", "v2")
				}
				g.h.SetDesired([]NodeSpec{next})
				close(g.proceed)
				synctest.Wait()
				b.mu.Lock()
				content := b.truth[s.ID].content
				b.mu.Unlock()
				if content != next.Hash {
					t.Fatalf("object content %q, want %q", content, next.Hash)
				}
				if got := b.repairCount(s.ID); got != 2 {
					t.Errorf("writes %d, want the first apply and one repair", got)
				}
			})
		})
	}
}

// An object carrying another hub's id is shown as foreign, with that hub's
// name, once in the feed; it is not a failed repair and is looked at again
// slowly.
func TestForeignObjectIsNotAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{ForbiddenRetry: time.Minute})
		s := spec("c1", "a", "v1")
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		b.repErr = func(NodeID) error {
			return fmt.Errorf("cluster \"c1\": apply: refusing: %w", OwnedByOtherError{Hub: "hub-b"})
		}
		b.put(s.ID, func(o *fakeObject) { o.content = "theirs" })
		synctest.Wait()
		n := f.node(s.ID)
		if n.Status != StatusForeign || !strings.Contains(n.Reason, `hub "hub-b"`) {
			t.Fatalf("status %s %q, want foreign naming hub-b", n.Status, n.Reason)
		}
		if got := testutil.ToFloat64(f.h.metrics.repairs.WithLabelValues("c1", "failure")); got != 0 {
			t.Errorf("counted as %v failed repairs", got)
		}
		time.Sleep(3 * time.Minute) // three slow re-checks
		synctest.Wait()
		foreign := 0
		for _, e := range f.h.Snapshot().Feed {
			if e.Action == "foreign" {
				foreign++
			}
		}
		if foreign != 1 {
			t.Errorf("%d foreign rows in the feed, want 1", foreign)
		}
	})
}

// The applied record of a first apply is written before the write: a hub
// killed while the apiserver applies it still knows the object after a
// restart (a prune when its application leaves, not an orphan). A failed
// first apply takes the record back.
func TestAppliedRecordWrittenAhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemIntent()
		b := newFake(true)
		inWrite, finish := make(chan struct{}), make(chan struct{})
		failing := true
		var once sync.Once
		b.onWrite = func(context.Context, NodeID) error {
			once.Do(func() {
				close(inWrite)
				<-finish
			})
			if failing {
				failing = false
				return errors.New("apiserver said no")
			}
			return nil
		}
		f := startWithIntent(t, b, store)
		s := spec("c1", "a", "v1")
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		<-inWrite
		in, _ := store.Load()
		if _, ok := in.Applied[s.ID]; !ok {
			t.Fatal("no applied record while the first apply is on the wire")
		}
		close(finish)
		time.Sleep(time.Second) // the write failed, the retry succeeded
		synctest.Wait()
		if !b.exists(s.ID) {
			t.Fatal("not created on the retry")
		}
		if n := f.steps(s.ID, StepCreated); n != 1 {
			t.Errorf("created %d times, want 1 (the retry is a first apply, not a repair)", n)
		}
		in, _ = store.Load()
		if _, ok := in.Applied[s.ID]; !ok {
			t.Error("no applied record once created")
		}
	})
}

// passHub returns a hub whose passes the test runs itself (never
// started), over a fake backend and an in-memory intent store.
func passHub(t *testing.T) (*Hub, *fakeBackend, *memIntent) {
	t.Helper()
	store := newMemIntent()
	b := newFake(true)
	h := New(Options{Intent: store, Workers: 1, Resync: -1})
	b.sink = h
	h.SetBackends(b)
	if err := h.LoadIntent(); err != nil {
		t.Fatal(err)
	}
	return h, b, store
}

// The pass marks a first apply's applied record itself and hands the
// recorder only the state file's write: when the pass returns its write,
// the record is in memory and not yet in the state file; the ahead step
// writes it. A create the gate refuses (a paused cluster) marks nothing
// and has no ahead step, so no recorder waits for the state file.
func TestAppliedRecordMarkedByThePass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _, store := passHub(t)
		defer h.ctrl.shutDown() // never started: only its queue runs
		a, c := spec("c1", "a", "v1"), spec("c2", "c", "v1")
		h.SetDesired([]NodeSpec{a, c})
		h.ClusterChanged(ClusterHealth{Cluster: "c1", State: ClusterSynced, Generation: 1, Seq: 1})
		h.ClusterChanged(ClusterHealth{Cluster: "c2", State: ClusterSynced, Generation: 1, Seq: 1})
		if err := h.PauseCluster("c2", true); err != nil {
			t.Fatal(err)
		}
		applied := func(id NodeID) bool {
			h.mu.Lock()
			defer h.mu.Unlock()
			n := h.nodes.at(id)
			return n != nil && n.applied != nil
		}
		stored := func(id NodeID) bool {
			in, _ := store.Load()
			_, ok := in.Applied[id]
			return ok
		}

		_, write, err := h.rec.reconcile(t.Context(), a.ID)
		if err != nil || write == nil || write.ahead == nil {
			t.Fatalf("a first apply: write %+v, err %v; want a write with an ahead step", write, err)
		}
		if !applied(a.ID) || stored(a.ID) {
			t.Fatalf("after the pass: marked %v, stored %v; want marked, not stored yet", applied(a.ID), stored(a.ID))
		}
		write.ahead()
		if !stored(a.ID) {
			t.Fatal("the ahead step did not store the applied record")
		}

		_, write, err = h.rec.reconcile(t.Context(), c.ID)
		if err != nil || write == nil {
			t.Fatalf("a paused first apply: write %+v, err %v; want the write (refused when it runs)", write, err)
		}
		if write.ahead != nil || applied(c.ID) || stored(c.ID) {
			t.Fatalf("a paused first apply: ahead step %v, marked %v, stored %v; want none", write.ahead != nil, applied(c.ID), stored(c.ID))
		}
	})
}

// An object the hub adopts (found as desired, with no applied record yet)
// has its record marked by the pass and made durable by an ahead step, as
// a first apply's: the worker does not wait for the state file's group
// commit. The write after it does nothing and reports the in-sync pass's
// result; a later pass finds the record and hands off nothing.
func TestAdoptedRecordWrittenAhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, b, store := passHub(t)
		defer h.ctrl.shutDown() // never started: only its queue runs
		a := spec("c1", "a", "v1")
		h.SetDesired([]NodeSpec{a})
		b.put(a.ID, func(o *fakeObject) { o.content = "v1" })
		h.ClusterChanged(ClusterHealth{Cluster: "c1", State: ClusterSynced, Generation: 1, Seq: 1})
		stored := func() bool {
			in, _ := store.Load()
			_, ok := in.Applied[a.ID]
			return ok
		}

		_, write, err := h.rec.reconcile(t.Context(), a.ID)
		if err != nil || write == nil || write.ahead == nil {
			t.Fatalf("an adopted object: write %+v, err %v; want a write with an ahead step", write, err)
		}
		if got, ok := h.Snapshot().Node(a.ID); !ok || got.Status != StatusInSync {
			t.Fatalf("status before the record is durable: %+v, want in sync", got)
		}
		if stored() {
			t.Fatal("the record is in the state file before the ahead step")
		}
		write.ahead()
		if !stored() {
			t.Fatal("the ahead step did not store the applied record")
		}
		if _, err := write.run(t.Context()); err != nil {
			t.Fatalf("the adopted object's write: %v", err)
		}
		if n := b.repairCount(a.ID); n != 0 {
			t.Errorf("repaired %d times, want none", n)
		}

		if _, write, err = h.rec.reconcile(t.Context(), a.ID); err != nil || write != nil {
			t.Fatalf("a second pass: write %+v, err %v; want none (the record is there)", write, err)
		}
	})
}

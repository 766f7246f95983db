package hub

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestPanickingWriteReleasesItsGate: a backend write that panics is
// recovered by its writer; its registration at the gate must go with it,
// or the next pause of the cluster waits for a write that will never end.
func TestPanickingWriteReleasesItsGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{IntentWait: time.Second})
		s := spec("c1", "a", "v1")
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		var n atomic.Int32
		b.onRepair = func(NodeID) {
			if n.Add(1) == 1 {
				panic("backend bug")
			}
		}
		b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
		synctest.Wait() // the repair panicked and was recovered
		f.h.mu.Lock()
		leaked := f.h.writes[s.ID]
		f.h.mu.Unlock()
		if leaked != nil {
			t.Error("after the panic, the gate still holds the NodeID's write")
		}
		paused := make(chan struct{})
		go func() {
			defer close(paused)
			_ = f.h.PauseCluster("c1", true)
		}()
		time.Sleep(time.Hour)
		select {
		case <-paused:
		default:
			t.Errorf("PauseCluster has not returned after 1h (IntentWait 1s): it waits for a write that panicked")
			if leaked != nil {
				close(leaked.done) // let the test end
				<-paused
			}
		}
	})
}

// TestExpiredHoldOfAReplicaKeepsTheRenewedOne: replica B still holds an
// expired hold in memory when the operator renews it through replica A;
// B's next pass drops the expired one and must not delete the renewal from
// the shared store (A's next refresh would then lift an acknowledged hold).
func TestExpiredHoldOfAReplicaKeepsTheRenewedOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemIntent()
		ba, bb := newFake(true), newFake(true)
		fa := startWithIntent(t, ba, store)
		fb := startWithIntent(t, bb, store)
		sa, sb := spec("c1", "x", "v1"), spec("c2", "x", "v1")
		sa.Application, sb.Application = "app", "app"
		fa.h.SetDesired([]NodeSpec{sa})
		fb.h.SetDesired([]NodeSpec{sb})
		fa.ready("c1", 1, 1)
		fb.ready("c2", 1, 1)
		synctest.Wait()
		target := HoldTarget{HoldApplication, "app"}
		if _, err := fa.h.Hold(target, time.Minute, "incident"); err != nil {
			t.Fatal(err)
		}
		if err := fb.h.RefreshIntent(); err != nil { // B adopts H1
			t.Fatal(err)
		}
		time.Sleep(2 * time.Minute) // H1 expired
		// The operator renews the hold through A: acknowledged.
		if _, err := fa.h.Hold(target, time.Hour, "incident, still"); err != nil {
			t.Fatal(err)
		}
		// B passes over its NodeID of the application before its refresh.
		bb.put(sb.ID, func(o *fakeObject) { o.content = "edited" })
		synctest.Wait()
		in, _ := store.Load()
		if len(in.Holds) == 0 {
			t.Errorf("the renewed hold (1h, acknowledged) was deleted from the shared store by replica B's expiry of the old one")
		}
		// A refreshes (every lease duration) and the hold is gone.
		if err := fa.h.RefreshIntent(); err != nil {
			t.Fatal(err)
		}
		ba.put(sa.ID, func(o *fakeObject) { o.content = "edited" })
		synctest.Wait()
		if got := ba.repairCount(sa.ID); got != 1 {
			t.Errorf("replica A repaired %d times under the hold it acknowledged 2 minutes earlier (want only the first apply)", got-1)
		}
	})
}

// blockingDelete is a memIntent whose first expired hold's delete waits for
// release.
type blockingDelete struct {
	*memIntent
	once    sync.Once
	in      chan struct{}
	release chan struct{}
}

func (b *blockingDelete) DeleteExpiredHold(h Hold) error {
	b.once.Do(func() { close(b.in); <-b.release })
	return b.memIntent.DeleteExpiredHold(h)
}

// TestExpiredHoldDeleteKeepsARenewal: the same in one hub: the expired hold
// is dropped under the lock and deleted from the store after it; a Hold on
// the same target in between is recorded and must stay recorded.
func TestExpiredHoldDeleteKeepsARenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &blockingDelete{memIntent: newMemIntent(), in: make(chan struct{}), release: make(chan struct{})}
		b := newFake(true)
		f := startWithIntent(t, b, store)
		s := spec("c1", "a", "v1")
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		target := HoldTarget{HoldCluster, "c1"}
		if _, err := f.h.Hold(target, time.Minute, "incident"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Minute)
		b.put(s.ID, func(o *fakeObject) { o.content = "edited" }) // a pass meets the expired hold
		<-store.in
		if _, err := f.h.Hold(target, time.Hour, "incident, renewed"); err != nil {
			t.Fatal(err)
		}
		close(store.release)
		synctest.Wait()
		in, _ := store.Load()
		if len(in.Holds) == 0 {
			t.Errorf("Hold returned nil, yet the state file has no hold: a restart (or RefreshIntent) loses it")
		}
	})
}

// TestSwitchAgainBeatsAnEarlierManualRepair: a manual repair overrides a
// pause or hold set before it; pausing (or holding) again after the
// request must win over it, as a new switch does, even when the cluster
// was already paused.
func TestSwitchAgainBeatsAnEarlierManualRepair(t *testing.T) {
	for _, sw := range []string{"pause", "hold"} {
		t.Run(sw, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newFake(true)
				b.attrib = &Attribution{Manager: "kubectl-edit"}
				f := start(t, b, Options{})
				s := spec("c1", "a", "v1")
				f.h.SetDesired([]NodeSpec{s})
				f.ready("c1", 1, 1)
				synctest.Wait()
				target := HoldTarget{HoldCluster, "c1"}
				if sw == "pause" {
					if err := f.h.PauseCluster("c1", true); err != nil {
						t.Fatal(err)
					}
				} else if _, err := f.h.Hold(target, time.Hour, "incident"); err != nil {
					t.Fatal(err)
				}
				b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
				synctest.Wait()
				at, proceed := make(chan struct{}), make(chan struct{})
				var once sync.Once
				b.onAttribute = func(NodeID) { once.Do(func() { close(at); <-proceed }) }
				if err := f.h.RepairNow(s.ID); err != nil {
					t.Fatal(err)
				}
				<-at // the manual pass classified, about to hand its write off
				// A second operator: "stop everything on c1".
				if sw == "pause" {
					if err := f.h.PauseCluster("c1", true); err != nil {
						t.Fatal(err)
					}
				} else if _, err := f.h.Hold(target, time.Hour, "incident"); err != nil {
					t.Fatal(err)
				}
				close(proceed)
				synctest.Wait()
				if got := b.repairCount(s.ID); got != 1 {
					t.Errorf("%s acknowledged, then the earlier manual repair wrote anyway (%d writes, want only the first apply)", sw, got)
				}
			})
		})
	}
}

// TestOrphanPruneReadsItsClusterPolicyAtTheDelete: an orphan's prune is
// judged by its cluster's policy at the moment of the delete: a cluster
// made warn-only (a reload) after the scan judged its orphans prunes none
// of them.
func TestOrphanPruneReadsItsClusterPolicyAtTheDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{PruneOrphans: true})
		f.h.SetDesired(appSpecs("c1", "keep"))
		f.ready("c1", 1, 1)
		synctest.Wait()
		target := HoldTarget{HoldCluster, "c1"}
		if _, err := f.h.Hold(target, time.Hour, "incident"); err != nil {
			t.Fatal(err)
		}
		stray := spec("c1", "stray", "v1").ID
		b.put(stray, func(o *fakeObject) { o.content = "old" })
		f.h.requestScanAll()
		synctest.Wait()
		if n := f.node(stray); n.Status != StatusHeld {
			t.Fatalf("stray %s %q, want held (decommissioned, prune held)", n.Status, n.Reason)
		}
		// The config now says: cluster c1 is warn-only (reload).
		f.h.SetClusterPolicy("c1", PolicyWarn)
		if err := f.h.ReleaseHold(target); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !b.exists(stray) {
			t.Errorf("orphan pruned on a cluster that is warn-only at the moment of the delete")
		}
	})
}

// TestIgnoreRuleAddedMidPassMakesTheWriteStale: a reload that adds an
// ignore rule covering the drift a pass already classified makes that
// pass's write stale: once SetDesired returned, the field is left alone.
func TestIgnoreRuleAddedMidPassMakesTheWriteStale(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, s := midPass(t) // drift by kubectl-edit, pass blocked in attribution
		b := g.b
		next := spec("c1", "a", "v1") // same body
		next.Ignore = &IgnoreSet{Rules: []IgnoreRule{{Name: "edits", Managers: []string{"kubectl-edit"}}}, Key: "edits"}
		g.h.SetDesired([]NodeSpec{next})
		close(g.proceed)
		synctest.Wait()
		b.mu.Lock()
		content := b.truth[s.ID].content
		b.mu.Unlock()
		if got := b.repairCount(s.ID); got != 1 {
			t.Errorf("a field the new ignore rule covers was overwritten after SetDesired returned: writes %d (content now %q), want only the first apply", got, content)
		}
	})
}

// TestRemovingARepairOverrideDrains: removing a repair override of an
// application whose config makes it warn-only narrows what may be written:
// it returns only once the application's writes in flight are done.
func TestRemovingARepairOverrideDrains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{IntentWait: time.Minute})
		s := spec("c1", "a", "v1")
		s.Policy = PolicyWarn
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		if err := f.h.SetApplicationPolicy("a", PolicyRepair); err != nil {
			t.Fatal(err)
		}
		inWrite, finish := make(chan struct{}), make(chan struct{})
		var once sync.Once
		b.onWrite = func(context.Context, NodeID) error {
			once.Do(func() { close(inWrite); <-finish })
			return nil
		}
		b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
		<-inWrite
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = f.h.SetApplicationPolicy("a", "") // back to the config's warn-only
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Errorf("SetApplicationPolicy(a, \"\") (now warn-only) returned while a repair of a was in flight")
		default:
		}
		close(finish)
		synctest.Wait()
		<-done
	})
}

// slowRead is a memIntent whose next read, once armed, waits for release
// after reading: a refresh that read the store before a switch set here.
type slowRead struct {
	*memIntent
	armed            atomic.Bool
	reading, release chan struct{}
}

func (s *slowRead) Load() (Intent, error) {
	in, err := s.memIntent.Load()
	if s.armed.CompareAndSwap(true, false) {
		close(s.reading)
		<-s.release
	}
	return in, err
}

// TestRefreshNeverUndoesASwitchSetHere: replicas re-read the shared intent
// every lease duration. A read taken before a pause, hold or warn override
// set here (acknowledged) must not be adopted after it: it would lift the
// switch, and repair under it, until the next refresh.
func TestRefreshNeverUndoesASwitchSetHere(t *testing.T) {
	for _, sw := range []string{"pause", "hold", "warn"} {
		t.Run(sw, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &slowRead{memIntent: newMemIntent(), reading: make(chan struct{}), release: make(chan struct{})}
				b := newFake(true)
				f := startWithIntent(t, b, store)
				s := spec("c1", "a", "v1")
				f.h.SetDesired([]NodeSpec{s})
				f.ready("c1", 1, 1)
				synctest.Wait()
				store.armed.Store(true)
				refreshed := make(chan error, 1)
				go func() { refreshed <- f.h.RefreshIntent() }()
				<-store.reading // the refresh read the store: nothing set
				var err error
				switch sw {
				case "pause":
					err = f.h.PauseCluster("c1", true)
				case "hold":
					_, err = f.h.Hold(HoldTarget{HoldCluster, "c1"}, time.Hour, "incident")
				case "warn":
					err = f.h.SetApplicationPolicy(s.Application, PolicyWarn)
				}
				if err != nil {
					t.Fatal(err)
				}
				close(store.release)
				if err := <-refreshed; err != nil {
					t.Fatalf("RefreshIntent: %v", err)
				}
				b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
				synctest.Wait()
				if got := b.repairCount(s.ID); got != 1 {
					t.Errorf("%s acknowledged, then a refresh that read the store before it lifted it: %d writes, want only the first apply", sw, got)
				}
				want := map[string]Status{"pause": StatusPaused, "hold": StatusHeld, "warn": StatusWarnOnly}[sw]
				if n := f.node(s.ID); n.Status != want {
					t.Errorf("after the refresh: %s %q, want %s", n.Status, n.Reason, want)
				}
			})
		})
	}
}

// TestRefreshWhileASwitchIsRecorded: a refresh while a switch set here is
// being recorded (its pause waiting for a write in flight) adopts nothing
// and says so; the next one, after it, adopts the store.
func TestRefreshWhileASwitchIsRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemIntent()
		b := newFake(true)
		f := startWithIntent(t, b, store)
		s := spec("c1", "a", "v1")
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		at, proceed := make(chan struct{}), make(chan struct{})
		var once sync.Once
		b.onRepair = func(NodeID) { once.Do(func() { close(at); <-proceed }) }
		b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
		<-at // a repair in flight
		paused := make(chan error, 1)
		go func() { paused <- f.h.PauseCluster("c1", true) }()
		synctest.Wait() // the pause waits for the repair
		if err := f.h.RefreshIntent(); !errors.Is(err, ErrRefreshRaced) {
			t.Errorf("RefreshIntent while the pause waits for a write = %v, want ErrRefreshRaced", err)
		}
		close(proceed)
		if err := <-paused; err != nil {
			t.Fatal(err)
		}
		// Another replica resumes it meanwhile; the next refresh adopts that.
		_ = store.SetPaused("c1", false, time.Time{}, SwitchNote{})
		if err := f.h.RefreshIntent(); err != nil {
			t.Fatalf("RefreshIntent after the pause was recorded: %v", err)
		}
		f.h.mu.Lock()
		stillPaused := f.h.pauses["c1"] != 0
		f.h.mu.Unlock()
		if stillPaused {
			t.Errorf("the resume recorded by another replica was not adopted")
		}
	})
}

// TestSwitchAgainThroughAnotherReplica: a manual repair asked on the
// owner overrides a pause or a warn override set before it; the same switch
// set again through a replica that does not own the cluster must win over
// that repair once the owner refreshes, as it does when set again through
// the owner. A refresh that finds nothing set again leaves the manual
// repair alone, also when the store's record carries no time (written by
// an older replica).
func TestSwitchAgainThroughAnotherReplica(t *testing.T) {
	for _, sw := range []string{"pause", "warn"} {
		set := func(f *fixture) error {
			if sw == "pause" {
				return f.h.PauseCluster("c1", true)
			}
			return f.h.SetApplicationPolicy("app", PolicyWarn)
		}
		for _, tc := range []struct {
			name   string
			again  func(fb *fixture, store *memIntent)
			writes int
		}{
			{"set again", func(fb *fixture, _ *memIntent) { _ = set(fb) }, 1},
			{"nothing new", func(*fixture, *memIntent) {}, 2},
			{"record without a time", func(_ *fixture, store *memIntent) {
				_ = store.SetPaused("c1", sw == "pause", time.Time{}, SwitchNote{})
				if sw == "warn" {
					_ = store.SetPolicy("app", PolicyWarn, time.Time{}, SwitchNote{})
				}
			}, 2},
		} {
			t.Run(sw+"/"+tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					store := newMemIntent()
					ba, bb := newFake(true), newFake(true)
					fa := startWithIntent(t, ba, store) // owns c1
					fb := startWithIntent(t, bb, store) // owns nothing here
					s := spec("c1", "a", "v1")
					s.Application = "app"
					fa.h.SetDesired([]NodeSpec{s})
					fa.ready("c1", 1, 1)
					synctest.Wait()
					if err := set(fa); err != nil {
						t.Fatal(err)
					}
					if err := fb.h.RefreshIntent(); err != nil {
						t.Fatal(err)
					}
					ba.put(s.ID, func(o *fakeObject) { o.content = "edited" })
					synctest.Wait()
					time.Sleep(time.Minute)
					at, proceed := make(chan struct{}), make(chan struct{})
					var once sync.Once
					ba.onAttribute = func(NodeID) { once.Do(func() { close(at); <-proceed }) }
					if err := fa.h.RepairNow(s.ID); err != nil {
						t.Fatal(err)
					}
					<-at // the manual pass classified, about to hand its write off
					tc.again(fb, store)
					if err := fa.h.RefreshIntent(); err != nil {
						t.Fatal(err)
					}
					close(proceed)
					synctest.Wait()
					if got := ba.repairCount(s.ID); got != tc.writes {
						t.Errorf("%d writes, want %d", got, tc.writes)
					}
				})
			})
		}
	}
}

// TestPauseNote: a pause's note (who and why) and time are in every
// snapshot while it is paused, survive a restart, reach a replica that
// reads the store (a note read after its pause too), and go with the
// pause; a note too long is refused and pauses nothing.
func TestPauseNote(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemIntent()
		fa := startWithIntent(t, newFake(true), store)
		fb := startWithIntent(t, newFake(true), store) // another replica
		fa.h.SetDesired([]NodeSpec{spec("c1", "a", "v1")})
		fa.ready("c1", 1, 1)
		synctest.Wait()
		cluster := func(f *fixture) ClusterStatus {
			t.Helper()
			c, ok := f.h.Snapshot().Cluster("c1")
			if !ok {
				t.Fatal("c1 not in the snapshot")
			}
			return c
		}
		note := SwitchNote{By: "alice", Reason: "INC-4211: failover"}
		pausedAt := time.Now()
		if err := fa.h.PauseClusterNote("c1", SwitchNote{By: " alice", Reason: "INC-4211:\n\tfailover  "}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if c := cluster(fa); !c.Paused || c.PausedBy != "alice" || c.PauseReason != note.Reason || !c.PausedAt.Equal(pausedAt) {
			t.Errorf("cluster after a pause with a note = %+v", c)
		}
		if err := fb.h.RefreshIntent(); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if c := cluster(fb); !c.Paused || c.PausedBy != "alice" || c.PauseReason != note.Reason {
			t.Errorf("the other replica's cluster = %+v, want the pause with its note", c)
		}

		// The same pause, its note read after it (a replica of a version
		// before notes paused it; one of this version wrote its note).
		store.mu.Lock()
		store.in.PauseNotes["c1"] = SwitchNote{By: "bob"}
		store.mu.Unlock()
		if err := fb.h.RefreshIntent(); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if c := cluster(fb); c.PausedBy != "bob" || c.PauseReason != "" || !c.PausedAt.Equal(pausedAt) {
			t.Errorf("cluster after a new note of the same pause = %+v", c)
		}

		// A restart reads it back.
		fc := startWithIntent(t, newFake(true), store)
		synctest.Wait()
		if c := cluster(fc); !c.Paused || c.PausedBy != "bob" {
			t.Errorf("cluster after a restart = %+v", c)
		}

		// Paused again without a note: none is shown.
		time.Sleep(time.Second)
		if err := fa.h.PauseCluster("c1", true); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if c := cluster(fa); c.PausedBy != "" || c.PauseReason != "" || !c.PausedAt.Equal(pausedAt.Add(time.Second)) {
			t.Errorf("cluster paused again without a note = %+v", c)
		}
		if err := fa.h.PauseClusterNote("c1", note); err != nil {
			t.Fatal(err)
		}
		if err := fa.h.PauseCluster("c1", false); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if c := cluster(fa); c.Paused || c.PausedBy != "" || !c.PausedAt.IsZero() {
			t.Errorf("cluster after resume = %+v", c)
		}
		if in, _ := store.Load(); len(in.PauseNotes) != 0 || in.Paused["c1"] {
			t.Errorf("store after resume = %+v", in)
		}

		long := SwitchNote{By: "alice", Reason: strings.Repeat("x", MaxSwitchNote+1)}
		if err := fa.h.PauseClusterNote("c1", long); err == nil || !strings.Contains(err.Error(), "at most 512 bytes") {
			t.Errorf("PauseClusterNote with a long reason = %v", err)
		}
		synctest.Wait()
		if cluster(fa).Paused {
			t.Error("a refused note paused the cluster")
		}
	})
}

// TestPolicyNote: an application override's note (who and why) and time
// are in the snapshot, survive a restart, reach a replica that reads the
// store, and go with the override.
func TestPolicyNote(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemIntent()
		fa := startWithIntent(t, newFake(true), store)
		fb := startWithIntent(t, newFake(true), store) // another replica
		s := spec("c1", "a", "v1")
		s.Application = "app"
		fa.h.SetDesired([]NodeSpec{s})
		fa.ready("c1", 1, 1)
		synctest.Wait()
		set := time.Now()
		if err := fa.h.SetApplicationPolicyNote("app", PolicyWarn, SwitchNote{By: "dave", Reason: "DB\nmigration"}); err != nil {
			t.Fatal(err)
		}
		want := OverrideNote{At: set, By: "dave", Reason: "DB migration"}
		if got := fa.h.Snapshot().AppPolicyNotes["app"]; got != want {
			t.Errorf("note = %+v, want %+v", got, want)
		}
		if err := fb.h.RefreshIntent(); err != nil {
			t.Fatal(err)
		}
		if got := fb.h.Snapshot().AppPolicyNotes["app"]; got != want {
			t.Errorf("the other replica's note = %+v, want %+v", got, want)
		}
		fc := startWithIntent(t, newFake(true), store)
		if got := fc.h.Snapshot().AppPolicyNotes["app"]; got != want {
			t.Errorf("note after a restart = %+v, want %+v", got, want)
		}
		// The node's view carries it.
		if v, ok := fa.h.Snapshot().NodeView(s.ID); !ok || v.AppPolicyNotes["app"] != want {
			t.Errorf("node view = %+v", v)
		}
		if err := fa.h.SetApplicationPolicyNote("app", "", SwitchNote{By: "dave", Reason: "done"}); err != nil {
			t.Fatal(err)
		}
		if n := fa.h.Snapshot().AppPolicyNotes; len(n) != 0 {
			t.Errorf("notes after the override was removed = %+v", n)
		}
		if in, _ := store.Load(); len(in.PolicyNotes) != 0 || len(in.Policies) != 0 {
			t.Errorf("store after the override was removed = %+v", in)
		}
		long := SwitchNote{Reason: strings.Repeat("x", MaxSwitchNote+1)}
		if err := fa.h.SetApplicationPolicyNote("app", PolicyWarn, long); err == nil || len(fa.h.Snapshot().AppPolicies) != 0 {
			t.Errorf("a note too long = %v, overrides %v; want refused and nothing set", err, fa.h.Snapshot().AppPolicies)
		}
	})
}

// TestSwitchMetrics: the switches set now are series with their time (a
// pause's start, a hold's end, an override's start), gone once lifted.
func TestSwitchMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := start(t, newFake(true), Options{})
		s := spec("c1", "a", "v1")
		s.Application = "app"
		f.h.SetDesired([]NodeSpec{s})
		f.ready("c1", 1, 1)
		synctest.Wait()
		m := f.h.metrics
		now := float64(time.Now().UnixNano()) / 1e9
		if err := f.h.PauseClusterNote("c1", SwitchNote{By: "alice"}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.h.Hold(HoldTarget{Scope: HoldApplication, Name: "app"}, time.Hour, "why"); err != nil {
			t.Fatal(err)
		}
		if err := f.h.SetApplicationPolicy("app", PolicyWarn); err != nil {
			t.Fatal(err)
		}
		if got := testutil.ToFloat64(m.pausedAt.WithLabelValues("c1")); got != now {
			t.Errorf("paused at %v, want %v", got, now)
		}
		if got := testutil.ToFloat64(m.holdUntil.WithLabelValues("application", "app")); got != now+3600 {
			t.Errorf("hold ends at %v, want %v", got, now+3600)
		}
		if got := testutil.ToFloat64(m.overrideAt.WithLabelValues("app", "warn")); got != now {
			t.Errorf("override set at %v, want %v", got, now)
		}
		if err := f.h.PauseCluster("c1", false); err != nil {
			t.Fatal(err)
		}
		if err := f.h.ReleaseHold(HoldTarget{Scope: HoldApplication, Name: "app"}); err != nil {
			t.Fatal(err)
		}
		if err := f.h.SetApplicationPolicy("app", ""); err != nil {
			t.Fatal(err)
		}
		for name, c := range map[string]prometheus.Collector{"paused": m.pausedAt, "holds": m.holdUntil, "overrides": m.overrideAt} {
			if n := testutil.CollectAndCount(c); n != 0 {
				t.Errorf("%s: %d series once lifted, want none", name, n)
			}
		}
	})
}

// TestHeldBackFeedSaysWhy: a drift the gate holds back puts a feed line
// (and an audit log line) that says which switch held it and the switch's
// note as it stood then: the pause with who paused and why, the hold with
// its author and reason, a warn-only override with its note (the config's
// warn-only says no more than that). The NodeID's status keeps the
// switch's plain reason: the cluster's and the hold's views show the note
// as it is now. A pause made again with another note starts a new line
// rather than folding into the last.
func TestHeldBackFeedSaysWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logBuffer
		b := newFake(true)
		b.attrib = &Attribution{Manager: "kubectl-edit"}
		f := start(t, b, Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		paused, held, warned, configWarn := spec("c1", "a", "v1"), spec("c2", "b", "v1"), spec("c3", "c", "v1"), spec("c3", "d", "v1")
		configWarn.Policy = PolicyWarn
		f.h.SetDesired([]NodeSpec{paused, held, warned, configWarn})
		for i, c := range []string{"c1", "c2", "c3"} {
			f.ready(c, 1, int64(i+1))
		}
		synctest.Wait()

		if err := f.h.PauseClusterNote("c1", SwitchNote{By: "alice", Reason: "INC-4211: failover"}); err != nil {
			t.Fatal(err)
		}
		hold, err := f.h.HoldAs("bob", HoldTarget{HoldApplication, "b"}, time.Hour, "INC-12: restore")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.h.SetApplicationPolicyNote("c", PolicyWarn, SwitchNote{By: "dave", Reason: "DB migration"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		for _, s := range []NodeSpec{paused, held, warned, configWarn} {
			b.put(s.ID, func(o *fakeObject) { o.content = "edited" })
		}
		synctest.Wait()

		whyOf := func(id NodeID) []string {
			t.Helper()
			var out []string
			for _, e := range f.h.Snapshot().Feed {
				if e.ID == id && heldBack(e.Action) {
					out = append(out, e.Action+": "+e.Why)
				}
			}
			return out
		}
		until := hold.Until.Format("15:04:05")
		for _, tc := range []struct {
			id         NodeID
			why        string
			statusText string
		}{
			{paused.ID, "paused: repairs paused on this cluster by alice: INC-4211: failover", "repairs paused on this cluster"},
			{held.ID, "held: held until " + until + " (application/b) by bob: INC-12: restore", "held until " + until + " (application/b) by bob: INC-12: restore"},
			{warned.ID, "warn: warn-only: reported, not repaired (policy overridden by dave: DB migration)", "warn-only: reported, not repaired"},
			{configWarn.ID, "warn: warn-only: reported, not repaired", "warn-only: reported, not repaired"},
		} {
			if got := whyOf(tc.id); len(got) != 1 || got[0] != tc.why {
				t.Errorf("%s: feed lines held back = %q, want [%q]", tc.id, got, tc.why)
			}
			if n := f.node(tc.id); n.Reason != tc.statusText {
				t.Errorf("%s: status reason = %q, want %q", tc.id, n.Reason, tc.statusText)
			}
		}
		var audit []string
		logs.mu.Lock()
		for _, line := range strings.Split(strings.TrimSpace(logs.b.String()), "\n") {
			var r struct{ Msg, Node, Reason string }
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			if r.Msg == "drift not repaired" && r.Node == paused.ID.String() {
				audit = append(audit, r.Reason)
			}
		}
		logs.mu.Unlock()
		if want := "repairs paused on this cluster by alice: INC-4211: failover"; len(audit) != 1 || audit[0] != want {
			t.Errorf("audit log of the paused drift = %q, want [%q]", audit, want)
		}

		// Paused again by someone else: the next held-back event is a
		// line of its own, with the new note.
		if err := f.h.PauseClusterNote("c1", SwitchNote{By: "carol", Reason: "INC-4212"}); err != nil {
			t.Fatal(err)
		}
		b.put(paused.ID, func(o *fakeObject) { o.content = "edited again" })
		synctest.Wait()
		if got, want := whyOf(paused.ID), []string{"paused: repairs paused on this cluster by carol: INC-4212",
			"paused: repairs paused on this cluster by alice: INC-4211: failover"}; !slices.Equal(got, want) {
			t.Errorf("feed after a new pause note = %q, want %q", got, want)
		}
	})
}

package hub

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// memIntent is an in-memory IntentStore (the bbolt one is tested in
// hub/intent).
type memIntent struct {
	mu sync.Mutex
	in Intent
}

func newMemIntent() *memIntent {
	return &memIntent{in: Intent{Paused: map[string]bool{}, PausedAt: map[string]time.Time{}, PauseNotes: map[string]SwitchNote{}, PolicyNotes: map[string]SwitchNote{}, Policies: map[string]Policy{}, PolicySetAt: map[string]time.Time{}, Applied: map[NodeID]SpecRef{}}}
}

func (m *memIntent) Load() (Intent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.in
	out.Paused = maps.Clone(m.in.Paused)
	out.PausedAt = maps.Clone(m.in.PausedAt)
	out.PauseNotes = maps.Clone(m.in.PauseNotes)
	out.PolicyNotes = maps.Clone(m.in.PolicyNotes)
	out.PolicySetAt = maps.Clone(m.in.PolicySetAt)
	out.Policies = maps.Clone(m.in.Policies)
	out.Applied = maps.Clone(m.in.Applied)
	out.Holds = append([]Hold(nil), m.in.Holds...)
	out.Decommissions = append([]DecommissionRecord(nil), m.in.Decommissions...)
	return out, nil
}
func (m *memIntent) SetPaused(c string, p bool, at time.Time, note SwitchNote) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.in.PauseNotes, c)
	if p {
		m.in.Paused[c] = true
		m.in.PausedAt[c] = at
		if note != (SwitchNote{}) {
			m.in.PauseNotes[c] = note
		}
	} else {
		delete(m.in.Paused, c)
		delete(m.in.PausedAt, c)
	}
	return nil
}
func (m *memIntent) SetPolicy(app string, p Policy, at time.Time, note SwitchNote) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.in.PolicyNotes, app)
	if p == "" {
		delete(m.in.Policies, app)
		delete(m.in.PolicySetAt, app)
	} else {
		m.in.Policies[app] = p
		m.in.PolicySetAt[app] = at
		if note != (SwitchNote{}) {
			m.in.PolicyNotes[app] = note
		}
	}
	return nil
}
func (m *memIntent) PutHold(h Hold) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.in.Holds = slices.DeleteFunc(m.in.Holds, func(x Hold) bool { return x.Target == h.Target })
	m.in.Holds = append(m.in.Holds, h)
	return nil
}
func (m *memIntent) DeleteHold(t HoldTarget) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.in.Holds[:0]
	for _, h := range m.in.Holds {
		if h.Target != t {
			out = append(out, h)
		}
	}
	m.in.Holds = out
	return nil
}
func (m *memIntent) DeleteExpiredHold(h Hold) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.in.Holds[:0]
	for _, x := range m.in.Holds {
		if x.Target != h.Target || !x.Until.Equal(h.Until) {
			out = append(out, x)
		}
	}
	m.in.Holds = out
	return nil
}
func (m *memIntent) PutDecommission(d DecommissionRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.in.Decommissions = append(m.in.Decommissions, d)
	return nil
}
func (m *memIntent) DeleteDecommission(id NodeID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.in.Decommissions[:0]
	for _, d := range m.in.Decommissions {
		if d.Ref.ID != id {
			out = append(out, d)
		}
	}
	m.in.Decommissions = out
	return nil
}
func (m *memIntent) PutApplied(r SpecRef) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.in.Applied[r.ID] = r
	return nil
}
func (m *memIntent) DeleteApplied(id NodeID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.in.Applied, id)
	return nil
}
func (m *memIntent) Close() error { return nil }

// startWithIntent runs a hub over b with an intent store and restores it,
// as the app does at every start.
func startWithIntent(t *testing.T, b *fakeBackend, store IntentStore) *fixture {
	t.Helper()
	f := start(t, b, Options{Intent: store})
	if err := f.h.LoadIntent(); err != nil {
		t.Fatal(err)
	}
	return f
}

func appSpecs(cluster string, apps ...string) []NodeSpec {
	var out []NodeSpec
	for _, a := range apps {
		out = append(out, spec(cluster, a, "v1"))
	}
	return out
}

// The prune guard: emptying a cluster, or removing more than the limit, is
// refused as a whole and changes nothing; removing one application of
// several goes through; AllowPrune confirms.
func TestPruneGuard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{PruneLimit: 2})
		all := append(appSpecs("c1", "a", "b", "c"), appSpecs("c2", "x", "y", "z", "w")...)
		if _, _, err := f.h.ReplaceDesired(all, DesiredOptions{}); err != nil {
			t.Fatal(err)
		}
		f.ready("c1", 1, 1)
		f.ready("c2", 2, 1)
		synctest.Wait()

		// Every object of c1 (3 of 3): refused, even below the limit for c2.
		_, _, err := f.h.ReplaceDesired(appSpecs("c2", "x", "y", "z", "w"), DesiredOptions{})
		var pr *PruneRefusedError
		if !errors.As(err, &pr) || !errors.Is(err, ErrPruneRefused) {
			t.Fatalf("emptying c1: %v, want a prune refusal", err)
		}
		for _, want := range []string{`cluster "c1": 3 of 3`, "all of them", "--allow-prune", "nothing was changed"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("refusal %q does not say %q", err, want)
			}
		}
		// More than the limit on c2 (3 of 4): refused.
		if _, _, err := f.h.ReplaceDesired(append(appSpecs("c1", "a", "b", "c"), appSpecs("c2", "x")...), DesiredOptions{}); !errors.Is(err, ErrPruneRefused) {
			t.Fatalf("removing 3 > limit 2: %v", err)
		}
		synctest.Wait()
		for _, s := range all {
			if !b.exists(s.ID) {
				t.Fatalf("%s deleted by a refused change", s.ID)
			}
			if _, ok := f.h.Desired(s.ID); !ok {
				t.Fatalf("%s left the desired state of a refused change", s.ID)
			}
		}
		// One application of several: fine.
		_, removed, err := f.h.ReplaceDesired(append(appSpecs("c1", "a", "b"), appSpecs("c2", "x", "y", "z", "w")...), DesiredOptions{})
		if err != nil || len(removed) != 1 {
			t.Fatalf("removing one application: %v %v", removed, err)
		}
		synctest.Wait()
		if b.exists(spec("c1", "c", "v1").ID) {
			t.Error("removed application not pruned")
		}
		// Confirmed: everything of c1 goes.
		if _, _, err := f.h.ReplaceDesired(appSpecs("c2", "x", "y", "z", "w"), DesiredOptions{AllowPrune: true}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if b.exists(spec("c1", "a", "v1").ID) {
			t.Error("confirmed prune did not delete")
		}
	})
}

// Warn-only never deletes, a paused cluster never deletes, a hold never
// deletes: each reports "would prune".
func TestWouldPrune(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		warn := spec("c1", "warn", "v1")
		warn.Policy = PolicyWarn
		keep := appSpecs("c1", "keep")
		held, paused := spec("c1", "held", "v1"), spec("c2", "paused", "v1")
		f.h.SetDesired(append(keep, warn, held, paused, spec("c2", "other", "v1")))
		f.ready("c1", 1, 1)
		f.ready("c2", 2, 1)
		synctest.Wait()
		if err := f.h.PauseCluster("c2", true); err != nil {
			t.Fatal(err)
		}
		if _, err := f.h.Hold(HoldTarget{HoldNode, held.ID.String()}, time.Hour, "incident 42"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.h.ReplaceDesired(append(keep, spec("c2", "other", "v1")), DesiredOptions{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		for _, s := range []NodeSpec{warn, held, paused} {
			if !b.exists(s.ID) || b.deleteCount(s.ID) != 0 {
				t.Errorf("%s deleted", s.ID)
			}
			if n := f.node(s.ID); !strings.Contains(n.Reason, "would prune") {
				t.Errorf("%s: %s %q, want would prune", s.ID, n.Status, n.Reason)
			}
		}
		if got := f.node(held.ID).Status; got != StatusHeld {
			t.Errorf("held: %s", got)
		}
		// The hold expires: the prune goes through.
		time.Sleep(time.Hour + time.Second)
		synctest.Wait()
		if b.exists(held.ID) {
			t.Error("prune did not resume after the hold expired")
		}
	})
}

// A hold stops repairs of what it covers, shows the drift as held, expires
// by itself (then the drift is repaired), and can be released early.
func TestHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		a, c := spec("c1", "a", "v1"), spec("c2", "c", "v1")
		f.h.SetDesired([]NodeSpec{a, c})
		f.ready("c1", 1, 1)
		f.ready("c2", 2, 1)
		synctest.Wait()
		if _, err := f.h.Hold(HoldTarget{HoldApplication, "a"}, 10*time.Minute, "investigating"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.h.Hold(HoldTarget{HoldCluster, "c2"}, time.Hour, "maintenance"); err != nil {
			t.Fatal(err)
		}
		for _, bad := range []struct {
			t      HoldTarget
			ttl    time.Duration
			reason string
		}{
			{HoldTarget{"team", "x"}, time.Minute, "r"},
			{HoldTarget{HoldNode, "not-a-node-id"}, time.Minute, "r"},
			{HoldTarget{HoldCluster, "c1"}, 0, "r"},
			{HoldTarget{HoldCluster, "c1"}, time.Minute, " "},
		} {
			if _, err := f.h.Hold(bad.t, bad.ttl, bad.reason); err == nil {
				t.Errorf("hold %+v accepted", bad)
			}
		}
		if got := len(f.h.Snapshot().Holds); got != 2 {
			t.Fatalf("snapshot holds %d, want 2", got)
		}
		b.put(a.ID, func(o *fakeObject) { o.content = "edited" })
		b.put(c.ID, func(o *fakeObject) { o.content = "edited" })
		synctest.Wait()
		if n := f.node(a.ID); n.Status != StatusHeld || !strings.Contains(n.Reason, "investigating") || n.LastRepair == nil {
			t.Errorf("held node: %s %q %+v", n.Status, n.Reason, n.LastRepair)
		}
		if b.repairCount(a.ID) != 1 || b.repairCount(c.ID) != 1 {
			t.Fatal("repaired despite a hold")
		}
		if err := f.h.ReleaseHold(HoldTarget{HoldCluster, "c2"}); err != nil {
			t.Fatal(err)
		}
		if err := f.h.ReleaseHold(HoldTarget{HoldCluster, "c2"}); !errors.Is(err, ErrNoHold) {
			t.Errorf("releasing a missing hold = %v, want ErrNoHold", err)
		}
		synctest.Wait()
		if b.repairCount(c.ID) != 2 {
			t.Error("releasing the hold did not repair")
		}
		time.Sleep(10*time.Minute + time.Second)
		synctest.Wait()
		if b.repairCount(a.ID) != 2 {
			t.Error("the drift was not repaired when the hold expired")
		}
		if got := len(f.h.Snapshot().Holds); got != 0 {
			t.Errorf("expired holds still shown: %d", got)
		}
		// A manual repair overrides a hold once.
		if _, err := f.h.Hold(HoldTarget{HoldNode, a.ID.String()}, time.Hour, "again"); err != nil {
			t.Fatal(err)
		}
		b.put(a.ID, func(o *fakeObject) { o.content = "edited-2" })
		synctest.Wait()
		if err := f.h.RepairNow(a.ID); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if b.repairCount(a.ID) != 3 {
			t.Error("a manual repair did not override the hold")
		}
	})
}

// Pauses, policy overrides, holds, pending decommissions and applied specs
// survive a restart; an application removed while the hub was down is
// decommissioned at start, through the same guard.
func TestIntentSurvivesRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemIntent()
		b := newFake(true)
		f := startWithIntent(t, b, store)
		specs := append(appSpecs("c1", "a", "b", "c"), appSpecs("c2", "x")...)
		if _, _, err := f.h.ReplaceDesired(specs, DesiredOptions{}); err != nil {
			t.Fatal(err)
		}
		f.ready("c1", 1, 1)
		f.ready("c2", 2, 1)
		synctest.Wait()
		if err := f.h.PauseCluster("c2", true); err != nil {
			t.Fatal(err)
		}
		if err := f.h.SetApplicationPolicy("b", PolicyWarn); err != nil {
			t.Fatal(err)
		}
		if _, err := f.h.Hold(HoldTarget{HoldApplication, "a"}, time.Hour, "incident"); err != nil {
			t.Fatal(err)
		}
		f.stop()

		// Restart with application "c" removed from the config.
		g := startWithIntent(t, b, store)
		_, removed, err := g.h.ReplaceDesired(append(appSpecs("c1", "a", "b"), appSpecs("c2", "x")...), DesiredOptions{})
		if err != nil || len(removed) != 1 || removed[0] != spec("c1", "c", "v1").ID {
			t.Fatalf("removed while down: %v %v", removed, err)
		}
		g.ready("c1", 1, 1)
		g.ready("c2", 2, 1)
		synctest.Wait()
		snap := g.h.Snapshot()
		if c, _ := snap.Cluster("c2"); !c.Paused {
			t.Error("pause forgotten")
		}
		if snap.AppPolicies["b"] != PolicyWarn {
			t.Error("warn override forgotten")
		}
		if len(snap.Holds) != 1 || snap.Holds[0].Reason != "incident" {
			t.Errorf("holds after restart: %+v", snap.Holds)
		}
		if b.exists(spec("c1", "c", "v1").ID) {
			t.Error("application removed while down was not decommissioned")
		}
		b.put(spec("c2", "x", "v1").ID, func(o *fakeObject) { o.content = "edited" })
		synctest.Wait()
		if b.repairCount(spec("c2", "x", "v1").ID) != 1 {
			t.Error("a paused cluster was repaired after a restart")
		}
		// Emptying a cluster at start is refused like a reload.
		g.stop()
		h := startWithIntent(t, b, store)
		if _, _, err := h.h.ReplaceDesired(appSpecs("c1", "a", "b"), DesiredOptions{}); !errors.Is(err, ErrPruneRefused) {
			t.Fatalf("start without c2's only application: %v, want refused", err)
		}
	})
}

// A warn-only application removed while the hub was down is reported as
// "would prune" after the restart, never deleted: the policy is remembered
// with what was applied.
func TestWarnRemovedWhileDownNeverDeleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemIntent()
		b := newFake(true)
		f := startWithIntent(t, b, store)
		warn := spec("c1", "w", "v1")
		warn.Policy = PolicyWarn
		f.h.SetDesired(append(appSpecs("c1", "a"), warn))
		f.ready("c1", 1, 1)
		synctest.Wait()
		f.stop()
		g := startWithIntent(t, b, store)
		if _, _, err := g.h.ReplaceDesired(appSpecs("c1", "a"), DesiredOptions{}); err != nil {
			t.Fatal(err)
		}
		g.ready("c1", 1, 1)
		synctest.Wait()
		if !b.exists(warn.ID) {
			t.Fatal("a warn-only object removed while the hub was down was deleted")
		}
		if n := g.node(warn.ID); !strings.Contains(n.Reason, "would prune") {
			t.Errorf("%s %q, want would prune", n.Status, n.Reason)
		}
	})
}

// A decommission pending when the hub stops resumes after a restart.
func TestDecommissionResumesAfterRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemIntent()
		b := newFake(true)
		f := startWithIntent(t, b, store)
		f.h.SetDesired(appSpecs("c1", "a", "b"))
		f.ready("c1", 1, 1)
		synctest.Wait()
		f.h.PauseCluster("c1", true) // hold the prune
		if _, _, err := f.h.ReplaceDesired(appSpecs("c1", "a"), DesiredOptions{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		f.stop()
		if len(store.in.Decommissions) != 1 {
			t.Fatalf("decommission not recorded: %+v", store.in.Decommissions)
		}
		g := startWithIntent(t, b, store)
		if _, _, err := g.h.ReplaceDesired(appSpecs("c1", "a"), DesiredOptions{}); err != nil {
			t.Fatal(err)
		}
		g.ready("c1", 1, 1)
		synctest.Wait()
		if !b.exists(spec("c1", "b", "v1").ID) {
			t.Fatal("pruned while paused")
		}
		if err := g.h.PauseCluster("c1", false); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if b.exists(spec("c1", "b", "v1").ID) {
			t.Error("pending decommission did not resume after the restart")
		}
		if len(store.in.Decommissions) != 0 {
			t.Errorf("finished decommission still recorded: %+v", store.in.Decommissions)
		}
		if _, ok := store.in.Applied[spec("c1", "b", "v1").ID]; ok {
			t.Error("pruned NodeID still recorded as applied")
		}
	})
}

// A decommission that ends because the NodeID is wanted again is forgotten
// by the intent store too: a restart never resumes it unguarded.
func TestRevivedDecommissionForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemIntent()
		b := newFake(true)
		f := startWithIntent(t, b, store)
		f.h.SetDesired(appSpecs("c1", "a", "b"))
		f.ready("c1", 1, 1)
		synctest.Wait()
		if err := f.h.PauseCluster("c1", true); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.h.ReplaceDesired(appSpecs("c1", "a"), DesiredOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.h.ReplaceDesired(appSpecs("c1", "a", "b"), DesiredOptions{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if len(store.in.Decommissions) != 0 {
			t.Errorf("decommission of a NodeID wanted again still recorded: %+v", store.in.Decommissions)
		}
	})
}

// Objects carrying our marks that nothing wants or remembers are orphans:
// shown, never pruned by default; pruned with PruneOrphans within the
// limit; another hub's objects are never ours.
func TestOrphans(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prune  bool
		limit  int
		pruned bool
	}{
		{"shown only", false, 50, false},
		{"pruned", true, 50, true},
		{"over the limit", true, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newFake(true)
				strays := []NodeID{spec("c1", "stray1", "v1").ID, spec("c1", "stray2", "v1").ID}
				for _, id := range strays {
					b.put(id, func(o *fakeObject) { o.content = "old" })
				}
				other := spec("c1", "other-hub", "v1").ID
				b.put(other, func(o *fakeObject) { o.foreign = true })
				f := start(t, b, Options{PruneOrphans: tc.prune, PruneLimit: tc.limit})
				f.h.SetDesired(appSpecs("c1", "a"))
				f.ready("c1", 1, 1)
				synctest.Wait()
				for _, id := range strays {
					if b.exists(id) == tc.pruned {
						t.Errorf("%s exists=%v, want pruned=%v", id, b.exists(id), tc.pruned)
					}
					n, ok := f.h.Snapshot().Node(id)
					if !tc.pruned && (!ok || n.Status != StatusOrphan) {
						t.Errorf("%s: %+v, want shown as orphan", id, n)
					}
					if tc.pruned && ok {
						t.Errorf("%s still shown after pruning", id)
					}
				}
				if !b.exists(other) {
					t.Error("another hub's object was deleted")
				}
				if _, ok := f.h.Snapshot().Node(other); ok {
					t.Error("another hub's object shown as ours")
				}
				// Wanted again: no longer an orphan.
				if !tc.pruned {
					f.h.SetDesired(append(appSpecs("c1", "a"), spec("c1", "stray1", "v1")))
					synctest.Wait()
					if n := f.node(strays[0]); n.Status == StatusOrphan {
						t.Errorf("a desired object still shows as orphan")
					}
				}
			})
		})
	}
}

// A change that stops managing a cluster (DesiredOptions.Forget) drops its
// NodeIDs without deleting anything and without counting for the guard;
// when the guard refuses the change, nothing is forgotten.
func TestForgetClustersInOneChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		f.h.SetDesired(append(appSpecs("c1", "a", "b"), appSpecs("c2", "x")...))
		f.ready("c1", 1, 1)
		f.ready("c2", 2, 1)
		synctest.Wait()
		x := spec("c2", "x", "v1").ID
		// Refused (c1 emptied): c2 is not forgotten either.
		if _, _, err := f.h.ReplaceDesired(nil, DesiredOptions{Forget: []string{"c2"}}); !errors.Is(err, ErrPruneRefused) {
			t.Fatalf("emptying c1 while forgetting c2: %v, want refused", err)
		}
		if _, ok := f.h.Desired(x); !ok {
			t.Fatal("a refused change forgot c2")
		}
		// Accepted: c2 forgotten, its object untouched, nothing pruned.
		_, removed, err := f.h.ReplaceDesired(appSpecs("c1", "a", "b"), DesiredOptions{Forget: []string{"c2"}})
		if err != nil || len(removed) != 0 {
			t.Fatalf("forgetting c2: removed %v, %v", removed, err)
		}
		synctest.Wait()
		if _, ok := f.h.Desired(x); ok {
			t.Error("c2 still managed")
		}
		if _, ok := f.h.Snapshot().Cluster("c2"); ok {
			t.Error("c2 still in the snapshot")
		}
		if !b.exists(x) || b.deleteCount(x) != 0 {
			t.Error("forgetting a cluster deleted its object")
		}
	})
}

// A change that stops managing a cluster returns once no write on it can
// still happen, as a pause does: a repair in flight there has returned.
func TestForgetInAChangeWaitsForItsWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		f.h.SetDesired(append(appSpecs("c1", "a"), appSpecs("c2", "x")...))
		f.ready("c1", 1, 1)
		f.ready("c2", 2, 1)
		synctest.Wait()
		x := spec("c2", "x", "v1").ID
		at, proceed := make(chan struct{}), make(chan struct{})
		var once sync.Once
		b.onRepair = func(id NodeID) {
			if id == x {
				once.Do(func() { close(at); <-proceed })
			}
		}
		b.put(x, func(o *fakeObject) { o.content = "edited" })
		<-at // its repair in flight
		changed := make(chan error, 1)
		go func() {
			_, _, err := f.h.ReplaceDesired(appSpecs("c1", "a"), DesiredOptions{Forget: []string{"c2"}})
			changed <- err
		}()
		synctest.Wait()
		select {
		case err := <-changed:
			t.Fatalf("the change forgetting c2 returned (%v) while a write there was in flight", err)
		default:
		}
		close(proceed)
		if err := <-changed; err != nil {
			t.Fatal(err)
		}
		before := b.repairCount(x) + b.deleteCount(x)
		b.put(x, func(o *fakeObject) { o.content = "edited again" })
		synctest.Wait()
		if after := b.repairCount(x) + b.deleteCount(x); after != before {
			t.Errorf("%d writes on c2 after it was forgotten", after-before)
		}
	})
}

// A failing source (DesiredOptions.Keep): its desired NodeIDs keep their
// last good spec, and what an earlier run applied for it is neither
// decommissioned nor judged by the guard (a restart with the source
// broken), until a change no longer keeps it; the snapshot names the
// source with the objects kept.
func TestKeepFailingSource(t *testing.T) {
	t.Run("reload", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := newFake(true)
			f := start(t, b, Options{PruneLimit: 50})
			f.h.SetDesired(appSpecs("c1", "kept", "other"))
			f.ready("c1", 1, 1)
			synctest.Wait()
			kept := spec("c1", "kept", "v1")
			other := spec("c1", "other", "v2")
			changed, removed, err := f.h.ReplaceDesired([]NodeSpec{other}, DesiredOptions{Keep: []string{"kept"}})
			if err != nil || len(removed) != 0 || !slices.Equal(changed, []NodeID{other.ID}) {
				t.Fatalf("change keeping %q: changed %v removed %v err %v; want only %s changed", "kept", changed, removed, err, other.ID)
			}
			f.h.SetSourceFaults([]SourceStatus{{ID: "kept", Error: "x.yaml:5: no kind", Since: time.Now()}})
			synctest.Wait()
			if !b.exists(kept.ID) || b.deleteCount(kept.ID) != 0 {
				t.Fatalf("kept object: exists %v, %d deletes", b.exists(kept.ID), b.deleteCount(kept.ID))
			}
			if s, ok := f.h.Desired(kept.ID); !ok || s.Hash != kept.Hash {
				t.Fatalf("kept object's desired spec: %v %v, want its last good one", s.Hash, ok)
			}
			snap := f.h.Snapshot()
			if len(snap.Sources) != 1 || snap.Sources[0].ID != "kept" || snap.Sources[0].KeptObjects != 1 {
				t.Fatalf("snapshot sources %+v, want kept with 1 object", snap.Sources)
			}
			// Fixed, and the object gone from the source: pruned now.
			f.h.SetSourceFaults(nil)
			if _, removed, err = f.h.ReplaceDesired([]NodeSpec{other}, DesiredOptions{AllowPrune: true}); err != nil || !slices.Equal(removed, []NodeID{kept.ID}) {
				t.Fatalf("change without keep: removed %v err %v", removed, err)
			}
			synctest.Wait()
			if b.exists(kept.ID) || len(f.h.Snapshot().Sources) != 0 {
				t.Errorf("after the fix: exists %v, sources %v", b.exists(kept.ID), f.h.Snapshot().Sources)
			}
		})
	})
	t.Run("restart", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := newFake(true)
			store := newMemIntent()
			f := startWithIntent(t, b, store)
			f.h.SetDesired(appSpecs("c1", "kept", "other"))
			f.ready("c1", 1, 1)
			synctest.Wait()
			f.stop()
			// The next run starts with the source broken: only "other".
			g := startWithIntent(t, b, store)
			if _, removed, err := g.h.ReplaceDesired(appSpecs("c1", "other"), DesiredOptions{Keep: []string{"kept"}}); err != nil || len(removed) != 0 {
				t.Fatalf("start keeping %q: removed %v err %v", "kept", removed, err)
			}
			g.ready("c1", 1, 1)
			synctest.Wait()
			if id := spec("c1", "kept", "v1").ID; !b.exists(id) || b.deleteCount(id) != 0 {
				t.Fatalf("object of the broken source: exists %v, %d deletes", b.exists(id), b.deleteCount(id))
			}
		})
	})
}

// A decommission whose delete event never comes (the object's kind is no
// longer watched: its last object left the config) still ends: it reads the
// object again after a growing delay, long before DecommissionTimeout.
func TestDecommissionWithoutDeleteEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		f.h.SetDesired(appSpecs("c1", "a", "gone"))
		f.ready("c1", 1, 1)
		synctest.Wait()
		gone := spec("c1", "gone", "v1").ID
		b.mu.Lock()
		b.auto = false // no event from now on
		b.mu.Unlock()
		t0 := time.Now()
		f.h.SetDesired(appSpecs("c1", "a"))
		synctest.Wait()
		if b.exists(gone) {
			t.Fatal("not deleted")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if _, ok := f.h.Snapshot().Node(gone); ok {
			t.Fatalf("still decommissioning %s after it was gone", time.Since(t0))
		}
	})
}

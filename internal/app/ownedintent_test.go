package app

import (
	"errors"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/hub"
)

// recordingStore is an intent store that records its writes; its reads
// fail while unreadable is set.
type recordingStore struct {
	writes     []string
	unreadable atomic.Bool
}

func (s *recordingStore) Load() (hub.Intent, error) {
	if s.unreadable.Load() {
		return hub.Intent{}, errors.New("coordination cluster unreachable (test)")
	}
	return hub.Intent{}, nil
}
func (s *recordingStore) SetPaused(c string, _ bool, _ time.Time, _ hub.SwitchNote) error {
	s.writes = append(s.writes, "pause "+c)
	return nil
}
func (s *recordingStore) SetPolicy(a string, _ hub.Policy, _ time.Time, _ hub.SwitchNote) error {
	s.writes = append(s.writes, "policy "+a)
	return nil
}
func (s *recordingStore) PutHold(h hub.Hold) error {
	s.writes = append(s.writes, "hold "+h.Target.String())
	return nil
}
func (s *recordingStore) DeleteHold(t hub.HoldTarget) error {
	s.writes = append(s.writes, "release "+t.String())
	return nil
}
func (s *recordingStore) DeleteExpiredHold(h hub.Hold) error {
	s.writes = append(s.writes, "expire "+h.Target.String())
	return nil
}
func (s *recordingStore) PutDecommission(d hub.DecommissionRecord) error {
	s.writes = append(s.writes, "decommission "+d.Ref.ID.String())
	return nil
}
func (s *recordingStore) DeleteDecommission(id hub.NodeID) error {
	s.writes = append(s.writes, "-decommission "+id.String())
	return nil
}
func (s *recordingStore) PutApplied(r hub.SpecRef) error {
	s.writes = append(s.writes, "applied "+r.ID.String())
	return nil
}
func (s *recordingStore) DeleteApplied(id hub.NodeID) error {
	s.writes = append(s.writes, "-applied "+id.String())
	return nil
}
func (s *recordingStore) Close() error { return nil }

// TestOwnedIntent: a replica writes the applied and decommission records
// of the clusters it owns only; the overrides the replicas share go
// through whatever it owns; before the coordinator exists it owns nothing.
func TestOwnedIntent(t *testing.T) {
	rec := &recordingStore{}
	o := &ownedIntent{IntentStore: rec}
	mine := hub.NewNodeID("c1", "shop", "web", hub.KindDeployment)
	theirs := hub.NewNodeID("c2", "shop", "web", hub.KindDeployment)
	write := func() {
		for _, id := range []hub.NodeID{mine, theirs} {
			_ = o.PutApplied(hub.SpecRef{ID: id})
			_ = o.PutDecommission(hub.DecommissionRecord{Ref: hub.SpecRef{ID: id}})
			_ = o.DeleteDecommission(id)
			_ = o.DeleteApplied(id)
		}
	}
	write()
	if len(rec.writes) > 0 {
		t.Errorf("writes before the coordinator exists: %v", rec.writes)
	}
	o.owns = func(c string) bool { return c == "c1" }
	write()
	_ = o.SetPaused("c2", true, time.Now(), hub.SwitchNote{})
	_ = o.SetPolicy("web", hub.PolicyWarn, time.Now(), hub.SwitchNote{})
	_ = o.PutHold(hub.Hold{Target: hub.HoldTarget{Scope: hub.HoldCluster, Name: "c2"}, Until: time.Now().Add(time.Hour)})
	_ = o.DeleteHold(hub.HoldTarget{Scope: hub.HoldCluster, Name: "c2"})
	want := []string{"applied " + mine.String(), "decommission " + mine.String(), "-decommission " + mine.String(), "-applied " + mine.String(),
		"pause c2", "policy web", "hold cluster/c2", "release cluster/c2"}
	if !slices.Equal(rec.writes, want) {
		t.Errorf("writes = %v\nwant %v", rec.writes, want)
	}
	if _, err := o.LoadOverrides(); err != nil {
		t.Errorf("LoadOverrides over a store without it: %v", err)
	}
}

// TestTakeOverBeforeRegister: a cluster this replica takes is registered
// (watched) only once the hub took it over; a takeover that fails (the
// shared intent unreadable) leaves it unregistered and is retried; a
// cluster given up meanwhile is not registered by the retry.
func TestTakeOverBeforeRegister(t *testing.T) {
	store := &recordingStore{}
	h := hub.New(hub.Options{ID: "hub", Intent: store})
	reg := clusters.NewRegistry(h, clusters.RegistryOptions{})
	a := &App{log: slog.New(slog.DiscardHandler), hub: h, reg: reg}
	r := &replicas{a: a, owned: make(map[string]bool), pending: make(map[string]string), wanted: map[string]clusters.ClusterConfig{
		"c1": {ID: "c1", Kubeconfig: "/nonexistent"}, "c2": {ID: "c2", Kubeconfig: "/nonexistent"},
	}}
	registered := func() []string { return reg.IDs() }

	store.unreadable.Store(true)
	r.Own("c1")
	r.Own("c2")
	if got := registered(); len(got) > 0 || r.owns("c1") {
		t.Fatalf("registered %v (owns c1: %v) although the takeover failed", got, r.owns("c1"))
	}
	r.retryTakeOvers()
	if got := registered(); len(got) > 0 {
		t.Fatalf("registered %v while the shared intent is unreadable", got)
	}
	r.Disown("c2")
	store.unreadable.Store(false)
	r.retryTakeOvers()
	if got := registered(); !slices.Equal(got, []string{"c1"}) || !r.owns("c1") || r.owns("c2") {
		t.Errorf("after the retry: registered %v, owns c1 %v, c2 %v; want c1 only", got, r.owns("c1"), r.owns("c2"))
	}
	r.Disown("c1")
	if got := registered(); len(got) > 0 {
		t.Errorf("registered %v after Disown", got)
	}
}

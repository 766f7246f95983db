package app

import (
	"slices"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// recordingStore is an intent store that records its writes.
type recordingStore struct{ writes []string }

func (s *recordingStore) Load() (hub.Intent, error) { return hub.Intent{}, nil }
func (s *recordingStore) SetPaused(c string, _ bool) error {
	s.writes = append(s.writes, "pause "+c)
	return nil
}
func (s *recordingStore) SetPolicy(a string, _ hub.Policy) error {
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
	_ = o.SetPaused("c2", true)
	_ = o.SetPolicy("web", hub.PolicyWarn)
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

package main

import (
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/coord"
)

// testReplicaTakeoverKeepsIntent: three replicas start together, so none
// of them read at start the applied records the others write later. A pause
// on one cluster and a hold on one object of another are recorded, the
// objects are deleted (reported, not repaired), and the replicas owning
// those clusters are killed with SIGKILL. The survivor that takes them over
// reads the shared applied records and intent before its first write: the
// missing objects are drift under a pause and a hold, not first applies,
// and stay missing; once the pause and the hold are lifted they are
// repaired.
func testReplicaTakeoverKeepsIntent(t *testing.T, e *haEnv) {
	const hubID, ns = "ha-takeover", "ha-takeover"
	path := e.config(t, hubID, ns)
	ids := []string{"r1", "r2", "r3"}
	reps := []*replicaProc{e.startReplica(t, "r1", path), e.startReplica(t, "r2", path), e.startReplica(t, "r3", path)}
	e.waitOwned(t, hubID, reps, 60*time.Second)
	e.waitApplied(t, ns)

	clusters := e.clusterIDs()
	paused, held := clusters[0], clusters[1]
	heldNode := hub.NewNodeID(held, ns, "app", hub.KindConfigMap)
	// Kill the owners of both clusters, keeping one replica alive.
	victims := map[string]bool{coord.Owner(paused, ids): true, coord.Owner(held, ids): true}
	var survivor *replicaProc
	for _, r := range reps {
		if !victims[r.id] {
			survivor = r
		}
	}
	if survivor == nil {
		t.Fatalf("the owners of %s and %s are every replica", paused, held)
	}
	c := survivor.client(t, e)
	if err := c.PauseCluster(paused, true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Hold(hub.HoldTarget{Scope: hub.HoldNode, Name: heldNode.String()}, time.Hour, "incident 77"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * e.lease) // every replica refreshes its shared intent
	old := e.drift(t, ns, []string{paused, held})
	e.stillMissing(t, ns, []string{paused, held}, time.Second, "by the owner while paused or held")

	var live []*replicaProc
	for _, r := range reps {
		if victims[r.id] {
			if err := r.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		live = append(live, r)
	}
	e.waitOwned(t, hubID, live, 60*time.Second)
	e.stillMissing(t, ns, []string{paused, held}, 2*e.lease, "at takeover: the new owner ignored the pause or the hold")

	if err := c.PauseCluster(paused, false); err != nil {
		t.Fatal(err)
	}
	if err := c.ReleaseHold(hub.HoldTarget{Scope: hub.HoldNode, Name: heldNode.String()}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	took := e.waitRepaired(t, ns, old, now)
	t.Logf("taken over under a pause and a hold, nothing written; lifted: repaired after %v", took)
	if got := survivor.metric(t, "driftwatch_repairs_total", map[string]string{"cluster": held, "outcome": "success"}); got < 1 {
		t.Errorf("the repair after takeover is not counted as a repair (driftwatch_repairs_total %v)", got)
	}
	for _, r := range live {
		r.stop(t)
	}
}

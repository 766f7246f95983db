package tui

import (
	"errors"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/driftwatch/driftwatch/hub"
)

// HubSource drives a real (not running) hub: actions reach it and its
// snapshots render.
func TestHubSource(t *testing.T) {
	h := hub.New(hub.Options{ID: "hub-test", Now: fixedClock})
	id := nid("prod-eu:casehub/inventory:deployment")
	h.SetDesired([]hub.NodeSpec{{ID: id, Namespace: "casehub", Name: "inventory", Kind: hub.KindDeployment,
		Application: "inventory", Policy: hub.PolicyRepair, Body: kubeobj.MustEncodeBody(deploymentObject("casehub", "inventory", "img:1", 2))}})
	h.ClusterChanged(hub.ClusterHealth{Cluster: "prod-eu", State: hub.ClusterSynced, Source: "config"})
	src := HubSource(h)

	if err := src.RepairNow(id); err != nil {
		t.Fatalf("RepairNow: %v", err)
	}
	if err := src.RepairNow(nid("prod-eu:casehub/nope:deployment")); !errors.Is(err, hub.ErrUnknownNode) {
		t.Fatalf("RepairNow(unknown) = %v, want ErrUnknownNode", err)
	}
	if err := src.PauseClusterNote("prod-eu", hub.SwitchNote{By: "mallory", Reason: "INC-1"}); err != nil {
		t.Fatal(err)
	}
	if err := src.SetApplicationPolicy("inventory", hub.PolicyWarn); err != nil {
		t.Fatal(err)
	}
	hold := hub.HoldTarget{Scope: hub.HoldNode, Name: id.String()}
	if hd, err := src.Hold(hold, 30*time.Minute, "incident 42"); err != nil || hd.Until != fixedNow.Add(30*time.Minute) {
		t.Fatalf("Hold = %+v, %v", hd, err)
	}
	if _, err := src.Hold(hold, 30*time.Minute, ""); err == nil {
		t.Error("a hold without a reason was placed")
	}
	app := hub.HoldTarget{Scope: hub.HoldApplication, Name: "inventory"}
	if _, err := src.Hold(app, time.Hour, "freeze"); err != nil {
		t.Fatal(err)
	}
	if err := src.ReleaseHold(app); err != nil {
		t.Fatal(err)
	}
	if err := src.ReleaseHold(app); err == nil {
		t.Error("releasing a released hold succeeded")
	}
	snap := h.Snapshot()
	if len(snap.Holds) != 1 || snap.Holds[0].Target != hold {
		t.Errorf("snapshot holds = %+v, want the node's", snap.Holds)
	}
	user := LocalUser()
	if c, _ := snap.Cluster("prod-eu"); !c.Paused || c.PausedBy != user || c.PauseReason != "INC-1" {
		t.Errorf("cluster %+v, want paused by %s (the local user, not the note's) with the reason", c, user)
	}
	if snap.Holds[0].By != user {
		t.Errorf("hold placed by %q, want %q", snap.Holds[0].By, user)
	}
	if snap.AppPolicies["inventory"] != hub.PolicyWarn {
		t.Error("warn-only override not set")
	}

	m := New(src, Options{NoColor: true, Now: fixedClock})
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 24})
	m.Update(snapshotMsg{snap: snap})
	press(t, m, "enter", "enter")
	out := m.View().Content
	for _, want := range []string{"hub-test", "1/1 cluster up", "prod-eu:casehub/inventory:deployment", "manual repair requested", "runtime override", "1 hold", "node prod-eu:casehub/inventory:deployment · 30m left · incident 42 · by " + user} {
		if !strings.Contains(out, want) {
			t.Errorf("screen lacks %q:\n%s", want, out)
		}
	}
}

func TestReadOnlyStatusBar(t *testing.T) {
	m, _ := newFixtureModel(t, 80, 24, Options{ReadOnly: true})
	out := m.View().Content
	if !strings.Contains(out, "mode repair READONLY") {
		t.Errorf("status bar lacks READONLY:\n%s", out)
	}
	if strings.Contains(out, "p pause") {
		t.Error("read-only hints list an action")
	}
}

package hub

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestShortCommit: the first 7 characters of a SHA, a shorter one as it
// is, a chart's version without its digest; RevisionNoun names which.
func TestShortCommit(t *testing.T) {
	chart := "4.11.2@sha256:" + strings.Repeat("ab", 32)
	for in, want := range map[string]string{"": "", "abc": "abc", "0123456789abcdef": "0123456", chart: "4.11.2"} {
		if got := ShortCommit(in); got != want {
			t.Errorf("ShortCommit(%q) = %q, want %q", in, got, want)
		}
	}
	if RevisionNoun(chart) != "version" || RevisionNoun("0123456789abcdef") != "commit" {
		t.Errorf("RevisionNoun: %q, %q", RevisionNoun(chart), RevisionNoun("0123456789abcdef"))
	}
	spec := &NodeSpec{Application: "ingress", Revision: chart + " chart ingress-nginx (app 1.11.2)"}
	if got := desiredChangeText(spec); got != "desired changed (ingress@4.11.2)" {
		t.Errorf("desiredChangeText: %q", got)
	}
	spec.Revision = "0123456789abcdef subject"
	if got := desiredChangeText(spec); got != "desired changed (ingress@0123456)" {
		t.Errorf("desiredChangeText: %q", got)
	}
	for who, want := range map[string]bool{"desired changed": true, "desired changed (ingress@4.11.2)": true, "kubectl-edit (Update) at 12:00:01": false, "desired changedx": false} {
		if got := (FeedEntry{Who: who}).DesiredChanged(); got != want {
			t.Errorf("DesiredChanged(%q) = %v", who, got)
		}
	}
	f := FieldDiff{Path: "spec.replicas", Desired: "3", Actual: "2"}
	if f.String() != "spec.replicas: 3 -> 2" || f.ChangeString() != "spec.replicas: 2 -> 3" {
		t.Errorf("a field as drift %q, as a change %q", f.String(), f.ChangeString())
	}
}

// OnStatus reports every status a pass changes, with the time LastChange
// shows, outside the store's lock, and nothing for a pass that finds the
// same status again.
func TestOnStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type call struct {
			id     NodeID
			st     Status
			at     time.Time
			locked bool
		}
		var mu sync.Mutex
		var calls []call
		var f *fixture
		b := newFake(true)
		f = start(t, b, Options{OnStatus: func(id NodeID, st Status, at time.Time) {
			// Another goroutine (the publisher, a worker) may hold the
			// store's lock for a moment: only a lock that never comes
			// free is held by the caller of this callback.
			locked := true
			for range 10000 {
				if f.h.store.mu.TryLock() {
					f.h.store.mu.Unlock()
					locked = false
					break
				}
				runtime.Gosched()
			}
			mu.Lock()
			calls = append(calls, call{id, st, at, locked})
			mu.Unlock()
		}})
		a := spec("c1", "a", "v1")
		f.h.SetDesired([]NodeSpec{a})
		f.ready("c1", 1, 1)
		synctest.Wait()
		mu.Lock()
		got := slices.Clone(calls)
		mu.Unlock()
		if len(got) == 0 || got[len(got)-1].st != StatusInSync {
			t.Fatalf("calls after the first sync: %+v, want the last one in sync", got)
		}
		for _, c := range got {
			if c.id != a.ID || c.locked {
				t.Errorf("call %+v: another NodeID, or made under the store's lock", c)
			}
		}
		if last := got[len(got)-1]; !last.at.Equal(f.node(a.ID).LastChange) {
			t.Errorf("reported at %v, LastChange %v", last.at, f.node(a.ID).LastChange)
		}

		n := len(got)
		f.h.EnqueueAll() // the same status found again
		synctest.Wait()
		mu.Lock()
		if len(calls) != n {
			t.Errorf("a pass that found the status unchanged reported %+v", calls[n:])
		}
		mu.Unlock()

		time.Sleep(time.Second)
		b.put(a.ID, func(o *fakeObject) { o.content = "edited" })
		synctest.Wait()
		mu.Lock()
		var sts []Status
		for _, c := range calls[n:] {
			sts = append(sts, c.st)
		}
		mu.Unlock()
		if len(sts) < 2 || sts[0] == StatusInSync || sts[0] == StatusRepaired || sts[len(sts)-1] != f.node(a.ID).Status {
			t.Errorf("statuses after an edit: %v (now %s), want the drift and then the repair", sts, f.node(a.ID).Status)
		}
	})
}

// TestSnapshotNodeView: a node's view holds it, its cluster, the holds
// that cover it (on it, its application, its cluster; no other) and its
// application's override alone.
func TestSnapshotNodeView(t *testing.T) {
	a := NewNodeID("c1", "ns", "a", KindConfigMap)
	b := NewNodeID("c2", "ns", "b", KindConfigMap)
	hold := func(scope HoldScope, name string) Hold {
		return Hold{Target: HoldTarget{Scope: scope, Name: name}, Reason: name}
	}
	s := &Snapshot{HubID: "h", Seq: 3,
		Clusters:    []ClusterStatus{{ClusterHealth: ClusterHealth{Cluster: "c1"}, Paused: true, PausedBy: "alice"}, {ClusterHealth: ClusterHealth{Cluster: "c2"}}},
		Nodes:       []NodeStatus{{ID: a, Application: "app"}, {ID: b, Application: "other"}},
		AppPolicies: map[string]Policy{"app": PolicyWarn, "other": PolicyRepair},
		Holds: []Hold{hold(HoldApplication, "app"), hold(HoldApplication, "other"), hold(HoldCluster, "c1"), hold(HoldCluster, "c2"),
			hold(HoldNode, a.String()), hold(HoldNode, b.String())},
	}
	v, ok := s.NodeView(a)
	if !ok || v.HubID != "h" || v.Seq != 3 || len(v.Nodes) != 1 || v.Nodes[0].ID != a ||
		len(v.Clusters) != 1 || v.Clusters[0].PausedBy != "alice" || len(v.AppPolicies) != 1 || v.AppPolicies["app"] != PolicyWarn {
		t.Fatalf("view of %s = %+v, %v", a, v, ok)
	}
	var reasons []string
	for _, hd := range v.Holds {
		reasons = append(reasons, hd.Reason)
	}
	if want := []string{"app", "c1", a.String()}; !slices.Equal(reasons, want) {
		t.Errorf("holds of the view = %q, want %q", reasons, want)
	}
	if _, ok := s.NodeView(NewNodeID("c1", "ns", "nope", KindConfigMap)); ok {
		t.Error("a view of a NodeID the snapshot does not have")
	}
}

package apiv1

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/hub"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)

func nid(cluster, name string, kind hub.Kind) hub.NodeID {
	return hub.NewNodeID(cluster, "ns", name, kind)
}

// richSnapshot has every field of every type set, so a field the wire
// format drops shows in the round trip.
func richSnapshot() *hub.Snapshot {
	web := nid("c1", "web", hub.KindDeployment)
	diffs := []hub.FieldDiff{
		{Path: "spec.replicas", Desired: "3", Actual: "1"},
		{Path: "spec.template.spec.containers[app].env[X]", Desired: "<none>", Actual: "{name: X, value: 1}", Added: true, Pointer: "/spec/template/spec/containers/0/env/1"},
	}
	rep := &hub.Repair{
		ID: web, Drift: hub.Drift{Class: hub.DriftModified, Fields: diffs},
		Attribution: &hub.Attribution{Manager: "kubectl-edit", Operation: "Update", At: t0, Fields: []string{"spec.replicas"}},
		Action:      "apply", Err: "boom",
		ObservedAt: t0, ClassifiedAt: t0.Add(time.Millisecond), AppliedAt: t0.Add(2 * time.Millisecond), VerifiedAt: t0.Add(3 * time.Millisecond),
	}
	return &hub.Snapshot{
		HubID: "hub-1", Seq: 42, Taken: t0, Policy: hub.PolicyRepair,
		Clusters: []hub.ClusterStatus{{
			ClusterHealth: hub.ClusterHealth{Cluster: "c1", State: hub.ClusterDegraded, LastError: "watch: too many requests",
				Since: t0, Source: "capi:mgmt/default", Phase: "Provisioned", Detection: "poll 15s", EventsPerSecond: 1.5, LastEvent: t0, Generation: 3},
			Paused: true, PausedAt: t0, PausedBy: "alice", PauseReason: "INC-4211",
			Objects: 2, Counts: map[hub.Status]int{hub.StatusDrifted: 1, hub.StatusInSync: 1},
			MedianRepair: 1234567 * time.Nanosecond,
		}},
		Nodes: []hub.NodeStatus{
			{ID: web, Application: "web", Kind: hub.KindDeployment, Policy: hub.PolicyWarn, Status: hub.StatusDrifted,
				Reason: "fight", LastRepair: rep,
				Timeline: []hub.TimelineEntry{{At: t0, Step: hub.StepObserved, Repeats: 4, Last: 80 * time.Millisecond},
					{At: t0, Step: hub.StepClassified, Detail: rep.Drift.Summary(), Repeats: 4, Last: 81 * time.Millisecond}},
				ReadyReplicas: 1, DesiredReplicas: 3, LastChange: t0, Repairs: 7,
				Diagnosis: []string{"pod web-5d8f-x2v: not scheduled: Unschedulable: 0/3 nodes are available"}},
			{ID: nid("c1", "web", hub.KindService), Application: "web", Kind: hub.KindService, Policy: hub.PolicyRepair,
				Status: hub.StatusInSync, Timeline: []hub.TimelineEntry{{At: t0, Step: hub.StepCreated}}, LastChange: t0},
		},
		Feed: []hub.FeedEntry{{At: t0, ID: web, Class: hub.DriftModified, Fields: diffs, Who: "kubectl-edit", Action: "apply", Latency: 12 * time.Millisecond, Err: "e",
			Count: 3, First: t0.Add(-2 * time.Second)}},
		AppPolicies:    map[string]hub.Policy{"web": hub.PolicyWarn},
		AppPolicyNotes: map[string]hub.OverrideNote{"web": {At: t0, By: "dave", Reason: "DB migration"}},
		QueueDepth:     4,
		Holds: []hub.Hold{{Target: hub.HoldTarget{Scope: hub.HoldCluster, Name: "c1"}, Reason: "maintenance", By: "alice",
			Since: t0, Until: t0.Add(time.Hour)}},
	}
}

// viaJSON marshals v and unmarshals it into a new T.
func viaJSON[T any](t *testing.T, v any) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return out
}

func TestSnapshotRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		snap *hub.Snapshot
	}{
		{"every field", richSnapshot()},
		{"empty", &hub.Snapshot{HubID: "h", Seq: 1, AppPolicies: map[string]hub.Policy{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wire := viaJSON[Snapshot](t, FromSnapshot(tc.snap))
			got, err := wire.ToHub()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.snap) {
				t.Fatalf("round trip differs:\n got %+v\nwant %+v", got, tc.snap)
			}
		})
	}
}

func TestWireJSONShape(t *testing.T) {
	b, err := json.Marshal(FromSnapshot(&hub.Snapshot{HubID: "h", Seq: 1}))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["apiVersion"] != APIVersion || m["hubId"] != "h" {
		t.Fatalf("apiVersion/hubId = %v/%v in %s", m["apiVersion"], m["hubId"], b)
	}
	for _, k := range []string{"clusters", "nodes", "feed", "holds"} {
		if l, ok := m[k].([]any); !ok || len(l) != 0 {
			t.Errorf("%s = %#v, want an empty list", k, m[k])
		}
	}
	b, _ = json.Marshal(FromCluster(hub.ClusterStatus{MedianRepair: 1500 * time.Millisecond}))
	if !strings.Contains(string(b), `"medianRepair":"1.5s"`) || strings.Contains(string(b), `"since"`) {
		t.Fatalf("cluster = %s, want a duration string and no zero time", b)
	}
	var d Duration
	if err := json.Unmarshal([]byte(`"soon"`), &d); err == nil {
		t.Fatal("a bad duration decoded")
	}
}

// TestTimelineRepeatsOnTheWire: a timeline entry that happened once has
// neither repeats nor lastAt; a folded one has both.
func TestTimelineRepeatsOnTheWire(t *testing.T) {
	n := FromNode(hub.NodeStatus{ID: nid("c1", "web", hub.KindDeployment), Timeline: []hub.TimelineEntry{
		{At: t0, Step: hub.StepCreated, Detail: "first apply"},
		{At: t0, Step: hub.StepClassified, Detail: "modified spec.replicas: 2 -> 4", Repeats: 3, Last: time.Second},
	}})
	b, err := json.Marshal(n.Timeline)
	if err != nil {
		t.Fatal(err)
	}
	var entries []map[string]any
	if err := json.Unmarshal(b, &entries); err != nil {
		t.Fatal(err)
	}
	if _, ok := entries[0]["repeats"]; ok {
		t.Errorf("an entry that happened once has repeats: %s", b)
	}
	if _, ok := entries[0]["lastAt"]; ok {
		t.Errorf("an entry that happened once has lastAt: %s", b)
	}
	if entries[1]["repeats"] != 3.0 || entries[1]["lastAt"] != t0.Add(time.Second).Format(time.RFC3339Nano) {
		t.Errorf("a folded entry has repeats %v, lastAt %v: %s", entries[1]["repeats"], entries[1]["lastAt"], b)
	}
}

func TestOtherDocumentsRoundTrip(t *testing.T) {
	s := richSnapshot()
	hl := viaJSON[HoldList](t, NewHoldList(s.Holds))
	if got, err := hl.ToHub(); err != nil || !reflect.DeepEqual(got, s.Holds) {
		t.Fatalf("hold list = %+v, %v", got, err)
	}
	hd := viaJSON[HoldDocument](t, NewHoldDocument(s.Holds[0]))
	if got, err := hd.ToHub(); err != nil || got != s.Holds[0] {
		t.Fatalf("hold = %+v, %v", got, err)
	}
	if _, err := (HoldList{APIVersion: "driftwatch.io/v0"}).ToHub(); err == nil {
		t.Fatal("a hold list of another version decoded")
	}

	n := s.Nodes[0]
	n.Spec = &hub.NodeSpec{ID: n.ID, Body: kubeobj.MustEncodeBody(&unstructured.Unstructured{Object: map[string]any{"kind": "Deployment", "spec": map[string]any{"replicas": int64(3)}}})}
	nd := viaJSON[NodeDetail](t, NewNodeDetail(n))
	got, err := nd.Status.ToHub()
	n.Spec = nil
	if err != nil || !reflect.DeepEqual(got, n) || nd.APIVersion != APIVersion {
		t.Fatalf("node detail status = %+v, %v", got, err)
	}
	if nd.Desired["kind"] != "Deployment" || nd.Desired["spec"].(map[string]any)["replicas"] != float64(3) {
		t.Fatalf("desired = %v", nd.Desired)
	}
}

func TestToHubRejects(t *testing.T) {
	for name, s := range map[string]Snapshot{
		"version":       {Header: Header{APIVersion: "v2"}},
		"node id":       {Header: Header{APIVersion: APIVersion}, Nodes: []Node{{ID: "nope"}}},
		"repair id":     {Header: Header{APIVersion: APIVersion}, Nodes: []Node{{ID: "c:r:k", LastRepair: &Repair{ID: "x"}}}},
		"feed entry id": {Header: Header{APIVersion: APIVersion}, Feed: []FeedEntry{{ID: "x"}}},
	} {
		if _, err := s.ToHub(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// next returns a copy of s with a new Seq, for building the next
// snapshot of a test the way the hub does (unchanged NodeStatus values
// shared, changed ones replaced).
func next(s *hub.Snapshot, f func(n *hub.Snapshot)) *hub.Snapshot {
	n := *s
	n.Seq++
	n.Taken = n.Taken.Add(time.Second)
	n.Clusters = append([]hub.ClusterStatus(nil), s.Clusters...)
	n.Nodes = append([]hub.NodeStatus(nil), s.Nodes...)
	n.Feed = append([]hub.FeedEntry(nil), s.Feed...)
	f(&n)
	return &n
}

func feedEntry(i int) hub.FeedEntry {
	return hub.FeedEntry{At: t0.Add(time.Duration(i) * time.Second), ID: nid("c1", fmt.Sprint("n", i), hub.KindConfigMap), Class: hub.DriftMissing, Action: "apply"}
}

// pushFeed adds entries newest first, keeping at most max.
func pushFeed(feed []hub.FeedEntry, max int, es ...hub.FeedEntry) []hub.FeedEntry {
	for _, e := range es {
		feed = append([]hub.FeedEntry{e}, feed...)
	}
	return feed[:min(len(feed), max)]
}

// repeated returns e repeated n times, the last 10 s after e, as the
// hub's feed folds repeats.
func repeated(e hub.FeedEntry, n int) hub.FeedEntry {
	e.First, e.At, e.Count = e.At, e.At.Add(10*time.Second), n
	return e
}

func TestDiffApply(t *testing.T) {
	base := richSnapshot()
	base.Feed = pushFeed(nil, 5, feedEntry(1), feedEntry(2), feedEntry(3))
	full := next(base, func(n *hub.Snapshot) {
		n.Feed = pushFeed(nil, 5, feedEntry(1), feedEntry(2), feedEntry(3), feedEntry(4), feedEntry(5))
	})
	cases := []struct {
		name string
		next *hub.Snapshot
		// changed and removed NodeIDs, changed and removed clusters, new
		// feed entries the delta must carry, and the old feed entries it
		// drops.
		nodes, removedNodes, clusters, removedClusters, feed int
		dropped                                              []int
		// from is the snapshot the delta starts at; nil: base.
		from *hub.Snapshot
	}{
		{name: "nothing changed", next: next(base, func(*hub.Snapshot) {})},
		{name: "status changed", nodes: 1, next: next(base, func(n *hub.Snapshot) {
			n.Nodes[1].Status = hub.StatusDrifted
		})},
		{name: "timeline replaced", nodes: 1, next: next(base, func(n *hub.Snapshot) {
			n.Nodes[0].Timeline = append(append([]hub.TimelineEntry(nil), n.Nodes[0].Timeline...), hub.TimelineEntry{At: t0, Step: hub.StepApplied})
		})},
		{name: "diagnosis said", nodes: 1, next: next(base, func(n *hub.Snapshot) {
			n.Nodes[0].Diagnosis = []string{"pod web-1: container app ImagePullBackOff"}
		})},
		{name: "contest changed alone", nodes: 1, next: next(base, func(n *hub.Snapshot) {
			n.Nodes[0].Contested = &hub.Contest{Manager: "hpa", Undone: 3}
		})},
		{name: "timeline repeat folded", nodes: 1, next: next(base, func(n *hub.Snapshot) {
			tl := slices.Clone(n.Nodes[0].Timeline)
			for i := range tl {
				tl[i].Repeats++
				tl[i].Last = time.Second
			}
			n.Nodes[0].Timeline = tl
		})},
		{name: "node added in the middle and at the end", nodes: 2, next: next(base, func(n *hub.Snapshot) {
			n.Nodes = append(n.Nodes, hub.NodeStatus{ID: nid("c2", "a", hub.KindService), Status: hub.StatusUnknown})
			n.Nodes = append([]hub.NodeStatus{{ID: nid("c1", "a", hub.KindService), Status: hub.StatusUnknown}}, n.Nodes...)
		})},
		{name: "node removed", removedNodes: 1, next: next(base, func(n *hub.Snapshot) { n.Nodes = n.Nodes[1:] })},
		{name: "every node removed", removedNodes: 2, next: next(base, func(n *hub.Snapshot) { n.Nodes = []hub.NodeStatus{} })},
		{name: "cluster changed, one added", clusters: 2, next: next(base, func(n *hub.Snapshot) {
			n.Clusters[0].Counts = map[hub.Status]int{hub.StatusInSync: 2}
			n.Clusters = append([]hub.ClusterStatus{{ClusterHealth: hub.ClusterHealth{Cluster: "c0", State: hub.ClusterSynced}, Counts: map[hub.Status]int{}}}, n.Clusters...)
		})},
		{name: "detection changed alone", clusters: 1, next: next(base, func(n *hub.Snapshot) {
			n.Clusters[0].Detection = "poll 1m0s"
		})},
		{name: "cluster removed", removedClusters: 1, next: next(base, func(n *hub.Snapshot) { n.Clusters = nil })},
		{name: "two new feed entries", feed: 2, next: next(base, func(n *hub.Snapshot) {
			n.Feed = pushFeed(n.Feed, 5, feedEntry(4), feedEntry(5))
		})},
		{name: "new feed entries push old ones out", feed: 3, next: next(base, func(n *hub.Snapshot) {
			n.Feed = pushFeed(n.Feed, 5, feedEntry(4), feedEntry(5), feedEntry(6))
		})},
		{name: "more new feed entries than the feed holds", feed: 5, next: next(base, func(n *hub.Snapshot) {
			n.Feed = pushFeed(n.Feed, 5, feedEntry(4), feedEntry(5), feedEntry(6), feedEntry(7), feedEntry(8), feedEntry(9))
		})},
		{name: "feed replaced", feed: 1, next: next(base, func(n *hub.Snapshot) { n.Feed = []hub.FeedEntry{feedEntry(9)} })},
		{name: "the newest entry repeated", feed: 1, dropped: []int{0}, next: next(base, func(n *hub.Snapshot) {
			n.Feed = pushFeed(n.Feed[1:], 5, repeated(n.Feed[0], 2))
		})},
		{name: "an older entry repeated, and a new one", feed: 2, dropped: []int{1}, next: next(base, func(n *hub.Snapshot) {
			e3, e2, e1 := n.Feed[0], n.Feed[1], n.Feed[2]
			n.Feed = pushFeed([]hub.FeedEntry{e3, e1}, 5, repeated(e2, 4), feedEntry(4))
		})},
		// The repeat of e2 needs no drop: e2 is past the new feed's end.
		{name: "two entries repeated in a full feed", feed: 3, dropped: []int{0}, from: full, next: next(full, func(n *hub.Snapshot) {
			e5, e4, e3, e2, e1 := n.Feed[0], n.Feed[1], n.Feed[2], n.Feed[3], n.Feed[4]
			n.Feed = pushFeed([]hub.FeedEntry{e4, e3, e1}, 5, repeated(e2, 2), repeated(e5, 3), feedEntry(9))
		})},
		{name: "two entries repeated from the middle", feed: 2, dropped: []int{1, 3}, from: full, next: next(full, func(n *hub.Snapshot) {
			e5, e4, e3, e2, e1 := n.Feed[0], n.Feed[1], n.Feed[2], n.Feed[3], n.Feed[4]
			n.Feed = pushFeed([]hub.FeedEntry{e5, e3, e1}, 5, repeated(e2, 2), repeated(e4, 3))
		})},
		{name: "header and holds changed", next: next(base, func(n *hub.Snapshot) {
			n.QueueDepth, n.Policy, n.Holds = 9, hub.PolicyWarn, nil
			n.AppPolicies = map[string]hub.Policy{"db": hub.PolicyRepair}
		})},
		{name: "repair replaced", nodes: 1, next: next(base, func(n *hub.Snapshot) {
			r := *n.Nodes[0].LastRepair
			r.Err = ""
			n.Nodes[0].LastRepair = &r
		})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := base
			if tc.from != nil {
				base = tc.from
			}
			d := viaJSON[Delta](t, Diff(base, tc.next))
			if d.Since != base.Seq || d.Seq != tc.next.Seq {
				t.Fatalf("since/seq = %d/%d", d.Since, d.Seq)
			}
			if got := [5]int{len(d.Nodes), len(d.RemovedNodes), len(d.Clusters), len(d.RemovedClusters), len(d.Feed)}; got != [5]int{tc.nodes, tc.removedNodes, tc.clusters, tc.removedClusters, tc.feed} {
				t.Fatalf("delta carries nodes/removed/clusters/removed/feed %v, want %v", got, [5]int{tc.nodes, tc.removedNodes, tc.clusters, tc.removedClusters, tc.feed})
			}
			if !slices.Equal(d.FeedDropped, tc.dropped) {
				t.Fatalf("delta drops feed entries %v, want %v", d.FeedDropped, tc.dropped)
			}
			// The client holds the wire form of base; applying the delta
			// must give the wire form of next.
			pw := viaJSON[Snapshot](t, FromSnapshot(base))
			prev, err := pw.ToHub()
			if err != nil {
				t.Fatal(err)
			}
			got, err := d.Apply(prev)
			if err != nil {
				t.Fatal(err)
			}
			ww := viaJSON[Snapshot](t, FromSnapshot(tc.next))
			want, err := ww.ToHub()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("applied delta differs:\n got %+v\nwant %+v", got, want)
			}
			if _, err := d.Apply(want); !errors.Is(err, ErrDeltaMismatch) {
				t.Fatalf("applying to the wrong snapshot: %v, want ErrDeltaMismatch", err)
			}
		})
	}
}

// TestApplyRejectsBadFeedDrops: a delta dropping feed entries the
// snapshot does not have, or one twice, does not apply to it.
func TestApplyRejectsBadFeedDrops(t *testing.T) {
	prev := richSnapshot()
	prev.Feed = pushFeed(nil, 5, feedEntry(1), feedEntry(2), feedEntry(3))
	for _, dropped := range [][]int{{3}, {-1}, {1, 1}, {2, 0}} {
		d := Diff(prev, next(prev, func(*hub.Snapshot) {}))
		d.FeedDropped = dropped
		if _, err := d.Apply(prev); !errors.Is(err, ErrDeltaMismatch) {
			t.Errorf("dropping %v of 3 entries: %v, want ErrDeltaMismatch", dropped, err)
		}
	}
}

// TestApplyHostileDelta: a hub's delta is not trusted by attach. One that
// removes more NodeIDs than the snapshot holds, or claims a feed of any
// length, applies without a panic or an allocation of that size: the
// removals of unknown NodeIDs change nothing, the feed holds what it has.
func TestApplyHostileDelta(t *testing.T) {
	prev := richSnapshot()
	d := Diff(prev, next(prev, func(*hub.Snapshot) {}))
	for i := range 5 {
		d.RemovedNodes = append(d.RemovedNodes, nid("c9", fmt.Sprintf("gone-%d", i), hub.KindDeployment).String())
	}
	d.FeedLength = math.MaxInt
	got, err := d.Apply(prev)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Nodes) != len(prev.Nodes) || len(got.Feed) != len(prev.Feed) || cap(got.Feed) > len(prev.Feed) {
		t.Errorf("nodes %d (had %d), feed %d cap %d (had %d)", len(got.Nodes), len(prev.Nodes), len(got.Feed), cap(got.Feed), len(prev.Feed))
	}
}

func TestCompareIDText(t *testing.T) {
	parts := []string{"", "a", "a-b", "a:b", "b", "ns/a", "ns/a-b", "z"}
	r := rand.New(rand.NewPCG(1, 2))
	pick := func() string { return parts[r.IntN(len(parts))] }
	for range 5000 {
		a := hub.NodeID{Cluster: pick(), Resource: pick(), Kind: hub.Kind(pick())}
		b := hub.NodeID{Cluster: pick(), Resource: pick(), Kind: hub.Kind(pick())}
		if got, want := compareIDText(a, b), strings.Compare(a.String(), b.String()); got != want {
			t.Fatalf("compareIDText(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
}

// FuzzWatchDocuments: whatever a hub sends as a watch event's data (attach
// trusts no hub), decoding it as a snapshot or as a delta and applying the
// delta to a snapshot never panics.
func FuzzWatchDocuments(f *testing.F) {
	prev := richSnapshot()
	prev.Feed = pushFeed(nil, 5, feedEntry(1), feedEntry(2), feedEntry(3))
	for _, n := range []*hub.Snapshot{
		next(prev, func(*hub.Snapshot) {}),
		next(prev, func(n *hub.Snapshot) { n.Nodes = n.Nodes[1:]; n.Clusters = nil }),
		next(prev, func(n *hub.Snapshot) { n.Feed = pushFeed(n.Feed, 5, feedEntry(4), feedEntry(5), feedEntry(6)) }),
	} {
		data, err := json.Marshal(Diff(prev, n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	snap, err := json.Marshal(FromSnapshot(prev))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(snap)
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Snapshot
		if json.Unmarshal(data, &s) == nil {
			_, _ = s.ToHub()
		}
		var d Delta
		if json.Unmarshal(data, &d) == nil {
			d.Since = prev.Seq // reach past the sequence check
			_, _ = d.Apply(prev)
		}
	})
}

// TestNodeDetailRoundTrip: a node document converts back to the status
// with its desired object as Spec (the object, application, policy and
// revision), one without a desired object to a status without Spec, and
// one of another API version is refused.
func TestNodeDetailRoundTrip(t *testing.T) {
	id := hub.NewNodeID("c1", "ns", "settings", hub.KindConfigMap)
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "ns"}, "data": map[string]any{"A": "b"}}}
	n := hub.NodeStatus{ID: id, Application: "web", Kind: hub.KindConfigMap, Policy: hub.PolicyWarn, Status: hub.StatusInSync, Revision: "abc1234 release",
		Spec: &hub.NodeSpec{ID: id, Namespace: "ns", Name: "settings", Kind: hub.KindConfigMap, Body: kubeobj.MustEncodeBody(u)}}
	b, err := json.Marshal(NewNodeDetail(n))
	if err != nil {
		t.Fatal(err)
	}
	var d NodeDetail
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	got, err := d.ToHub()
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != id || got.Spec == nil || got.Spec.Application != "web" || got.Spec.Policy != hub.PolicyWarn || got.Spec.Revision != "abc1234 release" ||
		got.Spec.Namespace != "ns" || got.Spec.Name != "settings" || got.Spec.Kind != hub.KindConfigMap {
		t.Fatalf("status %+v, spec %+v", got, got.Spec)
	}
	obj, err := kubeobj.Object(*got.Spec)
	if err != nil || obj.Object["data"].(map[string]any)["A"] != "b" {
		t.Errorf("desired object %v, %v", obj, err)
	}
	// A view: the node with its cluster, the holds covering it and its
	// application's override, as the hub's snapshot gives them.
	snap := richSnapshot()
	web := snap.Nodes[0].ID
	want, ok := snap.NodeView(web)
	if !ok {
		t.Fatalf("no view of %s", web)
	}
	vd := viaJSON[NodeDetail](t, NewNodeView(want))
	view, complete, err := vd.View()
	if err != nil || !complete {
		t.Fatalf("View = %v, %v", complete, err)
	}
	view.HubID, view.Seq, view.Taken, view.Policy = want.HubID, want.Seq, want.Taken, want.Policy // not in a node's detail
	if !reflect.DeepEqual(view.Clusters, want.Clusters) || !reflect.DeepEqual(view.Holds, want.Holds) || len(want.Holds) == 0 ||
		!reflect.DeepEqual(view.AppPolicies, want.AppPolicies) || len(view.Nodes) != 1 || view.Nodes[0].ID != web {
		t.Errorf("view round trip:\n got %+v\nwant %+v", view, want)
	}
	if _, complete, err := d.View(); err != nil || complete {
		t.Errorf("a detail without its cluster: complete %v, %v; want false", complete, err)
	}

	d.Desired = nil
	if got, err := d.ToHub(); err != nil || got.Spec != nil {
		t.Errorf("without a desired object: %+v, %v", got.Spec, err)
	}
	d.APIVersion = "driftwatch.io/v0"
	if _, err := d.ToHub(); err == nil {
		t.Error("another API version accepted")
	}
}

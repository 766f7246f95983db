package bench

import (
	"errors"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/driftgen"
)

func testTargets(clusters, perCluster int) []Target {
	var ts []Target
	kinds := hub.Kinds()
	for c := range clusters {
		for i := range perCluster {
			ts = append(ts, Target{ID: hub.NewNodeID(fmt.Sprintf("c%d", c+1), "bench", fmt.Sprintf("a%05d", i/3), kinds[i%3])})
		}
	}
	return ts
}

func TestPlanDeterministicRoundRobin(t *testing.T) {
	ts := testTargets(3, 30)
	a := Plan(ts, 120, 20, 7)
	// The order of the targets must not matter.
	rev := append([]Target(nil), ts...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	b := Plan(rev, 120, 20, 7)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same targets and seed gave different plans")
	}
	c := Plan(ts, 120, 20, 8)
	if reflect.DeepEqual(a, c) {
		t.Fatal("another seed gave the same plan")
	}
	if Fingerprint(a) != Fingerprint(b) || Fingerprint(a) == Fingerprint(c) {
		t.Fatal("fingerprints do not follow the plans")
	}
	seen := map[string]map[hub.NodeID]bool{}
	for j, s := range a {
		want := fmt.Sprintf("c%d", j%3+1)
		if s.Target.ID.Cluster != want {
			t.Fatalf("step %d on %s, want %s", j, s.Target.ID.Cluster, want)
		}
		if wantOff := time.Duration(j/3) * 50 * time.Millisecond; s.Offset != wantOff {
			t.Fatalf("step %d at %v, want %v", j, s.Offset, wantOff)
		}
		if s.Seq != j {
			t.Fatalf("step %d has Seq %d", j, s.Seq)
		}
		acts := Actions(s.Target.ID.Kind)
		ok := false
		for _, act := range acts {
			ok = ok || act == s.Action
		}
		if !ok {
			t.Fatalf("step %d: action %s for a %s", j, s.Action, s.Target.ID.Kind)
		}
		// No object drifts twice before every object of its cluster did.
		m := seen[want]
		if m == nil || len(m) == 30 {
			m = map[hub.NodeID]bool{}
			seen[want] = m
		}
		if m[s.Target.ID] {
			t.Fatalf("step %d: %s drifts twice within one pass", j, s.Target.ID)
		}
		m[s.Target.ID] = true
	}
}

func TestBurstPlan(t *testing.T) {
	ts := testTargets(2, 30)
	steps := BurstPlan(ts, "c2", 20, 1)
	if len(steps) != 20 {
		t.Fatalf("got %d steps, want 20", len(steps))
	}
	seen := map[hub.NodeID]bool{}
	for _, s := range steps {
		if s.Target.ID.Cluster != "c2" || s.Action != driftgen.ActionDelete || s.Offset != 0 || seen[s.Target.ID] {
			t.Fatalf("bad burst step %+v", s)
		}
		seen[s.Target.ID] = true
	}
	if !reflect.DeepEqual(steps, BurstPlan(ts, "c2", 20, 1)) {
		t.Fatal("burst plan is not deterministic")
	}
	if n := len(BurstPlan(ts, "c1", 100, 1)); n != 30 {
		t.Fatalf("a burst larger than the cluster: %d steps, want 30", n)
	}
}

// TestOthersPlan: the burst's other clusters drift at the rate each for
// the window (at least once each), never on the burst's cluster, the same
// way every time; with no other cluster there is nothing.
func TestOthersPlan(t *testing.T) {
	ts := testTargets(3, 30)
	steps := OthersPlan(ts, "c1", 20, 1500*time.Millisecond, 1)
	if len(steps) != 60 {
		t.Fatalf("got %d steps, want 30 on each of c2 and c3", len(steps))
	}
	per := map[string]int{}
	var last time.Duration
	for _, s := range steps {
		if s.Target.ID.Cluster == "c1" {
			t.Fatalf("a step on the burst's cluster: %+v", s)
		}
		per[s.Target.ID.Cluster]++
		last = max(last, s.Offset)
	}
	if per["c2"] != 30 || per["c3"] != 30 {
		t.Errorf("steps per cluster %v, want 30 each", per)
	}
	if want := 29 * time.Second / 20; last != want {
		t.Errorf("last step due at %s, want %s (20/s over the window)", last, want)
	}
	if !reflect.DeepEqual(steps, OthersPlan(ts, "c1", 20, 1500*time.Millisecond, 1)) {
		t.Fatal("the others' plan is not deterministic")
	}
	if n := len(OthersPlan(ts, "c1", 20, time.Millisecond, 1)); n != 2 {
		t.Errorf("a window too short for one drift: %d steps, want one on each other cluster", n)
	}
	if steps := OthersPlan(testTargets(1, 30), "c1", 20, time.Second, 1); steps != nil {
		t.Errorf("one cluster: %d steps, want none", len(steps))
	}
}

// TestSplitOthers: the other clusters' samples are reported apart from the
// burst's, counted and summarized on their own.
func TestSplitOthers(t *testing.T) {
	ts := testTargets(3, 4)
	t0 := time.Unix(1000, 0)
	sample := func(tg Target, repairAfter time.Duration, err error) Sample {
		s := Sample{Step: Step{Target: tg}, Start: t0, Err: err, Floor: t0.Add(time.Millisecond), Detect: t0.Add(2 * time.Millisecond)}
		if repairAfter > 0 {
			s.Repair = t0.Add(repairAfter)
		}
		return s
	}
	var samples []Sample
	var others []Step
	for _, tg := range ts {
		switch tg.ID.Cluster {
		case "c1":
			samples = append(samples, sample(tg, time.Second, nil))
		default:
			others = append(others, Step{Target: tg})
			samples = append(samples, sample(tg, 10*time.Millisecond, nil))
		}
	}
	samples[len(samples)-1].Err, samples[len(samples)-1].Repair = errors.New("drift failed"), time.Time{}
	own, side := splitOthers(samples, others)
	if len(own) != 4 || len(side) != 8 {
		t.Fatalf("split %d own and %d others, want 4 and 8", len(own), len(side))
	}
	for _, s := range own {
		if s.Target.ID.Cluster != "c1" {
			t.Errorf("own sample of %s", s.Target.ID)
		}
	}
	o := othersOf(side)
	if !reflect.DeepEqual(o.Clusters, []string{"c2", "c3"}) || o.Drifts != 8 || o.Repaired != 7 || o.Failed != 1 {
		t.Errorf("others %+v, want c2 and c3, 8 drifts, 7 repaired, 1 failed", o)
	}
	if o.Repair.N != 7 || o.Repair.P99.dur() != 10*time.Millisecond || o.Floor.P50.dur() != time.Millisecond {
		t.Errorf("others' latencies: repair %+v, floor %+v", o.Repair, o.Floor)
	}
	if own, side := splitOthers(samples, nil); len(own) != len(samples) || side != nil {
		t.Errorf("without others: %d own, %d others", len(own), len(side))
	}
}

func TestSummarize(t *testing.T) {
	if got := Summarize(nil); got != (Percentiles{}) {
		t.Fatalf("empty: %+v", got)
	}
	var ds []time.Duration
	for i := 200; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	got := Summarize(ds)
	want := Percentiles{N: 200, P50: 100 * time.Millisecond, P95: 190 * time.Millisecond, P99: 198 * time.Millisecond, Max: 200 * time.Millisecond}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if ds[0] != 200*time.Millisecond {
		t.Fatal("Summarize sorted its input")
	}
	if got := Summarize([]time.Duration{5}); got.P50 != 5 || got.P99 != 5 || got.Max != 5 {
		t.Fatalf("one value: %+v", got)
	}
}

func deployment(name string, replicas int32, labelled bool) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	if labelled {
		labels[kubeobj.ManagedByLabel] = kubeobj.DefaultManagedBy
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "bench", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "img:1"}}}},
		},
	}
}

func desiredDeployment(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": "bench", "labels": map[string]any{"app": name, kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy}},
		"spec": map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "app", "image": "img:1"}},
		}}},
	}}
}

func TestTrackerPairsEventsAndRecords(t *testing.T) {
	id := hub.NewNodeID("c1", "bench", "a00001", hub.KindDeployment)
	other := hub.NewNodeID("c1", "bench", "a00002", hub.KindDeployment)
	tr := NewTracker(2, "")
	s := tr.Begin(Step{Target: Target{ID: id, Desired: desiredDeployment("a00001")}, Action: driftgen.ActionScale})
	failed := tr.Begin(Step{Target: Target{ID: other, Desired: desiredDeployment("a00002")}, Action: driftgen.ActionDelete})
	tr.Fail(failed, errors.New("boom"))

	at := s.Start
	// An unrelated object and an event from before the drift are ignored.
	tr.Event("c1", hub.KindDeployment, watch.Event{Type: watch.Modified, Object: deployment("zzz", 0, true)}, at.Add(time.Millisecond))
	tr.Event("c1", hub.KindDeployment, watch.Event{Type: watch.Modified, Object: deployment("a00001", 0, true)}, at.Add(-time.Millisecond))
	// The drift, the hub's records, an event still drifted, the repair.
	tr.Event("c1", hub.KindDeployment, watch.Event{Type: watch.Modified, Object: deployment("a00001", 0, true)}, at.Add(2*time.Millisecond))
	tr.Record(hub.Repair{ID: id, ClassifiedAt: at.Add(-time.Second)}) // an older record
	tr.Record(hub.Repair{ID: id, ClassifiedAt: at.Add(3 * time.Millisecond)})
	tr.Event("c1", hub.KindDeployment, watch.Event{Type: watch.Modified, Object: deployment("a00001", 2, false)}, at.Add(4*time.Millisecond))
	select {
	case <-tr.Done():
		t.Fatal("done before the repair")
	default:
	}
	// The repaired object, with the managedFields the apiserver keeps:
	// compared without them, and handed back with them.
	repaired := deployment("a00001", 2, true)
	repaired.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "driftwatch", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:replicas":{}}}`)},
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{"f:x":{}}}}`)},
	}
	tr.Event("c1", hub.KindDeployment, watch.Event{Type: watch.Modified, Object: repaired}, at.Add(5*time.Millisecond))
	if len(repaired.ManagedFields) != 2 {
		t.Errorf("the event's object lost its managedFields: %+v", repaired.ManagedFields)
	}
	tr.Record(hub.Repair{ID: id, ClassifiedAt: at.Add(3 * time.Millisecond), AppliedAt: at.Add(6 * time.Millisecond)})
	select {
	case <-tr.Done():
	default:
		t.Fatal("not done after the repair and the failure")
	}
	got := tr.Samples()
	if len(got) != 2 || got[1].Err == nil {
		t.Fatalf("samples: %+v", got)
	}
	g := got[0]
	for name, c := range map[string]struct {
		at   time.Time
		want time.Duration
	}{"floor": {g.Floor, 2}, "detect": {g.Detect, 3}, "applied": {g.Applied, 6}, "repair": {g.Repair, 5}} {
		if d := c.at.Sub(g.Start); d != c.want*time.Millisecond {
			t.Errorf("%s after %v, want %v", name, d, c.want*time.Millisecond)
		}
	}
	l := Collect(got)
	if len(l.Floor) != 1 || len(l.Detect) != 1 || len(l.Applied) != 1 || len(l.Repair) != 1 {
		t.Fatalf("collect: %+v", l)
	}
}

func TestTrackerDeleteAndSupersede(t *testing.T) {
	id := hub.NewNodeID("c1", "bench", "a00001", hub.KindDeployment)
	tr := NewTracker(2, "")
	first := tr.Begin(Step{Target: Target{ID: id, Desired: desiredDeployment("a00001")}, Action: driftgen.ActionImage})
	second := tr.Begin(Step{Target: Target{ID: id, Desired: desiredDeployment("a00001")}, Action: driftgen.ActionDelete})
	tr.Event("c1", hub.KindDeployment, watch.Event{Type: watch.Deleted, Object: deployment("a00001", 2, true)}, second.Start.Add(time.Millisecond))
	tr.Event("c1", hub.KindDeployment, watch.Event{Type: watch.Added, Object: deployment("a00001", 2, true)}, second.Start.Add(2*time.Millisecond))
	<-tr.Done()
	got := tr.Samples()
	if !errors.Is(got[0].Err, errSuperseded) {
		t.Fatalf("first drift: err %v, want superseded", got[0].Err)
	}
	if got[1].Floor.Sub(second.Start) != time.Millisecond || got[1].Repair.Sub(second.Start) != 2*time.Millisecond {
		t.Fatalf("delete: floor %v repair %v", got[1].Floor.Sub(second.Start), got[1].Repair.Sub(second.Start))
	}
	_ = first
}

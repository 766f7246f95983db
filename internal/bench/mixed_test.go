package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/clusters/drift"
	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/driftgen"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

func TestMixedCounts(t *testing.T) {
	if n := len(mixedKinds()); MixedMinObjects != 1+n {
		t.Fatalf("MixedMinObjects %d, want 1 + %d kinds", MixedMinObjects, n)
	}
	for _, objects := range []int{MixedMinObjects, 13, 100, 2000, 10000} {
		c := mixedCounts(objects)
		sum := 1
		for i, n := range c {
			sum += n
			if n < 1 || n > c[0] || c[0]-n > 1 {
				t.Errorf("%d objects: kind %d gets %d (%v)", objects, i, n, c)
			}
		}
		if sum != objects {
			t.Errorf("%d objects: dealt %d (%v)", objects, sum, c)
		}
	}
}

// loadMixed writes and loads the mixed config for set.
func loadMixed(t *testing.T, set *localcluster.Set, objects int) *config.Config {
	t.Helper()
	path, err := writeMixed(t.TempDir(), set, objects, 100, 8)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, config.LoadOptions{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatalf("%d objects: %v", objects, err)
	}
	return cfg
}

// TestMixedConfig: the generated sources load through config.Load, every
// cluster gets exactly --objects objects, a CRD and each of the eleven
// other kinds, every namespaced one in the mixed namespace, each slug one
// the bench knows how to apply, drift and watch.
func TestMixedConfig(t *testing.T) {
	set := &localcluster.Set{Clusters: []*localcluster.Cluster{
		{Name: "c1", Kubeconfig: "/tmp/c1.kubeconfig"}, {Name: "c2", Kubeconfig: "/tmp/c2.kubeconfig"},
	}}
	kinds := mixedKindsBySlug()
	floor := mixedFloorKinds()
	for _, objects := range []int{MixedMinObjects, 100} {
		cfg := loadMixed(t, set, objects)
		if cfg.Hub.QPS != 100 || cfg.Hub.Workers != 8 || len(cfg.Sources) != 1+len(mixedKinds()) {
			t.Fatalf("hub %+v, %d sources", cfg.Hub, len(cfg.Sources))
		}
		got := map[string]map[hub.Kind]int{}
		for _, s := range config.Compile(cfg) {
			if got[s.ID.Cluster] == nil {
				got[s.ID.Cluster] = map[hub.Kind]int{}
			}
			got[s.ID.Cluster][s.ID.Kind]++
			k, ok := kinds[s.ID.Kind]
			if !ok {
				t.Fatalf("%s: slug not in the mixed kinds", s.ID)
			}
			crd := k.kind == "CustomResourceDefinition"
			if crd != (s.Namespace == "") || (!crd && s.Namespace != mixedNamespace) {
				t.Errorf("%s in namespace %q", s.ID, s.Namespace)
			}
			if crd != (s.Order == 0) {
				t.Errorf("%s: apply order %d", s.ID, s.Order)
			}
			if _, watched := floor[s.ID.Kind]; watched == crd {
				t.Errorf("%s: raw watch of its kind %v", s.ID, watched)
			}
			obj, err := kubeobj.Object(s)
			if err != nil || obj.GetLabels()[kubeobj.ManagedByLabel] != kubeobj.DefaultManagedBy || (!crd && obj.GetLabels()["app"] != s.Name) {
				t.Errorf("%s: desired object %v (%v)", s.ID, obj, err)
			}
		}
		for _, c := range set.Clusters {
			total := 0
			for _, n := range got[c.Name] {
				total += n
			}
			if total != objects || len(got[c.Name]) != 1+len(mixedKinds()) {
				t.Errorf("%d objects: %s has %d objects of kinds %v", objects, c.Name, total, got[c.Name])
			}
		}
		if gvks := cfg.Kinds("c1"); len(gvks) != 1+len(mixedKinds()) {
			t.Errorf("watched kinds %v", gvks)
		}
	}
}

// mergePatch applies a JSON merge patch (RFC 7386) to doc.
func mergePatch(doc, patch map[string]any) map[string]any {
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(doc, k)
		case map[string]any:
			sub, _ := doc[k].(map[string]any)
			if sub == nil {
				sub = map[string]any{}
			}
			doc[k] = mergePatch(sub, pv)
		default:
			doc[k] = v
		}
	}
	return doc
}

// TestMixedEditsAreDrift: each kind's field edit changes a field the hub
// applies (the raw watch and the hub see it as modified drift), and the
// desired object compared with itself is in sync.
func TestMixedEditsAreDrift(t *testing.T) {
	for _, k := range mixedKinds() {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(k.doc(k.prefix+"-00001", 3)), &obj); err != nil {
			t.Fatalf("%s: %v", k.kind, err)
		}
		desired := &unstructured.Unstructured{Object: obj}
		desired.SetNamespace(mixedNamespace)
		desired.SetLabels(map[string]string{"app": desired.GetName(), kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy})
		if d := drift.Classify(desired, desired.DeepCopy(), ""); !d.InSync() {
			t.Errorf("%s: desired vs itself: %s %v", k.kind, d.Class, d.Fields)
		}
		var patch map[string]any
		if err := json.Unmarshal([]byte(k.edit), &patch); err != nil {
			t.Fatalf("%s: edit: %v", k.kind, err)
		}
		// Integers as the apiserver's objects hold them.
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&unstructured.Unstructured{Object: mergePatch(desired.DeepCopy().Object, patch)})
		if err != nil {
			t.Fatal(err)
		}
		edited := &unstructured.Unstructured{Object: fixNumbers(content).(map[string]any)}
		if d := drift.Classify(desired, edited, ""); d.Class != hub.DriftModified {
			t.Errorf("%s: the edit %s gives %s %v, want modified", k.kind, k.edit, d.Class, d.Fields)
		}
		if got := k.slug(); got != hub.KindSlug(k.gvr().Group, k.kind) || (k.gvr().Group == "") != !strings.Contains(string(got), ".") {
			t.Errorf("%s: slug %s", k.kind, got)
		}
	}
}

// fixNumbers turns the float64s of decoded JSON into int64s where whole.
func fixNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = fixNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = fixNumbers(e)
		}
	case float64:
		if x == float64(int64(x)) {
			return int64(x)
		}
	}
	return v
}

func TestPlanWithMixedActions(t *testing.T) {
	ts := testTargets(2, 30)
	if !reflect.DeepEqual(Plan(ts, 50, 10, 3), PlanWith(ts, 50, 10, 3, Actions)) {
		t.Fatal("Plan is not PlanWith(Actions)")
	}
	acts := map[driftgen.Action]int{}
	for _, s := range PlanWith(ts, 300, 10, 3, MixedActions) {
		if !slices.Contains(MixedActions(s.Target.ID.Kind), s.Action) {
			t.Fatalf("step %d: action %s", s.Seq, s.Action)
		}
		acts[s.Action]++
	}
	for _, a := range MixedActions("") {
		if acts[a] < 50 {
			t.Errorf("action %s made %d times of 300", a, acts[a])
		}
	}
}

// TestDynamicDrifter makes each drift on a fake dynamic client: a delete
// removes the object, an edit applies the kind's patch, an unlabel drops
// the managed-by label; unknown clusters, kinds and actions fail.
func TestDynamicDrifter(t *testing.T) {
	cm := mixedKinds()[0]
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(cm.doc("cm-00001", 1)), &obj); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(mixedNamespace)
	u.SetLabels(map[string]string{"app": "cm-00001", kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy})
	fake := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), u)
	d := dynamicDrifter{clients: map[string]dynamic.Interface{"c1": fake}, kinds: mixedKindsBySlug()}
	id := hub.NewNodeID("c1", mixedNamespace, "cm-00001", cm.slug())
	ctx := t.Context()
	get := func() (*unstructured.Unstructured, error) {
		return fake.Resource(cm.gvr()).Namespace(mixedNamespace).Get(ctx, "cm-00001", metav1.GetOptions{})
	}
	if r := d.Do(ctx, driftgen.Target{ID: id, Kind: id.Kind}, driftgen.ActionEdit); r.Err != nil {
		t.Fatal(r.Err)
	}
	if got, _ := get(); got == nil || got.Object["data"].(map[string]any)["MODE"] != "tampered" {
		t.Errorf("after the edit: %v", got)
	}
	if r := d.Do(ctx, driftgen.Target{ID: id, Kind: id.Kind}, driftgen.ActionUnlabel); r.Err != nil {
		t.Fatal(r.Err)
	}
	if got, _ := get(); got == nil || got.GetLabels()[kubeobj.ManagedByLabel] != "" || got.GetLabels()["app"] != "cm-00001" {
		t.Errorf("after the unlabel: %v", got)
	}
	if r := d.Do(ctx, driftgen.Target{ID: id, Kind: id.Kind}, driftgen.ActionDelete); r.Err != nil {
		t.Fatal(r.Err)
	}
	if _, err := get(); !apierrors.IsNotFound(err) {
		t.Errorf("after the delete: %v", err)
	}
	for name, tc := range map[string]struct {
		id hub.NodeID
		a  driftgen.Action
	}{
		"unknown cluster": {hub.NewNodeID("c9", mixedNamespace, "cm-00001", cm.slug()), driftgen.ActionDelete},
		"unknown kind":    {hub.NewNodeID("c1", mixedNamespace, "x", hub.KindDeployment), driftgen.ActionDelete},
		"unknown action":  {id, driftgen.ActionScale},
		"gone":            {id, driftgen.ActionEdit},
	} {
		if r := d.Do(ctx, driftgen.Target{ID: tc.id, Kind: tc.id.Kind}, tc.a); r.Err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestEstablished(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "NamesAccepted", "status": "True"},
		map[string]any{"type": "Established", "status": "False"},
	}}}}
	if established(u) {
		t.Error("Established=False counted")
	}
	u.Object["status"].(map[string]any)["conditions"].([]any)[1].(map[string]any)["status"] = "True"
	if !established(u) {
		t.Error("Established=True not counted")
	}
}

func TestMixedValidate(t *testing.T) {
	base := Options{Mode: ModeMixed, Clusters: 1, Objects: 1000, Drifts: 10, Rate: 1, Interval: time.Second, Burst: 1, Output: "text", Idle: time.Second}
	if err := base.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*Options){
		"too few objects":     func(o *Options) { o.Objects = MixedMinObjects - 1 },
		"chart":               func(o *Options) { o.Chart = "x.svg" },
		"idle profile + cpu":  func(o *Options) { o.IdleCPUProfile, o.CPUProfile = "a", "b" },
		"zero drifts":         func(o *Options) { o.Drifts = 0 },
		"twenty-one clusters": func(o *Options) { o.Clusters = 21 },
	} {
		o := base
		mod(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
	}
	o := base
	o.IdleCPUProfile = "idle.pprof"
	if err := o.Validate(); err != nil {
		t.Errorf("--idle-cpuprofile with mixed: %v", err)
	}
}

// testMixedReport is a --mode mixed report with every figure set, as Run
// builds it (finish included); baseline adds the scale run.
func testMixedReport(baseline bool) *benchReport {
	o := Options{Mode: ModeMixed, Clusters: 1, Objects: 10000, Drifts: 200, Rate: 20, Seed: 7, Output: "json", Idle: 5 * time.Second, Baseline: baseline}
	rep := &benchReport{Mode: ModeMixed, Clusters: 1, ObjectsPerCluster: 10000, Seed: 7, Workers: 8, CPUs: 2, LoadBefore: "1.00 2.00 3.00",
		Drifts: 200, Rate: 20, Schedule: "6fd0ad87a3473851"}
	rep.Mixed = &mixedReport{Objects: 10000, Kinds: []kindCount{{"configmap", 910}, {"customresourcedefinition.apiextensions.k8s.io", 1}, {"widget.bench.example.com", 909}},
		Precreate: msDuration(40123 * time.Millisecond), InitialSync: msDuration(9876543 * time.Microsecond), PeakRSS: 400 << 20, RSS: 350 << 20,
		HeapInUse: 60 << 20, BytesPerObject: 1900.5, IdleCPU: msDuration(150 * time.Millisecond), IdleFor: msDuration(5 * time.Second), IdleCPUPercent: 3,
		Renders: []renderCost{
			{Source: "files", Objects: 100, Renders: 20, P50: msDuration(7599 * time.Microsecond), Max: msDuration(30 * time.Millisecond), Allocs: 33887, Bytes: 2375524},
			{Source: "kustomize", Objects: 100, Renders: 20, P50: msDuration(110049 * time.Microsecond), Max: msDuration(214 * time.Millisecond), Allocs: 263777, Bytes: 25007712},
			{Source: "helm", Objects: 100, Renders: 20, P50: msDuration(9113 * time.Microsecond), Max: msDuration(14 * time.Millisecond), Allocs: 39500, Bytes: 2794376},
		}}
	r := testRun(ModeMixed, 200, 5*time.Millisecond)
	r.ByAction = map[string]actionReport{}
	for i, a := range MixedActions("") {
		d := time.Duration(i+1) * time.Millisecond
		r.ByAction[string(a)] = actionReport{Floor: testLatency(66, 5*time.Millisecond+d), Detect: testLatency(66, 6*time.Millisecond+d), Repair: testLatency(66, 9*time.Millisecond+d)}
	}
	r.ByKind = map[string]actionReport{
		"configmap":                {Floor: testLatency(100, 5*time.Millisecond), Detect: testLatency(100, 6*time.Millisecond), Repair: testLatency(100, 9*time.Millisecond)},
		"widget.bench.example.com": {Floor: testLatency(100, 7*time.Millisecond), Detect: testLatency(100, 8*time.Millisecond), Repair: testLatency(100, 12*time.Millisecond)},
	}
	r.Detect.P99 = msDuration(20 * time.Millisecond)
	r.Floor.P99 = msDuration(15 * time.Millisecond)
	rep.Runs = []runReport{r}
	if baseline {
		rep.Scale = &scaleReport{Objects: 10000, Mix: objectMix{4000, 200, 5800}, Precreate: msDuration(30 * time.Second),
			InitialSync: msDuration(6543210 * time.Microsecond), PeakRSS: 300 << 20, RSS: 250 << 20, HeapInUse: 50 << 20,
			BytesPerObject: 2000.25, IdleCPU: msDuration(100 * time.Millisecond), IdleFor: msDuration(5 * time.Second), IdleCPUPercent: 2}
	}
	rep.finish(o)
	return rep
}

// TestMixedReport: the table has the mixed measures, the by-kind
// latencies, the side-by-side with the three kinds, the render costs,
// the ratios and the bars; the JSON carries all of it.
func TestMixedReport(t *testing.T) {
	rep := testMixedReport(true)
	var out bytes.Buffer
	if err := rep.writeTable(&out); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"(3 kinds each: 910 configmap, 1 customresourcedefinition.apiextensions.k8s.io, 909 widget.bench.example.com)",
		"(deletes, field edits, label removals)",
		"mixed by action", "edit ", "mixed by kind", "widget.bench.example.com  100",
		"mixed detect p99 / floor p99                          1.33x",
		"mixed initial sync / three kinds' initial sync        1.51x",
		"hub heap per managed object  1.95 KiB     1.86 KiB     0.95x",
		"kustomize                               100      20       110.0ms",
		"mixed detect p99 within 1.5x of the floor p99 (all 200 drifts repaired)  MISSED  20.0ms vs floor 15.0ms (199/200 repaired)",
		"mixed hub heap per managed object at most 2.00 KiB at 10000 mixed objects per cluster  met",
		"mixed initial sync within 2x of the three kinds' at 10000 objects per cluster  met     9.88s vs 6.54s",
		"three kinds (baseline): under 2 KiB",
		"three kinds (baseline) measure  value",
		"note: baseline:",
	} {
		if !strings.Contains(squash(out.String()), squash(s)) {
			t.Errorf("table lacks %q:\n%s", s, &out)
		}
	}
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back benchReport
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, rep) {
		t.Errorf("the JSON does not carry the whole report:\n got %+v\nwant %+v", back, *rep)
	}

	// Without the baseline: no sync bar, a note on how to compare.
	rep = testMixedReport(false)
	out.Reset()
	if err := rep.writeTable(&out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "side by side") || strings.Contains(out.String(), "mixed initial sync within") ||
		!strings.Contains(out.String(), "driftwatch bench --mode scale --objects 10000 --clusters 1 -o json") {
		t.Errorf("without a baseline:\n%s", &out)
	}
}

// squash collapses every run of spaces to one (table columns align to
// the widest cell).
func squash(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if r == ' ' {
			if !space {
				b.WriteRune(r)
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// TestFinishMixed checks the mixed bars against the figures.
func TestFinishMixed(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*benchReport)
		want map[string]bool // goal prefix -> met
	}{
		{"as built", func(*benchReport) {}, map[string]bool{"mixed detect": false, "mixed hub heap": true, "mixed initial sync": true}},
		{"all met", func(r *benchReport) {
			r.Runs[0].Repaired, r.Runs[0].Failed = r.Runs[0].Drifts, 0
			r.Runs[0].Detect.P99 = msDuration(22500 * time.Microsecond) // exactly 1.5x
		}, map[string]bool{"mixed detect": true, "mixed hub heap": true, "mixed initial sync": true}},
		{"slow and big", func(r *benchReport) {
			r.Runs[0].Repaired = r.Runs[0].Drifts
			r.Runs[0].Detect.P99 = msDuration(23 * time.Millisecond)
			r.Mixed.BytesPerObject = 2049
			r.Mixed.InitialSync = msDuration(14 * time.Second)
		}, map[string]bool{"mixed detect": false, "mixed hub heap": false, "mixed initial sync": false}},
		{"sync failed", func(r *benchReport) {
			r.Mixed.SyncFailed, r.Mixed.InitialSync, r.Mixed.BytesPerObject, r.Runs, r.Scale = true, 0, 0, nil, nil
		}, map[string]bool{"mixed hub heap": false}},
	} {
		rep := testMixedReport(true)
		tc.mod(rep)
		rep.Targets, rep.Notes, rep.Ratios = nil, nil, nil
		rep.finishMixed(Options{Objects: 10000})
		got := map[string]bool{}
		for _, g := range rep.Targets {
			for prefix := range tc.want {
				if strings.HasPrefix(g.Goal, prefix) {
					got[prefix] = g.Met
				}
			}
		}
		if !reflect.DeepEqual(got, tc.want) || len(rep.Targets) != len(tc.want) {
			t.Errorf("%s: targets %+v, want %v", tc.name, rep.Targets, tc.want)
		}
	}
}

// TestCompareMixed: compare shows the mixed figures, per kind and the
// render costs.
func TestCompareMixed(t *testing.T) {
	old, cur := testMixedReport(true), testMixedReport(true)
	cur.Mixed.BytesPerObject = 1500
	cur.Mixed.Renders[1].P50 = msDuration(50 * time.Millisecond)
	var out bytes.Buffer
	if err := Compare(&out, "old.json", old, "new.json", cur); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"mixed hub heap per object", "mixed initial sync", "mixed widget.bench.example.com detect p99",
		"mixed edit repair p99", "render kustomize p50", "render helm bytes allocated", "scale hub heap per object"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("compare lacks %q:\n%s", s, &out)
		}
	}
}

// TestBenchMixedRealCluster runs a tiny --mode mixed on one real local
// cluster: every kind created and in sync, every drift repaired, the
// figures measured. With $DRIFTWATCH_BIN_DIR set, a control plane that
// cannot start fails the test.
func TestBenchMixedRealCluster(t *testing.T) {
	bins := lctest.BinDir(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	env := app.Env{Getenv: func(k string) string {
		if k == app.EnvBinDir {
			return bins
		}
		return ""
	}, Stdout: &out, Stderr: &errOut}
	o := Options{Mode: ModeMixed, Clusters: 1, Objects: 36, Drifts: 22, Rate: 20, Interval: time.Second, Burst: 1,
		Seed: 1, Output: "json", Idle: 500 * time.Millisecond, Dir: t.TempDir(), Baseline: true}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	err := Run(ctx, o, env)
	if err != nil {
		t.Fatalf("bench: %v\nstdout:\n%s\nstderr:\n%s", err, &out, &errOut)
	}
	var rep benchReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, &out)
	}
	m := rep.Mixed
	if m == nil || m.Objects != 36 || len(m.Kinds) != 12 || m.InitialSync <= 0 || m.BytesPerObject <= 0 || len(m.Renders) != 5 {
		t.Fatalf("mixed report %+v", m)
	}
	r := findRun(rep.Runs, ModeMixed)
	if r == nil || r.Drifts != 22 || r.Repaired != 22 || r.Failed != 0 || r.Detect.N != 22 || r.Floor.N != 22 || len(r.ByKind) < 8 {
		t.Fatalf("mixed run %+v\nstderr:\n%s", r, &errOut)
	}
	for _, a := range MixedActions("") {
		if r.ByAction[string(a)].Repair.N == 0 {
			t.Errorf("no %s repaired: %+v", a, r.ByAction)
		}
	}
	if rep.Scale == nil || rep.Scale.Objects != 36 || rep.Scale.InitialSync <= 0 || rep.Ratios == nil || rep.Ratios.MixedSyncOverScaleSync <= 0 {
		t.Errorf("baseline %+v, ratios %+v", rep.Scale, rep.Ratios)
	}
	if len(rep.Targets) != 4 {
		t.Errorf("targets %+v", rep.Targets)
	}
	if _, err := os.Stat(filepath.Join(o.Dir, "mixed", "crds", "widgets.yaml")); err != nil {
		t.Error(err)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Error("timed out")
	}
}

func TestMemProfilePath(t *testing.T) {
	for _, tc := range []struct {
		path, suffix, want string
	}{
		{"", "-baseline", ""}, {"mem.pprof", "", "mem.pprof"}, {"mem.pprof", "-baseline", "mem-baseline.pprof"},
		{"/tmp/x/heap", "-before", "/tmp/x/heap-before"},
	} {
		if got := memProfilePath(tc.path, tc.suffix); got != tc.want {
			t.Errorf("%q %q: %q, want %q", tc.path, tc.suffix, got, tc.want)
		}
	}
}

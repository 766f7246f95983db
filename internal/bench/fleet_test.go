package bench

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/localcluster"
)

// TestFleetConfig checks the generated fleet config: entries round-robin
// over the apiservers with their kubeconfigs, each entry watching only its
// own namespace, and exactly objects objects per entry in it.
func TestFleetConfig(t *testing.T) {
	apiservers := []*localcluster.Cluster{{Name: "c1", Kubeconfig: "/tmp/c1.kubeconfig"}, {Name: "c2", Kubeconfig: "/tmp/c2.kubeconfig"}}
	for _, tc := range []struct {
		entries, objects int
		wantFirst        string
		want             map[hub.Kind]int // per entry
	}{
		{4, 5, "f1", map[hub.Kind]int{hub.KindDeployment: 3, hub.KindConfigMap: 2}},
		{12, 100, "f01", map[hub.Kind]int{hub.KindDeployment: 50, hub.KindConfigMap: 50}},
		{3, 1, "f1", map[hub.Kind]int{hub.KindDeployment: 1}},
	} {
		entries := fleetEntries(apiservers, tc.entries)
		if entries[0].ID != tc.wantFirst || entries[0].Namespace != "fleet-"+tc.wantFirst {
			t.Errorf("%d entries: first %+v", tc.entries, entries[0])
		}
		path := filepath.Join(t.TempDir(), "fleet.yaml")
		if err := os.WriteFile(path, []byte(fleetConfig(entries, tc.objects, 0, 8)), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(path, config.LoadOptions{Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatalf("%d entries x %d objects: %v", tc.entries, tc.objects, err)
		}
		if len(cfg.Clusters) != tc.entries || cfg.Hub.Workers != 8 {
			t.Fatalf("%d clusters, hub %+v", len(cfg.Clusters), cfg.Hub)
		}
		ccs := app.ClusterConfigs(cfg, func(string) string { return "" })
		for i, cc := range ccs {
			e := entries[i]
			if cc.ID != e.ID || cc.Kubeconfig != apiservers[i%2].Kubeconfig || !slices.Equal(cc.Namespaces, []string{e.Namespace}) {
				t.Errorf("entry %d: cluster config %s kubeconfig %s namespaces %v, want %s on %s in %s",
					i, cc.ID, cc.Kubeconfig, cc.Namespaces, e.ID, apiservers[i%2].Kubeconfig, e.Namespace)
			}
		}
		got := map[string]map[hub.Kind]int{}
		for _, s := range config.Compile(cfg) {
			if s.Namespace != "fleet-"+s.ID.Cluster {
				t.Errorf("%s is in namespace %s", s.ID, s.Namespace)
			}
			if got[s.ID.Cluster] == nil {
				got[s.ID.Cluster] = map[hub.Kind]int{}
			}
			got[s.ID.Cluster][s.ID.Kind]++
		}
		if len(got) != tc.entries {
			t.Errorf("objects on %d entries, want %d", len(got), tc.entries)
		}
		for _, e := range entries {
			if !reflect.DeepEqual(got[e.ID], tc.want) {
				t.Errorf("%d entries x %d objects: %s has %v, want %v", tc.entries, tc.objects, e.ID, got[e.ID], tc.want)
			}
		}
	}
}

// TestSpreadPlan: the same drifts as Plan, each cluster still at the rate,
// and the fleet's drifts evenly spaced in time.
func TestSpreadPlan(t *testing.T) {
	ts := testTargets(4, 10)
	const rate = 2.0
	plain, spread := Plan(ts, 40, rate, 3), SpreadPlan(ts, 40, rate, 3)
	if len(spread) != len(plain) {
		t.Fatalf("%d steps, want %d", len(spread), len(plain))
	}
	gap := time.Duration(float64(time.Second) / (4 * rate))
	perCluster := map[string][]time.Duration{}
	for j, s := range spread {
		p := plain[j]
		if s.Target.ID != p.Target.ID || s.Action != p.Action || s.Seq != p.Seq {
			t.Fatalf("step %d: %s %s, Plan has %s %s", j, s.Target.ID, s.Action, p.Target.ID, p.Action)
		}
		if want := time.Duration(j) * gap; absDur(s.Offset-want) > time.Microsecond {
			t.Errorf("step %d at %v, want %v", j, s.Offset, want)
		}
		perCluster[s.Target.ID.Cluster] = append(perCluster[s.Target.ID.Cluster], s.Offset)
	}
	for c, offs := range perCluster {
		for i := 1; i < len(offs); i++ {
			if d := offs[i] - offs[i-1]; absDur(d-time.Duration(float64(time.Second)/rate)) > time.Microsecond {
				t.Errorf("%s: drifts %d and %d are %v apart, want %v", c, i-1, i, d, time.Second/2)
			}
		}
	}
	if SpreadPlan(nil, 10, 1, 1) != nil {
		t.Error("a plan without targets")
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func TestFleetDefaults(t *testing.T) {
	base := Options{Mode: ModeFleet, Clusters: 3, Objects: 300, Rate: 20, Idle: 5 * time.Second}
	for _, tc := range []struct {
		name    string
		in      Options
		changed []string
		want    Options
	}{
		{"fleet, nothing set", base, nil, Options{Mode: ModeFleet, Clusters: 250, Objects: 100, Rate: 1, Idle: 10 * time.Second}},
		{"fleet, flags set win", base, []string{"clusters", "objects", "rate", "idle"}, base},
		{"fleet, some set", base, []string{"objects"}, Options{Mode: ModeFleet, Clusters: 250, Objects: 300, Rate: 1, Idle: 10 * time.Second}},
		{"another mode", Options{Mode: ModeWatch, Clusters: 3, Objects: 300, Rate: 20}, nil, Options{Mode: ModeWatch, Clusters: 3, Objects: 300, Rate: 20}},
	} {
		o := tc.in
		FleetDefaults(&o, func(f string) bool { return slices.Contains(tc.changed, f) })
		if o != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, o, tc.want)
		}
	}
}

func TestFleetValidate(t *testing.T) {
	ok := Options{Mode: ModeFleet, Clusters: 250, APIServers: 3, Objects: 100, Drifts: 1, Rate: 1, Interval: time.Second,
		Burst: 1, Output: "table", Idle: time.Second, Duration: time.Second}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"too many entries", func(o *Options) { o.Clusters = 2001 }, "--clusters"},
		{"no apiserver", func(o *Options) { o.APIServers = 0 }, "--apiservers"},
		{"more apiservers than entries", func(o *Options) { o.Clusters, o.APIServers = 2, 3 }, "--apiservers"},
		{"no duration", func(o *Options) { o.Duration = 0 }, "--duration"},
		{"250 clusters outside the fleet", func(o *Options) { o.Mode = ModeWatch }, "--clusters"},
	} {
		o := ok
		tc.mod(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error about %s", tc.name, err, tc.want)
		}
	}
}

// TestFillDesired decodes each planned object once and refuses a target
// the config does not have.
func TestFillDesired(t *testing.T) {
	apiservers := []*localcluster.Cluster{{Name: "c1", Kubeconfig: "/tmp/c1.kubeconfig"}}
	path := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(path, []byte(fleetConfig(fleetEntries(apiservers, 2), 4, 0, 0)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, config.LoadOptions{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	specs := config.Compile(cfg)
	steps := SpreadPlan(fleetTargets(specs), 16, 1, 1) // every object twice
	if err := fillDesired(steps, specs); err != nil {
		t.Fatal(err)
	}
	seen := map[hub.NodeID]any{}
	for _, s := range steps {
		d := s.Target.Desired
		if d == nil || d.GetName() != s.Target.ID.Name() || d.GetNamespace() != s.Target.ID.Namespace() {
			t.Fatalf("%s: desired %v", s.Target.ID, d)
		}
		if prev, ok := seen[s.Target.ID]; ok && prev != any(d) {
			t.Errorf("%s decoded twice", s.Target.ID)
		}
		seen[s.Target.ID] = d
	}
	if len(seen) != 8 {
		t.Errorf("%d objects planned, want 8", len(seen))
	}
	bad := []Step{{Target: Target{ID: hub.NewNodeID("f9", "fleet-f9", "nope", hub.KindDeployment)}}}
	if err := fillDesired(bad, specs); err == nil || !strings.Contains(err.Error(), "f9:fleet-f9/nope") {
		t.Errorf("unknown target: %v", err)
	}
}

// TestCompareFleet compares two fleet reports: the fleet's own figures and
// its drift run are in the table, a different apiserver count is noted.
func TestCompareFleet(t *testing.T) {
	old, cur := testReport(ModeFleet), testReport(ModeFleet)
	cur.APIServers = 4
	cur.Fleet.ColdSync = msDuration(20 * time.Second)
	cur.Fleet.RSS = 900 << 20
	cur.Runs[0].Repair.P99 = msDuration(40 * time.Millisecond)
	var out bytes.Buffer
	if err := Compare(&out, "old.json", old, "new.json", cur); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare-fleet.golden", out.Bytes())
	for _, s := range []string{"note: the runs differ in apiservers", "250 cluster entries on 3 apiserver(s)",
		"fleet cold sync", "fleet steady rss", "fleet idle cpu", "fleet repair p99", "fleet delete repair p99",
		"fleet raw create floor", "fleet raw create floor after the hub", "fleet raw create floor with watches", "fleet cold sync / raw create floor with watches", "fleet cold sync / raw create floor                   1.09x      0.76x",
		"fleet raw repair floor repair p99", "fleet repair p99 / raw repair floor p99              2.40x      2.67x",
		"fleet cpu per drift / raw repair floor's             1.35x", "fleet cold sync cpu per object / raw create floor's  1.28x",
		"fleet process gc cpu", "fleet raw repair floor process gc cpu", "fleet cold sync process gc cpu",
		"fleet control planes' idle cpu  ", "fleet control planes' idle cpu without the hub"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("compare lacks %q:\n%s", s, &out)
		}
	}
}

// TestCreatedSeenAwait: the watched floor waits for every object's ADDED
// event, gives up once none came for the limit, and ignores other events.
func TestCreatedSeenAwait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &createdSeen{change: make(chan struct{})}
		sink := s.sink()
		go func() {
			for range 3 {
				time.Sleep(time.Second)
				sink("f1", hub.KindConfigMap, watch.Event{Type: watch.Modified}, time.Now())
				sink("f1", hub.KindConfigMap, watch.Event{Type: watch.Added}, time.Now())
			}
		}()
		began := time.Now()
		if err := s.await(t.Context(), 3, 2*time.Second); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took != 3*time.Second {
			t.Errorf("returned after %s, want 3s (the third ADDED event)", took)
		}
		err := s.await(t.Context(), 4, 2*time.Second)
		if err == nil || !strings.Contains(err.Error(), "saw 3 of the 4 objects created, none more in 2s") {
			t.Errorf("no fourth event: %v", err)
		}
	})
}

// TestFleetFloor: the cold sync's floor is the mean of the floors before
// and after the cold hub, or the one measured.
func TestFleetFloor(t *testing.T) {
	for _, tc := range []struct{ before, after, want time.Duration }{
		{40 * time.Second, 50 * time.Second, 45 * time.Second},
		{40 * time.Second, 0, 40 * time.Second},
		{0, 50 * time.Second, 50 * time.Second},
		{0, 0, 0},
	} {
		f := &fleetReport{CreateFloor: msDuration(tc.before), CreateFloorAfter: msDuration(tc.after)}
		if got := f.floor().dur(); got != tc.want {
			t.Errorf("floor of %s before and %s after: %s, want %s", tc.before, tc.after, got, tc.want)
		}
	}
}

// TestFinishFleet checks the fleet's bars against the figures.
func TestFinishFleet(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*benchReport)
		want map[string]bool // goal prefix -> met
	}{
		{"as measured", func(*benchReport) {}, map[string]bool{"fleet cold sync of": true, "fleet cold sync within": true, "fleet steady rss": true, "fleet idle cpu": false, "fleet repair p99 under": false, "fleet repair p99 within": false}},
		{"all met", func(r *benchReport) {
			r.Fleet.IdleCPUPercent = 4.9
			r.Runs[0].Repaired, r.Runs[0].Failed = r.Runs[0].Drifts, 0
			r.Runs[0].Repair.P99 = 2 * r.Runs[0].Floor.P99
		}, map[string]bool{"fleet cold sync of": true, "fleet cold sync within": true, "fleet steady rss": true, "fleet idle cpu": true, "fleet repair p99 under": true, "fleet repair p99 within": true}},
		{"slow and big", func(r *benchReport) {
			r.Fleet.ColdSync, r.Fleet.RSS = msDuration(31*time.Second), 1<<30
			r.Runs[0].Repaired = r.Runs[0].Drifts
			r.Runs[0].Repair.P99 = msDuration(250 * time.Millisecond)
		}, map[string]bool{"fleet cold sync of": false, "fleet cold sync within": true, "fleet steady rss": false, "fleet idle cpu": false, "fleet repair p99 under": false, "fleet repair p99 within": false}},
		{"far from its floor", func(r *benchReport) {
			r.Fleet.CreateFloor = msDuration(10 * time.Second)
		}, map[string]bool{"fleet cold sync of": true, "fleet cold sync within": false, "fleet steady rss": true, "fleet idle cpu": false, "fleet repair p99 under": false, "fleet repair p99 within": false}},
		{"only the floor after the hub, far", func(r *benchReport) {
			r.Fleet.CreateFloor, r.Fleet.CreateFloorAfter = 0, msDuration(20*time.Second)
		}, map[string]bool{"fleet cold sync of": true, "fleet cold sync within": false, "fleet steady rss": true, "fleet idle cpu": false, "fleet repair p99 under": false, "fleet repair p99 within": false}},
		{"no floor", func(r *benchReport) {
			r.Fleet.CreateFloor, r.Fleet.CreateFloorAfter = 0, 0
			r.Runs[0].Floor.P99 = 0
		}, map[string]bool{"fleet cold sync of": true, "fleet steady rss": true, "fleet idle cpu": false, "fleet repair p99 under": false}},
		{"sync failed", func(r *benchReport) {
			r.Fleet.SyncFailed, r.Fleet.ColdSync, r.Fleet.RSS, r.Runs = true, 0, 0, nil
		}, map[string]bool{"fleet cold sync of": false}},
	} {
		rep := testReport(ModeFleet)
		tc.mod(rep)
		// From scratch: with neither floor ratio, the raw repair floor's
		// ratio still has a place (no nil Ratios).
		rep.Targets, rep.Notes, rep.Ratios = nil, nil, nil
		rep.finishFleet()
		if l := findRun(rep.Runs, ModeFleet); l != nil && l.RepairFloorLatency != nil && (rep.Ratios == nil || rep.Ratios.FleetRepairP99OverRepairFloorP99 == 0) {
			t.Errorf("%s: no ratio over the raw repair floor: %+v", tc.name, rep.Ratios)
		}
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

// TestFleetCPU: the cold sync's and the drift run's CPU per object and per
// drift beside their floors', the note when the floor alone needs more CPU
// than the machine has at the drift rate, and nothing from a cost that was
// not measured.
func TestFleetCPU(t *testing.T) {
	rep := testReport(ModeFleet)
	r := findRun(rep.Runs, ModeFleet)
	hub, floor := rep.Fleet.coldCPU()
	if want := msDuration(102 * time.Second / 25000); hub != want {
		t.Errorf("cold sync cpu per object %s, want %s", hub.dur(), want.dur())
	}
	if want := msDuration((78*time.Second/25000 + 81*time.Second/25000) / 2); floor != want {
		t.Errorf("raw create floor cpu per object %s, want %s (the mean of both floors)", floor.dur(), want.dur())
	}
	dh, df, budget := rep.driftCPU(r)
	if dh != msDuration(66*time.Second/7500) || df != msDuration(49*time.Second/7500) || budget != msDuration(8*time.Millisecond) {
		t.Errorf("drift cpu %s, floor %s, budget %s; want 8.8ms, 6.53ms, 8ms", dh.dur(), df.dur(), budget.dur())
	}
	if got := rep.Ratios.FleetRepairCPUOverRepairFloorCPU; math.Abs(got-66.0/49) > 1e-6 {
		t.Errorf("cpu per drift ratio %g, want %g", got, 66.0/49)
	}
	saturated := func(rep *benchReport) bool {
		for _, n := range rep.Notes {
			if strings.Contains(n, "the raw repair floor alone needed more CPU than the machine's cores give") {
				return true
			}
		}
		return false
	}
	if saturated(rep) {
		t.Error("a floor within the machine's cores noted as beyond them")
	}

	// At 2 drifts/s per entry the cores give 4ms a drift: the floor's
	// 6.53ms is beyond the machine.
	rep.Rate = 2
	rep.Targets, rep.Notes, rep.Ratios = nil, nil, nil
	rep.finishFleet()
	if !saturated(rep) {
		t.Errorf("a floor beyond the machine's cores not noted: %q", rep.Notes)
	}

	// Pinned, the control planes have a core of their own: no budget, no
	// note, the ratio stays.
	rep.Pinned = "control planes on CPU 0, this process on CPU 1"
	rep.Targets, rep.Notes, rep.Ratios = nil, nil, nil
	rep.finishFleet()
	if _, _, budget := rep.driftCPU(r); budget != 0 || saturated(rep) || rep.Ratios.FleetRepairCPUOverRepairFloorCPU == 0 {
		t.Errorf("pinned: budget %s, notes %q, ratios %+v", budget.dur(), rep.Notes, rep.Ratios)
	}
	rep.Pinned = ""

	// A cost with an error, or none, gives no figure and no ratio.
	r.RepairFloorCost.Error = "scrape failed"
	rep.Fleet.CreateFloorCost, rep.Fleet.CreateFloorAfterCost = nil, &spanCost{Error: "gone"}
	rep.Targets, rep.Notes, rep.Ratios = nil, nil, nil
	rep.finishFleet()
	if _, floor := rep.Fleet.coldCPU(); floor != 0 {
		t.Errorf("a create floor cpu from unmeasured costs: %s", floor.dur())
	}
	if _, df, _ := rep.driftCPU(r); df != 0 {
		t.Errorf("a repair floor cpu from a cost with an error: %s", df.dur())
	}
	if rep.Ratios.FleetColdSyncCPUOverCreateFloorCPU != 0 || rep.Ratios.FleetRepairCPUOverRepairFloorCPU != 0 || saturated(rep) {
		t.Errorf("ratios or note from unmeasured costs: %+v %q", rep.Ratios, rep.Notes)
	}
}

// TestPinSplit: --pin gives the control planes every CPU but the last and
// this process the last; the report and compare say so.
func TestPinSplit(t *testing.T) {
	planes, self := pinSplit(4)
	if !reflect.DeepEqual(planes, []int{0, 1, 2}) || !reflect.DeepEqual(self, []int{3}) {
		t.Errorf("pinSplit(4) = %v, %v", planes, self)
	}
	planes, self = pinSplit(2)
	if cpuList(planes) != "0" || cpuList(self) != "1" {
		t.Errorf("pinSplit(2) = %v, %v", planes, self)
	}
	old, cur := testReport(ModeFleet), testReport(ModeFleet)
	cur.Pinned = "control planes on CPU 0, this process on CPU 1"
	var table bytes.Buffer
	if err := cur.writeTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "load average before the bench 0.52 0.61 0.70; control planes on CPU 0, this process on CPU 1") {
		t.Errorf("the table does not say how the CPUs were pinned:\n%s", &table)
	}
	if strings.Contains(table.String(), "the machine's cores give") || !strings.Contains(table.String(), "hub 8.80ms, raw repair floor 6.53ms\n") {
		t.Errorf("pinned, the cpu per drift has a budget of the whole machine, or is missing:\n%s", &table)
	}
	var out bytes.Buffer
	if err := Compare(&out, "old.json", old, "new.json", cur); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "note: the runs differ in pinning") || !strings.Contains(out.String(), "this process on CPU 1") {
		t.Errorf("compare does not note the pinning:\n%s", &out)
	}
}

// TestSinceWithin: the cold sync is read off the hub's own stamps, bounded
// by the snapshot that showed them.
func TestSinceWithin(t *testing.T) {
	began := time.Date(2026, 12, 4, 4, 0, 0, 0, time.UTC)
	taken := began.Add(30 * time.Second)
	for _, c := range []struct {
		at   time.Time
		want time.Duration
	}{
		{began.Add(29 * time.Second), 29 * time.Second}, // stamped before the snapshot showed it
		{taken, 30 * time.Second},
		{time.Time{}, 30 * time.Second},             // no stamp
		{began.Add(-time.Second), 30 * time.Second}, // before the hub started: not its stamp
		{taken.Add(time.Second), 30 * time.Second},  // after the snapshot: not its stamp
	} {
		if got := sinceWithin(began, c.at, taken); got != c.want {
			t.Errorf("sinceWithin(at %v) = %v, want %v", c.at, got, c.want)
		}
	}
	if got := later(later(time.Time{}, began), taken); !got.Equal(taken) {
		t.Errorf("later = %v, want %v", got, taken)
	}
	if got := later(taken, began); !got.Equal(taken) {
		t.Errorf("later kept %v, want %v", got, taken)
	}
}

// TestFleetIdleControlPlanes: the fleet table gives the control planes'
// CPU at rest with the hub and without it, and leaves the line out when
// either was not measured.
func TestFleetIdleControlPlanes(t *testing.T) {
	rep := testReport(ModeFleet)
	var table bytes.Buffer
	if err := rep.writeTable(&table); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`control planes' idle cpu, with the hub / without +11\.00% / 5\.00% of a core\n`).Match(table.Bytes()) {
		t.Errorf("the table lacks the control planes' idle cpu:\n%s", &table)
	}
	rep.Fleet.IdleFloorCost = nil
	table.Reset()
	if err := rep.writeTable(&table); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(table.String(), "control planes' idle cpu") {
		t.Errorf("the table tells an idle floor nobody measured:\n%s", &table)
	}
}

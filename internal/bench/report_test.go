package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	goldenfile "github.com/driftwatch/driftwatch/internal/golden"

	"github.com/prometheus/common/expfmt"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/driftgen"
)

// golden compares got with testdata/<name> (see internal/golden).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, name, got)
}

func TestHistogramQuantile(t *testing.T) {
	inf := math.Inf(+1)
	for _, tc := range []struct {
		name string
		h    Histogram
		q    float64
		want float64
	}{
		// rank 20 falls in (0.1, 0.2] holding 20: halfway.
		{"p50 interpolates", Histogram{40, map[float64]uint64{0.1: 10, 0.2: 30, 0.4: 40, inf: 40}}, 0.5, 0.15},
		// rank 39.6 falls in (0.2, 0.4] holding 10, 9.6 into it.
		{"p99 interpolates", Histogram{40, map[float64]uint64{0.1: 10, 0.2: 30, 0.4: 40, inf: 40}}, 0.99, 0.392},
		{"+Inf bucket absent", Histogram{40, map[float64]uint64{0.1: 10, 0.2: 30, 0.4: 40}}, 0.5, 0.15},
		{"first bucket from zero", Histogram{10, map[float64]uint64{0.1: 10}}, 0.5, 0.05},
		{"rank in +Inf gives the highest bound", Histogram{20, map[float64]uint64{0.1: 10, inf: 20}}, 0.99, 0.1},
	} {
		if got := tc.h.Quantile(tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := (Histogram{}).Quantile(0.5); !math.IsNaN(got) {
		t.Errorf("empty histogram: got %v, want NaN", got)
	}
}

// metricsText is an exposition with two mutating series, a read series and
// a WATCH series (left out), each with the apiserver's first buckets.
func metricsText(postFast, postSlow, applySlow, gets uint64) string {
	series := func(verb string, fast, slow uint64) string {
		var b strings.Builder
		for _, l := range []struct {
			le string
			n  uint64
		}{{"0.005", fast}, {"0.025", fast}, {"0.1", fast + slow}, {"1", fast + slow}, {"+Inf", fast + slow}} {
			b.WriteString(`apiserver_request_duration_seconds_bucket{component="apiserver",resource="deployments",verb="` + verb + `",le="` + l.le + `"} ` + itoa(l.n) + "\n")
		}
		b.WriteString(`apiserver_request_duration_seconds_sum{component="apiserver",resource="deployments",verb="` + verb + `"} 1` + "\n")
		b.WriteString(`apiserver_request_duration_seconds_count{component="apiserver",resource="deployments",verb="` + verb + `"} ` + itoa(fast+slow) + "\n")
		return b.String()
	}
	return "# HELP apiserver_request_duration_seconds Response latency.\n# TYPE apiserver_request_duration_seconds histogram\n" +
		series("POST", postFast, postSlow) + series("APPLY", 0, applySlow) + series("GET", gets, 0) + series("WATCH", 0, 99) +
		"# HELP other_total x\n# TYPE other_total counter\nother_total 3\n"
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

func TestParseRequestDurationsAndDelta(t *testing.T) {
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	before, err := ParseRequestDurations(strings.NewReader(metricsText(10, 0, 0, 5)), format)
	if err != nil {
		t.Fatal(err)
	}
	after, err := ParseRequestDurations(strings.NewReader(metricsText(10, 60, 40, 25)), format)
	if err != nil {
		t.Fatal(err)
	}
	if got := after[VerbsMutating].Count; got != 110 {
		t.Errorf("mutating count %d, want 110 (POST and APPLY, not WATCH)", got)
	}
	rows := apiserverLatencies([]string{"c1", "c2"}, map[string]RequestDurations{"c1": before}, map[string]RequestDurations{"c1": after})
	if len(rows) != 4 {
		t.Fatalf("rows: %+v", rows)
	}
	// 100 new mutating calls, all in (0.025, 0.1]: p50 at rank 50 halfway.
	m := rows[0]
	if m.Cluster != "c1" || m.Verbs != VerbsMutating || m.N != 100 {
		t.Fatalf("mutating row: %+v", m)
	}
	if want := msDuration(62500 * time.Microsecond); m.P50 != want {
		t.Errorf("mutating p50 %v, want %v", m.P50.dur(), want.dur())
	}
	if want := msDuration(99250 * time.Microsecond); m.P99 != want {
		t.Errorf("mutating p99 %v, want %v", m.P99.dur(), want.dur())
	}
	// 20 new reads, all at or below 5ms.
	if r := rows[1]; r.Verbs != VerbsRead || r.N != 20 || r.P50 != msDuration(2500*time.Microsecond) {
		t.Errorf("read row: %+v", r)
	}
	if r := rows[2]; r.Cluster != "c2" || r.N != 0 || r.P99 != 0 {
		t.Errorf("unscraped cluster row: %+v", r)
	}

	g, ok := apiserverGoal(&runReport{APIServer: rows})
	if !ok || !g.Met || !strings.Contains(g.Actual, "99.2ms on c1 (100 calls)") {
		t.Errorf("goal: %+v %v", g, ok)
	}
	rows[0].P99 = msDuration(1500 * time.Millisecond)
	if g, _ := apiserverGoal(&runReport{APIServer: rows}); g.Met {
		t.Errorf("1.5s p99 met the SLO: %+v", g)
	}
	if g, ok := apiserverGoal(&runReport{APIServerError: "cluster \"c1\": scrape: 403 Forbidden"}); !ok || g.Met {
		t.Errorf("failed scrape: %+v %v", g, ok)
	}
	if _, ok := apiserverGoal(&runReport{}); ok {
		t.Error("a run without apiserver figures has a goal")
	}
}

// failureSnapshot is a hub snapshot where c1 is synced and c2 unreachable,
// with one failed NodeID on each.
func failureSnapshot() (*hub.Snapshot, hub.NodeID, hub.NodeID, hub.NodeID) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 600_000_000, time.UTC)
	failed := hub.NewNodeID("c1", "bench", "a00001", hub.KindDeployment)
	gone := hub.NewNodeID("c2", "bench", "a00002", hub.KindConfigMap)
	missing := hub.NewNodeID("c2", "bench", "a00003", hub.KindService)
	snap := &hub.Snapshot{
		Clusters: []hub.ClusterStatus{
			{ClusterHealth: hub.ClusterHealth{Cluster: "c1", State: hub.ClusterSynced}},
			{ClusterHealth: hub.ClusterHealth{Cluster: "c2", State: hub.ClusterUnreachable, LastError: "cluster c2: dial tcp 127.0.0.1:1: connection refused"}},
		},
		Nodes: []hub.NodeStatus{
			{ID: failed, Status: hub.StatusFailed, Reason: "apply: admission webhook denied",
				Timeline: []hub.TimelineEntry{{At: at.Add(-time.Second), Step: hub.StepClassified}, {At: at, Step: hub.StepFailed, Detail: "admission webhook denied"}}},
			{ID: gone, Status: hub.StatusDrifted},
		},
	}
	// Snapshot.Node searches Nodes sorted by NodeID text.
	slices.SortFunc(snap.Nodes, func(a, b hub.NodeStatus) int { return strings.Compare(a.ID.String(), b.ID.String()) })
	return snap, failed, gone, missing
}

func TestExplainFailures(t *testing.T) {
	snap, failed, gone, missing := failureSnapshot()
	t0 := time.Date(2025, 1, 2, 3, 4, 0, 0, time.UTC)
	ok := hub.NewNodeID("c1", "bench", "a00004", hub.KindDeployment)
	samples := []Sample{
		{Step: Step{Target: Target{ID: ok}, Action: driftgen.ActionScale}, Start: t0, Floor: t0, Detect: t0, Applied: t0, Repair: t0},
		{Step: Step{Target: Target{ID: failed}, Action: driftgen.ActionImage}, Start: t0, Floor: t0, Observed: t0, Detect: t0},
		{Step: Step{Target: Target{ID: gone}, Action: driftgen.ActionDelete}, Start: t0, Err: errors.New("delete: connection refused")},
		{Step: Step{Target: Target{ID: missing}, Action: driftgen.ActionUnlabel}, Start: t0},
	}
	got := explainFailures(samples, snap)
	want := []failureReport{
		{Cluster: "c1", NodeID: failed.String(), Action: "image", Seen: "floor, hub-event, detect",
			HubStatus: "failed", HubReason: "apply: admission webhook denied", LastStep: "repair failed: admission webhook denied at 03:04:05.600",
			ClusterState: "synced"},
		{Cluster: "c2", NodeID: gone.String(), Action: "delete", DriftError: "delete: connection refused", Seen: "nothing",
			HubStatus: "drifted", ClusterState: "unreachable", ClusterError: "cluster c2: dial tcp 127.0.0.1:1: connection refused"},
		{Cluster: "c2", NodeID: missing.String(), Action: "unlabel", Seen: "nothing",
			HubStatus: "not in the hub's snapshot", ClusterState: "unreachable", ClusterError: "cluster c2: dial tcp 127.0.0.1:1: connection refused"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("failures:\n got %+v\nwant %+v", got, want)
	}

	// A hub that never synced: every object not in sync, no drift action.
	specs := []hub.NodeSpec{{ID: failed}, {ID: gone}, {ID: ok}}
	snap.Nodes = append(snap.Nodes, hub.NodeStatus{ID: ok, Status: hub.StatusInSync})
	slices.SortFunc(snap.Nodes, func(a, b hub.NodeStatus) int { return strings.Compare(a.ID.String(), b.ID.String()) })
	unsynced := explainUnsynced(specs, snap)
	if len(unsynced) != 2 || unsynced[0].NodeID != failed.String() || unsynced[1].ClusterState != "unreachable" || unsynced[0].Action != "" {
		t.Fatalf("unsynced: %+v", unsynced)
	}

	// Both outputs carry them: the table, and JSON.
	rep := testReport(ModeWatch)
	rep.Runs[0].Failures = got
	var text bytes.Buffer
	if err := rep.writeTable(&text); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"watch: drifts not seen repaired: 3", failed.String(), "repair failed: admission webhook denied at 03:04:05.600",
		"drift call: delete: connection refused", "not in the hub's snapshot", "unreachable", "dial tcp 127.0.0.1:1"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, &text)
		}
	}
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"failures":[`, `"hubStatus":"failed"`, `"clusterError":"cluster c2: dial tcp`, `"lastStep":"repair failed`} {
		if !bytes.Contains(js, []byte(s)) {
			t.Errorf("json lacks %s: %s", s, js)
		}
	}

	// The table lists failuresShown, then says how many more.
	many := make([]failureReport, failuresShown+5)
	for i := range many {
		many[i] = got[0]
	}
	var b bytes.Buffer
	writeFailures(&b, "burst: drifts not seen repaired", many)
	if n := strings.Count(b.String(), failed.String()); n != failuresShown || !strings.Contains(b.String(), "... and 5 more (all of them in -o json)") {
		t.Errorf("%d rows:\n%s", n, &b)
	}
}

// testLatency is a latency summary built from base, microsecond-exact.
func testLatency(n int, base time.Duration) latencyReport {
	return latencyReport{N: n, P50: msDuration(base), P95: msDuration(2 * base), P99: msDuration(3 * base), Max: msDuration(4*base + 7*time.Microsecond)}
}

// testRun is a run with every figure set.
func testRun(mode string, drifts int, base time.Duration) runReport {
	r := runReport{Mode: mode, Drifts: drifts, Repaired: drifts - 1, Failed: 1, FirstError: "delete: not found",
		runLatencies: runLatencies{Floor: testLatency(drifts, base), Observed: testLatency(drifts, base+100*time.Microsecond), Detect: testLatency(drifts, base+200*time.Microsecond),
			Applied: testLatency(drifts, 3*base), Repair: testLatency(drifts, 4*base)},
		Sync: msDuration(1234567 * time.Microsecond), Issue: msDuration(9876543 * time.Microsecond), Elapsed: msDuration(10123456 * time.Microsecond),
		RepairsPerSecond: float64(drifts-1) / 10.123456, CPU: msDuration(4321 * time.Millisecond), PeakRSS: 123 << 20, PeakAnonRSS: 45 << 20, PeakFileRSS: 78 << 20,
		ByAction: map[string]actionReport{},
	}
	for i, a := range []driftgen.Action{driftgen.ActionDelete, driftgen.ActionScale, driftgen.ActionImage, driftgen.ActionUnlabel} {
		d := time.Duration(i+1) * time.Millisecond
		r.ByAction[string(a)] = actionReport{Floor: testLatency(drifts/4, base+d), Detect: testLatency(drifts/4, base+2*d), Repair: testLatency(drifts/4, 4*base+d)}
	}
	if mode == ModeBurst {
		r.TimedOut = true
		r.APIServer = []apiserverLatency{
			{Cluster: "c1", Verbs: VerbsMutating, N: 2103, P50: msDuration(12345 * time.Microsecond), P99: msDuration(456789 * time.Microsecond)},
			{Cluster: "c1", Verbs: VerbsRead, N: 420, P50: msDuration(3210 * time.Microsecond), P99: msDuration(24680 * time.Microsecond)},
			{Cluster: "c2", Verbs: VerbsMutating, N: 3, P50: msDuration(4 * time.Millisecond), P99: msDuration(9 * time.Millisecond)},
			{Cluster: "c2", Verbs: VerbsRead, N: 0},
		}
	}
	r.Failures = []failureReport{{Cluster: "c1", NodeID: "c1:bench/a00001:Deployment", Action: "delete", DriftError: "delete: not found", Seen: "nothing",
		HubStatus: "in-sync", LastStep: "repair verified at 03:04:05.000", ClusterState: "synced"}}
	return r
}

// testReport is a report of mode with every figure the mode has set, as
// Run builds it (finish included).
func testReport(mode string) *benchReport {
	o := Options{Mode: mode, Clusters: 2, Objects: 300, Drifts: 200, Rate: 20, Interval: 10 * time.Second, Burst: 1000, Seed: 7, Output: "json", Idle: 5 * time.Second}
	rep := &benchReport{Mode: mode, Clusters: 2, ObjectsPerCluster: 300, Mix: objectMix{120, 100, 80}, Seed: 7, QPS: 0, Workers: 4,
		CPUs: 2, LoadBefore: "0.52 0.61 0.70"}
	switch mode {
	case ModeFleet:
		o.Clusters, o.APIServers, o.Objects, o.Rate, o.Duration, o.Idle = 250, 3, 100, 1, 30*time.Second, 10*time.Second
		rep.Clusters, rep.APIServers, rep.ObjectsPerCluster, rep.Mix = 250, 3, 100, objectMix{Deployments: 50, ConfigMaps: 50}
		rep.Drifts, rep.Rate, rep.Schedule = 7500, 1, "9d0c1e22"
		rep.Fleet = &fleetReport{Entries: 250, APIServers: 3, ObjectsPerEntry: 100, Objects: 25000, Mix: rep.Mix,
			ClustersSynced: msDuration(4321 * time.Millisecond), ColdSync: msDuration(28765432 * time.Microsecond),
			PeakRSS: 900 << 20, RSS: 700 << 20, HeapInUse: 300 << 20, BytesPerObject: 9876.5, OpenFDs: 260, Goroutines: 4100,
			IdleCPU: msDuration(1234567 * time.Microsecond), IdleFor: msDuration(10 * time.Second), IdleCPUPercent: 12.34567,
			DriftFor: msDuration(30 * time.Second), CreateFloor: msDuration(25432100 * time.Microsecond), CreateFloorConcurrency: 64,
			CreateFloorAfter:     msDuration(27432100 * time.Microsecond),
			CreateWatchFloor:     msDuration(27012300 * time.Microsecond),
			CreateWatchFloorCost: &spanCost{ProcessCPU: msDuration(10 * time.Second), ControlPlaneCPU: msDuration(79 * time.Second), Mutating: 25000, Reads: 780},
			CreateFloorCost:      &spanCost{ProcessCPU: msDuration(8 * time.Second), ControlPlaneCPU: msDuration(70 * time.Second), Mutating: 25000, Reads: 30},
			CreateFloorAfterCost: &spanCost{ProcessCPU: msDuration(9 * time.Second), ControlPlaneCPU: msDuration(72 * time.Second), Mutating: 25000, Reads: 31},
			ColdSyncCost:         &spanCost{ProcessCPU: msDuration(22 * time.Second), ProcessGC: msDuration(9 * time.Second), ControlPlaneCPU: msDuration(80 * time.Second), Mutating: 25250, Reads: 1040, Cores: 2, CoresBusy: 1.97},
			IdleCost:             &spanCost{ProcessCPU: msDuration(1234 * time.Millisecond), ControlPlaneCPU: msDuration(1100 * time.Millisecond), Span: msDuration(10 * time.Second)},
			IdleFloorCost:        &spanCost{ControlPlaneCPU: msDuration(500 * time.Millisecond), Span: msDuration(10 * time.Second)}}
		r := testRun(ModeFleet, 7500, 3*time.Millisecond)
		r.Cost = &spanCost{ProcessCPU: msDuration(13 * time.Second), ProcessGC: msDuration(6 * time.Second), ControlPlaneCPU: msDuration(53 * time.Second), Mutating: 15000, Reads: 20, Cores: 2, CoresBusy: 1.97}
		floor := testLatency(7500, 5*time.Millisecond)
		r.RepairFloorLatency, r.RepairFloorConcurrency = &floor, 64
		r.RepairFloorCost = &spanCost{ProcessCPU: msDuration(9 * time.Second), ProcessGC: msDuration(3 * time.Second), ControlPlaneCPU: msDuration(40 * time.Second), Mutating: 15000, Reads: 20, Cores: 2, CoresBusy: 1.6}
		rep.Runs = append(rep.Runs, r)
	case ModeScale:
		rep.Scale = &scaleReport{Objects: 600, Mix: objectMix{240, 200, 160}, Precreate: msDuration(3456789 * time.Microsecond),
			InitialSync: msDuration(2345678 * time.Microsecond), PeakRSS: 300 << 20, RSS: 250 << 20, HeapInUse: 90 << 20,
			BytesPerObject: 12143.5, IdleCPU: msDuration(123456 * time.Microsecond), IdleFor: msDuration(5 * time.Second),
			IdleCPUPercent: 2.46912, SyncFailed: true,
			Failures: []failureReport{{Cluster: "c2", NodeID: "c2:bench/a00002:ConfigMap", HubStatus: "unknown", ClusterState: "connecting", ClusterError: "cluster c2: list configmaps: timeout"}}}
	default:
		rep.Drifts, rep.Rate, rep.Schedule = 200, 20, "3f2a9c01"
		if mode == ModeWatch || mode == ModeAll {
			rep.Runs = append(rep.Runs, testRun(ModeWatch, 200, 2*time.Millisecond))
		}
		if mode == ModePoll || mode == ModeAll {
			rep.Runs = append(rep.Runs, testRun(ModePoll, 200, 4*time.Second))
		}
		if mode == ModeBurst || mode == ModeAll {
			r := testRun(ModeBurst, 1000, 900*time.Millisecond)
			r.RepairFloor, r.RepairFloorConcurrency, r.RepairFloorDeletes = msDuration(5*time.Second), 11, msDuration(4321*time.Millisecond)
			r.Others = &othersReport{Clusters: []string{"c2", "c3"}, RatePerCluster: 20, Window: msDuration(1100 * time.Millisecond), Drifts: 44, Repaired: 43, Failed: 1,
				runLatencies: runLatencies{Floor: testLatency(44, 3*time.Millisecond), Observed: testLatency(44, 3100*time.Microsecond), Detect: testLatency(44, 3200*time.Microsecond),
					Applied: testLatency(44, 8*time.Millisecond), Repair: testLatency(44, 9*time.Millisecond)},
				BurstRepaired: 1000, BurstElapsed: msDuration(1234 * time.Millisecond),
				Failures: []failureReport{{Cluster: "c3", NodeID: "c3:bench/a00007:ConfigMap", Action: "unlabel", Seen: "the drift", HubStatus: "repairing", ClusterState: "synced"}}}
			rep.Runs = append(rep.Runs, r)
		}
	}
	rep.finish(o)
	return rep
}

// TestJSONCompleteEveryMode: for a report of each mode, -o json carries
// every figure the table prints: the table of the report decoded from the
// JSON is the table of the report, and the decoded report equals it.
func TestJSONCompleteEveryMode(t *testing.T) {
	for _, mode := range []string{ModeWatch, ModePoll, ModeBurst, ModeAll, ModeScale, ModeFleet} {
		t.Run(mode, func(t *testing.T) {
			rep := testReport(mode)
			js, err := json.Marshal(rep)
			if err != nil {
				t.Fatal(err)
			}
			var back benchReport
			if err := json.Unmarshal(js, &back); err != nil {
				t.Fatal(err)
			}
			var want, got bytes.Buffer
			if err := rep.writeTable(&want); err != nil {
				t.Fatal(err)
			}
			if err := back.writeTable(&got); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("the table from the JSON differs:\n%s\nwant:\n%s", &got, &want)
			}
			if !reflect.DeepEqual(&back, rep) {
				t.Errorf("the JSON does not carry the whole report:\n got %+v\nwant %+v", back, *rep)
			}
			// Sanity: the figures of the mode are there.
			for _, s := range map[string][]string{
				ModeWatch: {"watch by action", "watch detect p99 / floor p99"},
				ModePoll:  {"poll", "resync alone"},
				ModeBurst: {"burst: each apiserver's own request latency", "apiserver mutating p99 under 1s (Kubernetes SLO) during the burst  met",
					"burst: raw repair floor (the 1000 objects deleted again, 32 at a time, each applied again by a plain client once deleted, 11 at a time) 5.00s after the hub, its deletes done after 4.32s", "(2.02x the floor)", "burst all repaired / raw repair floor         2.02x",
					"burst all repaired within 1.5x the raw repair floor",
					"burst: the same burst again with the other clusters drifting meanwhile (c2, c3: 20/s each over 1.10s, the floor's length before the hub); the burst all repaired in 1.23s (1000 of 1000), the other clusters' drifts 43 of 44 repaired",
					"burst with the other clusters drifting: drifts not seen repaired: 1", "c3:bench/a00007:ConfigMap",
					"note: other clusters: once the burst's floors are measured, a second fresh hub takes the same burst",
					"repair     44  9.00ms  18.0ms  27.0ms  36.0ms",
					"the other clusters' repair p99 during the burst under 250.0ms      MISSED  27.0ms (43/44 repaired; floor p99 9.00ms)",
					"burst other clusters' repair p99 / floor p99  3.00x"},
				ModeAll:   {"poll detect p50 / watch detect p50", "apiserver  verb-class  n"},
				ModeScale: {"hub heap per managed object", "2.47% of a core", "scale: the hub never showed every object in sync"},
				ModeFleet: {"250 cluster entries on 3 apiserver(s) x 100 objects", "fleet by action", "cold sync (hub start to every object created and in sync)",
					"fleet cold sync of 250 entries x 100 objects under 30.00s  met",
					"28.77s (1.09x the raw create floor)", "raw create floor (a plain client, the same bodies, 64 at a time)  26.43s (before the hub 25.43s, after it 27.43s)",
					"raw create floor's cost (after the hub)", "27.01s (the cold sync 1.06x it)", "raw create floor with watches' cost", "fleet cold sync / raw create floor with watches", "fleet cold sync / raw create floor                   1.09x", "fleet cold sync within 1.3x the raw create floor", "12.35% over 10.00s", "fleet steady rss under 1 GiB",
					"fleet repair p99 under 250.0ms at 1 drifts/s per entry", "260 / 4100",
					"fleet repair p99 within 2x the raw-watch floor p99         MISSED  4.00x (36.0ms vs 9.00ms)", "fleet repair p99 / floor p99                         4.00x",
					"raw repair floor (a plain client, the same drifts, 64 at a time)  repair p50 5.00ms, p99 15.0ms; the hub's p99 36.0ms (2.40x the floor)",
					"fleet repair p99 / raw repair floor p99              2.40x", "fleet raw repair floor: after the drift run's hub stopped",
					"raw repair floor's cost (first drift to last repair)              control planes 40.00s",
					"cpu per object created (control planes and this process)          cold sync 4.08ms, raw create floor 3.18ms",
					"cpu per drift (control planes and this process)                   hub 8.80ms, raw repair floor 6.53ms; the machine's cores give 8.00ms a drift at 250 drifts/s",
					"fleet cold sync cpu per object / raw create floor's  1.28x", "fleet drift run cpu per drift / raw repair floor's   1.35x"},
			}[mode] {
				if !strings.Contains(want.String(), s) {
					t.Errorf("table lacks %q:\n%s", s, &want)
				}
			}
		})
	}
}

// TestCompareGolden compares two fixed reports of --mode all
// (testdata/compare-old.json, compare-new.json) and two of --mode scale.
func TestCompareGolden(t *testing.T) {
	for _, tc := range []struct {
		old, new, golden string
		want             []string
	}{
		{"compare-old.json", "compare-new.json", "compare-all.golden",
			[]string{"watch detect p99", "worse", "better", "burst apiserver c1 mutating p99", "burst repairs/s", "old: target MISSED"}},
		{"compare-scale-old.json", "compare-scale-new.json", "compare-scale.golden",
			[]string{"scale hub heap per object", "note: the runs differ in objects"}},
	} {
		var out bytes.Buffer
		if err := CompareFiles(&out, nil, filepath.Join("testdata", tc.old), filepath.Join("testdata", tc.new)); err != nil {
			t.Fatal(err)
		}
		golden(t, tc.golden, out.Bytes())
		// The new report from stdin (-): the same table, naming it -.
		data, err := os.ReadFile(filepath.Join("testdata", tc.new))
		if err != nil {
			t.Fatal(err)
		}
		var viaStdin bytes.Buffer
		if err := CompareFiles(&viaStdin, bytes.NewReader(data), filepath.Join("testdata", tc.old), "-"); err != nil {
			t.Fatal(err)
		}
		if want := strings.ReplaceAll(out.String(), filepath.Join("testdata", tc.new), "-"); viaStdin.String() != want {
			t.Errorf("%s with the new report on stdin:\n%s\nwant:\n%s", tc.golden, &viaStdin, want)
		}
		for _, s := range tc.want {
			if !strings.Contains(out.String(), s) {
				t.Errorf("%s lacks %q", tc.golden, s)
			}
		}
	}
	var out bytes.Buffer
	if err := CompareFiles(&out, nil, filepath.Join("testdata", "compare-old.json"), filepath.Join("testdata", "nope.json")); err == nil {
		t.Error("a missing report compared")
	}
	if err := CompareFiles(&out, nil, filepath.Join("testdata", "compare-all.golden"), filepath.Join("testdata", "compare-new.json")); err == nil || !strings.Contains(err.Error(), "not a bench report") {
		t.Errorf("a text file compared: %v", err)
	}
	if err := CompareFiles(&out, strings.NewReader("{}"), "-", "-"); err == nil || !strings.Contains(err.Error(), "only one report") {
		t.Errorf("both reports from stdin: %v", err)
	}
}

// exposition returns a text exposition shaped like a busy apiserver's: the
// request latency family (as metricsText makes it) among families other
// families of series with several labels each, one of whose names has the
// latency family's name as a prefix.
func exposition(families, series int) string {
	var b strings.Builder
	b.WriteString("# HELP apiserver_request_duration_seconds_total_x Lookalike.\n# TYPE apiserver_request_duration_seconds_total_x counter\n")
	b.WriteString("apiserver_request_duration_seconds_total_x{verb=\"POST\"} 7\n")
	for f := range families {
		name := "etcd_request_duration_seconds_" + strconv.Itoa(f)
		b.WriteString("# HELP " + name + " Some family.\n# TYPE " + name + " counter\n")
		for s := range series {
			b.WriteString(name + `{group="apps",resource="deployments",scope="namespace",subresource="",verb="PATCH",version="v1",n="` + strconv.Itoa(s) + `"} ` + strconv.Itoa(s) + "\n")
		}
		if f == families/2 {
			b.WriteString(metricsText(10, 60, 40, 25))
		}
	}
	return b.String()
}

func TestFamilyLines(t *testing.T) {
	long := strings.Repeat("x", 150<<10) // longer than the reader's buffer
	in := "# HELP other_total x\n# TYPE other_total counter\nother_total{v=\"" + long + "\"} 1\n" +
		"# HELP fam Latency.\n# TYPE fam histogram\n" +
		"fam_bucket{le=\"0.1\",v=\"" + long + "\"} 3\nfam_bucket{le=\"+Inf\"} 4\nfam_sum 1.5\nfam_count{} 4\n" +
		"famous_total 9\nfam_sum_more{} 1\n# a comment\nfam 2"
	want := "# HELP fam Latency.\n# TYPE fam histogram\n" +
		"fam_bucket{le=\"0.1\",v=\"" + long + "\"} 3\nfam_bucket{le=\"+Inf\"} 4\nfam_sum 1.5\nfam_count{} 4\nfam 2"
	for _, oneByte := range []bool{false, true} {
		var r io.Reader = familyLines(strings.NewReader(in), "fam")
		if oneByte {
			r = iotest.OneByteReader(r)
		}
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("one byte reads %v: got %d bytes %.200q..., want %d bytes", oneByte, len(got), got, len(want))
		}
	}
}

func TestParseRequestDurationsFiltered(t *testing.T) {
	text := exposition(20, 50)
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	all, err := parseRequestDurations(strings.NewReader(text), format, false)
	if err != nil {
		t.Fatal(err)
	}
	filtered, err := ParseRequestDurations(strings.NewReader(text), format)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(all, filtered) {
		t.Errorf("filtered parse %+v, want %+v", filtered, all)
	}
	if filtered[VerbsMutating].Count != 110 || filtered[VerbsRead].Count != 25 {
		t.Errorf("counts: %+v", filtered)
	}
}

// BenchmarkParseRequestDurations parses an exposition of about 2 MB, as a
// busy local apiserver serves (the request latency family about a tenth of
// it), the way the bench does at each measured span's ends (filtered)
// and, as the baseline, with every family parsed (all).
func BenchmarkParseRequestDurations(b *testing.B) {
	text := exposition(60, 150)
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	for _, filter := range []bool{true, false} {
		b.Run(map[bool]string{true: "filtered", false: "all"}[filter], func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := parseRequestDurations(strings.NewReader(text), format, filter); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestOthersTarget: the other clusters' target is met only when every one
// of their drifts was repaired and their repair p99 is under the bar.
func TestOthersTarget(t *testing.T) {
	for _, tc := range []struct {
		name     string
		repaired int
		p99      time.Duration
		met      bool
	}{
		{"all repaired, fast", 40, 30 * time.Millisecond, true},
		{"one not repaired", 39, 30 * time.Millisecond, false},
		{"queued behind the burst", 40, 600 * time.Millisecond, false},
		{"at the bar", 40, othersRepairBar, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runReport{Mode: ModeBurst, Drifts: 10, Repaired: 10, Elapsed: msDuration(time.Second),
				Others: &othersReport{Clusters: []string{"c2"}, Drifts: 40, Repaired: tc.repaired,
					runLatencies: runLatencies{Floor: latencyReport{N: 40, P99: msDuration(5 * time.Millisecond)}, Repair: latencyReport{N: tc.repaired, P99: msDuration(tc.p99)}}}}
			rep := &benchReport{Mode: ModeBurst, Runs: []runReport{r}}
			rep.finish(Options{Mode: ModeBurst, Rate: 20})
			var found bool
			for _, g := range rep.Targets {
				if strings.HasPrefix(g.Goal, "the other clusters' repair p99") {
					found = true
					if g.Met != tc.met {
						t.Errorf("met %v (%s), want %v", g.Met, g.Actual, tc.met)
					}
				}
			}
			if !found {
				t.Fatalf("no target for the other clusters: %+v", rep.Targets)
			}
			if want := float64(tc.p99) / float64(5*time.Millisecond); rep.Ratios == nil || rep.Ratios.BurstOthersRepairP99OverFloorP99 != want {
				t.Errorf("ratio %+v, want %.2f", rep.Ratios, want)
			}
		})
	}
}

// TestCompareBurstOthers: bench compare shows the other clusters' figures
// of the burst run and their ratio.
func TestCompareBurstOthers(t *testing.T) {
	old, cur := testReport(ModeBurst), testReport(ModeBurst)
	cur.Runs[0].Others.Repair.P99 = msDuration(600 * time.Millisecond)
	var out bytes.Buffer
	if err := Compare(&out, "old.json", old, "new.json", cur); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"burst other clusters' floor p99", "burst other clusters' detect p99",
		"burst other clusters' repair p99              27.0ms     600.0ms    +573.0ms  +2122.2%  worse",
		"burst other clusters' repair p99 / floor p99  3.00x      66.67x     +63.67x   +2122.2%  worse"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("compare lacks %q:\n%s", s, &out)
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/bench"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

func TestParseBench(t *testing.T) {
	var o bench.Options
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	addBenchFlags(fs, &o)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.Mode != bench.ModeAll || o.Clusters != 3 || o.Objects != 300 || o.Drifts != 200 || o.Rate != 20 ||
		o.Interval != 10*time.Second || o.Burst != 1000 || o.Output != "text" {
		t.Fatalf("defaults: %+v", o)
	}
	for _, args := range [][]string{
		{"--mode", "fast"}, {"-o", "yaml"}, {"--clusters", "0"}, {"--objects", "0"}, {"--drifts", "0"},
		{"--rate", "0"}, {"--interval", "0s"}, {"--burst", "0"}, {"--qps", "-1"}, {"extra"}, {"--nope"},
		{"--mode", "fleet", "--apiservers", "0"}, {"--mode", "fleet", "--duration", "0s"}, {"--mode", "fleet", "--clusters", "2", "--apiservers", "3"},
		{"--clusters", "250"},
		{"--mode", "git", "--pushes", "0"}, {"--mode", "git", "--objects", "601"}, {"--mode", "git", "--chart", "x.svg"},
	} {
		err := run(t.Context(), append([]string{"bench"}, args...), func(string) string { return "" }, io.Discard, io.Discard)
		var ee *app.ExitError
		if !errors.As(err, &ee) || ee.Code != 2 {
			t.Errorf("%v: got %v, want a usage error", args, err)
		}
	}
}

// TestBench runs a tiny `driftwatch bench --mode all` on two real local
// clusters and checks the table, the burst's second hub (the other
// cluster drifting meanwhile) included.
func TestBench(t *testing.T) {
	bins := lctest.BinDir(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	getenv := func(k string) string {
		if k == app.EnvBinDir {
			return bins
		}
		return ""
	}
	began := time.Now()
	err := run(ctx, []string{"bench", "--mode", "all", "--clusters", "2", "--objects", "12", "--drifts", "8",
		"--burst", "10", "--interval", "2s", "--dir", t.TempDir()}, getenv, out, errOut)
	if err != nil {
		t.Fatalf("bench: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	t.Logf("bench took %s; output:\n%s", time.Since(began).Round(time.Millisecond), out)
	rows := map[string][]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if _, ok := rows[f[0]+" "+f[1]]; !ok { // the tables come first
			rows[f[0]+" "+f[1]] = f
		}
	}
	for _, mode := range []string{"watch", "poll", "burst"} {
		for _, lat := range []string{"floor", "detect", "apply", "repair"} {
			f, ok := rows[mode+" "+lat]
			if !ok {
				t.Errorf("no %s %s row", mode, lat)
				continue
			}
			// mode latency n p50 p95 p99 max
			if len(f) != 7 || f[2] == "0" {
				t.Errorf("%s %s: %q", mode, lat, f)
				continue
			}
			for _, v := range f[3:] {
				if d := parseTableDuration(t, v); d <= 0 {
					t.Errorf("%s %s: %s is not positive", mode, lat, v)
				}
			}
		}
		want := map[string]string{"watch": "8", "poll": "8", "burst": "10"}[mode]
		// mode drifts repaired failed ...
		f, ok := rows[mode+" "+want]
		if !ok || f[2] != want || f[3] != "0" {
			t.Errorf("%s summary row: %q (want %s drifts, all repaired, none failed)", mode, f, want)
		}
	}
	for _, s := range []string{"poll detect p50 / watch detect p50", "watch detect p99 / floor p99", "burst of 10 deletes fully repaired in under 15s",
		"burst: raw repair floor (the 10 objects deleted again, 32 at a time, each applied again by a plain client once deleted, ", " before the hub and ", " after it, its deletes done after ", "the floors' mean)", "burst all repaired / raw repair floor", "burst all repaired within 1.5x the raw repair floor"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q", s)
		}
	}
	// The burst's second hub: the other cluster's drifts, every one
	// repaired, each latency row positive, and their target.
	m := regexp.MustCompile(`burst: the same burst again with the other clusters drifting meanwhile \(c2: 20/s each over [^)]*\); the burst all repaired in \S+ \(10 of 10\), the other clusters' drifts (\d+) of (\d+) repaired`).FindStringSubmatch(out.String())
	if m == nil || m[1] != m[2] || m[1] == "0" {
		t.Errorf("no line of the other cluster's drifts, all repaired: %q", m)
	}
	lines := strings.Split(out.String(), "\n")
	others := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "others ") })
	if others < 0 || others+5 >= len(lines) {
		t.Fatalf("no table of the other cluster's drifts")
	}
	for i, lat := range []string{"floor", "hub-event", "detect", "apply", "repair"} {
		f := strings.Fields(lines[others+1+i])
		if len(f) != 6 || f[0] != lat || (m != nil && f[1] != m[2]) {
			t.Errorf("others %s row: %q", lat, f)
			continue
		}
		for _, v := range f[2:] {
			if d := parseTableDuration(t, v); d <= 0 {
				t.Errorf("others %s: %s is not positive", lat, v)
			}
		}
	}
	if !strings.Contains(out.String(), "the other clusters' repair p99 during the burst under 250.0ms") {
		t.Errorf("output lacks the other clusters' target")
	}
	// Polling every 2s must be much slower to detect than the watch.
	if p, w := parseTableDuration(t, rows["poll detect"][3]), parseTableDuration(t, rows["watch detect"][3]); p < 5*w {
		t.Errorf("poll detect p50 %s is not 5x watch detect p50 %s", p, w)
	}
}

// parseTableDuration parses a table cell such as "4.12ms" or "2.50s".
func parseTableDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	unit := time.Second
	num := strings.TrimSuffix(s, "s")
	if strings.HasSuffix(num, "m") {
		unit, num = time.Millisecond, strings.TrimSuffix(num, "m")
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		t.Fatalf("cell %q: %v", s, err)
	}
	return time.Duration(v * float64(unit))
}

// TestBenchFleet runs a tiny `driftwatch bench --mode fleet` (4 cluster
// entries on 2 real local apiservers, 5 objects each) and checks the JSON
// report: every entry synced, every object created, memory and idle CPU
// measured, every drift repaired, and the fleet's targets reported.
func TestBenchFleet(t *testing.T) {
	bins := lctest.BinDir(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	getenv := func(k string) string {
		if k == app.EnvBinDir {
			return bins
		}
		return ""
	}
	err := run(ctx, []string{"bench", "--mode", "fleet", "--clusters", "4", "--apiservers", "2", "--objects", "5",
		"--rate", "1", "--duration", "4s", "--idle", "1s", "-o", "json", "--dir", t.TempDir()}, getenv, out, errOut)
	if err != nil {
		t.Fatalf("bench: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	var rep struct {
		Clusters   int `json:"clusters"`
		APIServers int `json:"apiservers"`
		Drifts     int `json:"drifts"`
		Fleet      struct {
			Entries        int     `json:"entries"`
			Objects        int     `json:"objects"`
			ClustersSynced float64 `json:"clustersSyncedMs"`
			ColdSync       float64 `json:"coldSyncMs"`
			RSS            uint64  `json:"steadyRSSBytes"`
			HeapInUse      uint64  `json:"heapInUseBytes"`
			IdleFor        float64 `json:"idleForMs"`
			IdleCPUPercent float64 `json:"idleCPUPercentOfCore"`
			SyncFailed     bool    `json:"syncFailed"`
			CreateFloor    float64 `json:"createFloorMs"`
			FloorInFlight  int     `json:"createFloorConcurrency"`
			FloorError     string  `json:"createFloorError"`
			FloorAfter     float64 `json:"createFloorAfterMs"`
			FloorAfterErr  string  `json:"createFloorAfterError"`
			WatchFloor     float64 `json:"createWatchFloorMs"`
			WatchFloorErr  string  `json:"createWatchFloorError"`
			WatchFloorCost *struct {
				Mutating int `json:"mutatingCalls"`
			} `json:"createWatchFloorCost"`
		} `json:"fleet"`
		Runs []struct {
			Mode     string `json:"mode"`
			Drifts   int    `json:"drifts"`
			Repaired int    `json:"repaired"`
			Failed   int    `json:"failed"`
			Detect   struct {
				N   int     `json:"n"`
				P99 float64 `json:"p99Ms"`
			} `json:"detect"`
			Repair struct {
				N   int     `json:"n"`
				P99 float64 `json:"p99Ms"`
			} `json:"repair"`
			ByAction    map[string]any `json:"byAction"`
			RepairFloor *struct {
				N   int     `json:"n"`
				P50 float64 `json:"p50Ms"`
				P99 float64 `json:"p99Ms"`
			} `json:"repairFloorLatency"`
			RepairFloorInFlight int    `json:"repairFloorConcurrency"`
			RepairFloorError    string `json:"repairFloorError"`
			RepairFloorCost     *struct {
				Mutating int `json:"mutatingCalls"`
			} `json:"repairFloorCost"`
		} `json:"runs"`
		Ratios struct {
			OverRepairFloor float64 `json:"fleetRepairP99OverRepairFloorP99"`
			OverWatchFloor  float64 `json:"fleetColdSyncOverCreateWatchFloor"`
		} `json:"ratios"`
		Targets []struct {
			Goal string `json:"goal"`
		} `json:"targets"`
	}
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	t.Logf("report:\n%s", out)
	f := rep.Fleet
	if rep.Clusters != 4 || rep.APIServers != 2 || f.Entries != 4 || f.Objects != 20 || f.SyncFailed {
		t.Errorf("fleet: %d entries on %d apiservers, %+v", rep.Clusters, rep.APIServers, f)
	}
	if f.ClustersSynced <= 0 || f.ColdSync < f.ClustersSynced || f.RSS == 0 || f.HeapInUse == 0 || f.IdleFor != 1000 {
		t.Errorf("fleet figures: %+v", f)
	}
	if f.CreateFloor <= 0 || f.FloorInFlight < 1 || f.FloorError != "" || f.FloorAfter <= 0 || f.FloorAfterErr != "" {
		t.Errorf("fleet raw create floor: %v ms before the hub, %v ms after it, %d in flight, errors %q, %q", f.CreateFloor, f.FloorAfter, f.FloorInFlight, f.FloorError, f.FloorAfterErr)
	}
	// The watched floor's time ends once its watches saw all 20 objects
	// created (it fails otherwise); its 20 creates and 4 namespaces are
	// among the apiservers' mutating calls.
	if f.WatchFloor <= 0 || f.WatchFloorErr != "" || f.WatchFloorCost == nil || f.WatchFloorCost.Mutating < 24 || rep.Ratios.OverWatchFloor <= 0 {
		t.Errorf("fleet raw create floor with watches: %v ms, error %q, cost %+v, ratio %v", f.WatchFloor, f.WatchFloorErr, f.WatchFloorCost, rep.Ratios.OverWatchFloor)
	}
	if !strings.Contains(errOut.String(), "its 12 raw watches saw all 20 objects created") {
		t.Errorf("the watched floor's progress does not say its 12 watches (4 entries x 3 kinds) saw the 20 objects:\n%s", errOut)
	}
	// 4 entries x 1 drift/s x 4s: each object drifts at most once (5 per
	// entry), so no drift can supersede another.
	if rep.Drifts != 16 || len(rep.Runs) != 1 {
		t.Fatalf("%d drifts, runs %+v", rep.Drifts, rep.Runs)
	}
	r := rep.Runs[0]
	if r.Mode != "fleet" || r.Drifts != 16 || r.Repaired != 16 || r.Failed != 0 || r.Detect.N != 16 || r.Repair.N != 16 || r.Repair.P99 <= 0 || len(r.ByAction) == 0 {
		t.Errorf("fleet run: %+v", r)
	}
	// The raw repair floor made the same 16 drifts again and saw each
	// repaired by its plain client: 16 drifts and 16 repairs written.
	if fl := r.RepairFloor; r.RepairFloorError != "" || fl == nil || fl.N != 16 || fl.P50 <= 0 || fl.P99 < fl.P50 ||
		r.RepairFloorInFlight < 1 || r.RepairFloorCost == nil || r.RepairFloorCost.Mutating < 32 || rep.Ratios.OverRepairFloor <= 0 {
		t.Errorf("fleet raw repair floor: %+v, %d in flight, error %q, cost %+v, ratio %v", fl, r.RepairFloorInFlight, r.RepairFloorError, r.RepairFloorCost, rep.Ratios.OverRepairFloor)
	}
	var goals []string
	for _, g := range rep.Targets {
		goals = append(goals, g.Goal)
	}
	for _, want := range []string{"fleet cold sync", "fleet cold sync within 1.3x the raw create floor", "fleet steady rss", "fleet idle cpu", "fleet repair p99 under", "fleet repair p99 within 2x the raw-watch floor p99"} {
		if !strings.Contains(strings.Join(goals, "\n"), want) {
			t.Errorf("targets lack %q: %q", want, goals)
		}
	}
}

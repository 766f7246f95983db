package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// TestInterleave checks that the raw floors take the specs in turn across
// clusters, each cluster's in order, as the hub's writers do.
func TestInterleave(t *testing.T) {
	spec := func(cluster, name string) hub.NodeSpec {
		return hub.NodeSpec{ID: hub.NewNodeID(cluster, "n", name, hub.KindConfigMap)}
	}
	in := []hub.NodeSpec{spec("a", "1"), spec("a", "2"), spec("a", "3"), spec("b", "1"), spec("c", "1"), spec("c", "2")}
	var got []string
	for _, s := range interleave(in) {
		got = append(got, s.ID.Cluster+s.ID.Name())
	}
	if want := "a1 b1 c1 a2 c2 a3"; strings.Join(got, " ") != want {
		t.Errorf("interleave: %v, want %s", got, want)
	}
	if len(interleave(nil)) != 0 {
		t.Error("interleave of nothing is not empty")
	}
}

// TestInNamespace checks that a floor spec moves to its own namespace in
// its body and its URL, and nothing else changes.
func TestInNamespace(t *testing.T) {
	s := hub.NodeSpec{ID: hub.NewNodeID("f1", "fleet-f1", "a", hub.KindConfigMap),
		Namespace: "fleet-f1", Name: "a",
		Body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"fleet-f1","labels":{"x":"y"}},"data":{"k":"v"}}`)}
	got, err := inNamespace(s, floorNamespace(s.Namespace))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(got.Body, &obj); err != nil {
		t.Fatal(err)
	}
	md := obj["metadata"].(map[string]any)
	if got.Namespace != "floor-fleet-f1" || md["namespace"] != "floor-fleet-f1" || md["name"] != "a" || got.Name != "a" ||
		md["labels"].(map[string]any)["x"] != "y" || obj["data"].(map[string]any)["k"] != "v" {
		t.Errorf("moved spec %s: %s", got.Namespace, got.Body)
	}
	if !strings.Contains(string(s.Body), `"namespace":"fleet-f1"`) {
		t.Errorf("the original body changed: %s", s.Body)
	}
	if _, err := inNamespace(hub.NodeSpec{ID: s.ID, Body: []byte(`{"kind":"ConfigMap"}`)}, "x"); err == nil || !strings.Contains(err.Error(), s.ID.String()) {
		t.Errorf("a body without metadata: %v", err)
	}
}

// TestBurstRepairFloorReport checks the burst's raw repair floor: its ratio
// and target in the report, and its figures in bench compare.
func TestBurstRepairFloorReport(t *testing.T) {
	for _, tc := range []struct {
		floor time.Duration
		met   bool
	}{{10 * time.Second, true}, {5 * time.Second, false}} {
		rep := testReport(ModeBurst)
		r := &rep.Runs[0]
		r.RepairFloor = msDuration(tc.floor)
		r.Repaired = r.Drifts
		rep.Targets, rep.Notes, rep.Ratios = nil, nil, nil
		rep.finish(Options{Mode: ModeBurst, Rate: 1})
		want := float64(r.Elapsed) / float64(tc.floor)
		if rep.Ratios == nil || rep.Ratios.BurstRepairedOverRepairFloor != want {
			t.Fatalf("floor %s: ratios %+v, want %.3f", tc.floor, rep.Ratios, want)
		}
		found := false
		for _, g := range rep.Targets {
			if strings.HasPrefix(g.Goal, "burst all repaired within 1.5x the raw repair floor") {
				found = true
				if g.Met != tc.met {
					t.Errorf("floor %s: target %+v, want met %v", tc.floor, g, tc.met)
				}
			}
		}
		if !found {
			t.Errorf("floor %s: no raw repair floor target in %+v", tc.floor, rep.Targets)
		}
	}
	// Measured before and after the hub, the burst is taken over the
	// floors' mean, and the table shows both.
	both := testReport(ModeBurst)
	br := &both.Runs[0]
	br.RepairFloorBefore, br.RepairFloor, br.Repaired = msDuration(6*time.Second), msDuration(10*time.Second), br.Drifts
	both.Targets, both.Notes, both.Ratios = nil, nil, nil
	both.finish(Options{Mode: ModeBurst, Rate: 1})
	if want := float64(br.Elapsed) / float64(8*time.Second); both.Ratios == nil || both.Ratios.BurstRepairedOverRepairFloor != want {
		t.Errorf("floors 6 s before and 10 s after: ratios %+v, want %.3f (over their mean)", both.Ratios, want)
	}
	var bothTable bytes.Buffer
	if err := both.writeTable(&bothTable); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(bothTable.String(), "6.00s before the hub and 10.00s after it") || !strings.Contains(bothTable.String(), "the floors' mean)") {
		t.Errorf("the table does not show both floors:\n%s", &bothTable)
	}
	// A floor measured only before the hub (the one after failed) is the
	// floor, the table says which, and the error keeps both floors' words.
	br.RepairFloor, br.RepairFloorError = 0, "before the hub: timeout"
	if br.repairFloor() != br.RepairFloorBefore {
		t.Error("a floor measured only before the hub is the floor")
	}
	both.Ratios = nil
	both.finish(Options{Mode: ModeBurst, Rate: 1})
	bothTable.Reset()
	if err := both.writeTable(&bothTable); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(bothTable.String(), "11 at a time) 6.00s before the hub, its deletes") || !strings.Contains(bothTable.String(), "x the floor)") {
		t.Errorf("the table does not show the floor before the hub alone:\n%s", &bothTable)
	}

	// A floor that failed says why, in the table and the JSON, and makes
	// no ratio.
	failed := testReport(ModeBurst)
	failed.Runs[0].RepairFloor, failed.Runs[0].RepairFloorError = 0, "cluster \"c1\": apply c1:bench/a00001:deployment: timeout"
	failed.Targets, failed.Notes, failed.Ratios = nil, nil, nil
	failed.finish(Options{Mode: ModeBurst, Rate: 1})
	var table bytes.Buffer
	if err := failed.writeTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), `burst: raw repair floor not measured: cluster "c1": apply c1:bench/a00001:deployment: timeout`) ||
		strings.Contains(table.String(), "within 1.5x the raw repair floor") || failed.Ratios != nil && failed.Ratios.BurstRepairedOverRepairFloor != 0 {
		t.Errorf("a failed floor:\n%s", &table)
	}
	if js, err := json.Marshal(failed); err != nil || !strings.Contains(string(js), `"repairFloorError":`) {
		t.Errorf("the JSON lacks the floor's error: %v", err)
	}

	old, cur := testReport(ModeBurst), testReport(ModeBurst)
	cur.Runs[0].RepairFloor = msDuration(4 * time.Second)
	old.Runs[0].RepairFloorBefore, cur.Runs[0].RepairFloorBefore = msDuration(5*time.Second), msDuration(4*time.Second)
	var out bytes.Buffer
	if err := Compare(&out, "old.json", old, "new.json", cur); err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{{"burst raw repair floor", "5.00s", "4.00s", "better"}, {"burst raw repair floor before the hub", "5.00s", "4.00s", "better"}, {"burst all repaired / raw repair floor", "2.02x", "2.53x", "+0.51x", "worse"}} {
		found := false
		for _, line := range strings.Split(out.String(), "\n") {
			if f := strings.Fields(strings.TrimPrefix(line, want[0])); strings.HasPrefix(line, want[0]) && len(f) == 5 &&
				f[0] == want[1] && f[1] == want[2] && f[len(f)-1] == want[len(want)-1] {
				found = true
			}
		}
		if !found {
			t.Errorf("compare lacks %v:\n%s", want, &out)
		}
	}
}

// TestRetryCollection: a collection delete that fails (a stream reset
// after part of the objects went) is called again until it succeeds, at
// most 10 times; a cancelled context stops the retries.
func TestRetryCollection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		err := retryCollection(t.Context(), func() error {
			calls++
			if calls < 3 {
				return errors.New("stream error: INTERNAL_ERROR")
			}
			return nil
		})
		if err != nil || calls != 3 {
			t.Errorf("failing twice: err %v after %d calls, want nil after 3", err, calls)
		}
		calls = 0
		err = retryCollection(t.Context(), func() error { calls++; return errors.New("down") })
		if err == nil || calls != 10 {
			t.Errorf("always failing: err %v after %d calls, want an error after 10", err, calls)
		}
		ctx, cancel := context.WithCancel(t.Context())
		calls = 0
		err = retryCollection(ctx, func() error { calls++; cancel(); return errors.New("down") })
		if err == nil || calls != 1 {
			t.Errorf("cancelled: err %v after %d calls, want an error after 1", err, calls)
		}
	})
}

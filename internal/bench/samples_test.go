package bench

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSamplesOf(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	samples := []Sample{
		// Started second, repaired last.
		{Start: t0.Add(ms(50)), Floor: t0.Add(ms(60)), Detect: t0.Add(ms(62.5)), Repair: t0.Add(ms(90))},
		// Started first.
		{Start: t0, Floor: t0.Add(ms(3.0004)), Detect: t0.Add(ms(4)), Repair: t0.Add(ms(20))},
		// A failed drift call counts nowhere, even as the first start.
		{Start: t0.Add(-time.Second), Err: errors.New("conflict"), Floor: t0, Repair: t0},
		// Seen, never repaired.
		{Start: t0.Add(ms(70)), Floor: t0.Add(ms(71)), Detect: t0.Add(ms(75))},
	}
	got := samplesOf(samples)
	want := &runSamples{
		Floor:      []float64{1, 3, 10}, // sorted, to the microsecond
		Detect:     []float64{4, 5, 12.5},
		Repair:     []float64{20, 40},
		RepairedAt: []float64{20, 90}, // from the first successful start
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("samplesOf = %+v, want %+v", got, want)
	}
}

// TestWriteChart draws a report through its JSON, as --chart does: the
// bench's JSON and the chart's reading of it must agree.
func TestWriteChart(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	run := func(mode string, n int, step time.Duration) runReport {
		var ss []Sample
		for i := range n {
			start := t0.Add(time.Duration(i) * 50 * time.Millisecond)
			ss = append(ss, Sample{Start: start, Floor: start.Add(step), Detect: start.Add(2 * step), Repair: start.Add(3 * step)})
		}
		return runReport{Mode: mode, Drifts: n, Repaired: n, Samples: samplesOf(ss)}
	}
	rep := &benchReport{Mode: ModeAll, Clusters: 1, ObjectsPerCluster: 10, Drifts: 5, Rate: 20, PollInterval: msDuration(10 * time.Second), CPUs: 2,
		Runs: []runReport{run(ModeWatch, 5, 5*time.Millisecond), run(ModePoll, 5, time.Second), run(ModeBurst, 8, 100*time.Millisecond)}}
	path := filepath.Join(t.TempDir(), "bench.svg")
	if err := writeChart(path, rep); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"<svg", "watch (driftwatch)", "poll (resync every 10s)", "floor (raw watch)", "burst: 8 deletes at once"} {
		if !strings.Contains(string(data), s) {
			t.Errorf("the chart lacks %q", s)
		}
	}

	// A report without samples (a scale run) is refused, naming the file.
	if err := writeChart(path, &benchReport{Mode: ModeScale, Scale: &scaleReport{Objects: 10}}); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("scale report: %v, want an error naming %s", err, path)
	}
}

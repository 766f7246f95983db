package bench

import (
	"math"
	"slices"
	"time"
)

// runSamples are a run's per-drift latencies, kept in the JSON report so
// that distributions can be drawn (driftwatch bench chart). Each list holds
// milliseconds (to the microsecond) from the drift call's start, sorted,
// for the drifts whose call succeeded and whose step was seen.
type runSamples struct {
	Floor  []float64 `json:"floorMs"`
	Detect []float64 `json:"detectMs"`
	Repair []float64 `json:"repairMs"`
	// RepairedAt is each repaired drift's repair as seen by the raw watch,
	// in milliseconds after the run's first drift call, sorted: the
	// repaired-over-time curve.
	RepairedAt []float64 `json:"repairedAtMs"`
}

// samplesOf returns the samples' latency sets and repair times.
func samplesOf(samples []Sample) *runSamples {
	l := Collect(samples)
	out := &runSamples{Floor: msList(l.Floor), Detect: msList(l.Detect), Repair: msList(l.Repair)}
	var first time.Time
	for _, s := range samples {
		if s.Err == nil && (first.IsZero() || s.Start.Before(first)) {
			first = s.Start
		}
	}
	var at []time.Duration
	for _, s := range samples {
		if s.Err == nil && !s.Repair.IsZero() {
			at = append(at, s.Repair.Sub(first))
		}
	}
	out.RepairedAt = msList(at)
	return out
}

// msList returns ds in milliseconds (rounded to the microsecond), sorted.
func msList(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = math.Round(float64(d)/float64(time.Microsecond)) / 1000
	}
	slices.Sort(out)
	return out
}

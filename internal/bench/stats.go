package bench

import (
	"slices"
	"time"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/driftgen"
)

// Percentiles summarises a set of latencies (nearest-rank percentiles).
type Percentiles struct {
	N             int
	P50, P95, P99 time.Duration
	Max           time.Duration
}

// Summarize returns the percentiles of ds (zero for an empty set). ds is not
// modified.
func Summarize(ds []time.Duration) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(percent int) time.Duration {
		// Nearest rank: the smallest value with at least percent of the
		// set at or below it.
		i := (len(s)*percent+99)/100 - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return Percentiles{N: len(s), P50: rank(50), P95: rank(95), P99: rank(99), Max: s[len(s)-1]}
}

// Latencies are the per-drift latency sets of a run, each from the drift
// call's start.
type Latencies struct {
	Floor, Observed, Detect, Applied, Repair []time.Duration
}

// Collect extracts the latencies of the samples whose drift call succeeded;
// a step not reached is left out of its set.
func Collect(samples []Sample) Latencies {
	var l Latencies
	add := func(dst *[]time.Duration, start, at time.Time) {
		if !at.IsZero() {
			*dst = append(*dst, at.Sub(start))
		}
	}
	for _, s := range samples {
		if s.Err != nil {
			continue
		}
		add(&l.Floor, s.Start, s.Floor)
		add(&l.Observed, s.Start, s.Observed)
		add(&l.Detect, s.Start, s.Detect)
		add(&l.Applied, s.Start, s.Applied)
		add(&l.Repair, s.Start, s.Repair)
	}
	return l
}

// CollectByAction is Collect per drift action.
func CollectByAction(samples []Sample) map[driftgen.Action]Latencies {
	by := make(map[driftgen.Action][]Sample)
	for _, s := range samples {
		by[s.Action] = append(by[s.Action], s)
	}
	out := make(map[driftgen.Action]Latencies, len(by))
	for a, ss := range by {
		out[a] = Collect(ss)
	}
	return out
}

// CollectByKind is Collect per kind (NodeID slug) of the drifted objects.
func CollectByKind(samples []Sample) map[hub.Kind]Latencies {
	by := make(map[hub.Kind][]Sample)
	for _, s := range samples {
		by[s.Target.ID.Kind] = append(by[s.Target.ID.Kind], s)
	}
	out := make(map[hub.Kind]Latencies, len(by))
	for k, ss := range by {
		out[k] = Collect(ss)
	}
	return out
}

package bench

import (
	"context"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/internal/driftgen"
)

// Drifter makes one drift: driftgen.Generator for the three kinds, the
// dynamic client's drifter for --mode mixed.
type Drifter interface {
	Do(ctx context.Context, t driftgen.Target, a driftgen.Action) driftgen.Drift
}

// Execute makes the planned drifts through gen, each at its offset from
// now, and registers every one with tr before its call. Each cluster has
// workers goroutines taking its steps in plan order (one keeps the rate;
// more make a burst of calls at once). A drift that falls behind schedule is
// made at once, never skipped, so the targets and actions never depend on
// timing. It returns when every step was made or ctx ended.
func Execute(ctx context.Context, gen Drifter, tr *Tracker, steps []Step, workers int) {
	workers = max(workers, 1)
	start := time.Now()
	byCluster := make(map[string][]Step)
	for _, s := range steps {
		byCluster[s.Target.ID.Cluster] = append(byCluster[s.Target.ID.Cluster], s)
	}
	var wg conc.WaitGroup
	for _, cs := range byCluster {
		next := make(chan Step)
		wg.Go(func() {
			defer close(next)
			for _, s := range cs {
				select {
				case next <- s:
				case <-ctx.Done():
					return
				}
			}
		})
		for range workers {
			wg.Go(func() {
				for s := range next {
					if !sleepUntil(ctx, start.Add(s.Offset)) {
						return
					}
					sample := tr.Begin(s)
					d := gen.Do(ctx, driftgen.Target{ID: s.Target.ID, Kind: s.Target.ID.Kind}, s.Action)
					if d.Err != nil {
						tr.Fail(sample, d.Err)
					}
				}
			})
		}
	}
	wg.Wait()
}

// sleepUntil waits until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

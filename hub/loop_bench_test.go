package hub

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkLoopThroughput measures reconciles per second through the shared
// queue and workers with 10,000 NodeIDs, all in sync (the common case: a
// resync or an echo of our own write), over the in-memory fake backend. It
// measures the loop's own cost (queue, workers, expectations, status); the
// real-cluster tests and `driftwatch bench` measure Kubernetes.
func BenchmarkLoopThroughput(b *testing.B) {
	const n = 10000
	be := newFake(true)
	be.quiet = true
	specs := make([]NodeSpec, n)
	for i := range n {
		specs[i] = spec("c1", fmt.Sprintf("app-%d", i), "v1")
		be.put(specs[i].ID, func(o *fakeObject) { o.content = "v1" })
	}
	h := New(Options{Workers: 4, Resync: -1})
	be.sink = h
	h.SetBackends(be)
	h.SetDesired(specs)
	h.ClusterChanged(ClusterHealth{Cluster: "c1", State: ClusterSynced, Generation: 1})
	for _, s := range specs {
		be.catchUp(s.ID)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = h.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitIdle := func() {
		for h.ctrl.queue.Len() > 0 {
			time.Sleep(time.Millisecond)
		}
	}
	waitIdle()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		h.EnqueueAll()
		waitIdle()
	}
	b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "reconciles/s")
}

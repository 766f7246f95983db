package hub

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// memBackend is an in-memory Backend for measuring the loop's own cost
// (queue, workers, classification, status). It proves nothing about
// Kubernetes: the real-cluster tests do that.
type memBackend struct {
	mu      sync.Mutex
	objects map[NodeID]*unstructured.Unstructured
	applies atomic.Int64
}

func (b *memBackend) Read(_ context.Context, s NodeSpec, _ bool) (*unstructured.Unstructured, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.objects[s.ID], nil
}

func (b *memBackend) Apply(_ context.Context, s NodeSpec) (ApplyResult, error) {
	b.applies.Add(1)
	o := s.Object.DeepCopy()
	b.mu.Lock()
	b.objects[s.ID] = o
	b.mu.Unlock()
	return ApplyResult{Object: o}, nil
}

func (b *memBackend) RemoveFields(context.Context, NodeSpec, string, []string) error { return nil }
func (b *memBackend) Delete(_ context.Context, s NodeSpec, _ Propagation) error {
	b.mu.Lock()
	delete(b.objects, s.ID)
	b.mu.Unlock()
	return nil
}
func (b *memBackend) ManagedFields(context.Context, NodeSpec) ([]FieldOwner, error) { return nil, nil }

type oneBackend struct{ b Backend }

func (o oneBackend) Backend(string) (Backend, bool) { return o.b, true }

func benchSpecs(n int) []NodeSpec {
	specs := make([]NodeSpec, n)
	for i := range n {
		obj := desiredDeployment()
		name := fmt.Sprintf("app-%d", i)
		obj.SetName(name)
		id := NewNodeID("c1", "shop", name, KindDeployment)
		specs[i] = NodeSpec{ID: id, Namespace: "shop", Name: name, Kind: KindDeployment, Policy: PolicyRepair, Object: obj, Hash: name}
	}
	return specs
}

// BenchmarkLoopThroughput measures reconciles per second through the shared
// queue and workers with 10,000 NodeIDs, all in sync (the common case: a
// resync or an echo of our own write).
func BenchmarkLoopThroughput(b *testing.B) {
	const n = 10000
	be := &memBackend{objects: make(map[NodeID]*unstructured.Unstructured)}
	specs := benchSpecs(n)
	for _, s := range specs {
		be.objects[s.ID] = s.Object.DeepCopy()
	}
	h := New(Options{Workers: 4, Resync: -1})
	h.SetBackends(oneBackend{be})
	h.SetDesired(specs)
	h.ClusterChanged(ClusterHealth{Cluster: "c1", State: ClusterSynced, Generation: 1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = h.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitIdle := func() {
		for h.queue.Len() > 0 {
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

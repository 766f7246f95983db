package clusters

import (
	"errors"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/hub"
)

// seqSink records the order in which health reports arrive.
type seqSink struct {
	mu      sync.Mutex
	reports []hub.ClusterHealth
}

func (s *seqSink) Observe(hub.Event) {}
func (s *seqSink) ClusterChanged(h hub.ClusterHealth) {
	s.mu.Lock()
	s.reports = append(s.reports, h)
	s.mu.Unlock()
}

// Many goroutines of one manager evaluate and report at once (informer
// syncs, the probe, the report ticker): the sink must receive the reports in
// the order they were taken (rising Seq), and the last one must be the
// manager's current state. Before reports were serialised, a stale
// "connecting" could arrive after "synced" and leave the hub believing the
// cluster was not ready.
func TestReportsArriveInOrder(t *testing.T) {
	for round := range 50 {
		sink := &seqSink{}
		m := newManager(ClusterConfig{ID: "c1"}, sink, discardLogger(), HealthOptions{}, nil)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				if i == 4 {
					m.mu.Lock()
					m.state = hub.ClusterSynced
					m.generation = m.next()
					m.mu.Unlock()
				}
				m.report(true)
			})
		}
		wg.Wait()
		sink.mu.Lock()
		for i := 1; i < len(sink.reports); i++ {
			if sink.reports[i].Seq <= sink.reports[i-1].Seq {
				t.Fatalf("round %d: report %d has Seq %d after %d", round, i, sink.reports[i].Seq, sink.reports[i-1].Seq)
			}
		}
		last := sink.reports[len(sink.reports)-1]
		sink.mu.Unlock()
		if last.State != hub.ClusterSynced {
			t.Fatalf("round %d: last report %s, want the current state synced", round, last.State)
		}
	}
}

// A cluster degraded from its first sync (one kind forbidden by RBAC) gets
// a sync generation, so the hub reconciles every kind it may read instead
// of waiting for the periodic resync.
func TestDegradedFromStartGetsAGeneration(t *testing.T) {
	sink := &seqSink{}
	m := newManager(ClusterConfig{ID: "c1"}, sink, discardLogger(), HealthOptions{}, nil)
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.ConfigMap{}, 0, cache.Indexers{})
	m.mu.Lock()
	m.informers[informerKey{namespace: "shop", kind: hub.KindConfigMap}] = &informerState{informer: inf, synced: true}
	m.informers[informerKey{namespace: "shop", kind: hub.KindDeployment}] = &informerState{informer: inf,
		err: errors.New(`cluster "c1": list deployments in namespace "shop": forbidden`)}
	m.mu.Unlock()
	m.evaluate()
	h := m.Health()
	if h.State != hub.ClusterDegraded || h.Generation == 0 {
		t.Fatalf("health %s generation %d, want degraded with a generation", h.State, h.Generation)
	}
}

package hub

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestUnauthorizedClusterIsDown: a cluster whose credentials are refused
// is not usable: nothing on it is read or repaired, its NodeIDs are unknown
// with the reason, driftwatch_cluster_up is 0 and driftwatch_cluster_state
// says unauthorized; once synced again it is reconciled.
func TestUnauthorizedClusterIsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		f := start(t, b, Options{})
		s := spec("c1", "a", "v1")
		f.ready("c1", 1, 1)
		const msg = `cluster "c1": unauthorized: the apiserver rejected the kubeconfig's credentials while trying to probe /readyz`
		f.h.ClusterChanged(ClusterHealth{Cluster: "c1", State: ClusterUnauthorized, LastError: msg, Generation: 1, Seq: 2})
		f.h.SetDesired([]NodeSpec{s})
		synctest.Wait()
		if b.exists(s.ID) {
			t.Fatal("applied on an unauthorized cluster")
		}
		n := f.node(s.ID)
		if n.Status != StatusUnknown || !strings.HasPrefix(n.Reason, "cluster unauthorized: "+msg) {
			t.Errorf("node %s (%q), want unknown with the cluster's error", n.Status, n.Reason)
		}
		up := func() float64 { return testutil.ToFloat64(f.h.metrics.clusterUp.WithLabelValues("c1")) }
		state := func(st ClusterState) float64 {
			return testutil.ToFloat64(f.h.metrics.clusterSt.WithLabelValues("c1", string(st)))
		}
		if up() != 0 || state(ClusterUnauthorized) != 1 || state(ClusterSynced) != 0 || state(ClusterUnreachable) != 0 {
			t.Errorf("cluster_up %v, cluster_state unauthorized %v synced %v unreachable %v; want 0, 1, 0, 0",
				up(), state(ClusterUnauthorized), state(ClusterSynced), state(ClusterUnreachable))
		}

		f.ready("c1", 2, 3)
		synctest.Wait()
		if !b.exists(s.ID) || f.node(s.ID).Status != StatusInSync {
			t.Fatalf("after the cluster synced again: exists %v, status %s", b.exists(s.ID), f.node(s.ID).Status)
		}
		if up() != 1 || state(ClusterSynced) != 1 || state(ClusterUnauthorized) != 0 {
			t.Errorf("cluster_up %v, cluster_state synced %v unauthorized %v; want 1, 1, 0", up(), state(ClusterSynced), state(ClusterUnauthorized))
		}
	})
}

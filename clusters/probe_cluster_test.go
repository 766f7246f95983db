package clusters

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// TestWritesStandForTheProbe: while the hub's writes to a cluster are
// accepted, the cluster is not probed as well (the fastHealth interval is
// 500 ms: a write loop of 3 s would otherwise see about six probes); once
// the writes stop, the probes resume, and the cluster stays synced
// throughout.
func TestWritesStandForTheProbe(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	const ns = "probe-writes"
	var probes atomic.Int64
	cc := clusterConfig(lc, ns)
	cc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL.Path == "/readyz" {
				probes.Add(1)
			}
			return rt.RoundTrip(req)
		})
	}
	_, be := runRegistryFor(t, cc)
	spec := deploymentSpec(t, lc.Name, ns, "api")
	write := func(i int) {
		t.Helper()
		writeOnce(t, be, spec, i)
	}
	write(0)
	start := probes.Load()
	deadline := time.Now().Add(3 * time.Second)
	n := 0
	for ; time.Now().Before(deadline); n++ {
		write(n + 1)
		time.Sleep(50 * time.Millisecond)
	}
	during := probes.Load() - start
	if during > 1 {
		t.Fatalf("%d probes during %d accepted writes over 3s, want at most 1", during, n)
	}
	after := probes.Load()
	testwait.For(t, 10*time.Second, "the probes to resume", func() error {
		got := probes.Load() - after
		return testwait.Check(got >= 2, "%d probes since the writes stopped", got)
	})
	if st := be.Health().State; st != hub.ClusterSynced {
		t.Fatalf("cluster state %s, want synced", st)
	}
}

// writeOnce reads spec's object from the apiserver and applies it: a
// create when it is missing, else a repair of spec.replicas.
func writeOnce(t *testing.T, be *Manager, spec hub.NodeSpec, i int) {
	t.Helper()
	st, err := be.ReadState(t.Context(), spec, true)
	if err != nil {
		t.Fatal(err)
	}
	d := hub.Drift{Class: hub.DriftMissing}
	if st.Exists {
		d = hub.Drift{Class: hub.DriftModified, Fields: []hub.FieldDiff{{Path: "spec.replicas"}}}
	}
	if _, err := be.Repair(t.Context(), spec, st, d); err != nil {
		t.Fatalf("write %d: %v", i, err)
	}
}

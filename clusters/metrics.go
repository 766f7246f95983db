package clusters

import "github.com/prometheus/client_golang/prometheus"

// Results of a write whose precondition met a concurrent change (the
// result label of driftwatch_write_conflicts_total).
const (
	conflictRetried = "retried"
	conflictGaveUp  = "gave_up"
)

// metrics are the Kubernetes backends' Prometheus metrics, shared by every
// cluster of a Registry. A nil *metrics records nothing.
type metrics struct {
	conflicts     *prometheus.CounterVec
	foreign       *prometheus.GaugeVec
	sameIDWrites  *prometheus.CounterVec
	clusterLabels []*prometheus.MetricVec
}

// newMetrics makes the metrics and registers them on reg (nil: nowhere).
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_write_conflicts_total",
			Help: "Writes whose precondition met a concurrent change (409 Conflict, or 422 from a guarded JSON patch), by cluster and result: retried at once after a fresh read, or gave_up (the write failed).",
		}, []string{"cluster", "result"}),
		foreign: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "driftwatch_foreign_objects",
			Help: "Objects carrying this hub's managed-by label that another hub owns (its id in driftwatch.io/hub, its field manager, or this hub's field manager in writes this hub did not make), left out of the orphan scan, by cluster.",
		}, []string{"cluster"}),
		sameIDWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_same_id_writes_total",
			Help: "Watched writes by this hub's own field manager that this hub did not make (another hub with the same id writes to the cluster), by cluster.",
		}, []string{"cluster"}),
	}
	m.clusterLabels = []*prometheus.MetricVec{m.conflicts.MetricVec, m.foreign.MetricVec, m.sameIDWrites.MetricVec}
	if reg != nil {
		reg.MustRegister(m.conflicts, m.foreign, m.sameIDWrites)
	}
	return m
}

// conflict counts one write conflict with its result.
func (m *metrics) conflict(cluster, result string) {
	if m != nil {
		m.conflicts.WithLabelValues(cluster, result).Inc()
	}
}

// setForeign records how many foreign objects a cluster's last scan found.
func (m *metrics) setForeign(cluster string, n int) {
	if m != nil {
		m.foreign.WithLabelValues(cluster).Set(float64(n))
	}
}

// sameIDWrite counts one write by our field manager that we did not make.
func (m *metrics) sameIDWrite(cluster string) {
	if m != nil {
		m.sameIDWrites.WithLabelValues(cluster).Inc()
	}
}

// forget drops every series of a removed cluster.
func (m *metrics) forget(cluster string) {
	if m == nil {
		return
	}
	for _, v := range m.clusterLabels {
		v.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	}
}

package coord

import "github.com/prometheus/client_golang/prometheus"

// metrics are the coordinator's Prometheus metrics.
type metrics struct {
	owned           prometheus.Gauge
	replicas        prometheus.Gauge
	renewals        prometheus.Counter
	renewFailures   prometheus.Counter
	takeovers       prometheus.Counter
	takeoverSeconds prometheus.Histogram
	evictions       prometheus.Counter
	fenced          prometheus.Counter
	refused         prometheus.Gauge
	duplicates      prometheus.Counter
}

// newMetrics makes the metrics and registers them on reg (nil: nowhere).
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		owned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "driftwatch_coordination_clusters_owned", Help: "Clusters whose claim this replica holds.",
		}),
		replicas: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "driftwatch_coordination_replicas", Help: "Live replicas this replica sees, itself included.",
		}),
		renewals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "driftwatch_coordination_renewals_total", Help: "Successful renewals of this replica's membership lease.",
		}),
		renewFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "driftwatch_coordination_renewal_failures_total", Help: "Failed renewals of this replica's membership lease (an eviction included).",
		}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "driftwatch_coordination_takeovers_total", Help: "Claims taken over from another replica (released to this one, or left by one that expired).",
		}),
		takeoverSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "driftwatch_coordination_takeover_seconds",
			Help:    "Time from the previous holder's last observed renewal (or its release) to this replica holding the claim.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2, 5, 10, 15, 20, 30, 60},
		}),
		evictions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "driftwatch_coordination_evictions_total", Help: "Membership leases of expired replicas this replica deleted.",
		}),
		fenced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "driftwatch_coordination_fenced_writes_total", Help: "Writes refused because this replica held no valid claim on the cluster.",
		}),
		refused: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "driftwatch_coordination_refused", Help: "1 while this replica takes no cluster because its desired state differs from that of the replicas owning clusters.",
		}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "driftwatch_coordination_duplicate_replica_ids_total",
			Help: "Processes found using this replica's id: seen by the process that keeps running, or by the one that exits.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.owned, m.replicas, m.renewals, m.renewFailures, m.takeovers, m.takeoverSeconds, m.evictions, m.fenced, m.refused, m.duplicates)
	}
	return m
}

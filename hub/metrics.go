package hub

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the hub's Prometheus metrics, in a registry of its own (no
// global state).
type metrics struct {
	reg     *prometheus.Registry
	drift   *prometheus.CounterVec
	repairs *prometheus.CounterVec
	// desiredApplies counts the writes that applied a change of the
	// desired state (not drift, not repairs).
	desiredApplies *prometheus.CounterVec
	classified     prometheus.Histogram
	repaired       prometheus.Histogram
	watch          *prometheus.CounterVec
	echoes         *prometheus.CounterVec
	clusterUp      *prometheus.GaugeVec
	clusterSt      *prometheus.GaugeVec
	objects        *prometheus.GaugeVec
	queueDepth     prometheus.Gauge
	reconciles     prometheus.Counter
	reloads        *prometheus.CounterVec
	// sourceFailing is 1 for each manifest source that fails now.
	sourceFailing *prometheus.GaugeVec
	// sourceRevision is 1 for the applied commit of each Git source;
	// sourceFetched the time of its last successful fetch.
	sourceRevision, sourceFetched *prometheus.GaugeVec
	panics                        prometheus.Counter
	staleReads                    *prometheus.CounterVec
	resyncsPostponed              prometheus.Counter
	resyncsLeftOut                *prometheus.CounterVec
	restarted                     *prometheus.CounterVec
	staleHealth                   *prometheus.CounterVec
	refused                       *prometheus.CounterVec
	drains                        prometheus.Counter
	loopPanics                    *prometheus.CounterVec
	orphanGuard                   *prometheus.CounterVec
	heapReturns, heapReturned     prometheus.Counter
	// pausedAt, holdUntil and overrideAt show the switches set now: when
	// each cluster was paused, when each hold ends, when each
	// application's override was set (unix seconds), for alerts on a
	// switch left on.
	pausedAt, holdUntil, overrideAt *prometheus.GaugeVec
}

func newMetrics() *metrics {
	buckets := []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}
	m := &metrics{
		reg: prometheus.NewRegistry(),
		drift: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_drift_detected_total", Help: "Drift detected, by cluster, kind and class.",
		}, []string{"cluster", "kind", "class"}),
		repairs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_repairs_total", Help: "Repairs attempted, by cluster and outcome (success, failure).",
		}, []string{"cluster", "outcome"}),
		desiredApplies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_desired_changes_applied_total", Help: "Writes that applied a change of the desired state (a reload, a new commit or chart version) to an existing object, by cluster; neither drift nor repairs.",
		}, []string{"cluster"}),
		classified: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "driftwatch_event_to_classified_seconds", Help: "Time from a watch event to the drift being classified.", Buckets: buckets,
		}),
		repaired: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "driftwatch_event_to_repaired_seconds", Help: "Time from a watch event to the repair being applied.", Buckets: buckets,
		}),
		watch: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_watch_events_total", Help: "Watch events received, by cluster and type.",
		}, []string{"cluster", "type"}),
		echoes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_self_echo_events_total", Help: "Watch events caused by driftwatch's own writes, by cluster.",
		}, []string{"cluster"}),
		clusterUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "driftwatch_cluster_up", Help: "1 when the cluster is synced or degraded, 0 otherwise (connecting, unreachable, unauthorized).",
		}, []string{"cluster"}),
		clusterSt: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "driftwatch_cluster_state", Help: "1 for the cluster's current state (connecting, synced, degraded, unreachable, unauthorized), 0 for the others.",
		}, []string{"cluster", "state"}),
		objects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "driftwatch_managed_objects", Help: "Managed objects by cluster and status.",
		}, []string{"cluster", "status"}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "driftwatch_queue_depth", Help: "NodeIDs waiting in the reconcile queue.",
		}),
		reconciles: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "driftwatch_reconciles_total", Help: "Reconciles run by the workers.",
		}),
		sourceFailing: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "driftwatch_source_failing", Help: "1 for each manifest source that cannot be used now (it does not render, or collides with another); its last good desired state stays in force.",
		}, []string{"source"}),
		sourceRevision: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "driftwatch_source_revision_info", Help: "1 for the commit of each Git manifest source whose desired state is in force.",
		}, []string{"source", "commit"}),
		sourceFetched: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "driftwatch_source_last_fetch_success_timestamp_seconds", Help: "When each Git manifest source was last fetched successfully (Unix time).",
		}, []string{"source"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_config_reloads_total", Help: "Config reloads, by outcome (applied, rejected).",
		}, []string{"outcome"}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "driftwatch_reconcile_panics_total", Help: "Reconciles that panicked (recovered; the worker lives on).",
		}),
		staleReads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_stale_cache_reads_total", Help: "Cached reads older than driftwatch's own last write, re-read fresh instead of treated as drift, by cluster.",
		}, []string{"cluster"}),
		resyncsPostponed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "driftwatch_resyncs_postponed_total", Help: "Safety-net resyncs that came due while the reconcile queue was busy and waited until it was idle (at most one more period).",
		}),
		resyncsLeftOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_resync_clusters_left_out_total", Help: "Clusters a postponed safety-net resync left out because they were passed over in full since the last resync (a first sync or a catch-up), by cluster.",
		}, []string{"cluster"}),
		restarted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_passes_restarted_total", Help: "Passes run again because their cluster's backend restarted under them (its connection closed during the call), by cluster; not failures.",
		}, []string{"cluster"}),
		staleHealth: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_stale_health_reports_total", Help: "Cluster health reports dropped because a newer one was already applied, by cluster.",
		}, []string{"cluster"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_writes_refused_total", Help: "Writes (repairs, first applies, prunes) the write gate refused at the moment of the write, by cluster and switch (paused, held, warn).",
		}, []string{"cluster", "reason"}),
		drains: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "driftwatch_intent_drains_total", Help: "Pauses, holds and warn overrides that waited for writes already in flight in their scope.",
		}),
		loopPanics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_loop_panics_total", Help: "Panics recovered in the hub's background loops (publish, resync, orphans, heap), by loop; the loop is restarted.",
		}, []string{"loop"}),
		heapReturns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "driftwatch_heap_returns_total", Help: "Times the hub returned the heap a wave of work freed to the operating system once its queue was idle again.",
		}),
		heapReturned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "driftwatch_heap_returned_bytes_total", Help: "Bytes of freed heap the hub returned to the operating system after waves of work.",
		}),
		pausedAt: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "driftwatch_cluster_paused_timestamp_seconds", Help: "When each paused cluster was paused (unix seconds; 0 when not known); no series for a cluster that is not paused.",
		}, []string{"cluster"}),
		holdUntil: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "driftwatch_hold_expiry_timestamp_seconds", Help: "When each active hold ends (unix seconds), by scope and name.",
		}, []string{"scope", "name"}),
		overrideAt: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "driftwatch_policy_override_timestamp_seconds", Help: "When each application's runtime policy override was set (unix seconds; 0 when not known), by application and policy.",
		}, []string{"application", "policy"}),
		orphanGuard: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_orphan_prunes_refused_total", Help: "Orphan prunes refused, by reason (limit: more than the prune limit across the hub in one scan; all: every object of a cluster; warn: warn-only policy).",
		}, []string{"reason"}),
	}
	m.reg.MustRegister(m.drift, m.repairs, m.desiredApplies, m.classified, m.repaired, m.watch, m.echoes,
		m.clusterUp, m.clusterSt, m.objects, m.queueDepth, m.reconciles, m.reloads, m.sourceFailing, m.sourceRevision, m.sourceFetched, m.panics, m.staleReads, m.resyncsPostponed, m.resyncsLeftOut, m.restarted, m.staleHealth,
		m.refused, m.drains, m.loopPanics, m.orphanGuard, m.heapReturns, m.heapReturned, m.pausedAt, m.holdUntil, m.overrideAt,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// MetricsHandler serves the hub's metrics in the Prometheus text format.
func (h *Hub) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(h.metrics.reg, promhttp.HandlerOpts{})
}

// Registerer is the hub's metrics registry, for the metrics of the parts
// wired around it (they are served by MetricsHandler too).
func (h *Hub) Registerer() prometheus.Registerer { return h.metrics.reg }

// RecordReload counts a config reload by outcome ("applied" or "rejected").
func (h *Hub) RecordReload(outcome string) { h.metrics.reloads.WithLabelValues(outcome).Inc() }

// SetSourceFaults shows the manifest sources that fail now (nil: none) in
// the snapshot, the API and the metric driftwatch_source_failing; a source
// that failed before and is not listed is fixed. KeptObjects is counted
// here: the desired NodeIDs of each source's application.
func (h *Hub) SetSourceFaults(faults []SourceStatus) {
	faults = slices.Clone(faults)
	slices.SortFunc(faults, func(a, b SourceStatus) int { return strings.Compare(a.ID, b.ID) })
	func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for i := range faults {
			faults[i].KeptObjects = 0
		}
		for _, n := range h.nodes.all() {
			if n.spec == nil {
				continue
			}
			if i, ok := slices.BinarySearchFunc(faults, n.spec.Application, func(s SourceStatus, id string) int { return strings.Compare(s.ID, id) }); ok {
				faults[i].KeptObjects++
			}
		}
	}()
	h.metrics.sourceFailing.Reset()
	for _, f := range faults {
		h.metrics.sourceFailing.WithLabelValues(f.ID).Set(1)
	}
	h.store.setSources(faults)
}

// SetSourceRevisions shows the revisions of the Git manifest sources (nil:
// none) in the snapshot, the API and the metrics
// driftwatch_source_revision_info and
// driftwatch_source_last_fetch_success_timestamp_seconds; it replaces the
// list set before.
func (h *Hub) SetSourceRevisions(revs []SourceRevision) {
	revs = slices.Clone(revs)
	slices.SortFunc(revs, func(a, b SourceRevision) int { return strings.Compare(a.ID, b.ID) })
	h.metrics.sourceRevision.Reset()
	h.metrics.sourceFetched.Reset()
	for _, r := range revs {
		if r.Commit != "" {
			h.metrics.sourceRevision.WithLabelValues(r.ID, r.Commit).Set(1)
		}
		if !r.LastFetch.IsZero() {
			h.metrics.sourceFetched.WithLabelValues(r.ID).Set(float64(r.LastFetch.UnixNano()) / 1e9)
		}
	}
	h.store.setRevisions(revs)
}

// unixSeconds is t as a metric's timestamp value (0 for the zero time).
func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

// setPaused shows a cluster's pause, made at at (its series deleted when
// it is resumed). A pause belongs to the cluster id, so forgetCluster
// keeps it.
func (m *metrics) setPaused(cluster string, paused bool, at time.Time) {
	if !paused {
		m.pausedAt.DeleteLabelValues(cluster)
		return
	}
	m.pausedAt.WithLabelValues(cluster).Set(unixSeconds(at))
}

// setHolds shows the holds, replacing those shown before.
func (m *metrics) setHolds(hs []Hold) {
	m.holdUntil.Reset()
	for _, hd := range hs {
		m.holdUntil.WithLabelValues(string(hd.Target.Scope), hd.Target.Name).Set(unixSeconds(hd.Until))
	}
}

// setOverrides shows the applications' policy overrides, replacing those
// shown before.
func (m *metrics) setOverrides(o map[string]appOverride) {
	m.overrideAt.Reset()
	for app, ov := range o {
		m.overrideAt.WithLabelValues(app, string(ov.Policy)).Set(unixSeconds(ov.At))
	}
}

// forgetCluster deletes every series of a cluster that left the hub.
func (m *metrics) forgetCluster(cluster string) {
	l := prometheus.Labels{"cluster": cluster}
	m.clusterUp.DeletePartialMatch(l)
	m.clusterSt.DeletePartialMatch(l)
	m.objects.DeletePartialMatch(l)
}

// setClusterState sets the state series of a cluster: 1 for st, 0 for the
// other states a cluster can be in.
func (m *metrics) setClusterState(cluster string, st ClusterState) {
	for _, s := range ClusterStates() {
		if s == ClusterRemoved {
			continue
		}
		v := 0.0
		if s == st {
			v = 1
		}
		m.clusterSt.WithLabelValues(cluster, string(s)).Set(v)
	}
}

package notify

import "github.com/prometheus/client_golang/prometheus"

// metrics are the notifier's Prometheus metrics, by webhook name.
type metrics struct {
	sent    *prometheus.CounterVec
	failed  *prometheus.CounterVec
	dropped *prometheus.CounterVec
	retries *prometheus.CounterVec
	up      *prometheus.GaugeVec
}

func newMetrics() *metrics {
	return &metrics{
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_notifications_sent_total", Help: "Notifications delivered, by webhook.",
		}, []string{"webhook"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_notifications_failed_total", Help: "Notifications given up on after their last attempt, by webhook.",
		}, []string{"webhook"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_notifications_dropped_total", Help: "Notifications dropped before delivery, by webhook and reason (rate-limited, queue-full).",
		}, []string{"webhook", "reason"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_notification_retries_total", Help: "Delivery attempts retried, by webhook.",
		}, []string{"webhook"}),
		up: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "driftwatch_notification_webhook_up", Help: "1 when the webhook's latest delivery attempt succeeded, 0 when it failed.",
		}, []string{"webhook"}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.sent, m.failed, m.dropped, m.retries, m.up}
}

// Package monitoring holds no code: its tests check the Prometheus rules
// (driftwatch.rules.yaml, prometheusrule.yaml) and the Grafana dashboard
// (grafana-dashboard.json) of this folder against the metrics the hub
// exports, and run the rules' unit tests with promtool.
package monitoring

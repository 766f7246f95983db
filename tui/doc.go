// Package tui is driftwatch's terminal UI (bubbletea v2): an overview of every
// cluster with a live feed of drift and repairs, a per-cluster drill-down, a
// per-NodeID detail with the desired-versus-actual diff, attribution and
// timeline, and actions (repair now, pause a cluster, warn-only). It renders
// hub snapshots received through a small Source interface, in process or
// attached to a headless hub over HTTP.
package tui

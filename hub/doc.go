// Package hub holds driftwatch's desired state and its one shared reconcile
// loop: NodeIDs and NodeSpecs (what must exist where), the events every
// cluster's watch manager feeds in, the workqueue keyed by NodeID and its
// workers that compare desired with actual state, classify drift and repair it
// by server-side apply, and the status store whose immutable snapshots feed the
// terminal UI, the HTTP API and the metrics.
//
// hub imports neither clusters nor tui: it declares the small interfaces it
// consumes (Backend, Backends) and the types the others exchange with it.
package hub

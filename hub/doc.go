// Package hub holds driftwatch's desired state and its one shared reconcile
// loop: NodeIDs and NodeSpecs (what must exist where), the events every
// backend feeds in, the controller's workqueue keyed by NodeID and its
// workers, the reconciler that compares desired with actual state, decides
// (a pure function) and repairs through the write gate, and the status
// store whose immutable snapshots the publisher hands to the terminal UI,
// the HTTP API and the metrics. ARCHITECTURE.md names the file of each step.
//
// hub imports neither clusters nor tui: it declares the small interfaces it
// consumes (Backend, Backends) and the types the others exchange with it.
package hub

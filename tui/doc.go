// Package tui is driftwatch's terminal UI (bubbletea v2): an overview of every
// cluster with a live feed of drift and repairs, a per-cluster drill-down, a
// per-NodeID detail with the desired-versus-actual diff, attribution and
// timeline, and actions (repair now, pause a cluster, warn-only, holds). It renders
// hub snapshots received through a small Source interface, in process or
// attached to a headless hub over HTTP.
//
// # Screens
//
//   - Overview: one row per cluster (health, source, object counts by
//     status, events per second, last event, median time to repair, a
//     PAUSED marker, and the last error under a cluster that is not synced),
//     then the live feed, newest first (time, NodeID, class, changed fields,
//     who, action, latency). Tab moves the cursor between the two.
//   - Cluster (enter on a cluster, or :cluster <id>): every NodeID of the
//     cluster with status, kind, application, readiness and age; s cycles
//     the sort column (name, status, kind, age), S reverses it, / filters
//     (substring of NodeID, application and status), x shows problems only.
//   - Detail (enter on a NodeID, or :node <nodeid>): status and reason, the
//     diff of the fields driftwatch manages ("- path: desired" and
//     "+ path: live"), who changed them, the timeline with each step's
//     latency from the first, and the desired object.
//   - Help (?): every key binding and the meaning of the overview's columns.
//
// Esc goes back (after clearing an applied filter), q goes back and quits on
// the overview, ctrl+c quits anywhere; :reload asks the caller to reload the
// hub's config (Options.Reload). Run also ends when the terminal goes away
// (SIGHUP, the end of its input, a failed write), returning an error that
// wraps ErrHangup, so a program never outlives its terminal. r (repair now), p (pause or resume
// the cluster) and w (toggle warn-only for the node's application) ask for
// y/n first (p on a running cluster and w making an application
// warn-only ask why instead, and enter sets the switch with that reason,
// shown with who set it wherever the switch is) and are refused in
// read-only mode. h holds repairs of the
// selection (the node in the cluster and detail views and the feed, the
// cluster on the overview's table): it asks for a duration (30m offered)
// and a reason (required), and the hold expires by itself; H releases the
// hold over the selection (the node's own, else its application's, else
// its cluster's) after y/n. Held nodes show as held (magenta, counted in
// DRIFT); the detail view shows the holds over its node.
//
// # Layout
//
// Every frame fills the window exactly: a header (where you are, global
// totals), the screen, a line for key hints or the prompt, and the status
// bar (hub, clusters up, repair mode, active holds, last message, snapshot
// age). Lines are cut with an ellipsis, never wrapped by the terminal;
// narrow windows hide the least important columns first. Only visible rows are rendered, so a
// cluster with tens of thousands of NodeIDs costs about as much as a small
// one. With Options.NoColor the output holds no ANSI styles at all.
//
// # Use
//
// Run runs the UI until the user quits or its context ends. Tests and
// embedders can drive New's model with bubbletea directly (for example with
// teatest); Model.Screen, Model.Snapshot and Model.StatusMessage expose what
// the UI shows, and Model.Close ends the hub subscription.
package tui

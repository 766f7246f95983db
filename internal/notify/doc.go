// Package notify sends the hub's notable events to webhooks: drift
// repaired, drift left unrepaired (warn-only, held, paused), repair failed,
// contested, stuck, and a cluster unreachable and back.
//
// A Notifier subscribes to the hub's snapshots (the same feed the TUI and
// the API's watch stream read) and derives events from what changed
// between two snapshots, per NodeID and per cluster: it adds no hook to the
// reconcile loop and never slows it. Each webhook has its own filter, rate
// limit, bounded queue and sender goroutine; a full queue or the rate
// limit drops events (counted), so a slow or dead receiver never blocks
// anything upstream. Delivery is retried with exponential backoff and
// jitter, honouring Retry-After.
//
// The JSON body is documented by Event and versioned by its "version"
// field (PayloadVersion); the "slack" format sends {"text": "..."}.
package notify

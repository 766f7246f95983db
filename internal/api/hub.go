package api

import (
	"net/http"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// Hub is what the API needs of a hub: its snapshots, the ids it knows and
// the operator actions. *hub.Hub implements it; the API never reaches
// further into the hub.
type Hub interface {
	// Snapshot returns the latest snapshot.
	Snapshot() *hub.Snapshot
	// Subscribe returns a channel holding the latest snapshot and a
	// function that ends the subscription.
	Subscribe() (<-chan *hub.Snapshot, func())
	// KnowsCluster, KnowsApplication and KnowsTarget report whether the
	// hub manages the id (an action on another answers 404).
	KnowsCluster(cluster string) bool
	KnowsApplication(app string) bool
	KnowsTarget(t hub.HoldTarget) bool
	// RepairNow, PauseCluster, PauseClusterNote, SetApplicationPolicy,
	// Hold and ReleaseHold are the operator actions.
	RepairNow(id hub.NodeID) error
	PauseCluster(cluster string, paused bool) error
	PauseClusterNote(cluster string, note hub.SwitchNote) error
	SetApplicationPolicy(app string, p hub.Policy) error
	SetApplicationPolicyNote(app string, p hub.Policy, note hub.SwitchNote) error
	Hold(t hub.HoldTarget, ttl time.Duration, reason string) (hub.Hold, error)
	HoldAs(by string, t hub.HoldTarget, ttl time.Duration, reason string) (hub.Hold, error)
	ReleaseHold(t hub.HoldTarget) error
}

// Metrics is what the probe handler needs of a hub: its metrics.
// *hub.Hub implements it.
type Metrics interface {
	// MetricsHandler serves the Prometheus metrics.
	MetricsHandler() http.Handler
}

var (
	_ Hub     = (*hub.Hub)(nil)
	_ Metrics = (*hub.Hub)(nil)
)

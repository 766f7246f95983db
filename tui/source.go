package tui

import (
	"context"
	"os"
	"os/user"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// Source is what the UI needs from a hub, in process or over HTTP.
//
// Subscribe returns a channel of snapshots (the latest one after every
// change; a slow reader may miss intermediate ones) and a function that ends
// the subscription. The actions may block (an HTTP source does a request):
// the UI calls them off its event loop.
type Source interface {
	// Subscribe starts receiving snapshots.
	Subscribe() (<-chan *hub.Snapshot, func())
	// RepairNow asks for an immediate repair of one NodeID, overriding
	// warn-only, a pause or a hold set before it for this one repair.
	RepairNow(id hub.NodeID) error
	// PauseCluster pauses (true) or resumes (false) repairs on a cluster.
	PauseCluster(cluster string, paused bool) error
	// PauseClusterNote pauses repairs on a cluster with a note; who
	// paused it is the source's to say (the local user, or the name of
	// the API token), not note.By.
	PauseClusterNote(cluster string, note hub.SwitchNote) error
	// SetApplicationPolicy overrides an application's policy at runtime; ""
	// clears the override.
	SetApplicationPolicy(app string, p hub.Policy) error
	// SetApplicationPolicyNote overrides it with a note; who set it is
	// the source's to say, not note.By (see PauseClusterNote).
	SetApplicationPolicyNote(app string, p hub.Policy, note hub.SwitchNote) error
	// Hold stops repairs of a NodeID, an application or a cluster for ttl,
	// with a reason (drift is still shown); it returns the hold placed.
	Hold(t hub.HoldTarget, ttl time.Duration, reason string) (hub.Hold, error)
	// ReleaseHold ends the hold on a target early.
	ReleaseHold(t hub.HoldTarget) error
}

// NodeReader is a Source whose snapshots do not carry the desired objects
// (a remote hub's: the API sends them one NodeID at a time): the node view
// reads the one it shows.
type NodeReader interface {
	// Node reads one NodeID's status with its desired object as its Spec.
	Node(ctx context.Context, id hub.NodeID) (hub.NodeStatus, error)
}

// HubSource adapts an in-process *hub.Hub to Source. Its pauses and holds
// are noted as made by the user running the process.
func HubSource(h *hub.Hub) Source { return hubSource{h: h, user: LocalUser()} }

type hubSource struct {
	h    *hub.Hub
	user string
}

// LocalUser names the user running the process: the account's name, else
// $USER, else "local".
func LocalUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "local"
}

func (s hubSource) Subscribe() (<-chan *hub.Snapshot, func()) { return s.h.Subscribe() }

func (s hubSource) RepairNow(id hub.NodeID) error { return s.h.RepairNow(id) }

func (s hubSource) PauseCluster(cluster string, paused bool) error {
	return s.h.PauseCluster(cluster, paused)
}

func (s hubSource) PauseClusterNote(cluster string, note hub.SwitchNote) error {
	note.By = s.user
	return s.h.PauseClusterNote(cluster, note)
}

func (s hubSource) SetApplicationPolicy(app string, p hub.Policy) error {
	return s.h.SetApplicationPolicyNote(app, p, hub.SwitchNote{By: s.user})
}

func (s hubSource) SetApplicationPolicyNote(app string, p hub.Policy, note hub.SwitchNote) error {
	note.By = s.user
	return s.h.SetApplicationPolicyNote(app, p, note)
}

func (s hubSource) Hold(t hub.HoldTarget, ttl time.Duration, reason string) (hub.Hold, error) {
	return s.h.HoldAs(s.user, t, ttl, reason)
}

func (s hubSource) ReleaseHold(t hub.HoldTarget) error { return s.h.ReleaseHold(t) }

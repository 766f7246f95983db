package hub

import (
	"errors"
	"fmt"
	"time"

	"github.com/driftwatch/driftwatch/internal/pack"
)

// Policy says what the hub does about drift.
type Policy string

// Repair policies.
const (
	// PolicyRepair detects drift and repairs it (the default).
	PolicyRepair Policy = "repair"
	// PolicyWarn detects and reports drift without touching the object.
	PolicyWarn Policy = "warn"
)

// NodeSpec is one desired object plus what a backend needs to find it.
type NodeSpec struct {
	// ID is the object's NodeID.
	ID NodeID
	// Namespace, Name and Kind locate the object in its cluster.
	Namespace string
	Name      string
	Kind      Kind
	// Application is the id of the application the object belongs to.
	Application string
	// Tenancy is the application's optional tenancy ID (may hold colons).
	Tenancy string
	// Policy is the effective policy (application over cluster over hub).
	Policy Policy
	// ProgressDeadline is the Deployment progress deadline used for stuck
	// detection (zero for other kinds).
	ProgressDeadline time.Duration
	// Body is the desired object, fully formed (apiVersion, kind, metadata
	// with the managed-by label and the node-id annotation), as the JSON a
	// server-side apply sends. Treat it as immutable: it is shared by the
	// loop, snapshots and the backends.
	//
	// The hub keeps these bytes packed against a dictionary of the kind
	// (a few dozen bytes for an object of several hundred), not as the
	// decoded maps (several times their size): the specs of its snapshots
	// have a nil Body, and JSON or Object read them. The specs it hands
	// to a backend and Desired returns have their Body.
	Body []byte
	// Hash is a content hash of Body, to tell changed specs on reload.
	Hash string
	// Ignore are the ignore rules of the object's application (shared by
	// its specs; nil when it has none): differences they cover are not
	// drift.
	Ignore *IgnoreSet
	// Note is the backend's remark on the desired object, shown as the
	// status reason when the loop has none (a Terraform resource removed
	// from its configuration but still in the state).
	Note string
	// Order is the object's apply phase: when a cluster (re)syncs, its
	// NodeIDs are enqueued by Order, then NodeID, so lower phases are
	// applied first (a manifest source's Namespaces and
	// CustomResourceDefinitions before the rest, webhook configurations
	// last). Objects that need an earlier one that is not ready yet fail
	// and are retried.
	Order uint8
	// Revision is the source revision the desired object came from (for a
	// Git source, the commit and its subject; "" otherwise). It is opaque
	// to the hub and not part of what tells a changed spec: when only the
	// Revision differs, the hub keeps the spec it has, so Revision means
	// the revision that last changed the object's desired state.
	Revision string

	// packed is Body packed against dict, its kind's dictionary, in a
	// spec the hub keeps (Body is then nil); see Hub.pack.
	packed []byte
	dict   *pack.Dict
}

// JSON returns the desired object's JSON: Body, or, in a spec the hub
// keeps, its packed body unpacked into a new slice. A spec without a body
// returns nil and no error.
func (s NodeSpec) JSON() ([]byte, error) {
	if s.dict == nil || len(s.Body) > 0 {
		return s.Body, nil
	}
	b, err := s.dict.Unpack(s.packed)
	if err != nil {
		return nil, fmt.Errorf("node %s: desired object: %w", s.ID, err)
	}
	return b, nil
}

// unpacked returns s with its Body (unpacked when the hub keeps it packed).
func (s NodeSpec) unpacked() (NodeSpec, error) {
	body, err := s.JSON()
	if err != nil {
		return NodeSpec{}, err
	}
	s.Body, s.packed, s.dict = body, nil, nil
	return s, nil
}

// EventType is the kind of change a watch manager saw.
type EventType string

// Event types.
const (
	EventAdded   EventType = "added"
	EventUpdated EventType = "updated"
	EventDeleted EventType = "deleted"
)

// Event is a state event a watch manager delivers for one managed object. It
// only says that something changed: the loop is level-based and re-reads
// desired and actual state before acting.
type Event struct {
	ID              NodeID
	Type            EventType
	ResourceVersion string
	UID             string
	// Generation is the object's metadata.generation (0 when deleted).
	Generation int64
	// ObservedAt is when the informer handler ran.
	ObservedAt time.Time
}

// ClusterState is the health of one cluster's connection.
type ClusterState string

// Cluster states. Only synced and degraded clusters are read and repaired;
// the NodeIDs of the others are unknown until they are usable again.
const (
	ClusterConnecting  ClusterState = "connecting"
	ClusterSynced      ClusterState = "synced"
	ClusterDegraded    ClusterState = "degraded"
	ClusterUnreachable ClusterState = "unreachable"
	// ClusterUnauthorized: the apiserver answers but refuses the
	// credentials (401: expired or revoked), or refuses them the whole API
	// (403 on /readyz, or on every list the watch needs). One forbidden
	// kind is not this: the cluster is degraded and that kind's NodeIDs
	// forbidden.
	ClusterUnauthorized ClusterState = "unauthorized"
	// ClusterRemoved is reported once when a cluster leaves the registry.
	ClusterRemoved ClusterState = "removed"
)

// ClusterStates lists every cluster state.
func ClusterStates() []ClusterState {
	return []ClusterState{ClusterConnecting, ClusterSynced, ClusterDegraded, ClusterUnreachable, ClusterUnauthorized, ClusterRemoved}
}

// ClusterHealth is the health report of one cluster.
type ClusterHealth struct {
	Cluster string
	State   ClusterState
	// LastError is the most recent error, phrased for users (names the
	// cluster, namespace and verb where it can).
	LastError string
	// Since is when State was entered.
	Since time.Time
	// Source says where the cluster came from: "config" or "capi:<mgmt>/<ns>".
	Source string
	// Phase is the Cluster API phase of a discovered cluster.
	Phase string
	// EventsPerSecond is the recent rate of watch events.
	EventsPerSecond float64
	// LastEvent is when the last watch event arrived.
	LastEvent time.Time
	// Generation increases each time the cluster (re)syncs; the loop
	// enqueues every NodeID of the cluster when it changes.
	Generation int64
	// Detection says how the backend finds changes, for display: "" for
	// a watch (Kubernetes), "poll 1m0s" for a backend polled at an
	// interval (Terraform).
	Detection string `json:",omitempty"`
	// Seq orders reports: it increases with every report a watch manager
	// sends (across restarts of the same cluster), and the hub drops a
	// report older than one it already applied. Zero means unordered (a
	// report from outside a manager) and is always applied.
	Seq int64 `json:",omitempty"`
}

// Sink receives what the watch managers observe. Implementations must not
// block: handlers call it from informer goroutines.
type Sink interface {
	// Observe records one object event.
	Observe(Event)
	// ClusterChanged records a cluster's new health.
	ClusterChanged(ClusterHealth)
}

// ErrUnreachable marks a backend error that says the target could not be
// reached at all, or refused the credentials or the TLS handshake: it says
// nothing about the NodeID. The loop retries such a NodeID at a fixed pace
// (Options.UnreachableRetry) instead of growing its failure backoff, so a
// NodeID that failed through a whole outage is repaired as soon as its
// cluster is back, not a backoff of minutes later; the cluster's health
// (parking while it is not ready) decides the rest.
var ErrUnreachable = errors.New("unreachable")

// ErrRestarting marks a backend error of a call that ran on a connection
// its backend has since closed, or before it had one: the cluster's watch
// manager was restarting (a reload that changed what it watches, rotated
// credentials, a replica taking the cluster over). It says nothing about
// the NodeID or its cluster: the loop runs the pass again on the
// cluster's current backend (parked until the cluster is ready), neither
// counted nor shown as a failure. A write that was in flight may or may
// not have reached the cluster; the pass that runs again reads the object
// first, and a delete carries its preconditions.
var ErrRestarting = errors.New("backend restarting")

// ErrKindNotServed marks a backend error of an object whose kind the
// target does not serve (yet): a custom resource whose
// CustomResourceDefinition is missing or not established. An object the
// hub has never applied (a CRD and its custom resources applied in one
// wave) waits for its kind: shown as unknown with the reason, retried
// with the failure backoff, never counted or fed as a failed repair. An
// object applied before fails as any other (its kind went away).
var ErrKindNotServed = errors.New("kind not served")

// ErrTerminating marks a write the target refuses only until a deletion in
// progress ends: the object's namespace is being deleted (the apiserver
// creates nothing in a terminating namespace), or its kind's
// CustomResourceDefinition is. Neither a denial nor a failure: the object
// is written once the deletion is over (the namespace or the CRD
// recreated), so the loop shows the drift with the reason, says it once in
// the timeline and the feed, and tries again every
// Options.TerminatingRetry, never counting it as a failed repair.
var ErrTerminating = errors.New("held back by a deletion in progress")

// ErrUnauthorized marks a backend error of a target that refused the
// credentials (401), or refused them the whole API (403 on /readyz). Such
// an error also matches ErrUnreachable: the loop paces its retries the
// same way.
var ErrUnauthorized = errors.New("unauthorized")

// ErrForbidden marks a backend error caused by missing permissions (an RBAC
// denial): the loop shows the NodeID as forbidden and retries slowly instead
// of hammering the cluster.
var ErrForbidden = errors.New("forbidden")

// ErrRefused marks a repair the backend refuses for good, whoever asks (a
// Terraform resource released from its configuration, which only Terraform
// itself may change): the loop shows the drift as warn-only with the
// refusal as the reason and does not retry; a manual repair that met it is
// spent. A delete (a prune) refused so leaves the object in place and stops
// managing it.
var ErrRefused = errors.New("refused")

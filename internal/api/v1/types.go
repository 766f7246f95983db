package apiv1

import (
	"fmt"
	"time"
)

// APIVersion is the apiVersion of every top-level document of this version.
const APIVersion = "driftwatch.io/v1"

// Redacted replaces a value the caller may not see (an environment
// variable's value or a Secret's, for a caller that is not an operator).
const Redacted = "<redacted>"

// Duration is a time.Duration written as a Go duration string ("1.5s",
// "250ms", "0s"), which parses back to the same value.
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("duration %q: %w", b, err)
	}
	*d = Duration(v)
	return nil
}

// OverrideNote is when an application's policy override was set, by whom
// (the API token's name, or the local user of a terminal UI) and why; each
// absent when not known.
type OverrideNote struct {
	At     time.Time `json:"at,omitzero"`
	By     string    `json:"by,omitempty"`
	Reason string    `json:"reason,omitempty"`
}

// Header is what a snapshot and a delta both carry about the hub as a whole.
// It is embedded: its fields appear at the top level of both documents.
type Header struct {
	// APIVersion is always APIVersion.
	APIVersion string `json:"apiVersion"`
	// HubID is the hub's id from its config.
	HubID string `json:"hubId"`
	// Seq numbers the hub's snapshots: it increases with every snapshot
	// within one hub process (it starts again at 1 when the hub restarts).
	Seq uint64 `json:"seq"`
	// Taken is when the snapshot was built.
	Taken time.Time `json:"taken"`
	// Policy is the hub's default policy: repair or warn.
	Policy string `json:"policy"`
	// AppPolicies are the runtime policy overrides set from the UI or the
	// API, by application id.
	AppPolicies map[string]string `json:"appPolicies"`
	// AppPolicyNotes say when each override of AppPolicies was set, by
	// whom and why, as far as the hub knows; absent when it knows nothing.
	AppPolicyNotes map[string]OverrideNote `json:"appPolicyNotes,omitempty"`
	// QueueDepth is the length of the reconcile queue.
	QueueDepth int `json:"queueDepth"`
	// Holds are the active holds, sorted by target.
	Holds []Hold `json:"holds"`
	// FailingSources are the manifest sources that cannot be used now,
	// sorted by id: each is left out of the desired state, whose last good
	// part stays in force. Absent when none fails.
	FailingSources []FailingSource `json:"failingSources,omitempty"`
	// GitSources are the Git manifest sources, sorted by id: the revision
	// in force and how their fetches go. Absent when there are none.
	GitSources []GitSource `json:"gitSources,omitempty"`
}

// GitSource is where a Git manifest source stands.
type GitSource struct {
	// ID is the source's id.
	ID string `json:"id"`
	// URL and Ref are the repository and the ref the source follows.
	URL string `json:"url"`
	Ref string `json:"ref,omitempty"`
	// Commit is the full SHA of the commit in force ("" before any).
	Commit string `json:"commit,omitempty"`
	// CommitTime and Subject are its committer time and the first line
	// of its message.
	CommitTime time.Time `json:"commitTime,omitzero"`
	Subject    string    `json:"subject,omitempty"`
	// LastFetch is when a fetch last succeeded.
	LastFetch time.Time `json:"lastFetch,omitzero"`
	// Error says why the source is stale (its head is not in force);
	// absent when it is current.
	Error string `json:"error,omitempty"`
	// Since is when it became stale.
	Since time.Time `json:"since,omitzero"`
}

// FailingSource is a manifest source that cannot be used now.
type FailingSource struct {
	// ID is the source's id.
	ID string `json:"id"`
	// Error says why (the source's field, the manifest's file and line).
	Error string `json:"error"`
	// Since is when it started failing.
	Since time.Time `json:"since"`
	// KeptObjects is how many objects of its last good state stay desired
	// (0 when the hub never had one: what it applied before is left as it
	// is, never pruned).
	KeptObjects int `json:"keptObjects"`
}

// Snapshot is the hub's state at one moment: GET /api/v1/snapshot, and the
// "snapshot" event of the watch stream.
type Snapshot struct {
	Header
	// Clusters are sorted by id.
	Clusters []Cluster `json:"clusters"`
	// Nodes are sorted by NodeID text.
	Nodes []Node `json:"nodes"`
	// Feed is the live drift and repair feed, newest first (bounded).
	Feed []FeedEntry `json:"feed"`
}

// Delta turns the snapshot numbered Since into the one numbered Seq: the
// "delta" event of the watch stream. It carries the header, and only what
// changed of the rest.
type Delta struct {
	Header
	// Since is the Seq of the snapshot this delta applies to.
	Since uint64 `json:"since"`
	// Clusters are the clusters that changed or appeared, sorted by id.
	Clusters []Cluster `json:"clusters"`
	// RemovedClusters are the ids of the clusters that are gone.
	RemovedClusters []string `json:"removedClusters"`
	// Nodes are the NodeIDs whose status changed or that appeared, sorted
	// by NodeID text.
	Nodes []Node `json:"nodes"`
	// RemovedNodes are the NodeIDs that are gone.
	RemovedNodes []string `json:"removedNodes"`
	// Feed are the new feed entries, newest first: they go in front of the
	// previous feed.
	Feed []FeedEntry `json:"feed"`
	// FeedDropped are the positions in the previous feed (0 its newest
	// entry), ascending, of the entries that are gone before the new ones
	// go in front: repeats a new entry folded in (it carries their count).
	FeedDropped []int `json:"feedDropped,omitempty"`
	// FeedLength is the length of the feed after the delta: the oldest
	// entries past it are dropped.
	FeedLength int `json:"feedLength"`
}

// Cluster is one cluster's connection health and counts.
type Cluster struct {
	// ID is the cluster id.
	ID string `json:"id"`
	// State is connecting, synced, degraded, unreachable, unauthorized
	// (the apiserver refuses the credentials: 401, or 403 on the whole API)
	// or removed. Only synced and degraded clusters are read and repaired.
	State string `json:"state"`
	// LastError is the most recent error, phrased for users.
	LastError string `json:"lastError,omitempty"`
	// Since is when State was entered.
	Since time.Time `json:"since,omitzero"`
	// Source says where the cluster came from: "config" or
	// "capi:<management cluster>/<namespace>".
	Source string `json:"source,omitempty"`
	// Phase is the Cluster API phase of a discovered cluster.
	Phase string `json:"phase,omitempty"`
	// Detection says how the backend finds changes: absent for a watch
	// (Kubernetes), "poll 1m0s" for a backend polled at an interval (a
	// Terraform workspace).
	Detection string `json:"detection,omitempty"`
	// EventsPerSecond is the recent rate of watch events.
	EventsPerSecond float64 `json:"eventsPerSecond"`
	// LastEvent is when the last watch event arrived.
	LastEvent time.Time `json:"lastEvent,omitzero"`
	// Generation increases each time the cluster (re)syncs.
	Generation int64 `json:"generation"`
	// Paused says repairs on the cluster are paused.
	Paused bool `json:"paused"`
	// PausedAt is when the cluster was paused, PausedBy who paused it (the
	// API token's name, or the local user of a terminal UI) and
	// PauseReason why; absent when it is not paused or they are not known.
	PausedAt    time.Time `json:"pausedAt,omitzero"`
	PausedBy    string    `json:"pausedBy,omitempty"`
	PauseReason string    `json:"pauseReason,omitempty"`
	// Objects counts the managed NodeIDs on the cluster.
	Objects int `json:"objects"`
	// Counts counts them by status.
	Counts map[string]int `json:"counts"`
	// MedianRepair is the median event-to-repaired time of recent repairs.
	MedianRepair Duration `json:"medianRepair"`
	// Owner is the id of the replica that manages the cluster when the
	// hub runs as several replicas (GET /api/v1/snapshot only); empty for
	// a hub of one process.
	Owner string `json:"owner,omitempty"`
}

// Node is the status of one managed object (one NodeID).
type Node struct {
	// ID is the NodeID's text form, cluster:resource:kind.
	ID string `json:"id"`
	// Application is the id of the application the object belongs to.
	Application string `json:"application"`
	// Kind is deployment, service or configmap.
	Kind string `json:"kind"`
	// Policy is the effective policy: repair or warn.
	Policy string `json:"policy"`
	// Status is what users see: in-sync, drifted, repairing, repaired,
	// failed, warn-only, paused, stuck, decommissioning, forbidden, held,
	// orphan, contested or unknown.
	Status string `json:"status"`
	// Reason explains the status (last error, stuck reason, hold).
	Reason string `json:"reason,omitempty"`
	// LastRepair is the latest drift record, if any.
	LastRepair *Repair `json:"lastRepair,omitempty"`
	// Timeline holds the latest steps, oldest first (bounded).
	Timeline []TimelineEntry `json:"timeline"`
	// ReadyReplicas and DesiredReplicas are a Deployment's rollout progress.
	ReadyReplicas   int32 `json:"readyReplicas"`
	DesiredReplicas int32 `json:"desiredReplicas"`
	// LastChange is when the status last changed.
	LastChange time.Time `json:"lastChange,omitzero"`
	// Repairs counts the repairs applied to the NodeID.
	Repairs int `json:"repairs"`
	// Revision is the source revision the desired object came from (for a
	// Git source: the commit that last changed it, a space, its subject);
	// absent when its source has none.
	Revision string `json:"revision,omitempty"`
	// Ignored are the differences ignore rules covered on the last
	// comparison: not drift, not repaired.
	Ignored []IgnoredField `json:"ignored,omitempty"`
	// Contested describes the fight with another writer while the status
	// is contested.
	Contested *Contest `json:"contested,omitempty"`
	// Diagnosis says, while the status is stuck, why the rollout does not
	// progress, in its pods' or its events' words; absent otherwise.
	Diagnosis []string `json:"diagnosis,omitempty"`
}

// IgnoredField is a difference an ignore rule covers.
type IgnoredField struct {
	FieldDiff
	// Rule names the rule that covers it.
	Rule string `json:"rule"`
	// Manager is the field's current owner when a manager rule matched.
	Manager string `json:"manager,omitempty"`
}

// Contest is a fight with another writer over one NodeID: the same field
// manager undoing repair after repair.
type Contest struct {
	// Manager is the field manager ("" when unknown, as for deletes).
	Manager string `json:"manager"`
	// Fields are the fields it changed, when known.
	Fields []string `json:"fields,omitempty"`
	// Undone counts the repairs it undid in a row.
	Undone int `json:"undone"`
	// Since is when the fight was detected.
	Since time.Time `json:"since,omitzero"`
	// Backoff is the current wait between repairs.
	Backoff Duration `json:"backoff"`
	// NextAttempt is when the next repair goes through; left out once it
	// went through.
	NextAttempt time.Time `json:"nextAttempt,omitzero"`
	// ClearsAt is when the fight is over if the last repair still holds.
	ClearsAt time.Time `json:"clearsAt,omitzero"`
}

// Repair is the record of one drift and its repair, with the time of each
// step (left out when not reached).
type Repair struct {
	// ID is the NodeID's text form.
	ID string `json:"id"`
	// Drift is what differed.
	Drift Drift `json:"drift"`
	// Attribution names who changed the drifted fields, when known.
	Attribution *Attribution `json:"attribution,omitempty"`
	// Action is what the hub did: apply, remove+apply, warn, paused,
	// wait-deletion or none.
	Action string `json:"action"`
	// Error is the last error, if the repair failed.
	Error string `json:"error,omitempty"`
	// DesiredChange is set when the write applied a change of the
	// desired state, not a repair of drift: "desired changed
	// (web@abc1234)".
	DesiredChange string `json:"desiredChange,omitempty"`
	// ObservedAt is when the watch event arrived.
	ObservedAt time.Time `json:"observedAt,omitzero"`
	// ClassifiedAt is when the drift was classified.
	ClassifiedAt time.Time `json:"classifiedAt,omitzero"`
	// AppliedAt is when the repair was applied.
	AppliedAt time.Time `json:"appliedAt,omitzero"`
	// VerifiedAt is when an event showed the object back in sync.
	VerifiedAt time.Time `json:"verifiedAt,omitzero"`
}

// Drift is how an object differs from its desired state.
type Drift struct {
	// Class is in-sync, missing, modified, added, unlabelled or deleting.
	Class string `json:"class"`
	// Fields are the differing fields, sorted by path.
	Fields []FieldDiff `json:"fields"`
}

// FieldDiff is one differing field.
type FieldDiff struct {
	// Path is the field path, e.g. "spec.template.spec.containers[app].image".
	Path string `json:"path"`
	// Desired and Actual are the values as text; "<none>" when absent and
	// "<redacted>" when the caller may not see them.
	Desired string `json:"desired"`
	Actual  string `json:"actual"`
	// Added marks an entry someone else added inside what the hub owns.
	Added bool `json:"added,omitempty"`
	// Pointer is the JSON pointer of an added entry in the live object.
	Pointer string `json:"pointer,omitempty"`
}

// Attribution says which field manager changed the drifted fields, and when.
type Attribution struct {
	// Manager is the field manager, e.g. kubectl-edit.
	Manager string `json:"manager"`
	// Operation is Update or Apply.
	Operation string `json:"operation,omitempty"`
	// At is when the manager last changed the fields.
	At time.Time `json:"at,omitzero"`
	// Fields are the drifted field paths the manager owns.
	Fields []string `json:"fields"`
}

// TimelineEntry is one timestamped step in a NodeID's history.
type TimelineEntry struct {
	// At is when the step happened.
	At time.Time `json:"at"`
	// Step names it, e.g. "drift classified".
	Step string `json:"step"`
	// Detail says more, e.g. the drift's summary.
	Detail string `json:"detail,omitempty"`
	// Repeats is how many more times the step happened after at, with the
	// same detail and nothing in between, folded into this entry; absent
	// when it happened once.
	Repeats int `json:"repeats,omitempty"`
	// LastAt is when the latest repeat happened; absent when repeats is.
	LastAt time.Time `json:"lastAt,omitzero"`
}

// FeedEntry is one line of the live drift and repair feed.
type FeedEntry struct {
	// At is when it happened.
	At time.Time `json:"at"`
	// ID is the NodeID's text form.
	ID string `json:"id"`
	// Class is the drift class.
	Class string `json:"class"`
	// Fields are the differing fields.
	Fields []FieldDiff `json:"fields"`
	// Who is the field manager behind the drift, when known.
	Who string `json:"who,omitempty"`
	// Action is what the hub did.
	Action string `json:"action"`
	// Latency is event observed to repaired (to classified for warn-only).
	Latency Duration `json:"latency"`
	// Error is the repair's error, if it failed.
	Error string `json:"error,omitempty"`
	// Why is why the hub held the drift back (action paused, held or
	// warn), as it stood then: the switch that refused the write and its
	// note, who set it and why.
	Why string `json:"why,omitempty"`
	// Count is how many identical entries (same NodeID, class, fields,
	// who, action, error and why, each at most 10 s after the previous one)
	// this one stands for; at and latency are the last one's.
	Count int `json:"count"`
	// First is when the first of them happened, when count is more than
	// 1.
	First time.Time `json:"first,omitzero"`
}

// Hold stops repairs of what it covers until it expires.
type Hold struct {
	// Scope is node, application or cluster.
	Scope string `json:"scope"`
	// Name is the NodeID text, application id or cluster id.
	Name string `json:"name"`
	// Reason says why.
	Reason string `json:"reason"`
	// By is who placed it (the API token's name, or the local user of a
	// terminal UI); absent when not known.
	By string `json:"by,omitempty"`
	// Since is when the hold was placed.
	Since time.Time `json:"since"`
	// Until is when it expires.
	Until time.Time `json:"until"`
}

// HoldDocument is the answer of POST /api/v1/holds: the hold placed.
type HoldDocument struct {
	// APIVersion is always APIVersion.
	APIVersion string `json:"apiVersion"`
	Hold
}

// HoldList is the answer of GET /api/v1/holds.
type HoldList struct {
	// APIVersion is always APIVersion.
	APIVersion string `json:"apiVersion"`
	// Holds are the active holds, sorted by target.
	Holds []Hold `json:"holds"`
}

// Replica states.
const (
	// ReplicaLive is a replica whose membership Lease is renewed and that
	// takes its share of the clusters.
	ReplicaLive = "live"
	// ReplicaUnreachable is a live replica whose API did not answer a
	// client that merges the replicas' views.
	ReplicaUnreachable = "unreachable"
	// ReplicaRefused is a live replica that takes no cluster: its desired
	// state (DesiredHash) differs from that of the replicas owning
	// clusters. Reason says which.
	ReplicaRefused = "refused"
	// ReplicaJoining is the replica that answered while it is not a
	// member yet (it starts, or joins again after it was evicted): it
	// holds no cluster and lists no other replica.
	ReplicaJoining = "joining"
	// ReplicaCoordinationUnreachable is the replica that answered while
	// it cannot renew its membership in the coordination cluster: it
	// holds no cluster, and lists no other replica and no owner (it
	// cannot tell who owns what).
	ReplicaCoordinationUnreachable = "coordination-unreachable"
)

// Replica is one replica of a hub that runs as several.
type Replica struct {
	// ID is the replica id.
	ID string `json:"id"`
	// Address is its API address as its membership Lease advertises it
	// (a URL such as "https://10.0.0.7:7070", or host:port).
	Address string `json:"address,omitempty"`
	// Self is true for the replica that answered.
	Self bool `json:"self"`
	// State is one of the Replica* states.
	State string `json:"state"`
	// Reason says why a replica that is not live takes no cluster.
	Reason string `json:"reason,omitempty"`
	// DesiredHash identifies the desired state its config makes: the
	// replicas owning clusters share one.
	DesiredHash string `json:"desiredHash,omitempty"`
	// Clusters are the clusters it manages, sorted.
	Clusters []string `json:"clusters"`
}

// Whoami is the answer of GET /api/v1/whoami: who the request's token
// belongs to, so that a client can leave out what its role may not do.
type Whoami struct {
	// APIVersion is always APIVersion.
	APIVersion string `json:"apiVersion"`
	// Name is the token's name in the token file ("" when it has none).
	Name string `json:"name,omitempty"`
	// Role is viewer or operator.
	Role string `json:"role"`
}

// ReplicaList is the answer of GET /api/v1/replicas: the live replicas,
// sorted by id; empty for a hub of one process.
type ReplicaList struct {
	// APIVersion is always APIVersion.
	APIVersion string `json:"apiVersion"`
	// Replicas are the live replicas, sorted by id.
	Replicas []Replica `json:"replicas"`
}

// Owners maps every cluster of the list to the replica that manages it.
func (l ReplicaList) Owners() map[string]string {
	m := make(map[string]string)
	for _, r := range l.Replicas {
		for _, c := range r.Clusters {
			m[c] = r.ID
		}
	}
	return m
}

// NodeDetail is one NodeID's status and desired object: GET
// /api/v1/nodes/{id}.
type NodeDetail struct {
	// APIVersion is always APIVersion.
	APIVersion string `json:"apiVersion"`
	// Status is the NodeID's status.
	Status Node `json:"status"`
	// Desired is the desired Kubernetes object, when the hub has one
	// (environment values and a Secret's data and stringData values
	// redacted for a caller that is not an operator).
	Desired map[string]any `json:"desired,omitempty"`
	// Cluster is the NodeID's cluster, as in the snapshot (absent when the
	// hub does not list it, and from a hub before it).
	Cluster *Cluster `json:"cluster,omitempty"`
	// Holds are the active holds that cover the NodeID: on it, on its
	// application or on its cluster.
	Holds []Hold `json:"holds,omitempty"`
	// AppPolicy is its application's runtime policy override ("" none).
	AppPolicy string `json:"appPolicy,omitempty"`
	// AppPolicyNote is when the override was set, by whom and why, when
	// the hub knows.
	AppPolicyNote *OverrideNote `json:"appPolicyNote,omitempty"`
}

// Error is the answer of a request that failed.
type Error struct {
	// Message says what went wrong.
	Message string `json:"error"`
}

// ActionStatus is the answer of an accepted action ("accepted") or a
// reload ("reloaded").
type ActionStatus struct {
	// Status is accepted or reloaded.
	Status string `json:"status"`
}

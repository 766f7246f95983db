package hub

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Label and annotation keys driftwatch puts on every object it applies.
const (
	// ManagedByLabel marks an object as managed; the watch managers filter on
	// it server-side. Its value is configurable (default DefaultManagedBy).
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// DefaultManagedBy is the default value of ManagedByLabel.
	DefaultManagedBy = "driftwatch"
	// NodeIDAnnotation holds the canonical NodeID of an applied object.
	NodeIDAnnotation = "driftwatch.io/node-id"
	// ConfigHashAnnotation on a pod template holds the hash of the
	// application's config data, so a config change rolls the pods.
	ConfigHashAnnotation = "driftwatch.io/config-hash"
	// AppLabel is the minimal selector label shared by a Deployment's pods and
	// its Service.
	AppLabel = "app"
	// TenancyLabel carries an application's tenancy ID (sanitised).
	TenancyLabel = "driftwatch.io/tenancy"
	// ApplicationLabel carries the application id.
	ApplicationLabel = "driftwatch.io/application"
	// FieldManager is the server-side apply field manager of every repair.
	FieldManager = "driftwatch"
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
	// Object is the desired object, fully formed (apiVersion, kind, metadata
	// with the managed-by label and the node-id annotation). Treat it as
	// immutable: it is shared by the loop, snapshots and the backends.
	Object *unstructured.Unstructured
	// Hash is a content hash of Object, to tell changed specs on reload.
	Hash string
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

// Cluster states.
const (
	ClusterConnecting  ClusterState = "connecting"
	ClusterSynced      ClusterState = "synced"
	ClusterDegraded    ClusterState = "degraded"
	ClusterUnreachable ClusterState = "unreachable"
	// ClusterRemoved is reported once when a cluster leaves the registry.
	ClusterRemoved ClusterState = "removed"
)

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
}

// Sink receives what the watch managers observe. Implementations must not
// block: handlers call it from informer goroutines.
type Sink interface {
	// Observe records one object event.
	Observe(Event)
	// ClusterChanged records a cluster's new health.
	ClusterChanged(ClusterHealth)
}

// Conflict is a field another manager owned that a forced apply took over.
type Conflict struct {
	Manager string
	Field   string
}

// ApplyResult is what a server-side apply returned.
type ApplyResult struct {
	// Object is the object as stored after the apply.
	Object *unstructured.Unstructured
	// Conflicts lists fields taken over from other managers (force).
	Conflicts []Conflict
}

// FieldOwner is one managedFields entry: which manager owns which fields.
type FieldOwner struct {
	Manager   string
	Operation string
	Time      time.Time
	// Fields are the owned leaf paths, e.g. "spec.replicas",
	// "spec.template.spec.containers[app].image".
	Fields []string
}

// Propagation is a delete propagation policy.
type Propagation string

// Delete propagation policies.
const (
	PropagationBackground Propagation = "Background"
	PropagationForeground Propagation = "Foreground"
)

// Backend reads and writes the objects of one cluster. Every call takes the
// NodeSpec because the object's namespace, name and kind are needed to find it.
type Backend interface {
	// Read returns the live object, or nil when it does not exist. With
	// confirm false it reads the watch cache; with confirm true it GETs from
	// the apiserver (e.g. to tell a deleted object from an unlabelled one).
	Read(ctx context.Context, spec NodeSpec, confirm bool) (*unstructured.Unstructured, error)
	// Apply server-side applies spec.Object with field manager driftwatch,
	// forcing conflicts, and reports the conflicts it overrode.
	Apply(ctx context.Context, spec NodeSpec) (ApplyResult, error)
	// RemoveFields removes entries others added inside what we own (server-
	// side apply cannot remove fields it does not own) with a JSON patch of
	// "remove" operations at the given JSON pointers, guarded by a test of
	// resourceVersion so a concurrent change is never clobbered.
	RemoveFields(ctx context.Context, spec NodeSpec, resourceVersion string, pointers []string) error
	// Delete deletes the object with the given propagation.
	Delete(ctx context.Context, spec NodeSpec, p Propagation) error
	// ManagedFields GETs the live object and reports its field owners.
	ManagedFields(ctx context.Context, spec NodeSpec) ([]FieldOwner, error)
}

// Backends finds the backend of a cluster.
type Backends interface {
	// Backend returns the cluster's backend, or false when the cluster is
	// not registered.
	Backend(cluster string) (Backend, bool)
}

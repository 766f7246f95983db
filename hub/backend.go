package hub

import "context"

// Backend is the contract between the reconcile loop and one cluster or
// workspace (the seed's InfraBackend). Every call takes the NodeSpec, because
// an external backend needs the object's namespace, name and kind to find
// it. The loop never sees a backend's own representation of an object
// (unstructured objects, labels, UIDs, managedFields, plans): it sees State,
// Drift and RepairResult, and compares versions only for equality.
//
// A backend's event source is the Sink it was given: it calls Sink.Observe
// when one of its objects changes and Sink.ClusterChanged when its
// connection's health changes. Implementations must be safe for concurrent
// use by several workers (never for the same NodeID at once: the workqueue
// guarantees that).
type Backend interface {
	// ReadState reads the live state of spec's object. With fresh false it
	// may answer from a watch cache; with fresh true it reads the source
	// of truth (an apiserver GET, a refreshed plan). A missing object is
	// State{Exists: false}, not an error.
	ReadState(ctx context.Context, spec NodeSpec, fresh bool) (State, error)
	// DetectDrift compares spec with a state ReadState returned and
	// classifies the difference. It must not write.
	DetectDrift(ctx context.Context, spec NodeSpec, st State) (Drift, error)
	// Attribute says who changed the drifted fields, and when; nil when
	// the backend cannot tell. st is the state d was classified from: the
	// answer is about that object, not a later one.
	Attribute(ctx context.Context, spec NodeSpec, st State, d Drift) (*Attribution, error)
	// Repair makes the object match spec again (it also creates a missing
	// one). st and d are what the loop read and classified; the backend
	// re-reads whatever a guarded write needs, and retries at once a write
	// whose precondition met a concurrent change (the error is the last
	// conflict when it gives up). It returns the version its write
	// produced, so the loop can tell its own echo from new drift. An
	// object another hub owns is refused with an error that unwraps to
	// ErrOwnedByOther (see OwnedByOtherError).
	Repair(ctx context.Context, spec NodeSpec, st State, d Drift) (RepairResult, error)
	// Delete removes the object st describes (a decommission), with its
	// identity and version as preconditions (a version changed meanwhile
	// is read again, checked and retried; a replaced object is not
	// deleted), and never an object the backend does not own (st.Owned
	// false; another hub's is refused with an error that unwraps to
	// ErrOwnedByOther). A missing object is not an error.
	Delete(ctx context.Context, spec NodeSpec, st State) error
}

// Diagnoser is a Backend that can say why an object's rollout does not
// progress, in the words of what it runs (a Kubernetes workload's pods:
// "pod web-5d8f-x2v: not scheduled: Unschedulable: 0/3 nodes are
// available..."; an object's Warning events). The loop asks it when a NodeID becomes StatusStuck, and
// again every Options.DiagnoseEvery while it stays stuck, and shows the
// lines as NodeStatus.Diagnosis. It must not write. A kind it has nothing
// to say of answers nil.
type Diagnoser interface {
	Diagnose(ctx context.Context, spec NodeSpec) ([]string, error)
}

// Backends finds the backend of a cluster.
type Backends interface {
	// Backend returns the cluster's backend, or false when the cluster is
	// not registered.
	Backend(cluster string) (Backend, bool)
}

// State is what a backend read of one object found, in backend-neutral
// terms.
type State struct {
	// Exists is false when the object does not exist (or is not visible
	// to the backend's watch, such as an object that lost our label).
	Exists bool
	// Fresh is true when the read came from the source of truth rather
	// than a watch cache.
	Fresh bool
	// Version is the backend's opaque version of the object (a Kubernetes
	// resourceVersion). The loop only compares it for equality with the
	// version one of its own writes returned.
	Version string
	// Owned is true when the object carries our ownership marks (the
	// managed-by label, and no hub annotation naming another hub).
	Owned bool
	// Deleting is true when deletion was requested but the object is not
	// gone yet.
	Deleting bool
	// Finalizers are what holds a deletion, for messages.
	Finalizers []string
	// Retain is non-empty (the reason) when the backend never deletes the
	// object: a prune leaves it in place and stops managing it (a
	// Kubernetes object annotated driftwatch.io/prune: disabled, such as a
	// Namespace or a CustomResourceDefinition from a manifest source).
	Retain string
	// Progress is the rollout progress of kinds that have one
	// (Deployments); nil otherwise.
	Progress *Progress
	// Live is the backend's own representation of the object, passed back
	// to it in DetectDrift, Repair and Delete. The loop never reads it.
	Live any
}

// Progress is the rollout progress of an object.
type Progress struct {
	// Ready and Desired count replicas.
	Ready, Desired int32
	// Stuck is non-empty (the reason) when the rollout exceeded its
	// progress deadline.
	Stuck string
	// State is the object's kstatus ("Current", "InProgress", "Failed",
	// "Terminating"); empty when the backend does not say.
	State string
	// Message says why, in the object's own words.
	Message string
}

// RepairResult is what a repair did.
type RepairResult struct {
	// Version is the object's version after the write (the expectation:
	// a cached read of an older version is not evidence of drift).
	Version string
	// Class, when set, corrects the drift class the loop classified from a
	// cached read: an object missing from a label-filtered cache may turn
	// out to have existed without our label (DriftUnlabelled).
	Class DriftClass
	// Fields are the differing fields of the corrected class.
	Fields []FieldDiff
	// Action names what was done ("apply", "remove+apply").
	Action string
	// Conflicts lists fields taken over from other managers.
	Conflicts []Conflict
}

// Conflict is a field another manager owned that a repair took over.
type Conflict struct {
	Manager string
	Field   string
}

// OwnedLister is implemented by backends that can list every object on
// their cluster that carries this hub's ownership marks (the managed-by label
// and the hub-id annotation). The hub compares that list with what it wants
// and knows to find orphans: objects it owns but has no record of. Objects
// another hub owns are never listed; when the backend cannot tell them
// from ours (another hub with the same id), ListOwned fails with an error
// that unwraps to ErrOwnedByOther.
type OwnedLister interface {
	ListOwned(ctx context.Context) ([]SpecRef, error)
}

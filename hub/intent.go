package hub

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// HoldScope names what a hold covers.
type HoldScope string

// Hold scopes.
const (
	HoldNode        HoldScope = "node"
	HoldApplication HoldScope = "application"
	HoldCluster     HoldScope = "cluster"
)

// HoldTarget is what a hold covers: a NodeID (its text form), an
// application id or a cluster id.
type HoldTarget struct {
	Scope HoldScope
	Name  string
}

// String formats the target as "scope/name".
func (t HoldTarget) String() string { return string(t.Scope) + "/" + t.Name }

// Valid reports whether the target names a known scope and something in it.
func (t HoldTarget) Valid() error {
	switch t.Scope {
	case HoldNode:
		if _, err := ParseNodeID(t.Name); err != nil {
			return fmt.Errorf("hold target %s: %w", t, err)
		}
	case HoldApplication, HoldCluster:
		if t.Name == "" {
			return fmt.Errorf("hold target %s: empty name", t)
		}
	default:
		return fmt.Errorf("hold target %s: scope must be node, application or cluster", t)
	}
	return nil
}

// Hold stops repairs of what it covers until it expires: drift is still
// detected and shown. It is what an engineer uses during an incident
// instead of a pause they might forget to lift.
type Hold struct {
	Target HoldTarget
	Reason string
	// By is who placed it (the API token's name, or the local user of an
	// in-process terminal UI); "" when not known.
	By    string `json:",omitempty"`
	Since time.Time
	Until time.Time
}

// Active reports whether the hold still holds at now.
func (h Hold) Active(now time.Time) bool { return now.Before(h.Until) }

// SpecRef is what the hub remembers of an applied object: enough to find it
// again (and to delete it) without its desired body.
type SpecRef struct {
	ID          NodeID
	Namespace   string
	Name        string
	Kind        Kind
	Application string
	// Hash is the content hash of the spec last applied.
	Hash string
	// Policy is the spec's policy: a warn-only object removed while the
	// hub was down is still never deleted.
	Policy Policy
}

// RefOf returns the reference of a spec.
func RefOf(s NodeSpec) SpecRef {
	return SpecRef{ID: s.ID, Namespace: s.Namespace, Name: s.Name, Kind: s.Kind, Application: s.Application, Hash: s.Hash, Policy: s.Policy}
}

// Spec returns a spec that locates the referenced object (no desired body:
// enough to read and delete it).
func (r SpecRef) Spec() NodeSpec {
	return NodeSpec{ID: r.ID, Namespace: r.Namespace, Name: r.Name, Kind: r.Kind, Application: r.Application, Hash: r.Hash, Policy: r.Policy}
}

// DecommissionRecord is a pending decommission.
type DecommissionRecord struct {
	Ref   SpecRef
	Since time.Time
	// Orphan marks the prune of an orphan (an object carrying this hub's
	// marks that nothing wants): it is judged by its cluster's policy at
	// the delete.
	Orphan bool
}

// SwitchNote says who set a switch (a cluster's pause, an application's
// policy override) and why, for the people who find it set: By is who
// asked (the API token's name, or the local user of an in-process terminal
// UI), Reason what they wrote. Either may be empty.
type SwitchNote struct {
	By     string
	Reason string
}

// MaxSwitchNote bounds each of a switch note's fields, in bytes: a note
// is read in one line of a view, not a document.
const MaxSwitchNote = 512

// ErrInvalidNote is wrapped by the error of a switch refused for its
// note (see SwitchNote.Valid): nothing was changed.
var ErrInvalidNote = errors.New("invalid note")

// Valid reports a field longer than MaxSwitchNote bytes (wrapping
// ErrInvalidNote).
func (n SwitchNote) Valid() error {
	if len(n.By) > MaxSwitchNote || len(n.Reason) > MaxSwitchNote {
		return fmt.Errorf("%w: a switch's author and reason may have at most %d bytes each", ErrInvalidNote, MaxSwitchNote)
	}
	return nil
}

// Suffix says who set a switch and why as people read it after what was
// set: " by alice: INC-4211", " by alice", ": INC-4211" or "" (raw: the
// caller cleans it for a terminal).
func (n SwitchNote) Suffix() string {
	s := ""
	if n.By != "" {
		s = " by " + n.By
	}
	if n.Reason != "" {
		s += ": " + n.Reason
	}
	return s
}

// OverriddenSuffix says, after a warn-only refusal's reason, that the
// policy is a runtime override and who set it and why: " (policy
// overridden by dave: DB migration)", " (policy overridden)" without a
// note (raw: the caller cleans it for a terminal).
func (n SwitchNote) OverriddenSuffix() string {
	return " (policy overridden" + n.Suffix() + ")"
}

// oneLine returns the note with each field on one line: runs of white
// space, line breaks included, become one space.
func (n SwitchNote) oneLine() SwitchNote {
	return SwitchNote{By: strings.Join(strings.Fields(n.By), " "), Reason: strings.Join(strings.Fields(n.Reason), " ")}
}

// OverrideNote is an application's runtime policy override as people read
// it: when it was set, by whom and why (see SwitchNote); zero and empty
// where not known.
type OverrideNote struct {
	At     time.Time `json:",omitzero"`
	By     string    `json:",omitempty"`
	Reason string    `json:",omitempty"`
}

// Note returns who set the override and why, without when.
func (o OverrideNote) Note() SwitchNote { return SwitchNote{By: o.By, Reason: o.Reason} }

// Intent is what on-call engineers told the hub and what it applied: it must
// survive a restart.
type Intent struct {
	// Paused clusters.
	Paused map[string]bool
	// PausedAt is when each paused cluster was last paused, for stores
	// that keep it (both of package intent do; nil otherwise). A replica that
	// reads a later pause of a cluster it already holds paused takes it as
	// a new pause: a manual repair asked for before it no longer overrides
	// it.
	PausedAt map[string]time.Time
	// PauseNotes say who paused each paused cluster and why, for stores
	// that keep them (a cluster paused without a note has none).
	PauseNotes map[string]SwitchNote
	// Policies are runtime policy overrides by application.
	Policies map[string]Policy
	// PolicySetAt is when each application's override was last set, for
	// stores that keep it (as PausedAt): a later one read by a replica
	// holding the same override is the override set again.
	PolicySetAt map[string]time.Time
	// PolicyNotes say who set each override and why, for stores that
	// keep them (an override set without a note has none).
	PolicyNotes map[string]SwitchNote
	// Holds, expired ones included until they are deleted.
	Holds []Hold
	// Decommissions pending.
	Decommissions []DecommissionRecord
	// Applied are the NodeIDs the hub applied, with the spec hash.
	Applied map[NodeID]SpecRef
}

// OverridesLoader is implemented by intent stores that can read the
// operator's overrides alone (Paused, Policies, Holds), without the applied
// and decommission records; RefreshIntent uses it when available.
type OverridesLoader interface {
	LoadOverrides() (Intent, error)
}

// IntentStore keeps Intent durably. Every write is durable when it returns.
// Implementations must be safe for concurrent use.
type IntentStore interface {
	// Load reads everything stored.
	Load() (Intent, error)
	// SetPaused records a cluster's pause (false deletes it, with its
	// note). at is when it was paused: a store shared by replicas keeps it
	// (Intent.PausedAt), one only a single hub writes may ignore it. note
	// says who paused it and why (Intent.PauseNotes).
	SetPaused(cluster string, paused bool, at time.Time, note SwitchNote) error
	// SetPolicy records an application's policy override ("" deletes it,
	// with its note), set at at with note (kept as SetPaused's).
	SetPolicy(app string, p Policy, at time.Time, note SwitchNote) error
	// PutHold records a hold, replacing one on the same target.
	PutHold(h Hold) error
	// DeleteHold deletes the hold on a target (none is not an error).
	DeleteHold(t HoldTarget) error
	// DeleteExpiredHold deletes the hold on h's target only while the
	// stored one still ends at h.Until, atomically: a hold renewed on the
	// target (a later Until) stays. None is not an error.
	DeleteExpiredHold(h Hold) error
	// PutDecommission records a pending decommission.
	PutDecommission(d DecommissionRecord) error
	// DeleteDecommission deletes a decommission record.
	DeleteDecommission(id NodeID) error
	// PutApplied records an applied spec.
	PutApplied(r SpecRef) error
	// DeleteApplied deletes an applied record.
	DeleteApplied(id NodeID) error
	// Close releases the store.
	Close() error
}

package notify

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// PayloadVersion is the value of Event.Version: it changes when a field of
// the JSON payload changes meaning or goes away (new fields may be added
// within a version).
const PayloadVersion = "driftwatch.io/notification/v1"

// EventType names what happened.
type EventType string

// Event types.
const (
	// EventRepaired: drift was found and repaired.
	EventRepaired EventType = "drift-repaired"
	// EventUnrepaired: drift was found and deliberately left in place;
	// Event.Reason says why (ReasonWarn, ReasonHold, ReasonPause,
	// ReasonForeign).
	EventUnrepaired EventType = "drift-unrepaired"
	// EventRepairFailed: reconciling a NodeID failed (the loop retries).
	EventRepairFailed EventType = "repair-failed"
	// EventContested: another field manager keeps changing what the hub
	// owns (a NodeID entered the node status StatusContested).
	EventContested EventType = "contested"
	// EventStuck: a rollout or a prune did not finish in time.
	EventStuck EventType = "stuck"
	// EventClusterUnreachable: a cluster became unreachable.
	EventClusterUnreachable EventType = "cluster-unreachable"
	// EventClusterRecovered: an unreachable cluster is reachable again.
	EventClusterRecovered EventType = "cluster-recovered"
	// EventClusterPaused: repairs on a cluster were paused (or paused
	// again); Event.ChangedBy says who, Event.Reason why, when known.
	EventClusterPaused EventType = "cluster-paused"
	// EventClusterResumed: repairs on a paused cluster were resumed.
	EventClusterResumed EventType = "cluster-resumed"
	// EventSourceApplied: a Git manifest source's new commit is the
	// desired state in force (Event.Application names the source,
	// Event.Revision the commit).
	EventSourceApplied EventType = "source-applied"
	// EventSourceStale: a Git manifest source cannot move to its remote's
	// head (a fetch fails, a signature is refused, a commit does not render
	// or the prune guard refuses it); its last good commit stays in force.
	EventSourceStale EventType = "source-stale"
)

// EventTypes lists every event type.
func EventTypes() []EventType {
	return []EventType{EventRepaired, EventUnrepaired, EventRepairFailed, EventContested, EventStuck,
		EventClusterUnreachable, EventClusterRecovered, EventClusterPaused, EventClusterResumed, EventSourceApplied, EventSourceStale}
}

// ObjectEventTypes lists the event types about one object (those written
// as Kubernetes Events, see KubernetesEvents).
func ObjectEventTypes() []EventType {
	return []EventType{EventRepaired, EventUnrepaired, EventRepairFailed, EventContested, EventStuck}
}

// Reasons a drift was left unrepaired (Event.Reason of EventUnrepaired).
const (
	ReasonWarn  = "warn"
	ReasonHold  = "hold"
	ReasonPause = "pause"
	// ReasonForeign: the object carries another hub's id.
	ReasonForeign = "foreign"
)

// Severity ranks events for filtering: SeverityInfo < SeverityWarning <
// SeverityCritical.
type Severity string

// Severities.
const (
	SeverityInfo     Severity = "info"
	SeverityWarning  Severity = "warning"
	SeverityCritical Severity = "critical"
)

// Severities lists the severities, lowest first.
func Severities() []Severity { return []Severity{SeverityInfo, SeverityWarning, SeverityCritical} }

// rank orders severities; an unknown one ranks lowest.
func (s Severity) rank() int { return slices.Index(Severities(), s) }

// AtLeast reports whether s is min or more severe.
func (s Severity) AtLeast(min Severity) bool { return s.rank() >= min.rank() }

// severityOf is the severity of each event type.
func severityOf(t EventType) Severity {
	switch t {
	case EventRepaired, EventClusterRecovered, EventClusterResumed, EventSourceApplied:
		return SeverityInfo
	case EventUnrepaired, EventContested, EventSourceStale, EventClusterPaused:
		return SeverityWarning
	default:
		return SeverityCritical
	}
}

// Event is one notification, and the JSON body a webhook receives (format
// "json"). Fields that do not apply to an event are left out.
type Event struct {
	// Version is PayloadVersion.
	Version string `json:"version"`
	// Type says what happened; Severity how much it matters.
	Type     EventType `json:"type"`
	Severity Severity  `json:"severity"`
	// Hub is the id of the hub that sent it.
	Hub string `json:"hub"`
	// Cluster is the cluster id.
	Cluster string `json:"cluster"`
	// Application, NodeID and Kind name the object (not for cluster
	// events); for source events, Application is the source's id.
	Application string `json:"application,omitempty"`
	NodeID      string `json:"nodeId,omitempty"`
	Kind        string `json:"kind,omitempty"`
	// Revision is the commit of the Git source the object's desired state
	// came from (the commit that last changed it), or for source events
	// the source's commit in force; "" for other sources.
	Revision string `json:"revision,omitempty"`
	// Class is the drift class (missing, modified, added, unlabelled,
	// deleting), when the event is about a drift.
	Class string `json:"class,omitempty"`
	// Reason: for drift-unrepaired, why (warn, hold, pause); for
	// cluster-paused, the pause's reason as its author wrote it.
	Reason string `json:"reason,omitempty"`
	// Fields are the drifted field paths (never their values: those may
	// be secrets).
	Fields []string `json:"fields,omitempty"`
	// Diagnosis: for stuck, why the rollout does not progress, in its
	// pods' or its events' words (see hub.NodeStatus.Diagnosis), when the
	// hub could tell.
	Diagnosis []string `json:"diagnosis,omitempty"`
	// ChangedBy is the field manager that made the drift, when known;
	// for cluster-paused, who paused the cluster.
	ChangedBy string `json:"changedBy,omitempty"`
	// Count: for drift-repaired, how many repairs of this NodeID the
	// event stands for (more than 1 when several happened within one
	// snapshot interval).
	Count int `json:"count,omitempty"`
	// Suppressed counts the events this webhook's rate limit dropped
	// since the previous one it sent.
	Suppressed int `json:"suppressed,omitempty"`
	// Message is a one-line summary for people.
	Message string `json:"message"`
	// Time is when the hub saw it happen.
	Time time.Time `json:"time"`
}

// Text is the event as one line of plain text: the "slack" format sends it
// escaped for Slack's markup.
func (e Event) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %s %s: %s", e.Hub, strings.ToUpper(string(e.Severity)), e.Type, e.Message)
	if e.Suppressed > 0 {
		fmt.Fprintf(&b, " (%d earlier notification(s) suppressed by the rate limit)", e.Suppressed)
	}
	return b.String()
}

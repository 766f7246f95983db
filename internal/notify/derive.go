package notify

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// nodeEvent maps a node status a NodeID entered to the event it raises and
// that event's Reason; false for a status that raises none.
func nodeEvent(st hub.Status) (EventType, string, bool) {
	switch st {
	case hub.StatusWarnOnly:
		return EventUnrepaired, ReasonWarn, true
	case hub.StatusHeld:
		return EventUnrepaired, ReasonHold, true
	case hub.StatusPaused:
		return EventUnrepaired, ReasonPause, true
	case hub.StatusForeign:
		return EventUnrepaired, ReasonForeign, true
	case hub.StatusFailed, hub.StatusForbidden:
		return EventRepairFailed, "", true
	case hub.StatusStuck:
		return EventStuck, "", true
	case hub.StatusContested:
		return EventContested, "", true
	}
	return "", "", false
}

// deriver turns a stream of snapshots into events. It remembers, per
// NodeID, the last status it saw (other than unknown: a NodeID shows as
// unknown while its cluster is down, and coming back to the status it had
// is no news) and how many repairs it had; per cluster, its last state.
//
// Snapshots are published at most every 100 ms and coalesce what happens
// in between: repairs are counted, so none is missed (Event.Count says how
// many one event stands for); a status that lasts less than one interval
// may go unreported.
type deriver struct {
	hubID    string
	nodes    map[hub.NodeID]nodeMemo
	clusters map[string]clusterMemo
	// pauses are the paused clusters with when each was paused (zero
	// when not known), to tell a pause, a pause made again and a resume.
	pauses  map[string]time.Time
	sources map[string]sourceMemo // Git sources, by id
	seq     uint64                // marks the nodes seen in the current pass over every node
	prev    *hub.Snapshot         // the previous snapshot (immutable, shared with the hub)
}

type nodeMemo struct {
	status  hub.Status
	repairs int
	seen    uint64
}

// sourceMemo is what the deriver last saw of a Git source.
type sourceMemo struct {
	commit string
	stale  bool
}

type clusterMemo struct {
	state hub.ClusterState
	since time.Time // when it became unreachable
}

func newDeriver(hubID string) *deriver {
	return &deriver{hubID: hubID, nodes: make(map[hub.NodeID]nodeMemo), clusters: make(map[string]clusterMemo),
		pauses: make(map[string]time.Time), sources: make(map[string]sourceMemo)}
}

// pauseEvent appends the event of a cluster's pause, a pause made again
// (a later time: a new note) or a resume, with who paused it and why. A
// cluster seen for the first time (seen false: the hub's first snapshot,
// or a cluster just discovered) raises none for a pause made before.
func (d *deriver) pauseEvent(out []Event, c hub.ClusterStatus, seen bool, base func(EventType, string) Event) []Event {
	at, was := d.pauses[c.Cluster]
	switch {
	case !c.Paused:
		delete(d.pauses, c.Cluster)
		if was {
			ev := base(EventClusterResumed, c.Cluster)
			ev.Message = fmt.Sprintf("repairs on cluster %s resumed: its drift is repaired again", c.Cluster)
			out = append(out, ev)
		}
		return out
	case was && at.Equal(c.PausedAt), !seen:
		d.pauses[c.Cluster] = c.PausedAt
		return out
	}
	d.pauses[c.Cluster] = c.PausedAt
	ev := base(EventClusterPaused, c.Cluster)
	ev.ChangedBy, ev.Reason = c.PausedBy, c.PauseReason
	again := ""
	if was {
		again = " again"
	}
	ev.Message = "repairs on cluster " + c.Cluster + " paused" + again + hub.SwitchNote{By: c.PausedBy, Reason: c.PauseReason}.Suffix() +
		"; its drift is reported, not repaired"
	out = append(out, ev)
	return out
}

// next returns the events between the previous snapshot and s.
func (d *deriver) next(s *hub.Snapshot) []Event {
	var out []Event
	now := s.Taken
	hubID := s.HubID
	if hubID == "" {
		hubID = d.hubID
	}
	base := func(t EventType, cluster string) Event {
		return Event{Version: PayloadVersion, Type: t, Severity: severityOf(t), Hub: hubID, Cluster: cluster, Time: now}
	}

	present := make(map[string]bool, len(s.Clusters))
	for _, c := range s.Clusters {
		present[c.Cluster] = true
		m, seen := d.clusters[c.Cluster]
		out = d.pauseEvent(out, c, seen, base)
		// Refused credentials (an expired token) are an outage too.
		state := c.State
		if state == hub.ClusterUnauthorized {
			state = hub.ClusterUnreachable
		}
		switch {
		case state == hub.ClusterUnreachable && (!seen || m.state != hub.ClusterUnreachable):
			ev := base(EventClusterUnreachable, c.Cluster)
			ev.Message = fmt.Sprintf("cluster %s is unreachable", c.Cluster)
			if c.State == hub.ClusterUnauthorized {
				ev.Message = fmt.Sprintf("cluster %s refused the credentials (unauthorized)", c.Cluster)
			}
			if c.LastError != "" {
				ev.Message += ": " + c.LastError
			}
			out = append(out, ev)
			d.clusters[c.Cluster] = clusterMemo{state: state, since: c.Since}
		case seen && m.state == hub.ClusterUnreachable && (c.State == hub.ClusterSynced || c.State == hub.ClusterDegraded):
			ev := base(EventClusterRecovered, c.Cluster)
			ev.Message = fmt.Sprintf("cluster %s is reachable again (%s)", c.Cluster, c.State)
			if !m.since.IsZero() {
				ev.Message += fmt.Sprintf(" after %s unreachable", now.Sub(m.since).Round(time.Second))
			}
			out = append(out, ev)
			d.clusters[c.Cluster] = clusterMemo{state: c.State}
		case seen && m.state == hub.ClusterUnreachable:
			// Connecting again: still down until it syncs.
		default:
			d.clusters[c.Cluster] = clusterMemo{state: state}
		}
	}
	for id := range d.clusters {
		if !present[id] {
			delete(d.clusters, id)
		}
	}
	for id := range d.pauses {
		if !present[id] {
			delete(d.pauses, id)
		}
	}

	out = d.sourceEvents(out, s, base)

	if !d.changedNodes(s, base, &out) {
		// NodeIDs came or went: a pass over every one (processing a
		// NodeID twice adds no event: its memo is up to date).
		d.seq++
		for i := range s.Nodes {
			out = d.node(out, base, s, &s.Nodes[i], d.seq)
		}
		if len(d.nodes) > len(s.Nodes) {
			for id, m := range d.nodes {
				if m.seen != d.seq {
					delete(d.nodes, id)
				}
			}
		}
	}
	d.prev = s
	return out
}

// changedNodes handles the common case: s holds the NodeIDs of the
// previous snapshot, in the same order, and only those whose status or
// repair count changed need a look. It returns false, maybe part way,
// when the NodeIDs differ.
func (d *deriver) changedNodes(s *hub.Snapshot, base func(EventType, string) Event, out *[]Event) bool {
	if d.prev == nil || len(d.prev.Nodes) != len(s.Nodes) {
		return false
	}
	for i := range s.Nodes {
		n, p := &s.Nodes[i], &d.prev.Nodes[i]
		if n.ID != p.ID {
			return false
		}
		if n.Status != p.Status || n.Repairs != p.Repairs {
			*out = d.node(*out, base, s, n, d.seq)
		}
	}
	return true
}

// node derives the events of one NodeID of snapshot s and updates its
// memo (seen in pass seq).
func (d *deriver) node(out []Event, base func(EventType, string) Event, s *hub.Snapshot, n *hub.NodeStatus, seq uint64) []Event {
	m := d.nodes[n.ID]
	m.seen = seq
	if n.Repairs > m.repairs {
		out = append(out, d.repaired(base(EventRepaired, n.ID.Cluster), n, n.Repairs-m.repairs))
	}
	m.repairs = n.Repairs
	if n.Status != hub.StatusUnknown && n.Status != m.status {
		if t, reason, ok := nodeEvent(n.Status); ok {
			out = append(out, d.nodeStatus(base(t, n.ID.Cluster), s, n, reason))
		}
		m.status = n.Status
	}
	d.nodes[n.ID] = m
	return out
}

// sourceEvents appends the events of the Git sources: a new commit in force
// (source-applied) and a source that became stale (source-stale). What a
// source is when the deriver first sees it (at start) is no news.
func (d *deriver) sourceEvents(out []Event, s *hub.Snapshot, base func(EventType, string) Event) []Event {
	present := make(map[string]bool, len(s.Revisions))
	for _, r := range s.Revisions {
		present[r.ID] = true
		m, seen := d.sources[r.ID]
		now := sourceMemo{commit: r.Commit, stale: r.Error != ""}
		d.sources[r.ID] = now
		if !seen {
			continue
		}
		if now.commit != "" && now.commit != m.commit {
			ev := base(EventSourceApplied, "")
			ev.Application, ev.Revision = r.ID, r.Commit
			ev.Message = fmt.Sprintf("source %s: %s %s is in force", r.ID, hub.RevisionNoun(r.Commit), hub.ShortCommit(r.Commit))
			if r.Subject != "" {
				ev.Message += fmt.Sprintf(" (%s)", r.Subject)
			}
			out = append(out, ev)
		}
		if now.stale && !m.stale {
			ev := base(EventSourceStale, "")
			ev.Application, ev.Revision = r.ID, r.Commit
			ev.Message = fmt.Sprintf("source %s is stale, %s %s stays in force: %s", r.ID, hub.RevisionNoun(r.Commit), hub.ShortCommit(r.Commit), r.Error)
			if r.Commit == "" {
				ev.Message = fmt.Sprintf("source %s is stale, no commit in force: %s", r.ID, r.Error)
			}
			out = append(out, ev)
		}
	}
	for id := range d.sources {
		if !present[id] {
			delete(d.sources, id)
		}
	}
	return out
}

// object fills in the fields that name a NodeID and its latest drift.
func object(ev *Event, n *hub.NodeStatus) {
	ev.NodeID = n.ID.String()
	ev.Application = n.Application
	ev.Kind = string(n.ID.Kind)
	ev.Revision = n.Revision
	if r := n.LastRepair; r != nil {
		ev.Class = string(r.Drift.Class)
		for _, f := range r.Drift.Fields {
			ev.Fields = append(ev.Fields, f.Path)
		}
		if r.Attribution != nil && r.Attribution.Manager != "" {
			ev.ChangedBy = r.Attribution.Manager
		}
	}
}

func (d *deriver) repaired(ev Event, n *hub.NodeStatus, count int) Event {
	object(&ev, n)
	ev.Count = count
	what := "drift"
	if ev.Class != "" {
		what = ev.Class + " drift"
	}
	ev.Message = fmt.Sprintf("%s: %s repaired", ev.NodeID, what)
	if r := n.LastRepair; r != nil && r.RepairLatency() > 0 {
		ev.Message += " in " + r.RepairLatency().Round(time.Millisecond).String()
	}
	ev.Message += detail(ev)
	if count > 1 {
		ev.Message += fmt.Sprintf(" (%d repairs)", count)
	}
	return ev
}

func (d *deriver) nodeStatus(ev Event, s *hub.Snapshot, n *hub.NodeStatus, reason string) Event {
	object(&ev, n)
	ev.Reason = reason
	switch ev.Type {
	case EventUnrepaired:
		what := "drift"
		if ev.Class != "" {
			what = ev.Class + " drift"
		}
		ev.Message = fmt.Sprintf("%s: %s left unrepaired", ev.NodeID, what)
	case EventRepairFailed:
		ev.Message = fmt.Sprintf("%s: repair failed", ev.NodeID)
	case EventContested:
		ev.Message = fmt.Sprintf("%s: contested", ev.NodeID)
	case EventStuck:
		ev.Message = fmt.Sprintf("%s: stuck", ev.NodeID)
		ev.Diagnosis = slices.Clone(n.Diagnosis)
	}
	switch {
	case ev.Type == EventContested && strings.HasPrefix(n.Reason, "contested"):
		ev.Message = ev.NodeID + ": " + n.Reason // "contested with hpa: ...", said once
	case n.Reason != "":
		ev.Message += ": " + n.Reason + switchNote(s, n)
	}
	if len(ev.Diagnosis) > 0 {
		ev.Message += "; why: " + ev.Diagnosis[0]
	}
	if ev.Type == EventUnrepaired {
		ev.Message += detail(ev)
	}
	return ev
}

// switchNote is the note of the switch that holds n's drift back, as
// snapshot s has it: who paused its cluster and why, or who made its
// application warn-only and why (a hold's reason names its author
// already); "" for any other status, or a switch without a note.
func switchNote(s *hub.Snapshot, n *hub.NodeStatus) string {
	switch n.Status {
	case hub.StatusPaused:
		if c, ok := s.Cluster(n.ID.Cluster); ok && c.Paused {
			return hub.SwitchNote{By: c.PausedBy, Reason: c.PauseReason}.Suffix()
		}
	case hub.StatusWarnOnly:
		if note, ok := s.AppPolicyNotes[n.Application]; ok && s.AppPolicies[n.Application] == hub.PolicyWarn {
			return note.Note().OverriddenSuffix()
		}
	}
	return ""
}

// detail describes the drifted fields and who changed them.
func detail(ev Event) string {
	s := ""
	if len(ev.Fields) > 0 {
		s = " (" + joinMax(ev.Fields, 5)
		if ev.ChangedBy != "" {
			s += ", changed by " + ev.ChangedBy
		}
		s += ")"
	} else if ev.ChangedBy != "" {
		s = " (changed by " + ev.ChangedBy + ")"
	}
	return s
}

func joinMax(s []string, max int) string {
	out := ""
	for i, v := range s {
		if i == max {
			return out + fmt.Sprintf(" and %d more", len(s)-max)
		}
		if i > 0 {
			out += ", "
		}
		out += v
	}
	return out
}

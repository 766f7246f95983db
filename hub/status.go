package hub

import (
	"strings"
	"time"
)

// Status is the state of one NodeID as users see it.
type Status string

// Node statuses.
const (
	StatusUnknown   Status = "unknown"
	StatusInSync    Status = "in-sync"
	StatusDrifted   Status = "drifted"
	StatusRepairing Status = "repairing"
	StatusRepaired  Status = "repaired"
	StatusFailed    Status = "failed"
	StatusWarnOnly  Status = "warn-only"
	StatusPaused    Status = "paused"
	StatusStuck     Status = "stuck"
	// StatusDecommissioning: the object's application left the config and
	// the object is being pruned.
	StatusDecommissioning Status = "decommissioning"
	// StatusForbidden: the backend's credentials may not read or write this
	// object (an RBAC denial); retried slowly.
	StatusForbidden Status = "forbidden"
	// StatusHeld: drift is present and a hold stops its repair until the
	// hold expires.
	StatusHeld Status = "held"
	// StatusOrphan: an object carrying our label and this hub's id that
	// the hub has no record of (state file lost, or an older run). Pruned
	// only with Options.PruneOrphans.
	StatusOrphan Status = "orphan"
	// StatusContested: another writer keeps undoing the repairs (the same
	// field manager, again and again): repairs back off, and
	// NodeStatus.Contested says who, the backoff and the next attempt.
	StatusContested Status = "contested"
	// StatusForeign: the object carries another hub's id
	// (HubAnnotation): this hub neither repairs, adopts nor prunes it,
	// and looks again slowly.
	StatusForeign Status = "foreign"
)

// Problem reports whether the status needs attention.
func (s Status) Problem() bool {
	switch s {
	case StatusDrifted, StatusFailed, StatusWarnOnly, StatusPaused, StatusStuck, StatusUnknown, StatusRepairing, StatusForbidden, StatusHeld, StatusOrphan, StatusContested, StatusForeign:
		return true
	}
	return false
}

// Step names one point of a NodeID's timeline.
type Step string

// Timeline steps.
const (
	StepObserved   Step = "event observed"
	StepClassified Step = "drift classified"
	StepApplied    Step = "repair applied"
	StepVerified   Step = "repair verified"
	StepFailed     Step = "repair failed"
	StepWarned     Step = "reported (warn-only)"
	StepPaused     Step = "held (cluster paused)"
	StepStuck      Step = "stuck"
	StepPruned     Step = "pruned"
	StepManual     Step = "manual repair requested"
	StepCreated    Step = "created"
	StepPanic      Step = "reconcile panicked"
	StepReleased   Step = "released"
	StepHeld       Step = "held"
	// StepDesiredChanged and StepChangeApplied are the classification and
	// the write of a change of the desired state (Repair.DesiredChange):
	// not drift, not a repair.
	StepDesiredChanged Step = "desired changed"
	StepChangeApplied  Step = "change applied"
)

// TimelineEntry is one timestamped step in a NodeID's history. A step the
// hub only observed (a drift seen again while it holds back the repair)
// that repeats the entry before it, with the same detail and nothing in
// between, is counted on that entry instead of taking one of its own; an
// observation and its classification that repeat the last two entries are
// counted on both. A write (a repair, a creation, a prune), its check or
// failure, and a user's request are never folded.
type TimelineEntry struct {
	// At is when the step happened: the first time, for a repeated one.
	At     time.Time
	Step   Step
	Detail string
	// Repeats is how many more times the step happened after At, each
	// folded into this entry; 0: it happened once.
	Repeats int32 `json:",omitempty"`
	// Last is how long after At the latest repeat happened (see LastAt).
	// An offset, not a time: every NodeID keeps a timeline, and a time
	// would double what a repeat count adds to each entry.
	Last time.Duration `json:",omitempty"`
}

// LastAt is when the latest repeat happened; zero when Repeats is 0.
func (e TimelineEntry) LastAt() time.Time {
	if e.Repeats == 0 {
		return time.Time{}
	}
	return e.At.Add(e.Last)
}

// Attribution says which field manager changed the drifted fields, and when.
type Attribution struct {
	Manager   string
	Operation string
	At        time.Time
	Fields    []string
}

// String formats the attribution, e.g. "kubectl-edit (Update) at 12:00:01".
func (a Attribution) String() string {
	if a.Manager == "" {
		return "unknown"
	}
	s := a.Manager
	if a.Operation != "" {
		s += " (" + a.Operation + ")"
	}
	if !a.At.IsZero() {
		s += " at " + a.At.Format("15:04:05")
	}
	return s
}

// Repair is the record of one drift and its repair, with the latencies of
// each step.
type Repair struct {
	ID          NodeID
	Drift       Drift
	Attribution *Attribution
	// Action is what the hub did: "apply", "remove+apply", "warn",
	// "paused", "wait-deletion", "none".
	Action string
	// Err is the last error, if the repair failed.
	Err string
	// DesiredChange is set when the write applies a change of the desired
	// state (a reload, a new commit or chart version: the object's
	// desired spec differs from the one last applied to it), not a
	// repair of drift: the feed's who of it, "desired changed
	// (web@abc1234)". Such a write is not counted as drift or as a
	// repair (Repairs, the repair metrics and the event-to-repair times
	// leave it out), and the NodeID shows in sync, not repaired.
	DesiredChange string
	// Timestamps: the watch event, the classification, the apply, and the
	// event that showed the object back in sync. Zero when not reached.
	ObservedAt   time.Time
	ClassifiedAt time.Time
	AppliedAt    time.Time
	VerifiedAt   time.Time
}

// DetectLatency is event observed -> drift classified.
func (r Repair) DetectLatency() time.Duration { return sub(r.ClassifiedAt, r.ObservedAt) }

// RepairLatency is event observed -> repair applied.
func (r Repair) RepairLatency() time.Duration { return sub(r.AppliedAt, r.ObservedAt) }

// VerifyLatency is event observed -> repair verified.
func (r Repair) VerifyLatency() time.Duration { return sub(r.VerifiedAt, r.ObservedAt) }

func sub(a, b time.Time) time.Duration {
	if a.IsZero() || b.IsZero() {
		return 0
	}
	return a.Sub(b)
}

// NodeStatus is the immutable status of one NodeID in a snapshot.
type NodeStatus struct {
	ID          NodeID
	Application string
	Kind        Kind
	Policy      Policy
	Status      Status
	// Reason explains the status (last error, stuck reason, fight).
	Reason string
	// LastRepair is the latest drift record, if any.
	LastRepair *Repair
	// Timeline holds the latest steps, oldest first (bounded).
	Timeline []TimelineEntry
	// ReadyReplicas and DesiredReplicas for Deployments.
	ReadyReplicas   int32
	DesiredReplicas int32
	// LastChange is when the status last changed.
	LastChange time.Time
	// Repairs counts repairs applied to this NodeID.
	Repairs int
	// Ignored are the differences ignore rules covered on the last
	// comparison: not drift, shown as "ignored (rule ...)".
	Ignored []IgnoredField `json:",omitempty"`
	// Contested describes the fight with another writer while the status
	// is StatusContested; nil otherwise.
	Contested *Contest `json:",omitempty"`
	// Revision is the source revision the desired state came from (see
	// NodeSpec.Revision); "" when its source has none.
	Revision string `json:",omitempty"`
	// Diagnosis says, while the status is StatusStuck, why the rollout
	// does not progress, in its pods' or its events' words (a backend's
	// Diagnoser: "pod web-5d8f-x2v: not scheduled: Unschedulable: 0/3
	// nodes are available..."); nil otherwise, or when the backend has
	// nothing to say.
	Diagnosis []string `json:",omitempty"`
	// Spec is the desired state (shared, immutable). It is not part of
	// the JSON form of a snapshot (see the API's node endpoint).
	Spec *NodeSpec `json:"-"`
}

// ClusterStatus is one cluster in a snapshot.
type ClusterStatus struct {
	ClusterHealth
	Paused bool
	// PausedAt is when the cluster was paused, PausedBy who paused it and
	// PauseReason why, as they paused it (see SwitchNote); zero and empty
	// when it is not paused or they are not known.
	PausedAt    time.Time `json:",omitzero"`
	PausedBy    string    `json:",omitempty"`
	PauseReason string    `json:",omitempty"`
	// Objects counts managed NodeIDs on the cluster; Counts by status.
	Objects int
	Counts  map[Status]int
	// MedianRepair is the median event-to-repaired time of recent repairs.
	MedianRepair time.Duration
	// Owner is the replica that manages the cluster when the hub runs as
	// several replicas and the snapshot is their merged view; the hub
	// itself leaves it empty.
	Owner string `json:",omitempty"`
}

// Tally sums a cluster's statuses into the groups people read: InSync is
// in-sync plus repaired; Drift is drift that is present and not being
// repaired (drifted, warn-only, paused, held); Fixing is repairing; Failed
// is failed plus forbidden; Stuck is stuck. Unknown, contested,
// decommissioning, orphan and foreign objects are in none of them (only in
// Objects).
type Tally struct {
	InSync, Drift, Fixing, Failed, Stuck int
}

// Tally sums c's Counts (see Tally).
func (c ClusterStatus) Tally() Tally {
	n := c.Counts
	return Tally{
		InSync: n[StatusInSync] + n[StatusRepaired],
		Drift:  n[StatusDrifted] + n[StatusWarnOnly] + n[StatusPaused] + n[StatusHeld],
		Fixing: n[StatusRepairing],
		Failed: n[StatusFailed] + n[StatusForbidden],
		Stuck:  n[StatusStuck],
	}
}

// ReplicaStatus is one replica of a hub that runs as several, as a merged
// view of the replicas sees it.
type ReplicaStatus struct {
	// ID is the replica id; Address its API address.
	ID, Address string
	// Self is true for the replica the view was asked of.
	Self bool
	// Reachable says its API answered; Err says why not.
	Reachable bool
	Err       string `json:",omitempty"`
	// Clusters are the clusters it manages, sorted.
	Clusters []string
}

// FeedEntry is one line of the live drift and repair feed.
type FeedEntry struct {
	// At is when it happened: the last time, for a repeated entry.
	At     time.Time
	ID     NodeID
	Class  DriftClass
	Fields []FieldDiff
	Who    string
	Action string
	// Latency is event observed -> repaired (or classified for warn), of
	// the last time.
	Latency time.Duration
	Err     string
	// Why is why the hub held the drift back, as it stood then: the switch
	// that refused the write and its note (who set it, and why), such as
	// "repairs paused on this cluster by alice: INC-4211"; empty for a
	// line of any other kind.
	Why string `json:",omitempty"`
	// Count is how many identical entries (same NodeID, class, fields,
	// who, action, error and why) this line stands for: the store folds an
	// entry into the NodeID's previous one when they are identical and at
	// most 10 s apart. 0 counts as 1.
	Count int `json:",omitempty"`
	// First is when the first of them happened; zero when Count is 1.
	First time.Time `json:",omitzero"`
}

// Times returns how many times the entry happened (Count, at least 1).
func (e FeedEntry) Times() int { return max(e.Count, 1) }

// Started returns when the first of the entry's repeats happened (At when
// it happened once).
func (e FeedEntry) Started() time.Time {
	if e.First.IsZero() {
		return e.At
	}
	return e.First
}

// Snapshot is an immutable view of the hub. Subscribers must not modify it.
type Snapshot struct {
	HubID    string
	Seq      uint64
	Taken    time.Time
	Policy   Policy
	Clusters []ClusterStatus
	// Nodes are sorted by NodeID text.
	Nodes []NodeStatus
	// Feed is newest first, bounded.
	Feed []FeedEntry
	// AppPolicies are runtime overrides set by the UI (application -> policy).
	AppPolicies map[string]Policy
	// AppPolicyNotes say when each override of AppPolicies was set, by
	// whom and why, as far as the hub knows (none when nothing is).
	AppPolicyNotes map[string]OverrideNote `json:",omitempty"`
	// QueueDepth is the reconcile queue length.
	QueueDepth int
	// Holds are the active holds, sorted by target.
	Holds []Hold `json:",omitempty"`
	// Replicas are the replicas of a hub that runs as several, sorted by
	// id, when the snapshot is their merged view; the hub itself leaves it
	// empty.
	Replicas []ReplicaStatus `json:",omitempty"`
	// Sources are the manifest sources that fail, sorted by id (see
	// Hub.SetSourceFaults).
	Sources []SourceStatus `json:",omitempty"`
	// Revisions are the revisions of the Git manifest sources, sorted by
	// id (see Hub.SetSourceRevisions).
	Revisions []SourceRevision `json:",omitempty"`
}

// SourceRevision is where a Git manifest source stands: the revision whose
// desired state is in force, and how its fetches go. A source that fails
// to fetch, is refused (signature) or does not render at a new commit is
// stale: Error says why and the applied revision stays in force.
type SourceRevision struct {
	ID string
	// URL and Ref are the repository and the ref the source follows.
	URL, Ref string
	// Commit is the applied commit's full SHA ("" before any checkout).
	Commit string
	// CommitTime and Subject are the applied commit's committer time and
	// the first line of its message.
	CommitTime time.Time
	Subject    string
	// LastFetch is when a fetch last succeeded (zero: never in this run).
	LastFetch time.Time
	// Error is why the source is stale ("" when the remote's head is
	// applied); Since is when it became stale.
	Error string
	Since time.Time
}

// ShortCommit is a commit's short SHA, as people read it (its first 7
// characters); for a chart version pulled from a repository
// ("4.11.2@sha256:..."), the version.
func ShortCommit(commit string) string {
	if v, _, ok := strings.Cut(commit, "@sha256:"); ok {
		return v
	}
	if len(commit) > 7 {
		return commit[:7]
	}
	return commit
}

// RevisionNoun names what a source revision is in messages: "version"
// for a chart pulled from a repository ("4.11.2@sha256:..."), else
// "commit".
func RevisionNoun(commit string) string {
	if strings.Contains(commit, "@sha256:") {
		return "version"
	}
	return "commit"
}

// SourceStatus is a manifest source that cannot be used now (it does not
// render, or its objects collide with another source's): it is left out
// of the change, and the desired state it last gave stays in force.
type SourceStatus struct {
	ID string
	// Error says why, positioned where the config reader could (the
	// source's field, the manifest's file and line).
	Error string
	// Since is when it started failing.
	Since time.Time
	// KeptObjects is how many desired objects of its last good state the
	// hub keeps (0 when the hub never had one, e.g. it failed at start:
	// then what it applied before is left untouched, never pruned).
	KeptObjects int
}

// Node returns the status of one NodeID.
func (s *Snapshot) Node(id NodeID) (NodeStatus, bool) {
	lo, hi := 0, len(s.Nodes)
	for lo < hi {
		m := (lo + hi) / 2
		if CompareText(s.Nodes[m].ID, id) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(s.Nodes) && s.Nodes[lo].ID == id {
		return s.Nodes[lo], true
	}
	return NodeStatus{}, false
}

// NodeView returns what a view of one NodeID reads of the snapshot, as a
// snapshot of its own: the node, its cluster (when listed), the active
// holds that cover it and its application's policy override. It shares
// nothing mutable with s but the node's Spec (immutable). ok is false when
// the snapshot does not have the node.
func (s *Snapshot) NodeView(id NodeID) (view *Snapshot, ok bool) {
	n, ok := s.Node(id)
	if !ok {
		return nil, false
	}
	view = &Snapshot{HubID: s.HubID, Seq: s.Seq, Taken: s.Taken, Policy: s.Policy, Nodes: []NodeStatus{n}}
	if c, ok := s.Cluster(id.Cluster); ok {
		view.Clusters = []ClusterStatus{c}
	}
	for _, hd := range s.Holds {
		if hd.Target.Covers(id, n.Application) {
			view.Holds = append(view.Holds, hd)
		}
	}
	if p, ok := s.AppPolicies[n.Application]; ok {
		view.AppPolicies = map[string]Policy{n.Application: p}
	}
	if note, ok := s.AppPolicyNotes[n.Application]; ok {
		view.AppPolicyNotes = map[string]OverrideNote{n.Application: note}
	}
	return view, true
}

// Cluster returns the status of one cluster.
func (s *Snapshot) Cluster(id string) (ClusterStatus, bool) {
	for _, c := range s.Clusters {
		if c.Cluster == id {
			return c, true
		}
	}
	return ClusterStatus{}, false
}

// AllStatuses lists every node status in display order.
func AllStatuses() []Status {
	return []Status{StatusInSync, StatusRepaired, StatusRepairing, StatusDrifted, StatusContested, StatusWarnOnly,
		StatusPaused, StatusHeld, StatusFailed, StatusForbidden, StatusStuck, StatusDecommissioning, StatusOrphan, StatusUnknown}
}

package apiv1

import (
	"fmt"
	"math"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"github.com/driftwatch/driftwatch/hub"
)

// The conversions below copy: what they return shares no slice or map with
// their argument, except NodeDetail.Desired (the hub's immutable desired
// object). Converting to the hub's types gives nil for an empty list and a
// non-nil map for an empty map.

// FromSnapshot converts a hub snapshot.
func FromSnapshot(s *hub.Snapshot) *Snapshot {
	out := &Snapshot{
		Header:   FromHeader(s),
		Clusters: make([]Cluster, len(s.Clusters)),
		Nodes:    make([]Node, len(s.Nodes)),
		Feed:     make([]FeedEntry, len(s.Feed)),
	}
	for i, c := range s.Clusters {
		out.Clusters[i] = FromCluster(c)
	}
	for i, n := range s.Nodes {
		out.Nodes[i] = FromNode(n)
	}
	for i, e := range s.Feed {
		out.Feed[i] = FromFeedEntry(e)
	}
	return out
}

// ToHub converts the snapshot back to the hub's type, as the terminal UI
// consumes it. NodeStatus.Spec stays nil: the desired objects are not part
// of a snapshot (see NodeDetail).
func (s *Snapshot) ToHub() (*hub.Snapshot, error) {
	if err := checkVersion("snapshot", s.APIVersion); err != nil {
		return nil, err
	}
	out := &hub.Snapshot{}
	s.Header.toHub(out)
	for _, c := range s.Clusters {
		out.Clusters = append(out.Clusters, c.ToHub())
	}
	for _, n := range s.Nodes {
		ns, err := n.ToHub()
		if err != nil {
			return nil, err
		}
		out.Nodes = append(out.Nodes, ns)
	}
	for _, e := range s.Feed {
		fe, err := e.ToHub()
		if err != nil {
			return nil, err
		}
		out.Feed = append(out.Feed, fe)
	}
	return out, nil
}

func checkVersion(what, v string) error {
	if v != APIVersion {
		return fmt.Errorf("%s: apiVersion %q: want %q", what, v, APIVersion)
	}
	return nil
}

// FromHeader converts the hub-wide fields of a snapshot.
func FromHeader(s *hub.Snapshot) Header {
	h := Header{
		APIVersion:  APIVersion,
		HubID:       s.HubID,
		Seq:         s.Seq,
		Taken:       s.Taken,
		Policy:      string(s.Policy),
		AppPolicies: make(map[string]string, len(s.AppPolicies)),
		QueueDepth:  s.QueueDepth,
		Holds:       FromHolds(s.Holds),
	}
	for _, f := range s.Sources {
		h.FailingSources = append(h.FailingSources, FailingSource{ID: f.ID, Error: f.Error, Since: f.Since, KeptObjects: f.KeptObjects})
	}
	for _, r := range s.Revisions {
		h.GitSources = append(h.GitSources, GitSource{ID: r.ID, URL: r.URL, Ref: r.Ref, Commit: r.Commit, CommitTime: r.CommitTime,
			Subject: r.Subject, LastFetch: r.LastFetch, Error: r.Error, Since: r.Since})
	}
	for app, p := range s.AppPolicies {
		h.AppPolicies[app] = string(p)
	}
	for app, n := range s.AppPolicyNotes {
		if h.AppPolicyNotes == nil {
			h.AppPolicyNotes = make(map[string]OverrideNote, len(s.AppPolicyNotes))
		}
		h.AppPolicyNotes[app] = OverrideNote(n)
	}
	return h
}

// toHub sets the hub-wide fields of out.
func (h Header) toHub(out *hub.Snapshot) {
	out.HubID = h.HubID
	out.Seq = h.Seq
	out.Taken = h.Taken
	out.Policy = hub.Policy(h.Policy)
	out.AppPolicies = make(map[string]hub.Policy, len(h.AppPolicies))
	for app, p := range h.AppPolicies {
		out.AppPolicies[app] = hub.Policy(p)
	}
	out.AppPolicyNotes = nil
	for app, n := range h.AppPolicyNotes {
		if out.AppPolicyNotes == nil {
			out.AppPolicyNotes = make(map[string]hub.OverrideNote, len(h.AppPolicyNotes))
		}
		out.AppPolicyNotes[app] = hub.OverrideNote(n)
	}
	out.QueueDepth = h.QueueDepth
	out.Holds = nil
	for _, hd := range h.Holds {
		out.Holds = append(out.Holds, hd.ToHub())
	}
	out.Sources = nil
	for _, f := range h.FailingSources {
		out.Sources = append(out.Sources, hub.SourceStatus{ID: f.ID, Error: f.Error, Since: f.Since, KeptObjects: f.KeptObjects})
	}
	out.Revisions = nil
	for _, r := range h.GitSources {
		out.Revisions = append(out.Revisions, hub.SourceRevision{ID: r.ID, URL: r.URL, Ref: r.Ref, Commit: r.Commit, CommitTime: r.CommitTime,
			Subject: r.Subject, LastFetch: r.LastFetch, Error: r.Error, Since: r.Since})
	}
}

// FromCluster converts a cluster's status. ClusterHealth.Seq, the order of
// the watch managers' reports inside the hub, is not part of the wire
// format.
func FromCluster(c hub.ClusterStatus) Cluster {
	out := Cluster{
		ID:              c.Cluster,
		State:           string(c.State),
		LastError:       c.LastError,
		Since:           c.Since,
		Source:          c.Source,
		Phase:           c.Phase,
		Detection:       c.Detection,
		EventsPerSecond: c.EventsPerSecond,
		LastEvent:       c.LastEvent,
		Generation:      c.Generation,
		Paused:          c.Paused,
		PausedAt:        c.PausedAt,
		PausedBy:        c.PausedBy,
		PauseReason:     c.PauseReason,
		Objects:         c.Objects,
		Counts:          make(map[string]int, len(c.Counts)),
		MedianRepair:    Duration(c.MedianRepair),
	}
	for st, n := range c.Counts {
		out.Counts[string(st)] = n
	}
	return out
}

// ToHub converts the cluster back.
func (c Cluster) ToHub() hub.ClusterStatus {
	out := hub.ClusterStatus{
		ClusterHealth: hub.ClusterHealth{
			Cluster:         c.ID,
			State:           hub.ClusterState(c.State),
			LastError:       c.LastError,
			Since:           c.Since,
			Source:          c.Source,
			Phase:           c.Phase,
			Detection:       c.Detection,
			EventsPerSecond: c.EventsPerSecond,
			LastEvent:       c.LastEvent,
			Generation:      c.Generation,
		},
		Paused:       c.Paused,
		PausedAt:     c.PausedAt,
		PausedBy:     c.PausedBy,
		PauseReason:  c.PauseReason,
		Objects:      c.Objects,
		Counts:       make(map[hub.Status]int, len(c.Counts)),
		MedianRepair: time.Duration(c.MedianRepair),
	}
	for st, n := range c.Counts {
		out.Counts[hub.Status(st)] = n
	}
	return out
}

// FromNode converts a NodeID's status (without its desired object).
func FromNode(n hub.NodeStatus) Node {
	out := Node{
		ID:              n.ID.String(),
		Application:     n.Application,
		Kind:            string(n.Kind),
		Policy:          string(n.Policy),
		Status:          string(n.Status),
		Reason:          n.Reason,
		LastRepair:      FromRepair(n.LastRepair),
		Timeline:        make([]TimelineEntry, len(n.Timeline)),
		ReadyReplicas:   n.ReadyReplicas,
		DesiredReplicas: n.DesiredReplicas,
		LastChange:      n.LastChange,
		Repairs:         n.Repairs,
		Revision:        n.Revision,
		Diagnosis:       slices.Clone(n.Diagnosis),
	}
	for i, e := range n.Timeline {
		out.Timeline[i] = TimelineEntry{At: e.At, Step: string(e.Step), Detail: e.Detail, Repeats: int(e.Repeats), LastAt: e.LastAt()}
	}
	for _, f := range n.Ignored {
		out.Ignored = append(out.Ignored, IgnoredField{FieldDiff: FromFieldDiffs([]hub.FieldDiff{f.FieldDiff})[0], Rule: f.Rule, Manager: f.Manager})
	}
	if c := n.Contested; c != nil {
		out.Contested = &Contest{Manager: c.Manager, Fields: c.Fields, Undone: c.Undone, Since: c.Since,
			Backoff: Duration(c.Backoff), NextAttempt: c.NextAttempt, ClearsAt: c.ClearsAt}
	}
	return out
}

// ToHub converts the node back; Spec stays nil.
func (n Node) ToHub() (hub.NodeStatus, error) {
	id, err := hub.ParseNodeID(n.ID)
	if err != nil {
		return hub.NodeStatus{}, fmt.Errorf("node: %w", err)
	}
	rep, err := n.LastRepair.toHub()
	if err != nil {
		return hub.NodeStatus{}, fmt.Errorf("node %s: last repair: %w", n.ID, err)
	}
	out := hub.NodeStatus{
		ID:              id,
		Application:     n.Application,
		Kind:            hub.Kind(n.Kind),
		Policy:          hub.Policy(n.Policy),
		Status:          hub.Status(n.Status),
		Reason:          n.Reason,
		LastRepair:      rep,
		ReadyReplicas:   n.ReadyReplicas,
		DesiredReplicas: n.DesiredReplicas,
		LastChange:      n.LastChange,
		Repairs:         n.Repairs,
		Revision:        n.Revision,
	}
	for _, e := range n.Timeline {
		te := hub.TimelineEntry{At: e.At, Step: hub.Step(e.Step), Detail: e.Detail}
		if e.Repeats > 0 { // a count past int32 is another hub's nonsense: the most it can say
			te.Repeats = int32(min(e.Repeats, math.MaxInt32))
			if !e.LastAt.IsZero() {
				te.Last = max(e.LastAt.Sub(e.At), 0)
			}
		}
		out.Timeline = append(out.Timeline, te)
	}
	for _, f := range n.Ignored {
		fd := f.FieldDiff
		out.Ignored = append(out.Ignored, hub.IgnoredField{
			FieldDiff: hub.FieldDiff{Path: fd.Path, Desired: fd.Desired, Actual: fd.Actual, Added: fd.Added, Pointer: fd.Pointer},
			Rule:      f.Rule, Manager: f.Manager})
	}
	if c := n.Contested; c != nil {
		out.Contested = &hub.Contest{Manager: c.Manager, Fields: c.Fields, Undone: c.Undone, Since: c.Since,
			Backoff: time.Duration(c.Backoff), NextAttempt: c.NextAttempt, ClearsAt: c.ClearsAt}
	}
	out.Diagnosis = slices.Clone(n.Diagnosis)
	return out, nil
}

// FromRepair converts a drift record; nil stays nil.
func FromRepair(r *hub.Repair) *Repair {
	if r == nil {
		return nil
	}
	out := &Repair{
		ID:            r.ID.String(),
		Drift:         Drift{Class: string(r.Drift.Class), Fields: FromFieldDiffs(r.Drift.Fields)},
		Action:        r.Action,
		Error:         r.Err,
		DesiredChange: r.DesiredChange,
		ObservedAt:    r.ObservedAt,
		ClassifiedAt:  r.ClassifiedAt,
		AppliedAt:     r.AppliedAt,
		VerifiedAt:    r.VerifiedAt,
	}
	if a := r.Attribution; a != nil {
		out.Attribution = &Attribution{Manager: a.Manager, Operation: a.Operation, At: a.At, Fields: append([]string{}, a.Fields...)}
	}
	return out
}

func (r *Repair) toHub() (*hub.Repair, error) {
	if r == nil {
		return nil, nil
	}
	id, err := hub.ParseNodeID(r.ID)
	if err != nil {
		return nil, err
	}
	out := &hub.Repair{
		ID:            id,
		Drift:         hub.Drift{Class: hub.DriftClass(r.Drift.Class), Fields: fieldDiffsToHub(r.Drift.Fields)},
		Action:        r.Action,
		Err:           r.Error,
		DesiredChange: r.DesiredChange,
		ObservedAt:    r.ObservedAt,
		ClassifiedAt:  r.ClassifiedAt,
		AppliedAt:     r.AppliedAt,
		VerifiedAt:    r.VerifiedAt,
	}
	if a := r.Attribution; a != nil {
		out.Attribution = &hub.Attribution{Manager: a.Manager, Operation: a.Operation, At: a.At}
		if len(a.Fields) > 0 {
			out.Attribution.Fields = append([]string(nil), a.Fields...)
		}
	}
	return out, nil
}

// FromFieldDiffs converts field diffs.
func FromFieldDiffs(fs []hub.FieldDiff) []FieldDiff {
	out := make([]FieldDiff, len(fs))
	for i, f := range fs {
		out[i] = FieldDiff{Path: f.Path, Desired: f.Desired, Actual: f.Actual, Added: f.Added, Pointer: f.Pointer}
	}
	return out
}

func fieldDiffsToHub(fs []FieldDiff) []hub.FieldDiff {
	var out []hub.FieldDiff
	for _, f := range fs {
		out = append(out, hub.FieldDiff{Path: f.Path, Desired: f.Desired, Actual: f.Actual, Added: f.Added, Pointer: f.Pointer})
	}
	return out
}

// FromFeedEntry converts a feed entry.
func FromFeedEntry(e hub.FeedEntry) FeedEntry {
	return FeedEntry{
		At:      e.At,
		ID:      e.ID.String(),
		Class:   string(e.Class),
		Fields:  FromFieldDiffs(e.Fields),
		Who:     e.Who,
		Action:  e.Action,
		Latency: Duration(e.Latency),
		Error:   e.Err,
		Why:     e.Why,
		Count:   e.Times(),
		First:   e.First,
	}
}

// ToHub converts the feed entry back.
func (e FeedEntry) ToHub() (hub.FeedEntry, error) {
	id, err := hub.ParseNodeID(e.ID)
	if err != nil {
		return hub.FeedEntry{}, fmt.Errorf("feed entry: %w", err)
	}
	return hub.FeedEntry{
		At:      e.At,
		ID:      id,
		Class:   hub.DriftClass(e.Class),
		Fields:  fieldDiffsToHub(e.Fields),
		Who:     e.Who,
		Action:  e.Action,
		Latency: time.Duration(e.Latency),
		Err:     e.Error,
		Why:     e.Why,
		Count:   e.Count,
		First:   e.First,
	}, nil
}

// FromHold converts a hold.
func FromHold(h hub.Hold) Hold {
	return Hold{Scope: string(h.Target.Scope), Name: h.Target.Name, Reason: h.Reason, By: h.By, Since: h.Since, Until: h.Until}
}

// ToHub converts the hold back.
func (h Hold) ToHub() hub.Hold {
	return hub.Hold{Target: hub.HoldTarget{Scope: hub.HoldScope(h.Scope), Name: h.Name}, Reason: h.Reason, By: h.By, Since: h.Since, Until: h.Until}
}

// FromHolds converts holds (an empty list for none).
func FromHolds(hs []hub.Hold) []Hold {
	out := make([]Hold, len(hs))
	for i, h := range hs {
		out[i] = FromHold(h)
	}
	return out
}

// NewHoldList returns the answer of GET /api/v1/holds.
func NewHoldList(hs []hub.Hold) HoldList {
	return HoldList{APIVersion: APIVersion, Holds: FromHolds(hs)}
}

// NewHoldDocument returns the answer of POST /api/v1/holds.
func NewHoldDocument(h hub.Hold) HoldDocument {
	return HoldDocument{APIVersion: APIVersion, Hold: FromHold(h)}
}

// NewNodeDetail returns a NodeID's detail: its status and desired object
// (decoded from the spec's body, so the detail owns it). A body that does
// not decode leaves Desired empty.
func NewNodeDetail(n hub.NodeStatus) NodeDetail {
	d := NodeDetail{APIVersion: APIVersion, Status: FromNode(n)}
	if n.Spec != nil {
		if u, err := kubeobj.Object(*n.Spec); err == nil && u != nil {
			d.Desired = u.Object
		}
	}
	return d
}

// NewNodeView returns a NodeID's detail (NewNodeDetail) with what a view
// of it reads of the snapshot: its cluster, the holds that cover it and
// its application's policy override (see hub.Snapshot.NodeView, whose
// snapshot view is).
func NewNodeView(view *hub.Snapshot) NodeDetail {
	d := NewNodeDetail(view.Nodes[0])
	if len(view.Clusters) > 0 {
		c := FromCluster(view.Clusters[0])
		d.Cluster = &c
	}
	if len(view.Holds) > 0 {
		d.Holds = FromHolds(view.Holds)
	}
	d.AppPolicy = string(view.AppPolicies[view.Nodes[0].Application])
	if n, ok := view.AppPolicyNotes[view.Nodes[0].Application]; ok {
		note := OverrideNote(n)
		d.AppPolicyNote = &note
	}
	return d
}

// View converts the detail back to a snapshot of the NodeID alone, as
// hub.Snapshot.NodeView gives it, with the node's desired object as its
// Spec (see ToHub). ok is false for a detail without its cluster (a hub
// from before views, or one that does not list the cluster).
func (d NodeDetail) View() (view *hub.Snapshot, ok bool, err error) {
	n, err := d.ToHub()
	if err != nil {
		return nil, false, err
	}
	view = &hub.Snapshot{Nodes: []hub.NodeStatus{n}}
	if d.Cluster != nil {
		view.Clusters = []hub.ClusterStatus{d.Cluster.ToHub()}
	}
	for _, h := range d.Holds {
		view.Holds = append(view.Holds, h.ToHub())
	}
	if d.AppPolicy != "" {
		view.AppPolicies = map[string]hub.Policy{n.Application: hub.Policy(d.AppPolicy)}
	}
	if d.AppPolicyNote != nil {
		view.AppPolicyNotes = map[string]hub.OverrideNote{n.Application: hub.OverrideNote(*d.AppPolicyNote)}
	}
	return view, d.Cluster != nil, nil
}

// ToHub converts the node detail back: its status, with its desired
// object as the status's Spec when it has one (the Spec then holds what
// the API says of it: the object, its application, policy and revision;
// not its hash, tenancy nor progress deadline).
func (d NodeDetail) ToHub() (hub.NodeStatus, error) {
	if err := checkVersion("node", d.APIVersion); err != nil {
		return hub.NodeStatus{}, err
	}
	n, err := d.Status.ToHub()
	if err != nil || d.Desired == nil {
		return n, err
	}
	u := &unstructured.Unstructured{Object: d.Desired}
	body, err := kubeobj.EncodeBody(u)
	if err != nil {
		return hub.NodeStatus{}, fmt.Errorf("node %s: desired object: %w", n.ID, err)
	}
	n.Spec = &hub.NodeSpec{ID: n.ID, Namespace: n.ID.Namespace(), Name: n.ID.Name(), Kind: n.Kind,
		Application: n.Application, Policy: n.Policy, Revision: n.Revision, Body: body}
	return n, nil
}

// ToHub converts the hold list back (nil for none).
func (l HoldList) ToHub() ([]hub.Hold, error) {
	if err := checkVersion("hold list", l.APIVersion); err != nil {
		return nil, err
	}
	var out []hub.Hold
	for _, h := range l.Holds {
		out = append(out, h.ToHub())
	}
	return out, nil
}

// ToHub converts the placed hold back.
func (d HoldDocument) ToHub() (hub.Hold, error) {
	if err := checkVersion("hold", d.APIVersion); err != nil {
		return hub.Hold{}, err
	}
	return d.Hold.ToHub(), nil
}

package apiv1

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/driftwatch/driftwatch/hub"
)

// ErrDeltaMismatch is wrapped by Apply's error when a delta does not start
// at the snapshot it is applied to: the client must ask for a full snapshot.
var ErrDeltaMismatch = errors.New("delta does not apply")

// Diff returns the delta that turns the snapshot prev into next: next's
// header, the clusters and NodeIDs that changed, appeared or went, the
// feed entries that are new and the old ones they replace (repeats folded
// into a new entry). Both snapshots must be the hub's own,
// immutable ones (Nodes sorted by NodeID text): a NodeID counts as changed
// when a field differs, its timeline or last repair by identity (the hub
// replaces them on change and never edits them in place), so Diff costs a
// comparison per NodeID and a conversion per change.
func Diff(prev, next *hub.Snapshot) *Delta {
	d := &Delta{Header: FromHeader(next), Since: prev.Seq, FeedLength: len(next.Feed)}

	old := make(map[string]hub.ClusterStatus, len(prev.Clusters))
	for _, c := range prev.Clusters {
		old[c.Cluster] = c
	}
	for _, c := range next.Clusters {
		if o, ok := old[c.Cluster]; !ok || !clusterEqual(o, c) {
			d.Clusters = append(d.Clusters, FromCluster(c))
		}
		delete(old, c.Cluster)
	}
	d.RemovedClusters = append([]string{}, slices.Sorted(maps.Keys(old))...)

	i, j := 0, 0
	for i < len(prev.Nodes) || j < len(next.Nodes) {
		var c int
		switch {
		case i == len(prev.Nodes):
			c = 1
		case j == len(next.Nodes):
			c = -1
		case prev.Nodes[i].ID == next.Nodes[j].ID:
			c = 0
		default:
			c = compareIDText(prev.Nodes[i].ID, next.Nodes[j].ID)
		}
		switch {
		case c < 0:
			d.RemovedNodes = append(d.RemovedNodes, prev.Nodes[i].ID.String())
			i++
		case c > 0:
			d.Nodes = append(d.Nodes, FromNode(next.Nodes[j]))
			j++
		default:
			if !nodeEqual(prev.Nodes[i], next.Nodes[j]) {
				d.Nodes = append(d.Nodes, FromNode(next.Nodes[j]))
			}
			i++
			j++
		}
	}

	n, dropped := feedChange(prev.Feed, next.Feed)
	d.FeedDropped = dropped
	d.Feed = make([]FeedEntry, n)
	for k := range n {
		d.Feed[k] = FromFeedEntry(next.Feed[k])
	}
	if d.Clusters == nil {
		d.Clusters = []Cluster{}
	}
	if d.RemovedNodes == nil {
		d.RemovedNodes = []string{}
	}
	if d.Nodes == nil {
		d.Nodes = []Node{}
	}
	return d
}

// feedChange returns how many entries at the head of next (newest first)
// are not in prev, and the positions in prev (ascending) of the entries
// gone from it otherwise than off its end: repeats folded into a new
// entry. The rest of next is prev without those, cut at next's length.
// When next is not so made (the feed was replaced), every entry of next is
// new and none is dropped.
func feedChange(prev, next []hub.FeedEntry) (int, []int) {
	if len(prev) == 0 {
		return len(next), nil
	}
	for k := range next {
		m := slices.IndexFunc(prev, func(e hub.FeedEntry) bool { return feedEntryEqual(e, next[k]) })
		if m < 0 {
			continue
		}
		// next[k:] must be prev[m:] with entries left out.
		var dropped []int
		for i := range m {
			dropped = append(dropped, i)
		}
		j := m
		for _, e := range next[k:] {
			for j < len(prev) && !feedEntryEqual(prev[j], e) {
				dropped = append(dropped, j)
				j++
			}
			if j == len(prev) {
				return len(next), nil
			}
			j++
		}
		return k, dropped
	}
	return len(next), nil
}

// Apply returns the snapshot d turns prev into. prev is not modified; the
// result shares unchanged NodeStatus values with it (immutable, as every
// snapshot). Its error wraps ErrDeltaMismatch when d.Since is not prev.Seq.
func (d *Delta) Apply(prev *hub.Snapshot) (*hub.Snapshot, error) {
	if err := checkVersion("delta", d.APIVersion); err != nil {
		return nil, err
	}
	if prev == nil || prev.Seq != d.Since {
		var have uint64
		if prev != nil {
			have = prev.Seq
		}
		return nil, fmt.Errorf("%w: delta from snapshot %d to %d, have snapshot %d", ErrDeltaMismatch, d.Since, d.Seq, have)
	}
	next := &hub.Snapshot{}
	d.Header.toHub(next)

	gone := make(map[string]bool, len(d.RemovedClusters))
	for _, id := range d.RemovedClusters {
		gone[id] = true
	}
	changed := make(map[string]hub.ClusterStatus, len(d.Clusters))
	for _, c := range d.Clusters {
		changed[c.ID] = c.ToHub()
	}
	for _, c := range prev.Clusters {
		if gone[c.Cluster] {
			continue
		}
		if u, ok := changed[c.Cluster]; ok {
			c = u
			delete(changed, c.Cluster)
		}
		next.Clusters = append(next.Clusters, c)
	}
	for _, c := range changed {
		next.Clusters = append(next.Clusters, c)
	}
	slices.SortFunc(next.Clusters, func(a, b hub.ClusterStatus) int { return strings.Compare(a.Cluster, b.Cluster) })

	removed := make(map[hub.NodeID]bool, len(d.RemovedNodes))
	for _, s := range d.RemovedNodes {
		id, err := hub.ParseNodeID(s)
		if err != nil {
			return nil, fmt.Errorf("delta %d: removed node: %w", d.Seq, err)
		}
		removed[id] = true
	}
	upd := make([]hub.NodeStatus, len(d.Nodes))
	for k, n := range d.Nodes {
		ns, err := n.ToHub()
		if err != nil {
			return nil, fmt.Errorf("delta %d: %w", d.Seq, err)
		}
		upd[k] = ns
	}
	// A hub's delta is not trusted: removals of NodeIDs the snapshot does
	// not hold change nothing (and size nothing).
	next.Nodes = make([]hub.NodeStatus, 0, max(0, len(prev.Nodes)+len(upd)-len(removed)))
	i, j := 0, 0
	for i < len(prev.Nodes) || j < len(upd) {
		var c int
		switch {
		case i == len(prev.Nodes):
			c = 1
		case j == len(upd):
			c = -1
		case prev.Nodes[i].ID == upd[j].ID:
			c = 0
		default:
			c = compareIDText(prev.Nodes[i].ID, upd[j].ID)
		}
		switch {
		case c < 0:
			if !removed[prev.Nodes[i].ID] {
				next.Nodes = append(next.Nodes, prev.Nodes[i])
			}
			i++
		case c > 0:
			next.Nodes = append(next.Nodes, upd[j])
			j++
		default:
			next.Nodes = append(next.Nodes, upd[j])
			i++
			j++
		}
	}

	if d.FeedLength < len(d.Feed) {
		return nil, fmt.Errorf("delta %d: feed length %d shorter than its %d new entries", d.Seq, d.FeedLength, len(d.Feed))
	}
	for i, p := range d.FeedDropped {
		if p < 0 || p >= len(prev.Feed) || (i > 0 && p <= d.FeedDropped[i-1]) {
			return nil, fmt.Errorf("%w: delta %d drops feed entries %v of a feed of %d", ErrDeltaMismatch, d.Seq, d.FeedDropped, len(prev.Feed))
		}
	}
	kept := prev.Feed
	if len(d.FeedDropped) > 0 {
		kept = make([]hub.FeedEntry, 0, len(prev.Feed)-len(d.FeedDropped))
		drop := d.FeedDropped
		for i, e := range prev.Feed {
			if len(drop) > 0 && drop[0] == i {
				drop = drop[1:]
				continue
			}
			kept = append(kept, e)
		}
	}
	next.Feed = make([]hub.FeedEntry, 0, min(d.FeedLength, len(d.Feed)+len(kept)))
	for _, e := range d.Feed {
		fe, err := e.ToHub()
		if err != nil {
			return nil, fmt.Errorf("delta %d: %w", d.Seq, err)
		}
		next.Feed = append(next.Feed, fe)
	}
	next.Feed = append(next.Feed, kept[:min(len(kept), d.FeedLength-len(d.Feed))]...)
	if len(next.Nodes) == 0 {
		next.Nodes = nil // as ToHub
	}
	if len(next.Feed) == 0 {
		next.Feed = nil
	}
	return next, nil
}

// compareIDText compares the text forms of two NodeIDs
// (cluster:resource:kind) without building them: the order of
// Snapshot.Nodes.
func compareIDText(a, b hub.NodeID) int {
	as := [3]string{a.Cluster, a.Resource, string(a.Kind)}
	bs := [3]string{b.Cluster, b.Resource, string(b.Kind)}
	ai, bi := 0, 0 // segment
	ap, bp := 0, 0 // position in the segment; len(segment) is the ':'
	for {
		aEnd, bEnd := ai == 2 && ap == len(as[2]), bi == 2 && bp == len(bs[2])
		switch {
		case aEnd && bEnd:
			return 0
		case aEnd:
			return -1
		case bEnd:
			return 1
		}
		ac, bc := byte(':'), byte(':')
		if ap < len(as[ai]) {
			ac = as[ai][ap]
		}
		if bp < len(bs[bi]) {
			bc = bs[bi][bp]
		}
		if ac != bc {
			if ac < bc {
				return -1
			}
			return 1
		}
		if ap < len(as[ai]) {
			ap++
		} else {
			ai, ap = ai+1, 0
		}
		if bp < len(bs[bi]) {
			bp++
		} else {
			bi, bp = bi+1, 0
		}
	}
}

// nodeEqual reports whether a NodeID's wire form is the same in two hub
// snapshots (the desired object, not part of it, is not compared).
func nodeEqual(a, b hub.NodeStatus) bool {
	return a.ID == b.ID && a.Application == b.Application && a.Kind == b.Kind && a.Policy == b.Policy &&
		a.Status == b.Status && a.Reason == b.Reason && a.LastRepair == b.LastRepair &&
		sameSlice(a.Timeline, b.Timeline) && a.ReadyReplicas == b.ReadyReplicas &&
		a.DesiredReplicas == b.DesiredReplicas && a.LastChange.Equal(b.LastChange) && a.Repairs == b.Repairs &&
		a.Revision == b.Revision && sameSlice(a.Ignored, b.Ignored) && a.Contested == b.Contested &&
		sameSlice(a.Diagnosis, b.Diagnosis)
}

// sameSlice reports whether two slices are the same slice: same length and
// same backing array.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func clusterEqual(a, b hub.ClusterStatus) bool {
	x, y := a.ClusterHealth, b.ClusterHealth // Seq is not on the wire
	return x.Cluster == y.Cluster && x.State == y.State && x.LastError == y.LastError && x.Since.Equal(y.Since) &&
		x.Source == y.Source && x.Phase == y.Phase && x.Detection == y.Detection && x.EventsPerSecond == y.EventsPerSecond &&
		x.LastEvent.Equal(y.LastEvent) && x.Generation == y.Generation &&
		a.Paused == b.Paused && a.PausedAt.Equal(b.PausedAt) && a.PausedBy == b.PausedBy && a.PauseReason == b.PauseReason &&
		a.Objects == b.Objects && maps.Equal(a.Counts, b.Counts) && a.MedianRepair == b.MedianRepair
}

func feedEntryEqual(a, b hub.FeedEntry) bool {
	return a.At.Equal(b.At) && a.ID == b.ID && a.Class == b.Class && a.Who == b.Who && a.Action == b.Action &&
		a.Latency == b.Latency && a.Err == b.Err && a.Why == b.Why && a.Times() == b.Times() && a.First.Equal(b.First) &&
		slices.Equal(a.Fields, b.Fields)
}

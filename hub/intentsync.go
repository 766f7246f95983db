package hub

import (
	"errors"
	"fmt"
	"maps"
	"time"
)

// ErrRefreshRaced is returned by RefreshIntent when the overrides were
// changed here while the intent store was read, and that change's record
// is still being written: the read may predate it, so nothing of it was
// adopted. Refresh again shortly.
var ErrRefreshRaced = errors.New("refresh intent: an override changed here is still being recorded: read again")

// refreshReads bounds the reads RefreshIntent makes when a change here
// overtook its read.
const refreshReads = 3

// RefreshIntent re-reads the operator intent (cluster pauses, application
// policy overrides, holds) from the intent store and adopts it, enqueueing
// what a lifted pause, a changed policy or a released hold covers. Replicas
// of one hub share a store: a pause recorded by one must hold on the
// replica that takes the cluster over. A pause, hold or warn override
// adopted here returns, like one set here, once no write in its scope can
// still happen; a cluster paused again through another replica (a later
// Intent.PausedAt) is paused again here, so a manual repair asked for
// before no longer overrides it. A read that an override changed here may
// postdate is never adopted (it would undo that change): the store is read
// again, and ErrRefreshRaced returned while the change is being recorded.
// Applied and decommission records are read by LoadIntent at start and,
// for a cluster a replica takes over, by TakeOver.
func (ia *intentAPI) RefreshIntent() error {
	if ia.opts.Intent == nil {
		return nil
	}
	load := ia.opts.Intent.Load
	if o, ok := ia.opts.Intent.(OverridesLoader); ok {
		load = o.LoadOverrides
	}
	for range refreshReads {
		seen, recording := ia.changesSeen()
		if recording {
			return ErrRefreshRaced
		}
		in, err := load()
		if err != nil {
			return fmt.Errorf("refresh intent: %w", err)
		}
		if ia.adopt(in, "", seen) {
			return nil
		}
	}
	return ErrRefreshRaced
}

// changesSeen returns the count of override changes made here, and whether
// one is being recorded.
func (ia *intentAPI) changesSeen() (uint64, bool) {
	ia.mu.Lock()
	defer ia.mu.Unlock()
	return ia.changes, ia.recording > 0
}

// TakeOver prepares the hub to manage a cluster another replica of it
// managed until now: before the cluster's first write it re-reads the
// shared intent store and adopts the operator intent (as RefreshIntent
// does, unless an override changed here meanwhile, which is newer) and the
// cluster's applied and decommission records, so a missing object another
// replica applied is drift (repaired through the write gate, in the feed
// and the metrics), never a first apply, and a decommission it started goes
// on. Call it before registering the cluster's backend.
func (ia *intentAPI) TakeOver(cluster string) error {
	if ia.opts.Intent == nil {
		return nil
	}
	seen, _ := ia.changesSeen()
	in, err := ia.opts.Intent.Load()
	if err != nil {
		return fmt.Errorf("take over cluster %q: %w", cluster, err)
	}
	ia.adopt(in, cluster, seen)
	return nil
}

// adopt takes the intent read from the store: the overrides unless an
// override changed here since seen (changesSeen) or is being recorded (it
// then reports false), and the applied and decommission records of cluster
// when it is not "".
func (ia *intentAPI) adopt(in Intent, cluster string, seen uint64) bool {
	wake, drain, adopted := ia.adoptIntent(in, cluster, seen)
	ia.drain(drain)
	for _, id := range wake {
		ia.ctrl.add(id)
	}
	return adopted
}

// adoptIntent is adopt's part under ia.mu (released even on a panic): it
// returns the NodeIDs to look at again and the writes to wait for.
func (ia *intentAPI) adoptIntent(in Intent, cluster string, seen uint64) (wake []NodeID, drain []*inflight, adopted bool) {
	now := ia.opts.Now()
	ia.mu.Lock()
	defer ia.mu.Unlock()
	if cluster != "" {
		ia.adoptRecordsLocked(in, cluster, now)
	}
	if ia.changes != seen || ia.recording > 0 {
		return nil, nil, false
	}
	paused := make(map[string]bool)
	for c, p := range in.Paused {
		if p {
			paused[c] = true
		}
	}
	for c := range ia.pauses {
		if !paused[c] {
			ia.setPausedLocked(c, false, time.Time{}, SwitchNote{})
			wake = append(wake, ia.clusterIDsLocked(c)...)
		}
	}
	for c := range paused {
		// A store that keeps no time (or a record written without one)
		// tells no pause made again.
		at, note := in.PausedAt[c], in.PauseNotes[c]
		if ia.pauses[c] == 0 || (!at.IsZero() && !at.Equal(ia.pausedAt[c])) {
			ia.setPausedLocked(c, true, at, note)
			drain = append(drain, ia.writesLocked(func(id NodeID, _ *inflight) bool { return id.Cluster == c })...)
		} else if note != ia.pauseNotes[c] {
			// The same pause, its note read since (written after the
			// pause's record, or by a replica of a version before notes).
			ia.setPauseNoteLocked(c, note)
			ia.status.paused(c, true, ia.pausedAt[c], note)
		}
	}
	changed := make(map[string]bool)
	for app, p := range ia.appPolicy {
		if in.Policies[app] != p {
			changed[app] = true
		}
	}
	for app, p := range in.Policies {
		// The same override set again through another replica (a later
		// time; a store that keeps none tells none).
		at := in.PolicySetAt[app]
		if ia.appPolicy[app] != p || (!at.IsZero() && !at.Equal(ia.appPolicyAt[app])) {
			changed[app] = true
		}
	}
	if len(changed) > 0 {
		for app := range changed {
			p := in.Policies[app]
			ia.setAppPolicyLocked(app, p, in.PolicySetAt[app], in.PolicyNotes[app])
			if ia.overrideNarrowsLocked(app, p) {
				drain = append(drain, ia.writesLocked(func(_ NodeID, w *inflight) bool { return w.app == app })...)
			}
		}
		for id, n := range ia.nodes.all() {
			if n.spec != nil && changed[n.spec.Application] {
				wake = append(wake, id)
			}
		}
		ia.status.appPolicies(ia.appPoliciesLocked())
	}
	next := make(map[HoldTarget]Hold)
	for _, hd := range in.Holds {
		if hd.Active(now) {
			next[hd.Target] = hd
		}
	}
	if !maps.Equal(ia.holds, next) {
		for t := range ia.holds {
			if _, ok := next[t]; !ok {
				wake = append(wake, ia.heldIDsLocked(t)...)
				delete(ia.holdSeq, t)
			}
		}
		for t, hd := range next {
			if old, ok := ia.holds[t]; !ok || old != hd {
				ia.holdSeq[t] = ia.nextSeqLocked()
				drain = append(drain, ia.writesLocked(func(id NodeID, w *inflight) bool { return t.Covers(id, w.app) })...)
			}
		}
		ia.holds = next
		ia.status.setHolds(ia.holdsLocked())
	}
	return wake, drain, true
}

// adoptRecordsLocked takes the applied and decommission records of one
// cluster from the store: what another replica applied is remembered as
// applied, and a decommission it started goes on unless this hub wants the
// NodeID. Callers hold ia.mu.
func (ia *intentAPI) adoptRecordsLocked(in Intent, cluster string, now time.Time) {
	for id, ref := range in.Applied {
		if id.Cluster != cluster {
			continue
		}
		rs := ref.Spec()
		rs.ID = id
		if n := ia.nodes.at(id); n != nil {
			if n.applied == nil || RefOf(*n.applied) != RefOf(rs) {
				n.applied = &rs
			}
		} else {
			ia.nodes.put(id, &node{applied: &rs})
		}
	}
	for _, d := range in.Decommissions {
		if d.Ref.ID.Cluster != cluster {
			continue
		}
		if n := ia.nodes.at(d.Ref.ID); n != nil && n.managed() {
			continue // wanted here, or already being decommissioned
		}
		s := d.Ref.Spec()
		n := ia.nodeForLocked(s.ID)
		n.dec = &decommission{spec: &s, since: d.Since, orphan: d.Orphan}
		ia.status.track(&s, true, now)
	}
}

package hub

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// intentAPI is the Hub's public side of the operator intent: pauses,
// policy overrides, holds, manual repairs and the intent store's records
// (LoadIntent, RefreshIntent, TakeOver). A change that narrows what may be
// written returns once no write in its scope that the gate let through can
// still happen (drain); one that widens it enqueues what it covers.
type intentAPI struct {
	*loopState
	ctrl *controller
}

// beginChange counts a change of the overrides (a pause, a policy
// override, a hold) made here, before it takes effect: until endChange,
// called once its record in the intent store is written or failed, no
// refresh adopts a read of the store, which may predate the record (and
// would undo the change until the next refresh).
func (ia *intentAPI) beginChange() {
	ia.mu.Lock()
	defer ia.mu.Unlock()
	ia.changes++
	ia.recording++
}

// endChange ends what beginChange began.
func (ia *intentAPI) endChange() {
	ia.mu.Lock()
	defer ia.mu.Unlock()
	ia.recording--
}

// MaxHoldTTL is the default longest hold: a hold is for an incident, and
// one forgotten must not stop repairs for good.
const MaxHoldTTL = 7 * 24 * time.Hour

// Covers reports whether a hold on t covers a NodeID of application app:
// a hold on the NodeID itself, on its application or on its cluster.
func (t HoldTarget) Covers(id NodeID, app string) bool {
	switch t.Scope {
	case HoldNode:
		return t.Name == id.String()
	case HoldApplication:
		return t.Name == app
	case HoldCluster:
		return t.Name == id.Cluster
	}
	return false
}

// RepairNow asks for an immediate repair of one NodeID, overriding warn-only,
// a pause or a hold for this one repair; a pause, hold or warn override set
// after the request wins over it.
func (ia *intentAPI) RepairNow(id NodeID) error {
	now := ia.opts.Now()
	known := func() bool {
		ia.mu.Lock()
		defer ia.mu.Unlock()
		rec := ia.nodes.at(id)
		if rec == nil || rec.spec == nil {
			return false
		}
		n := &rec.nodeLoop
		n.manual = ia.nextSeqLocked()
		if n.rep != nil {
			n.rep.backoffTill = time.Time{}
		}
		if n.pendingAt.IsZero() {
			n.pendingAt = now
		}
		return true
	}()
	if !known {
		return fmt.Errorf("repair %s: %w", id, ErrUnknownNode)
	}
	ia.status.step(id, StepManual, "", now)
	ia.ctrl.add(id)
	return nil
}

// PauseCluster pauses or resumes repairs on one cluster. Pausing returns
// once no write on the cluster can still happen: writes already let through
// have finished, or were cancelled after Options.IntentWait. Pausing a
// paused cluster pauses it again: a manual repair asked for since the first
// pause no longer overrides it. Resuming enqueues every NodeID of the
// cluster. With an intent store the pause survives a restart; an error
// means it could not be recorded (the pause still holds in this run; on
// replicas sharing the store, until the next RefreshIntent reads the store
// without it). A pause made here has no note: see PauseClusterNote.
func (ia *intentAPI) PauseCluster(cluster string, paused bool) error {
	return ia.pauseCluster(cluster, paused, SwitchNote{})
}

// PauseClusterNote pauses repairs on one cluster as PauseCluster does,
// with a note of who paused it and why that every view of the cluster
// shows while it is paused (pausing a paused cluster again replaces the
// note). Each field is made one line (runs of white space, line breaks
// included, become one space). A note that is not valid (SwitchNote.Valid) is refused, and
// nothing paused.
func (ia *intentAPI) PauseClusterNote(cluster string, note SwitchNote) error {
	// One line each: a note is read in one line of every view, a log
	// line and a notification.
	note = note.oneLine()
	if err := note.Valid(); err != nil {
		return fmt.Errorf("pause cluster %q: %w", cluster, err)
	}
	return ia.pauseCluster(cluster, true, note)
}

// pauseCluster is PauseCluster with a pause's note.
func (ia *intentAPI) pauseCluster(cluster string, paused bool, note SwitchNote) error {
	ia.beginChange()
	defer ia.endChange()
	at := ia.opts.Now()
	var ids []NodeID
	var ws []*inflight
	resumed := false
	func() {
		ia.mu.Lock()
		defer ia.mu.Unlock()
		if !paused && ia.pauses[cluster] == 0 {
			return
		}
		resumed = !paused
		ia.setPausedLocked(cluster, paused, at, note)
		if !paused {
			ids = ia.clusterIDsLocked(cluster)
		}
		ws = ia.writesLocked(func(id NodeID, _ *inflight) bool { return id.Cluster == cluster })
	}()
	ia.drain(ws)
	for _, id := range ids {
		ia.ctrl.add(id)
	}
	if paused {
		ia.opts.Logger.Info("cluster paused", "cluster", cluster, "by", note.By, "reason", note.Reason)
	} else if resumed {
		ia.opts.Logger.Info("cluster resumed", "cluster", cluster)
	}
	if ia.opts.Intent != nil {
		if err := ia.opts.Intent.SetPaused(cluster, paused, at, note); err != nil {
			return fmt.Errorf("pause cluster %q: record: %w", cluster, err)
		}
	}
	return nil
}

// SetApplicationPolicy overrides the policy of one application at runtime
// ("" removes the override). Every NodeID of the application is enqueued.
// A change that leaves any of the application's objects warn-only
// (switching to warn, or removing a repair override over a warn-only
// config) returns once no repair or prune of the application can still
// happen. With an intent store the override survives a restart.
func (ia *intentAPI) SetApplicationPolicy(app string, p Policy) error {
	return ia.setApplicationPolicy(app, p, SwitchNote{})
}

// SetApplicationPolicyNote overrides an application's policy as
// SetApplicationPolicy does, with a note of who set it and why that every
// view of the override shows (made one line; refused, and nothing changed,
// when not valid). Removing an override ("") drops its note.
func (ia *intentAPI) SetApplicationPolicyNote(app string, p Policy, note SwitchNote) error {
	note = note.oneLine()
	if err := note.Valid(); err != nil {
		return fmt.Errorf("policy of application %q: %w", app, err)
	}
	return ia.setApplicationPolicy(app, p, note)
}

// setApplicationPolicy is SetApplicationPolicy with the override's note.
func (ia *intentAPI) setApplicationPolicy(app string, p Policy, note SwitchNote) error {
	if p == "" {
		note = SwitchNote{}
	}
	ia.beginChange()
	defer ia.endChange()
	at := ia.opts.Now()
	var ids []NodeID
	var ws []*inflight
	func() {
		ia.mu.Lock()
		defer ia.mu.Unlock()
		ia.setAppPolicyLocked(app, p, at, note)
		for id, n := range ia.nodes.all() {
			if n.spec != nil && n.spec.Application == app {
				ids = append(ids, id)
			}
		}
		ia.status.appPolicies(ia.appPoliciesLocked())
		if ia.overrideNarrowsLocked(app, p) {
			ws = ia.writesLocked(func(_ NodeID, w *inflight) bool { return w.app == app })
		}
	}()
	ia.drain(ws)
	for _, id := range ids {
		ia.ctrl.add(id)
	}
	if p != "" {
		ia.opts.Logger.Info("application policy overridden", "application", app, "policy", string(p), "by", note.By, "reason", note.Reason)
	} else {
		ia.opts.Logger.Info("application policy override removed", "application", app)
	}
	if ia.opts.Intent != nil {
		if err := ia.opts.Intent.SetPolicy(app, p, at, note); err != nil {
			return fmt.Errorf("policy of application %q: record: %w", app, err)
		}
	}
	return nil
}

// overrideNarrowsLocked reports whether setting application app's
// override to p leaves any of its objects warn-only: a warn override, or no
// override over a config that makes one of them warn-only. Such a change
// waits for the application's writes in flight. Callers hold mu.
func (ia *intentAPI) overrideNarrowsLocked(app string, p Policy) bool {
	if p != "" {
		return p == PolicyWarn
	}
	for _, n := range ia.nodes.all() {
		if n.spec != nil && n.spec.Application == app && n.spec.Policy == PolicyWarn {
			return true
		}
	}
	return false
}

// Hold stops repairs (and prunes) of a NodeID, an application or a cluster
// for ttl, with a reason: drift is still detected and shown as held. A hold
// on the same target is replaced. It expires by itself; with an intent
// store it survives a restart. Who placed it is not known: see HoldAs.
func (ia *intentAPI) Hold(t HoldTarget, ttl time.Duration, reason string) (Hold, error) {
	return ia.HoldAs("", t, ttl, reason)
}

// HoldAs places a hold as Hold does, noting who placed it (Hold.By; made
// one line, at most MaxSwitchNote bytes).
func (ia *intentAPI) HoldAs(by string, t HoldTarget, ttl time.Duration, reason string) (Hold, error) {
	author := SwitchNote{By: by}.oneLine()
	if err := author.Valid(); err != nil {
		return Hold{}, fmt.Errorf("hold %s: %w", t, err)
	}
	by = author.By
	if err := t.Valid(); err != nil {
		return Hold{}, err
	}
	if ttl <= 0 {
		return Hold{}, fmt.Errorf("hold %s: the duration must be positive", t)
	}
	if ttl > ia.opts.MaxHoldTTL {
		return Hold{}, fmt.Errorf("hold %s: the duration %s is longer than the longest hold, %s", t, ttl, ia.opts.MaxHoldTTL)
	}
	if strings.TrimSpace(reason) == "" {
		return Hold{}, fmt.Errorf("hold %s: a reason is required", t)
	}
	ia.beginChange()
	defer ia.endChange()
	now := ia.opts.Now()
	hd := Hold{Target: t, Reason: reason, By: by, Since: now, Until: now.Add(ttl)}
	var ws []*inflight
	func() {
		ia.mu.Lock()
		defer ia.mu.Unlock()
		ia.holds[t] = hd
		ia.holdSeq[t] = ia.nextSeqLocked()
		ia.status.setHolds(ia.holdsLocked())
		ws = ia.writesLocked(func(id NodeID, w *inflight) bool { return t.Covers(id, w.app) })
	}()
	ia.drain(ws)
	if ia.opts.Intent != nil {
		if err := ia.opts.Intent.PutHold(hd); err != nil {
			return hd, fmt.Errorf("hold %s: record: %w", t, err)
		}
	}
	return hd, nil
}

// ErrNoHold is wrapped by the error of ReleaseHold when the target has no
// hold (never placed, or already released).
var ErrNoHold = errors.New("no such hold")

// ReleaseHold ends a hold early and re-checks what it covered. Without a
// hold on t it changes nothing and returns an error wrapping ErrNoHold.
func (ia *intentAPI) ReleaseHold(t HoldTarget) error {
	ia.beginChange()
	defer ia.endChange()
	var ids []NodeID
	ok := false
	func() {
		ia.mu.Lock()
		defer ia.mu.Unlock()
		_, ok = ia.holds[t]
		delete(ia.holds, t)
		delete(ia.holdSeq, t)
		ia.status.setHolds(ia.holdsLocked())
		ids = ia.heldIDsLocked(t)
	}()
	if !ok {
		return fmt.Errorf("release %s: %w", t, ErrNoHold)
	}
	for _, id := range ids {
		ia.ctrl.add(id)
	}
	if ia.opts.Intent != nil {
		if err := ia.opts.Intent.DeleteHold(t); err != nil {
			return fmt.Errorf("release %s: record: %w", t, err)
		}
	}
	return nil
}

// heldIDsLocked lists the NodeIDs a hold target covers.
func (ia *intentAPI) heldIDsLocked(t HoldTarget) []NodeID {
	var ids []NodeID
	for id, n := range ia.nodes.all() {
		if n.managed() && t.Covers(id, n.of().Application) {
			ids = append(ids, id)
		}
	}
	return ids
}

// LoadIntent restores what the intent store remembers: pauses, policy
// overrides, holds, pending decommissions and the specs an earlier run
// applied. Call it once, before the first ReplaceDesired and Run: the first
// ReplaceDesired then decommissions (guarded) what was applied before and is
// no longer wanted.
func (ia *intentAPI) LoadIntent() error {
	if ia.opts.Intent == nil {
		return nil
	}
	in, err := ia.opts.Intent.Load()
	if err != nil {
		return fmt.Errorf("load intent: %w", err)
	}
	now := ia.opts.Now()
	func() {
		ia.mu.Lock()
		defer ia.mu.Unlock()
		for c, p := range in.Paused {
			if p {
				ia.setPausedLocked(c, true, in.PausedAt[c], in.PauseNotes[c])
			}
		}
		for app, p := range in.Policies {
			ia.setAppPolicyLocked(app, p, in.PolicySetAt[app], in.PolicyNotes[app])
		}
		ia.status.appPolicies(ia.appPoliciesLocked())
		for _, hd := range in.Holds {
			if hd.Active(now) {
				ia.holds[hd.Target] = hd
				ia.holdSeq[hd.Target] = ia.nextSeqLocked()
			}
		}
		ia.status.setHolds(ia.holdsLocked())
		for id, ref := range in.Applied {
			rs := ref.Spec()
			rs.ID = id // the key (the store checks they match)
			if n := ia.nodes.at(id); n != nil {
				n.applied = &rs
			} else {
				ia.nodes.put(id, &node{applied: &rs})
			}
		}
		for _, d := range in.Decommissions {
			s := d.Ref.Spec()
			n := ia.nodeForLocked(s.ID)
			n.spec = nil
			n.dec = &decommission{spec: &s, since: d.Since, orphan: d.Orphan}
			ia.status.track(&s, true, now)
		}
	}()
	return nil
}

// SetClusterPolicy sets a cluster's default policy ("" for the hub's): the
// policy orphans found on it are judged by (a warn-only cluster never
// prunes its orphans). The desired specs carry their own policies.
func (ia *intentAPI) SetClusterPolicy(cluster string, p Policy) {
	ia.mu.Lock()
	defer ia.mu.Unlock()
	if p == "" {
		delete(ia.clusterPolicy, cluster)
		return
	}
	ia.clusterPolicy[cluster] = p
}

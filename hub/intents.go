package hub

import (
	"slices"
	"strings"
	"time"
)

// intents is the operator intent the write gate reads at the moment of
// every write: cluster pauses, application policy overrides, holds, and
// each cluster's default policy (for its orphans). Manual repairs are
// pending on the NodeID's loop bookkeeping (nodeLoop.manual) and numbered
// here with the rest. It is guarded by the hub's lock (loopState.mu): its
// methods are called with it held. It tells the status store about every
// change users see; the intent store (Options.Intent) is written by the
// Hub's methods once the lock is released.
type intents struct {
	// policy is the hub-wide default policy.
	policy    Policy
	status    statusWriter
	appPolicy map[string]Policy
	holds     map[HoldTarget]Hold
	// seq numbers intent changes (see intentView); pauses, appPolicySeq
	// and holdSeq hold the number of the change that set each switch.
	// Pauses are kept by cluster id apart from the cluster's loop state,
	// so a cluster forgotten and discovered again is still paused.
	seq          uint64
	pauses       map[string]uint64
	appPolicySeq map[string]uint64
	holdSeq      map[HoldTarget]uint64
	// pausedAt is when each paused cluster was paused, as the intent
	// store keeps it (zero where it keeps none): a later time read from
	// a store replicas share is a pause made again through another one.
	pausedAt map[string]time.Time
	// pauseNotes say who paused each paused cluster and why (none for a
	// pause without a note).
	pauseNotes map[string]SwitchNote
	// appPolicyAt is when each application's override was set, likewise.
	appPolicyAt map[string]time.Time
	// appPolicyNotes say who set each override and why (none for an
	// override without a note).
	appPolicyNotes map[string]SwitchNote
	// changes counts the changes of the overrides made here, and
	// recording those whose record in the intent store is not written
	// yet: a read of the store that a change here may postdate is not
	// adopted (see intentAPI.RefreshIntent).
	changes   uint64
	recording int
	// clusterPolicy is each cluster's default policy, for its orphans.
	clusterPolicy map[string]Policy
}

// newIntents returns an empty intent over the hub-wide default policy.
func newIntents(policy Policy, status statusWriter) intents {
	return intents{
		policy:         policy,
		status:         status,
		appPolicy:      make(map[string]Policy),
		holds:          make(map[HoldTarget]Hold),
		pauses:         make(map[string]uint64),
		pausedAt:       make(map[string]time.Time),
		pauseNotes:     make(map[string]SwitchNote),
		appPolicyAt:    make(map[string]time.Time),
		appPolicyNotes: make(map[string]SwitchNote),
		holdSeq:        make(map[HoldTarget]uint64),
		appPolicySeq:   make(map[string]uint64),
		clusterPolicy:  make(map[string]Policy),
	}
}

// nextSeqLocked numbers an intent change. Callers hold loopState.mu.
func (in *intents) nextSeqLocked() uint64 {
	in.seq++
	return in.seq
}

// setPausedLocked records a cluster's pause, made at at with its note
// (paused again when it was paused already). Callers hold loopState.mu.
func (in *intents) setPausedLocked(cluster string, paused bool, at time.Time, note SwitchNote) {
	if paused {
		in.pauses[cluster] = in.nextSeqLocked()
		in.pausedAt[cluster] = at
	} else {
		delete(in.pauses, cluster)
		delete(in.pausedAt, cluster)
		at, note = time.Time{}, SwitchNote{}
	}
	in.setPauseNoteLocked(cluster, note)
	in.status.paused(cluster, paused, at, note)
}

// setPauseNoteLocked keeps a paused cluster's note (an empty one deletes
// it). Callers hold loopState.mu.
func (in *intents) setPauseNoteLocked(cluster string, note SwitchNote) {
	if note == (SwitchNote{}) {
		delete(in.pauseNotes, cluster)
		return
	}
	in.pauseNotes[cluster] = note
}

// setAppPolicyLocked records an application's policy override ("" removes
// it), set at at with its note. Callers hold loopState.mu.
func (in *intents) setAppPolicyLocked(app string, p Policy, at time.Time, note SwitchNote) {
	delete(in.appPolicyNotes, app)
	if p == "" {
		delete(in.appPolicy, app)
		delete(in.appPolicySeq, app)
		delete(in.appPolicyAt, app)
		return
	}
	in.appPolicy[app] = p
	in.appPolicySeq[app] = in.nextSeqLocked()
	in.appPolicyAt[app] = at
	if note != (SwitchNote{}) {
		in.appPolicyNotes[app] = note
	}
}

// appOverride is an application's policy override with its note.
type appOverride struct {
	Policy Policy
	OverrideNote
}

// appPoliciesLocked returns the overrides with their notes, for the status
// store (which owns them from then on). Callers hold loopState.mu.
func (in *intents) appPoliciesLocked() map[string]appOverride {
	out := make(map[string]appOverride, len(in.appPolicy))
	for app, p := range in.appPolicy {
		n := in.appPolicyNotes[app]
		out[app] = appOverride{Policy: p, OverrideNote: OverrideNote{At: in.appPolicyAt[app], By: n.By, Reason: n.Reason}}
	}
	return out
}

func (in *intents) holdsLocked() []Hold {
	out := make([]Hold, 0, len(in.holds))
	for _, hd := range in.holds {
		out = append(out, hd)
	}
	slices.SortFunc(out, func(a, b Hold) int { return strings.Compare(a.Target.String(), b.Target.String()) })
	return out
}

// holdForLocked returns the active hold covering a NodeID, if any; expired
// holds are dropped and returned for deletion from the intent store.
func (in *intents) holdForLocked(id NodeID, app string, now time.Time) (*Hold, []Hold) {
	if len(in.holds) == 0 {
		// Every pass asks, under the loop's lock: no NodeID text is
		// built when nothing is held.
		return nil, nil
	}
	var expired []Hold
	var found *Hold
	for _, t := range []HoldTarget{{HoldNode, id.String()}, {HoldApplication, app}, {HoldCluster, id.Cluster}} {
		hd, ok := in.holds[t]
		if !ok {
			continue
		}
		if !hd.Active(now) {
			delete(in.holds, t)
			delete(in.holdSeq, t)
			expired = append(expired, hd)
			continue
		}
		if found == nil || hd.Until.After(found.Until) {
			c := hd
			found = &c
		}
	}
	if len(expired) > 0 {
		in.status.setHolds(in.holdsLocked())
	}
	return found, expired
}

// orphanPolicyLocked is the policy orphans of a cluster are judged by.
// Callers hold loopState.mu.
func (in *intents) orphanPolicyLocked(cluster string) Policy {
	if p, ok := in.clusterPolicy[cluster]; ok {
		return p
	}
	return in.policy
}

package hub

import (
	"context"
	"sync"
	"time"
)

// The write gate: every write the hub makes (a repair, a first apply, a
// prune of a decommissioned object or of an orphan, on any backend) passes
// one decision, decide, taken under the hub's lock at the moment of the
// write over the operator intent as it is then. Changing the intent (a
// pause, a hold, a warn override) returns only once every write in its scope
// that the gate had already let through has finished or was cancelled, so
// after PauseCluster returns no write can still happen on that cluster.

// writeKind is what a gated write does.
type writeKind uint8

const (
	// writeRepair re-applies the desired state over drift.
	writeRepair writeKind = iota
	// writeCreate is the first apply of an object the hub never applied
	// (nor any earlier run or replica of it).
	writeCreate
	// writeDelete prunes an object (a decommission or an orphan).
	writeDelete
)

// intentView is the operator intent covering one NodeID at one moment. Each
// switch carries the sequence number of the change that set it: the hub
// numbers every intent change, so "which came last" never depends on the
// clock. A manual repair overrides the switches set before it, never one
// set after it.
type intentView struct {
	// paused is the sequence number of the cluster's pause; 0 when the
	// cluster is not paused.
	paused uint64
	// hold is the active hold covering the NodeID, set at holdSeq.
	hold    *Hold
	holdSeq uint64
	// policy is the effective policy; policySeq the sequence number of a
	// runtime override that set it (0 for the config's).
	policy    Policy
	policySeq uint64
	// pauseNote and policyNote say who set the pause and the policy
	// override, and why (empty without a note): a refusal names them.
	pauseNote, policyNote SwitchNote
	// manual is the sequence number of a pending manual repair; 0 when
	// none.
	manual uint64
	// current is false when the pass's desired spec or decommission is no
	// longer the NodeID's (a reload or a forgotten cluster meanwhile).
	current bool
	// stopping is set once the hub stops: no write starts.
	stopping bool
}

// verdict is the gate's answer for one write.
type verdict struct {
	// allow lets the write happen.
	allow bool
	// manual is set when a manual repair overrode a switch.
	manual bool
	// action names why the write was refused: "paused", "held", "warn",
	// "stale" (the desired state moved on: a newer pass acts) or
	// "stopping".
	action string
	// status and reason are what the NodeID shows when refused.
	status Status
	reason string
	// why is the reason with the note of the switch that refused (who
	// set it and why), for the feed and the audit log: a record of that
	// moment, where the NodeID's status shows the switch as it is now.
	why string
	// step is the timeline step of a refusal.
	step Step
	// retry, when positive, is when to look again (a hold's expiry).
	retry time.Duration
}

// decide is the one rule of the write gate: whether a write of kind may
// happen now under the intent in. It is a pure function.
//
//   - Nothing is written once the hub stops, nor for a pass whose desired
//     spec or decommission is no longer current.
//   - A paused cluster, a hold, or the warn-only policy refuse repairs and
//     prunes; a pause or a hold also refuses first applies (warn-only does
//     not: creating what was never applied is not undoing anyone's change).
//   - A manual repair (RepairNow) overrides the switches that were set
//     before it was asked for, and only those: a later pause, hold or
//     warn override wins. Prunes are never manual.
func decide(kind writeKind, in intentView, now time.Time) verdict {
	if in.stopping {
		return verdict{action: "stopping"}
	}
	if !in.current {
		return verdict{action: "stale"}
	}
	overrides := func(seq uint64) bool { return kind == writeRepair && in.manual > seq }
	verb := ""
	if kind == writeDelete {
		verb = "would prune: "
	}
	if kind == writeCreate {
		verb = "would create: "
	}
	v := verdict{allow: true}
	if in.paused != 0 {
		if !overrides(in.paused) {
			reason := "repairs paused on this cluster"
			if kind == writeDelete {
				reason = "held while repairs are paused on this cluster"
			}
			return verdict{action: "paused", status: StatusPaused, reason: verb + reason, why: verb + reason + in.pauseNote.Suffix(),
				step: StepPaused}
		}
		v.manual = true
	}
	if in.hold != nil {
		if !overrides(in.holdSeq) {
			reason := verb + heldReason(*in.hold)
			return verdict{action: "held", status: StatusHeld, reason: reason, why: reason, step: StepHeld,
				retry: in.hold.Until.Sub(now) + time.Millisecond}
		}
		v.manual = true
	}
	if in.policy == PolicyWarn && kind != writeCreate {
		if !overrides(in.policySeq) {
			reason := "warn-only: reported, not repaired"
			if kind == writeDelete {
				reason = "would prune: warn-only never deletes"
			}
			why := reason
			if in.policySeq != 0 {
				why += in.policyNote.OverriddenSuffix()
			}
			return verdict{action: "warn", status: StatusWarnOnly, reason: reason, why: why, step: StepWarned}
		}
		v.manual = true
	}
	return v
}

// inflight is one write the gate let through and that has not returned.
type inflight struct {
	cluster string
	app     string
	cancel  context.CancelFunc
	done    chan struct{}
}

// intentLocked returns the intent covering a pass's NodeID now. Expired
// holds it meets are dropped and returned, for deletion from the intent
// store once l.mu is released. Callers hold l.mu.
func (l *loopState) intentLocked(p *pass, now time.Time) (intentView, []Hold) {
	rec := l.nodes.at(p.id)
	in := intentView{manual: p.manual, stopping: l.stopping()}
	of := p.spec
	if p.dec != nil {
		of = p.dec.spec
		in.current = rec != nil && rec.dec == p.dec
	} else {
		// A desired-state change that left this NodeID's body and ignore
		// rules as they were (a reload, a rediscovery, a workspace's new
		// plan) keeps the pass current; its policy and application are
		// read from the record as it is now. New ignore rules make it
		// stale: what the pass classified may be ignored now.
		in.current = rec != nil && rec.spec != nil && rec.spec.Hash == p.spec.Hash &&
			rec.spec.Ignore.key() == p.spec.Ignore.key()
		if in.current {
			of = rec.spec
		}
	}
	in.paused = l.pauses[p.id.Cluster]
	if in.paused != 0 {
		in.pauseNote = l.pauseNotes[p.id.Cluster]
	}
	in.policy = of.Policy
	if p.dec != nil && p.dec.orphan {
		// An orphan is judged by its cluster's policy as it is at the
		// delete, not as it was when the scan found it.
		in.policy = l.orphanPolicyLocked(p.id.Cluster)
	}
	if ap, ok := l.appPolicy[of.Application]; ok {
		in.policy, in.policySeq, in.policyNote = ap, l.appPolicySeq[of.Application], l.appPolicyNotes[of.Application]
	}
	hd, expired := l.holdForLocked(p.id, of.Application, now)
	if hd != nil {
		in.hold, in.holdSeq = hd, l.holdSeq[hd.Target]
	}
	return in, expired
}

// admit asks the gate whether a pass may write now. When it may, the write
// is registered as in flight until release is called, and wctx (derived
// from ctx) is cancelled if an intent change waiting for it runs out of
// patience. Release must be called once the write returned; it is
// idempotent, so a caller defers it as well and a write that panics never
// leaves its registration behind for a pause or hold to wait on.
func (l *loopState) admit(ctx context.Context, p *pass, kind writeKind) (wctx context.Context, release func(), v verdict) {
	now := l.opts.Now()
	var expired []Hold
	func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		var in intentView
		in, expired = l.intentLocked(p, now)
		v = decide(kind, in, now)
		if !v.allow {
			return
		}
		var cancel context.CancelFunc
		wctx, cancel = context.WithCancel(ctx)
		w := &inflight{cluster: p.id.Cluster, app: p.app(), cancel: cancel, done: make(chan struct{})}
		l.writes[p.id] = w
		release = sync.OnceFunc(func() {
			l.mu.Lock()
			if l.writes[p.id] == w {
				delete(l.writes, p.id)
			}
			l.mu.Unlock()
			cancel()
			close(w.done)
		})
	}()
	l.deleteExpiredHolds(expired)
	return wctx, release, v
}

// plan is the gate's answer for a pass's write as the intent stands at the
// start of the pass: it decides what the pass prepares (attribution, fight
// bookkeeping, a confirming read). The write itself asks again (admit).
func (l *loopState) plan(p *pass, kind writeKind) verdict {
	now := l.opts.Now()
	in, expired := func() (intentView, []Hold) {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.intentLocked(p, now)
	}()
	l.deleteExpiredHolds(expired)
	return decide(kind, in, now)
}

// deleteExpiredHolds deletes expired holds from the intent store, each
// only while the store still has that hold: one renewed on its target
// since (by this hub after the lock was released, or by another replica
// on the shared store) is never deleted with it.
func (l *loopState) deleteExpiredHolds(expired []Hold) {
	if l.opts.Intent == nil {
		return
	}
	for _, hd := range expired {
		if err := l.opts.Intent.DeleteExpiredHold(hd); err != nil {
			l.log.Error("delete expired hold", "hold", hd.Target.String(), "err", err)
		}
	}
}

// writesLocked returns the writes in flight that match, for an intent
// change to wait for. Callers hold l.mu.
func (l *loopState) writesLocked(match func(id NodeID, w *inflight) bool) []*inflight {
	var out []*inflight
	for id, w := range l.writes {
		if match(id, w) {
			out = append(out, w)
		}
	}
	return out
}

// drain waits until the writes have returned. Writes still running after
// Options.IntentWait are cancelled, then waited for: once drain returns,
// none of them can still write.
func (l *loopState) drain(ws []*inflight) {
	if len(ws) == 0 {
		return
	}
	l.metrics.drains.Inc()
	patience := time.NewTimer(l.opts.IntentWait)
	defer patience.Stop()
	for _, w := range ws {
		select {
		case <-w.done:
			continue
		case <-patience.C:
		}
		for _, w := range ws {
			w.cancel()
		}
		break
	}
	for _, w := range ws {
		<-w.done
	}
}

package hub

import (
	"errors"
	"fmt"
	"time"
)

// recorder records what the reconciler's passes did, once per outcome: the
// NodeID's status, timeline, drift record and feed line in the status store
// (through statusWriter), the few loop facts that go with them (the last
// status was stuck, the object is another hub's), and Options.OnRecord.
type recorder struct {
	*loopState
}

// record stores a classified drift with a status.
func (o *recorder) record(p pass, rep Repair, st Status, reason string, step Step) {
	now := o.opts.Now()
	o.withLoop(p.id, func(n *nodeLoop) { n.verifying, n.stuck = false, false })
	o.status.drift(p.id, rep)
	o.status.step(p.id, StepObserved, "", rep.ObservedAt)
	o.status.step(p.id, step, rep.Drift.Summary(), rep.ClassifiedAt)
	o.status.setStatus(p.id, st, reason, now)
	if st != StatusRepairing {
		o.status.feed(FeedEntry{At: now, ID: p.id, Class: rep.Drift.Class, Fields: rep.Drift.Fields,
			Who: attributionText(rep.Attribution), Action: rep.Action, Latency: rep.ClassifiedAt.Sub(rep.ObservedAt)})
	}
	o.onRecord(rep)
}

// refused records a write the gate refused: the drift stays, shown with
// the switch that holds it. A refusal because the hub stops or the desired
// state moved on records nothing (a newer pass acts, or none).
func (o *recorder) refused(p pass, rep Repair, v verdict) (Result, error) {
	switch v.action {
	case "stopping":
		return Result{}, errStopping
	case "stale":
		return Result{}, nil
	}
	rep.Action = v.action
	o.metrics.refused.WithLabelValues(p.id.Cluster, v.action).Inc()
	o.record(p, rep, v.status, v.reason, v.step)
	return Result{RequeueAfter: v.retry}, nil
}

// show sets the status a NodeID shows and notes in the loop's bookkeeping
// whether it is StatusStuck; it reports whether the status shown before
// was (the loop never reads the status store back).
func (o *recorder) show(id NodeID, st Status, reason string, now time.Time) (wasStuck bool) {
	wasStuck = o.noteShown(id, st)
	o.status.setStatus(id, st, reason, now)
	return wasStuck
}

// noteShown notes in the loop's bookkeeping whether a NodeID's status is
// now StatusStuck, and reports whether it was.
func (o *recorder) noteShown(id NodeID, st Status) (wasStuck bool) {
	o.withLoop(id, func(n *nodeLoop) { wasStuck, n.stuck = n.stuck, st == StatusStuck })
	return wasStuck
}

// foreign records a pass that met an object carrying another hub's id: it
// is shown as such (once in the feed), never counted as a failed repair.
func (o *recorder) foreign(p pass, err error) {
	now := o.opts.Now()
	owner := "another hub"
	var oe OwnedByOtherError
	if errors.As(err, &oe) {
		owner = fmt.Sprintf("hub %q", oe.Hub)
	}
	reason := "owned by " + owner + ": not repaired, adopted or pruned by this hub"
	first := false
	o.withLoop(p.id, func(n *nodeLoop) { first, n.foreign, n.stuck = !n.foreign, true, false })
	if first {
		o.log.Warn("object owned by another hub", "node", p.id.String(), "err", err)
		o.status.step(p.id, StepFailed, reason, now)
		o.status.feed(FeedEntry{At: now, ID: p.id, Action: "foreign", Err: reason})
	}
	o.status.setStatus(p.id, StatusForeign, reason, now)
}

// fail records a failed pass; the handler retries it.
func (o *recorder) fail(p pass, err error) {
	now := o.opts.Now()
	o.metrics.repairs.WithLabelValues(p.id.Cluster, "failure").Inc()
	o.log.Warn("reconcile failed", "node", p.id.String(), "err", err)
	st := StatusFailed
	if errors.Is(err, ErrForbidden) {
		st = StatusForbidden
	}
	o.status.failed(p.id, err.Error())
	o.status.step(p.id, StepFailed, err.Error(), now)
	o.show(p.id, st, err.Error(), now)
	o.status.feed(FeedEntry{At: now, ID: p.id, Action: "failed", Err: err.Error(), Latency: now.Sub(p.observedAt)})
}

// onRecord hands a copy of a drift record to Options.OnRecord, if set.
func (o *recorder) onRecord(rep Repair) {
	if o.opts.OnRecord != nil {
		o.opts.OnRecord(rep)
	}
}

// endDecommission stops tracking a finished decommission and writes its
// feed line in the same step, so no snapshot shows the NodeID gone without
// saying why; false when it was no longer current (the NodeID is wanted
// again or its cluster forgotten).
func (o *recorder) endDecommission(p pass, line FeedEntry) bool {
	ended := func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		if n := o.nodes.at(p.id); n == nil || n.dec != p.dec {
			return false
		}
		o.nodes.del(p.id)
		o.status.feed(line)
		o.status.untrack(p.id)
		return true
	}()
	if ended {
		o.forgetApplied(p.id)
		o.log.Info("decommission finished", "node", p.id.String())
	}
	return ended
}

// heldReason describes a hold for a status reason.
func heldReason(hd Hold) string {
	return fmt.Sprintf("held until %s (%s): %s", hd.Until.Format("15:04:05"), hd.Target, hd.Reason)
}

func attributionText(a *Attribution) string {
	if a == nil {
		return ""
	}
	return a.String()
}

package hub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// recorder records what the reconciler's passes did, once per outcome: the
// NodeID's status, timeline, drift record and feed line in the status store
// (through statusWriter), the few loop facts that go with them (the last
// status was stuck, the object is another hub's), and Options.OnRecord. It
// also ends a finished decommission: the NodeID's record goes in the same
// step as its feed line (endDecommission).
type recorder struct {
	*loopState
}

// record stores a classified drift with a status. why, when not empty, is
// the reason with the note of the switch that held the drift back (see
// verdict.why), for the feed line and the audit log.
func (o *recorder) record(p pass, rep Repair, st Status, reason, why string, step Step) {
	now := o.opts.Now()
	o.withLoop(p.id, func(n *nodeLoop) { n.verifying, n.stuck = false, false })
	o.status.drift(p.id, rep)
	summary := rep.Drift.Summary()
	if step == StepDesiredChanged {
		summary = rep.Drift.ChangeSummary()
	}
	// Every watch event of an object whose repair is held back brings a
	// pass here again: the store folds a repeated pair into the last one.
	o.status.observed(p.id, step, summary, rep.ObservedAt, rep.ClassifiedAt)
	o.status.setStatus(p.id, st, reason, now)
	if st != StatusRepairing {
		o.status.feed(FeedEntry{At: now, ID: p.id, Class: rep.Drift.Class, Fields: rep.Drift.Fields,
			Who: attributionText(rep.Attribution), Action: rep.Action, Latency: rep.ClassifiedAt.Sub(rep.ObservedAt), Why: why})
		o.logHeld(p.id, rep, cmp.Or(why, reason))
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
	o.record(p, rep, v.status, v.reason, v.why, v.step)
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

// restarted records a pass whose backend was replaced under it
// (ErrRestarting): logged at debug level and counted, not a failure.
func (o *recorder) restarted(p pass, err error) {
	o.metrics.restarted.WithLabelValues(p.id.Cluster).Inc()
	o.log.Debug("pass runs again: its backend restarted", "node", p.id.String(), "err", err)
}

// waitingForKind records a first apply whose kind its cluster does not
// serve yet (ErrKindNotServed): shown as unknown with the reason, not a
// failure; the handler retries it.
func (o *recorder) waitingForKind(p pass, err error) {
	o.log.Debug("first apply waits for its kind", "node", p.id.String(), "err", err)
	o.show(p.id, StatusUnknown, "waiting for the cluster to serve its kind: "+err.Error(), o.opts.Now())
}

// waitingForDeletion records a write refused until a deletion in progress
// ends (ErrTerminating): shown as drifted with the reason, said once in
// the log, the timeline and the feed per wait (until the object is seen in
// sync), never counted as a failed repair; the handler tries it again.
func (o *recorder) waitingForDeletion(p pass, err error) {
	now := o.opts.Now()
	reason := "waiting: " + err.Error()
	first := false
	o.withLoop(p.id, func(n *nodeLoop) { first, n.waiting, n.stuck = !n.waiting, true, false })
	if first {
		o.log.Info("write waits for a deletion in progress", "node", p.id.String(), "err", err)
		o.status.step(p.id, StepFailed, reason, now)
		o.status.feed(FeedEntry{At: now, ID: p.id, Action: "waiting", Err: err.Error(), Latency: now.Sub(p.observedAt)})
	}
	o.status.setStatus(p.id, StatusDrifted, reason, now)
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
	return fmt.Sprintf("held until %s (%s)%s", hd.Until.Format("15:04:05"), hd.Target, SwitchNote{By: hd.By, Reason: hd.Reason}.Suffix())
}

func attributionText(a *Attribution) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// applied records a repair the backend applied (conflicts: the fields it
// took over from other managers).
func (o *recorder) applied(p pass, rep Repair, conflicts []Conflict, latency time.Duration) {
	detail := rep.Action
	if len(conflicts) > 0 {
		detail += fmt.Sprintf(" (took %d field(s) from %s)", len(conflicts), conflicts[0].Manager)
	}
	o.status.applied(p.id, rep, latency)
	step := StepApplied
	if rep.DesiredChange != "" {
		step, detail = StepChangeApplied, detail+": "+rep.DesiredChange
	}
	o.status.step(p.id, step, detail, rep.AppliedAt)
	who := attributionText(rep.Attribution)
	if rep.DesiredChange != "" {
		who = rep.DesiredChange
	}
	o.status.feed(FeedEntry{At: rep.AppliedAt, ID: p.id, Class: rep.Drift.Class, Fields: rep.Drift.Fields,
		Who: who, Action: rep.Action, Latency: latency})
	o.logApplied(p.id, rep, latency)
	o.onRecord(rep)
}

// The log is the hub's audit trail: every write it makes and every drift
// it holds back is a line (INFO), with the NodeID, the drift's class and
// field paths (never their values: a value may be a secret), who made it
// and what the hub did. A failure is logged where it is recorded (WARN
// "reconcile failed").

// logApplied logs a write that went through: "drift repaired", or
// "desired change applied" with its cause.
func (o *recorder) logApplied(id NodeID, rep Repair, latency time.Duration) {
	if !o.log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	msg, attrs := "drift repaired", driftAttrs(id, rep)
	if rep.DesiredChange != "" {
		msg = "desired change applied"
		attrs = append(attrs, slog.String("change", rep.DesiredChange))
	}
	attrs = append(attrs, slog.String("action", rep.Action), slog.Duration("latency", latency))
	o.log.LogAttrs(context.Background(), slog.LevelInfo, msg, attrs...)
}

// logHeld logs a drift the hub holds back ("drift not repaired": warn-only,
// paused, held, a fight's backoff...) once per action: the events that
// observe it again while it stays held back add no line.
func (o *recorder) logHeld(id NodeID, rep Repair, reason string) {
	first := false
	o.withLoop(id, func(n *nodeLoop) {
		r := n.repairs()
		first, r.heldLogged = r.heldLogged != rep.Action, rep.Action
	})
	if !first || !o.log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	attrs := append(driftAttrs(id, rep), slog.String("action", rep.Action), slog.String("reason", reason))
	o.log.LogAttrs(context.Background(), slog.LevelInfo, "drift not repaired", attrs...)
}

// driftAttrs are a drift's log attributes: the NodeID, the class, the
// field paths and who made it.
func driftAttrs(id NodeID, rep Repair) []slog.Attr {
	attrs := []slog.Attr{slog.String("node", id.String()), slog.String("class", string(rep.Drift.Class))}
	if len(rep.Drift.Fields) > 0 {
		paths := make([]string, len(rep.Drift.Fields))
		for i, f := range rep.Drift.Fields {
			paths[i] = f.Path
		}
		attrs = append(attrs, slog.Any("fields", paths))
	}
	if who := attributionText(rep.Attribution); who != "" {
		attrs = append(attrs, slog.String("by", who))
	}
	return attrs
}

// desiredChangeWho is the start of the feed's "who" of a write that
// applies a change of the desired state.
const desiredChangeWho = "desired changed"

// DesiredChanged reports whether the entry is the apply of a change of the
// desired state (a reload, a new commit or chart version), not a repair
// of drift: its fields then read best with FieldDiff.ChangeString.
func (e FeedEntry) DesiredChanged() bool {
	return e.Who == desiredChangeWho || strings.HasPrefix(e.Who, desiredChangeWho+" (")
}

// desiredChangeText is the feed's "who" of a write that applies a change
// of the desired state: "desired changed (web@abc1234)" with the source's
// revision (a chart's version: "web@1.2.0"), else "desired changed".
func desiredChangeText(spec *NodeSpec) string {
	if spec.Revision == "" {
		return desiredChangeWho
	}
	rev, _, _ := strings.Cut(spec.Revision, " ")
	return desiredChangeWho + " (" + spec.Application + "@" + ShortCommit(rev) + ")"
}

// created records a first apply.
func (o *recorder) created(p pass, now time.Time) {
	o.status.step(p.id, StepCreated, "first apply", now)
	o.status.setStatus(p.id, StatusInSync, "", now)
}

// inSync records a NodeID found in sync, as the loop's bookkeeping settled
// it (s), with its rollout progress (pr).
func (o *recorder) inSync(p pass, pr *Progress, s settled, now time.Time) {
	o.status.progress(p.id, pr)
	switch {
	case s.verifying:
		o.status.verified(p.id, p.observedAt, now)
		o.status.step(p.id, StepVerified, "", now)
	case p.manual != 0:
		o.status.step(p.id, StepVerified, "manual repair: already in sync", now)
	}
	o.status.setContest(p.id, s.contest)
	switch {
	case pr != nil && pr.Stuck != "":
		if !s.wasStuck {
			o.status.step(p.id, StepStuck, pr.Stuck, now)
		}
		o.status.setStatus(p.id, StatusStuck, pr.Stuck, now)
	case s.contest != nil:
		o.status.setStatus(p.id, StatusContested, contestedReason(*s.contest, now), now)
	case s.repaired:
		o.status.setStatus(p.id, StatusRepaired, "", now)
	default:
		o.status.setStatus(p.id, StatusInSync, "", now)
	}
}

// pruneRequested records the delete of a decommissioned object.
func (o *recorder) pruneRequested(p pass, now time.Time) {
	o.status.step(p.id, StepPruned, "delete requested", now)
}

// stuck records a decommission that did not finish in time (the timeline
// says it on the way in only).
func (o *recorder) stuck(p pass, reason string, now time.Time) {
	if !o.noteShown(p.id, StatusStuck) {
		o.status.step(p.id, StepStuck, reason, now)
	}
	o.status.setStatus(p.id, StatusStuck, reason, now)
}

// panicked records a pass that panicked (the controller recovered it).
func (o *recorder) panicked(id NodeID, err error, now time.Time) {
	o.status.step(id, StepPanic, err.Error(), now)
	o.show(id, StatusFailed, err.Error(), now)
}

// setIgnored shows the differences ignore rules cover; setContest a
// NodeID's contest (nil clears it).
func (o *recorder) setIgnored(id NodeID, ignored []IgnoredField) { o.status.setIgnored(id, ignored) }
func (o *recorder) setContest(id NodeID, c *Contest)             { o.status.setContest(id, c) }

// setDiagnosis shows why a stuck NodeID's rollout does not progress.
func (o *recorder) setDiagnosis(id NodeID, lines []string) { o.status.setDiagnosis(id, lines) }

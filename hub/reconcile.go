package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Result says what the reconcile handler does with a NodeID after a pass
// that did not fail (controller-runtime's reconcile.Result).
type Result struct {
	// RequeueAfter, when positive, checks the NodeID again after this long
	// (a fight backoff, a decommission deadline, a backend not registered
	// yet). Zero forgets it until its next event.
	RequeueAfter time.Duration
}

// pass is what one Reconcile took from the loop's state when it started.
// It holds no operator intent: the write gate reads that at the moment of
// each write (admit), and plan reads it for what the pass prepares.
type pass struct {
	id   NodeID
	spec *NodeSpec
	dec  *decommission
	// desired is the spec of the pass (spec's, else dec's) with its body
	// unpacked: what the backends get. spec and dec stay the records the
	// hub keeps (the applied record is spec itself).
	desired    NodeSpec
	backend    Backend
	observedAt time.Time
	// manual is the sequence number of the manual repair this pass
	// carries out; 0 when none.
	manual uint64
	fresh  bool
}

// app returns the application of the pass's spec.
func (p *pass) app() string {
	if p.spec != nil {
		return p.spec.Application
	}
	return p.dec.spec.Application
}

// noBackendRetry is how soon a NodeID whose cluster is ready but whose
// backend is not registered (a manager being replaced) is tried again.
const noBackendRetry = time.Second

// Reconcile is one level-based pass over a NodeID: it re-reads desired and
// actual state, classifies drift through the cluster's backend and acts on
// it. It never trusts an event's type: events only say "look again".
//
// A NodeID whose cluster is not ready is parked, not dropped: the cluster's
// next ready report enqueues it again. A NodeID that is no longer managed
// (its cluster forgotten mid-pass) is dropped at any step.
//
// Reconcile runs the whole pass, its write included; the hub's workers run
// the same pass but hand its write to a writer (see writeQueue).
func (h *Hub) Reconcile(ctx context.Context, id NodeID) (Result, error) {
	res, write, err := h.reconcile(ctx, id)
	if write != nil {
		return write(ctx)
	}
	return res, err
}

// writeStep is the part of a pass that writes, and what follows the write.
type writeStep func(ctx context.Context) (Result, error)

// reconcile runs a pass up to its write: when the pass must write, it
// returns the write as a step to run (with a context of its own), and the
// drift is already classified and published.
func (h *Hub) reconcile(ctx context.Context, id NodeID) (Result, writeStep, error) {
	p, res, ok := h.begin(id)
	if !ok {
		return res, nil, nil
	}
	of := p.spec
	if of == nil {
		of = p.dec.spec
	}
	var err error
	if p.desired, err = of.unpacked(); err != nil {
		res, err = h.outcome(p, Result{}, err)
		return res, nil, err
	}
	callCtx, cancel := context.WithTimeout(ctx, h.opts.CallTimeout)
	defer cancel()
	var write writeStep
	if p.dec != nil {
		res, err = h.decommission(callCtx, p)
	} else {
		res, write, err = h.sync(callCtx, p)
	}
	if write != nil && err == nil {
		return Result{}, func(ctx context.Context) (Result, error) {
			wctx, cancel := context.WithTimeout(ctx, h.opts.CallTimeout)
			defer cancel()
			res, err := write(wctx)
			return h.outcome(p, res, err)
		}, nil
	}
	res, err = h.outcome(p, res, err)
	return res, nil, err
}

// outcome turns a pass's error into what the handler does with it.
func (h *Hub) outcome(p pass, res Result, err error) (Result, error) {
	if errors.Is(err, errStopping) {
		return Result{}, nil // the queue is shut down: nothing to retry
	}
	if errors.Is(err, ErrOwnedByOther) {
		// Another hub's object: not ours to repair, adopt or prune,
		// and not a failed repair either.
		h.foreign(p, err)
		return Result{RequeueAfter: h.opts.ForbiddenRetry}, nil
	}
	if err != nil {
		h.fail(p, err)
		return Result{}, err
	}
	return res, nil
}

// errStopping ends a pass that was about to write while the hub stops: no
// write starts once the hub's context has ended.
var errStopping = errors.New("hub is stopping: write not started")

// stopping reports whether Run's context has ended: workers take no more
// NodeIDs and passes start no more writes (writes already in flight get
// ShutdownGrace to finish).
func (h *Hub) stopping() bool { return h.queue.ShuttingDown() }

// begin takes a NodeID's pending work, or parks it while its cluster is not
// ready. The readiness check and the parking happen under the same lock as
// ClusterChanged's release of parked NodeIDs, so no wake-up is lost.
func (h *Hub) begin(id NodeID) (pass, Result, bool) {
	p, backends, ok := h.take(id)
	if !ok {
		return pass{}, Result{}, false
	}

	var backend Backend
	ok = false
	if backends != nil {
		backend, ok = backends.Backend(id.Cluster)
	}
	if !ok {
		h.restore(p)
		return pass{}, Result{RequeueAfter: noBackendRetry}, false
	}
	p.backend = backend
	if p.observedAt.IsZero() {
		p.observedAt = h.opts.Now()
	}
	return p, Result{}, true
}

// take takes a NodeID's pending work under h.mu (released even on a
// panic), or parks the NodeID while its cluster is not ready.
func (h *Hub) take(id NodeID) (pass, Backends, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rec := h.nodes.at(id)
	if !rec.managed() {
		return pass{}, nil, false
	}
	n, spec, dec := &rec.nodeLoop, rec.spec, rec.dec
	cl := h.clusters[id.Cluster]
	if cl == nil {
		cl = &clusterLoop{state: ClusterConnecting}
		h.clusters[id.Cluster] = cl
	}
	if !cl.ready {
		if cl.parked == nil {
			cl.parked = make(map[NodeID]struct{})
		}
		cl.parked[id] = struct{}{}
		return pass{}, nil, false
	}
	p := pass{id: id, spec: spec, dec: dec, observedAt: n.pendingAt, manual: n.manual, fresh: n.fresh}
	n.pendingAt, n.manual, n.fresh = time.Time{}, 0, false
	return p, h.backends, true
}

// restore gives a pass's pending work back after a failure, so the retry
// still measures from the first event and keeps a manual request.
func (h *Hub) restore(p pass) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.loopLocked(p.id)
	if n == nil {
		return
	}
	if !p.observedAt.IsZero() && (n.pendingAt.IsZero() || p.observedAt.Before(n.pendingAt)) {
		n.pendingAt = p.observedAt
	}
	n.manual = max(n.manual, p.manual)
	n.fresh = n.fresh || p.fresh
}

// read reads a NodeID's state and applies the expectations: a cached read
// whose version differs from the one our own last write returned is older
// than that write, so it is re-read fresh instead of being taken as drift.
func (h *Hub) read(ctx context.Context, p pass, fresh bool) (State, error) {
	st, err := p.backend.ReadState(ctx, p.desired, fresh)
	if err != nil {
		return State{}, fmt.Errorf("read: %w", err)
	}
	if !st.Fresh && h.stale(p.id, st.Version) {
		h.metrics.staleReads.WithLabelValues(p.id.Cluster).Inc()
		if st, err = p.backend.ReadState(ctx, p.desired, true); err != nil {
			return State{}, fmt.Errorf("read: %w", err)
		}
	}
	if st.Fresh {
		h.setExpect(p.id, "")
	}
	return st, nil
}

// withLoop runs fn on a managed NodeID's loop bookkeeping under h.mu (not
// at all when the NodeID is no longer managed). The lock is released even
// if fn panics.
func (h *Hub) withLoop(id NodeID, fn func(n *nodeLoop)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := h.loopLocked(id); n != nil {
		fn(n)
	}
}

// setExpect sets the version a NodeID's cache must show before a cached
// read is trusted ("" trusts the cache again).
func (h *Hub) setExpect(id NodeID, version string) {
	h.withLoop(id, func(n *nodeLoop) { n.expect = version })
}

// stale reports whether a cached version is older than our last write. A
// cache that shows our write meets the expectation.
func (h *Hub) stale(id NodeID, version string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.loopLocked(id)
	if n == nil || n.expect == "" {
		return false
	}
	if version == n.expect {
		n.expect = ""
		return false
	}
	return true
}

// firstApply reports whether a NodeID is still managed and whether its
// missing object is a first apply. An object this hub (or, with a shared
// intent store, another replica of it) applied before is drift when
// missing, never a first apply.
func (h *Hub) firstApply(id NodeID, st State, d Drift) (managed, first bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rec := h.nodes.at(id)
	if !rec.managed() {
		return false, false
	}
	first = !rec.seen && rec.applied == nil && d.Class == DriftMissing
	if st.Exists {
		rec.seen = true
	}
	return true, first
}

// sync reconciles a desired NodeID. When it must write, it returns the
// write (and what follows it) as a step, the drift already classified and
// published.
func (h *Hub) sync(ctx context.Context, p pass) (Result, writeStep, error) {
	st, err := h.read(ctx, p, p.fresh)
	if err != nil {
		return Result{}, nil, err
	}
	d, err := p.backend.DetectDrift(ctx, p.desired, st)
	if err != nil {
		return Result{}, nil, fmt.Errorf("detect drift: %w", err)
	}
	managed, first := h.firstApply(p.id, st, d)
	if !managed {
		return Result{}, nil, nil
	}
	if first {
		return Result{}, func(ctx context.Context) (Result, error) { return h.create(ctx, p, st, d) }, nil
	}

	h.status.setIgnored(p.id, d.Ignored)

	// Who changed it decides whether this is a fight: the same manager
	// undoing repair after repair. A missing object has no fields to
	// attribute (a delete's manager is unknown).
	var att *Attribution
	attributed := false
	attribute := func() {
		attributed = true
		if d.InSync() || d.Class == DriftMissing || d.Class == DriftDeleting {
			return
		}
		a, err := p.backend.Attribute(ctx, p.desired, d)
		if err != nil {
			h.log.Debug("attribution unavailable", "node", p.id.String(), "err", err)
		}
		att = a
	}
	// What the gate would say now decides what the pass prepares; the
	// write asks again (admit) and that answer is the one that counts.
	plan := h.plan(&p, writeRepair)
	wait, fighting := time.Duration(0), false
	if plan.allow && !plan.manual && d.Class != DriftDeleting && !d.InSync() {
		attribute()
		wait, fighting = h.fight(p.id, managerOf(att))
		if c := h.currentContest(p.id); c != nil && !fighting {
			h.status.setContest(p.id, c) // the backoff ran out: watching
		}
	}
	repairNow := plan.allow && d.Class != DriftDeleting && !d.InSync() && !fighting
	if d.Class == DriftMissing && !st.Fresh && !repairNow {
		// A label-filtered watch reports a removed label as a delete:
		// confirm before reporting it.
		if st, err = h.read(ctx, p, true); err != nil {
			return Result{}, nil, err
		}
		if d, err = p.backend.DetectDrift(ctx, p.desired, st); err != nil {
			return Result{}, nil, fmt.Errorf("detect drift: %w", err)
		}
		h.status.setIgnored(p.id, d.Ignored)
		attributed = false
	}
	if d.InSync() {
		return h.inSync(p, st, d), nil, nil
	}
	// A missing object read from the cache may turn out unlabelled when
	// repaired: count it once the repair says which.
	countLater := d.Class == DriftMissing && !st.Fresh && repairNow
	if !countLater {
		h.metrics.drift.WithLabelValues(p.id.Cluster, string(p.spec.Kind), string(d.Class)).Inc()
	}
	if !attributed {
		attribute()
	}
	classifiedAt := h.opts.Now()
	h.metrics.classified.Observe(classifiedAt.Sub(p.observedAt).Seconds())
	rep := Repair{ID: p.id, Drift: d, Attribution: att, ObservedAt: p.observedAt, ClassifiedAt: classifiedAt}

	switch {
	case d.Class == DriftDeleting:
		rep.Action = "wait-deletion"
		h.record(p, rep, StatusDrifted, "being deleted; recreated once it is gone", StepClassified)
		return Result{}, nil, nil
	case !plan.allow:
		res, err := h.refused(p, rep, plan)
		return res, nil, err
	case fighting:
		c := h.contest(p.id, att, wait)
		rep.Action = "backoff"
		h.status.setContest(p.id, &c)
		h.record(p, rep, StatusContested, contestedReason(c, h.opts.Now()), StepClassified)
		return Result{RequeueAfter: wait}, nil, nil
	}

	// Classified: published now (a repair queued), written by a writer.
	h.record(p, rep, StatusRepairing, "", StepClassified)
	return Result{}, func(ctx context.Context) (Result, error) { return h.repair(ctx, p, st, d, rep, countLater) }, nil
}

// repair writes a classified drift's repair, through the write gate, and
// records what the write did.
func (h *Hub) repair(ctx context.Context, p pass, st State, d Drift, rep Repair, countLater bool) (Result, error) {
	wctx, release, v := h.admit(ctx, &p, writeRepair)
	if !v.allow {
		// The intent changed since the pass classified (a pause, a
		// hold, a warn override): the switch holds at the write.
		return h.refused(p, rep, v)
	}
	desiredChanged := h.desiredChanged(p.spec)
	h.noteApplied(p.spec) // written ahead: see create
	rr, err := p.backend.Repair(wctx, p.desired, st, d)
	release()
	if errors.Is(err, ErrRefused) {
		rep.Action = "refused"
		h.record(p, rep, StatusWarnOnly, err.Error(), StepWarned)
		return Result{}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("repair: %w", err)
	}
	appliedAt := h.opts.Now()
	rep.AppliedAt = appliedAt
	rep.Action = rr.Action
	if rep.Action == "" {
		rep.Action = "apply"
	}
	if rr.Class != "" && rr.Class != d.Class {
		rep.Drift = Drift{Class: rr.Class, Fields: rr.Fields}
	}
	if countLater {
		h.metrics.drift.WithLabelValues(p.id.Cluster, string(p.spec.Kind), string(rep.Drift.Class)).Inc()
	}
	if rep.Attribution == nil && len(rr.Conflicts) > 0 {
		rep.Attribution = &Attribution{Manager: rr.Conflicts[0].Manager}
		for _, c := range rr.Conflicts {
			rep.Attribution.Fields = append(rep.Attribution.Fields, c.Field)
		}
	}
	latency := appliedAt.Sub(p.observedAt)
	h.metrics.repairs.WithLabelValues(p.id.Cluster, "success").Inc()
	h.metrics.repaired.Observe(latency.Seconds())

	h.withLoop(p.id, func(n *nodeLoop) {
		n.expect = rr.Version
		r := n.repairs()
		r.recent = append(r.recent, appliedAt)
		r.fight.repairs++
		n.verifying = true
	})
	h.noteApplied(p.spec)
	detail := rep.Action
	if len(rr.Conflicts) > 0 {
		detail += fmt.Sprintf(" (took %d field(s) from %s)", len(rr.Conflicts), rr.Conflicts[0].Manager)
	}
	h.status.applied(p.id, rep, latency)
	h.status.step(p.id, StepApplied, detail, appliedAt)
	who := attributionText(rep.Attribution)
	if desiredChanged {
		who = desiredChangeText(p.spec)
	}
	h.status.feed(FeedEntry{At: appliedAt, ID: p.id, Class: rep.Drift.Class, Fields: rep.Drift.Fields,
		Who: who, Action: rep.Action, Latency: latency})
	h.onRecord(rep)
	return Result{}, nil
}

// desiredChanged reports whether the spec differs from the one last
// applied to its NodeID: the write applies a change of the desired state,
// not a repair of drift.
func (h *Hub) desiredChanged(spec *NodeSpec) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.nodes.at(spec.ID)
	return n != nil && n.applied != nil && n.applied.Hash != spec.Hash
}

// desiredChangeText is the feed's "who" of a write that applies a change
// of the desired state: "desired changed (web@abc1234)" with the source's
// revision, else "desired changed".
func desiredChangeText(spec *NodeSpec) string {
	if spec.Revision == "" {
		return "desired changed"
	}
	sha, _, _ := strings.Cut(spec.Revision, " ")
	if len(sha) > 7 {
		sha = sha[:7]
	}
	return "desired changed (" + spec.Application + "@" + sha + ")"
}

// fight reports whether repairs of a NodeID are being undone by another
// writer, the same field manager (manager, "" when unknown) undoing
// FightThreshold repairs in a row within FightWindow, and, if so, how long
// to back off; the backoff doubles with each fight in a row. When a backoff
// has run out, one repair goes through.
func (h *Hub) fight(id NodeID, manager string) (time.Duration, bool) {
	now := h.opts.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	nl := h.loopLocked(id)
	if nl == nil {
		return 0, false
	}
	n := nl.repairs()
	recent := n.recent[:0]
	for _, t := range n.recent {
		if now.Sub(t) < h.opts.FightWindow {
			recent = append(recent, t)
		}
	}
	n.recent = recent
	if undone := n.noteUndo(manager); len(recent) < h.opts.FightThreshold || undone < h.opts.FightThreshold {
		return 0, false
	}
	switch {
	case !n.backoffTill.IsZero() && now.Before(n.backoffTill):
		return n.backoffTill.Sub(now), true
	case !n.backoffTill.IsZero():
		// The backoff ran out: repair now, back off longer next time.
		n.backoffTill = time.Time{}
		if c := n.fight.contest; c != nil {
			cp := *c
			cp.NextAttempt, cp.ClearsAt = time.Time{}, now.Add(h.opts.FightWindow)
			n.fight.contest = &cp
		}
		return 0, false
	}
	n.fights++
	wait := min(time.Duration(1<<min(n.fights, 10))*time.Second, h.opts.FailureMaxDelay)
	n.backoffTill = now.Add(wait)
	return wait, true
}

// contest returns the NodeID's contest for the backoff fight just decided.
func (h *Hub) contest(id NodeID, att *Attribution, wait time.Duration) Contest {
	now := h.opts.Now()
	var fields []string
	if att != nil {
		fields = att.Fields
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	nl := h.loopLocked(id)
	if nl == nil {
		return Contest{Manager: managerOf(att), Fields: fields, Since: now, Backoff: wait, NextAttempt: now.Add(wait)}
	}
	n := nl.repairs()
	till := n.backoffTill
	if till.IsZero() {
		till = now.Add(wait)
	}
	return n.contestFor(managerOf(att), fields, wait, till, now)
}

// create applies an object the hub has never seen on its cluster: the first
// apply, not a drift. It passes the write gate like every write: a paused or
// held cluster creates nothing ("would create").
func (h *Hub) create(ctx context.Context, p pass, st State, d Drift) (Result, error) {
	wctx, release, v := h.admit(ctx, &p, writeCreate)
	if !v.allow {
		return h.refused(p, Repair{ID: p.id, Drift: d, ObservedAt: p.observedAt, ClassifiedAt: h.opts.Now()}, v)
	}
	// The applied record is written before the write: a hub killed
	// between the apiserver's answer and the record would otherwise leave
	// an object no record knows (after a restart an orphan, never pruned
	// when its application leaves). A record whose write then failed
	// is taken back when the write failed (the next pass is a first
	// apply again).
	h.noteApplied(p.spec)
	rr, err := p.backend.Repair(wctx, p.desired, st, d)
	release()
	if err != nil {
		h.unnoteApplied(p.spec)
		return Result{}, fmt.Errorf("create: %w", err)
	}
	now := h.opts.Now()
	h.withLoop(p.id, func(n *nodeLoop) {
		n.seen = true
		n.expect = rr.Version
	})
	h.noteApplied(p.spec)
	h.status.step(p.id, StepCreated, "first apply", now)
	h.status.setStatus(p.id, StatusInSync, "", now)
	return Result{}, nil
}

// refused records a write the gate refused: the drift stays, shown with
// the switch that holds it. A refusal because the hub stops or the desired
// state moved on records nothing (a newer pass acts, or none).
func (h *Hub) refused(p pass, rep Repair, v verdict) (Result, error) {
	switch v.action {
	case "stopping":
		return Result{}, errStopping
	case "stale":
		return Result{}, nil
	}
	rep.Action = v.action
	h.metrics.refused.WithLabelValues(p.id.Cluster, v.action).Inc()
	h.record(p, rep, v.status, v.reason, v.step)
	return Result{RequeueAfter: v.retry}, nil
}

// inSync records that a NodeID matches its desired state, verifying a pending
// repair and checking rollout progress. A contested NodeID stays contested
// until its last repair has held for FightWindow (it is looked at again
// then), or at once when ignore rules now cover the differences.
func (h *Hub) inSync(p pass, st State, d Drift) Result {
	now := h.opts.Now()
	managed, verifying, contest, res := h.settle(p.id, d, now)
	h.withLoop(p.id, func(n *nodeLoop) { n.foreign = false })
	if !managed {
		return Result{}
	}
	if st.Exists {
		h.noteApplied(p.spec)
	}

	h.status.progress(p.id, st.Progress)
	switch {
	case verifying:
		h.status.verified(p.id, p.observedAt, now)
		h.status.step(p.id, StepVerified, "", now)
	case p.manual != 0:
		h.status.step(p.id, StepVerified, "manual repair: already in sync", now)
	}
	h.status.setContest(p.id, contest)
	switch {
	case st.Progress != nil && st.Progress.Stuck != "":
		if cur, _ := h.status.statusOf(p.id); cur != StatusStuck {
			h.status.step(p.id, StepStuck, st.Progress.Stuck, now)
		}
		h.status.setStatus(p.id, StatusStuck, st.Progress.Stuck, now)
	case contest != nil:
		h.status.setStatus(p.id, StatusContested, contestedReason(*contest, now), now)
	case h.status.recentlyRepaired(p.id, now):
		h.status.setStatus(p.id, StatusRepaired, "", now)
	default:
		h.status.setStatus(p.id, StatusInSync, "", now)
	}
	return res
}

// settle updates the loop bookkeeping of a NodeID found in sync: a pending
// verification ends and a fight whose last repair held clears. It reports
// whether the NodeID is still managed, whether a repair was being
// verified, the contest still shown, and when to look again.
func (h *Hub) settle(id NodeID, d Drift, now time.Time) (managed, verifying bool, contest *Contest, res Result) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.loopLocked(id)
	if n == nil {
		return false, false, nil, Result{}
	}
	verifying = n.verifying
	n.verifying = false
	if r := n.rep; r != nil { // none: no repair, no fight, nothing to clear
		var lastRepair time.Time
		if len(r.recent) > 0 {
			lastRepair = r.recent[len(r.recent)-1]
		}
		if r.fights > 0 && (len(d.Ignored) > 0 || lastRepair.IsZero() || now.Sub(lastRepair) >= h.opts.FightWindow) {
			r.fights = 0
			r.fight = fightState{repairs: r.fight.repairs, counted: r.fight.repairs}
		}
		r.backoffTill = time.Time{}
		if c := r.fight.contest; c != nil && r.fights > 0 {
			cp := *c
			cp.NextAttempt, cp.ClearsAt = time.Time{}, lastRepair.Add(h.opts.FightWindow)
			r.fight.contest = &cp
			contest = &cp
			res.RequeueAfter = cp.ClearsAt.Sub(now) + time.Millisecond
		}
	}
	return true, verifying, contest, res
}

// decommission prunes an object whose application left the config and
// tracks it until it is gone; not gone within DecommissionTimeout is stuck.
// The delete carries the identity and version of the object just read, and
// an object that no longer carries our label is released, never deleted.
func (h *Hub) decommission(ctx context.Context, p pass) (Result, error) {
	spec := p.desired
	st, err := p.backend.ReadState(ctx, spec, true)
	if err != nil {
		return Result{}, fmt.Errorf("read for prune: %w", err)
	}
	now := h.opts.Now()
	switch {
	case !st.Exists:
		h.endDecommission(p, FeedEntry{At: now, ID: p.id, Action: "pruned", Latency: now.Sub(p.dec.since)})
		return Result{}, nil
	case !st.Owned:
		h.endDecommission(p, FeedEntry{At: now, ID: p.id, Action: "released: no longer ours, not deleted"})
		return Result{}, nil
	case st.Retain != "":
		h.endDecommission(p, FeedEntry{At: now, ID: p.id, Action: "retained, not deleted: " + st.Retain})
		return Result{}, nil
	}
	if !st.Deleting {
		wctx, release, v := h.admit(ctx, &p, writeDelete)
		if !v.allow {
			switch v.action {
			case "stopping":
				return Result{}, errStopping
			case "stale":
				return Result{}, nil // wanted again, or its cluster forgotten
			}
			h.metrics.refused.WithLabelValues(p.id.Cluster, v.action).Inc()
			h.status.setStatus(p.id, v.status, v.reason, now)
			return Result{RequeueAfter: v.retry}, nil
		}
		err := p.backend.Delete(wctx, spec, st)
		release()
		if errors.Is(err, ErrRefused) {
			// The backend will never delete it (a Namespace that holds
			// objects driftwatch does not manage): leave it in place.
			h.endDecommission(p, FeedEntry{At: now, ID: p.id, Action: "retained, not deleted: " + err.Error()})
			return Result{}, nil
		}
		if err != nil {
			return Result{}, fmt.Errorf("prune: %w", err)
		}
		h.status.step(p.id, StepPruned, "delete requested", now)
	}
	remaining := p.dec.since.Add(h.opts.DecommissionTimeout).Sub(now)
	if remaining <= 0 {
		reason := fmt.Sprintf("decommission not finished after %s (finalizers: %s)",
			h.opts.DecommissionTimeout, strings.Join(st.Finalizers, ","))
		if cur, _ := h.status.statusOf(p.id); cur != StatusStuck {
			h.status.step(p.id, StepStuck, reason, now)
		}
		h.status.setStatus(p.id, StatusStuck, reason, now)
		// The delete event re-enqueues it; this re-checks a stuck one.
		return Result{RequeueAfter: h.opts.DecommissionTimeout}, nil
	}
	h.status.setStatus(p.id, StatusDecommissioning, "waiting for the object to go away", now)
	// The delete event ends it; a read after a growing delay ends it too
	// when no event comes (the kind is no longer watched: its last object
	// left the config with this one).
	return Result{RequeueAfter: min(remaining, decommissionPoll(now.Sub(p.dec.since)))}, nil
}

// decommissionPoll is when a decommission waiting for its object to go
// away reads it again without a delete event: as long again as it has
// waited so far, from half a second up to 30 seconds.
func decommissionPoll(waited time.Duration) time.Duration {
	return min(max(waited, 500*time.Millisecond), 30*time.Second)
}

// endDecommission stops tracking a finished decommission and writes its
// feed line in the same step, so no snapshot shows the NodeID gone without
// saying why; false when it was no longer current (the NodeID is wanted
// again or its cluster forgotten).
func (h *Hub) endDecommission(p pass, line FeedEntry) bool {
	ended := func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		if n := h.nodes.at(p.id); n == nil || n.dec != p.dec {
			return false
		}
		h.nodes.del(p.id)
		h.status.feed(line)
		h.status.untrack(p.id)
		return true
	}()
	if ended {
		h.forgetApplied(p.id)
		h.log.Info("decommission finished", "node", p.id.String())
	}
	return ended
}

// heldReason describes a hold for a status reason.
func heldReason(hd Hold) string {
	return fmt.Sprintf("held until %s (%s): %s", hd.Until.Format("15:04:05"), hd.Target, hd.Reason)
}

// foreign records a pass that met an object carrying another hub's id: it
// is shown as such (once in the feed), never counted as a failed repair.
func (h *Hub) foreign(p pass, err error) {
	now := h.opts.Now()
	owner := "another hub"
	var oe OwnedByOtherError
	if errors.As(err, &oe) {
		owner = fmt.Sprintf("hub %q", oe.Hub)
	}
	reason := "owned by " + owner + ": not repaired, adopted or pruned by this hub"
	first := false
	h.withLoop(p.id, func(n *nodeLoop) { first, n.foreign = !n.foreign, true })
	if first {
		h.log.Warn("object owned by another hub", "node", p.id.String(), "err", err)
		h.status.step(p.id, StepFailed, reason, now)
		h.status.feed(FeedEntry{At: now, ID: p.id, Action: "foreign", Err: reason})
	}
	h.status.setStatus(p.id, StatusForeign, reason, now)
}

// fail records a failed pass; the handler retries it.
func (h *Hub) fail(p pass, err error) {
	now := h.opts.Now()
	h.metrics.repairs.WithLabelValues(p.id.Cluster, "failure").Inc()
	h.log.Warn("reconcile failed", "node", p.id.String(), "err", err)
	st := StatusFailed
	if errors.Is(err, ErrForbidden) {
		st = StatusForbidden
	}
	h.status.failed(p.id, err.Error())
	h.status.step(p.id, StepFailed, err.Error(), now)
	h.status.setStatus(p.id, st, err.Error(), now)
	h.status.feed(FeedEntry{At: now, ID: p.id, Action: "failed", Err: err.Error(), Latency: now.Sub(p.observedAt)})
	if errors.Is(err, ErrUnreachable) {
		// The cluster is out: what this pass measured from is not the
		// drift the next pass will find (the watch restarts and reports
		// it anew), so the next pass measures from its own event.
		p.observedAt = time.Time{}
	}
	h.restore(p)
}

// record stores a classified drift with a status.
func (h *Hub) record(p pass, rep Repair, st Status, reason string, step Step) {
	now := h.opts.Now()
	h.withLoop(p.id, func(n *nodeLoop) { n.verifying = false })
	h.status.drift(p.id, rep)
	h.status.step(p.id, StepObserved, "", rep.ObservedAt)
	h.status.step(p.id, step, rep.Drift.Summary(), rep.ClassifiedAt)
	h.status.setStatus(p.id, st, reason, now)
	if st != StatusRepairing {
		h.status.feed(FeedEntry{At: now, ID: p.id, Class: rep.Drift.Class, Fields: rep.Drift.Fields,
			Who: attributionText(rep.Attribution), Action: rep.Action, Latency: rep.ClassifiedAt.Sub(rep.ObservedAt)})
	}
	h.onRecord(rep)
}

// onRecord hands a copy of a drift record to Options.OnRecord, if set.
func (h *Hub) onRecord(rep Repair) {
	if h.opts.OnRecord != nil {
		h.opts.OnRecord(rep)
	}
}

func attributionText(a *Attribution) string {
	if a == nil {
		return ""
	}
	return a.String()
}

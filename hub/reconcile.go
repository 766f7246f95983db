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
	// hub keeps (the applied record is spec itself). A write handed to
	// the writers drops it (shed) and unpacks it again when it runs.
	desired    *NodeSpec
	backend    Backend
	observedAt time.Time
	// manual is the sequence number of the manual repair this pass
	// carries out; 0 when none.
	manual uint64
	fresh  bool
}

// unpack sets desired: the pass's spec (spec's, else dec's) with its body
// unpacked.
func (p *pass) unpack() error {
	of := p.spec
	if of == nil {
		of = p.dec.spec
	}
	d, err := of.unpacked()
	if err != nil {
		return err
	}
	p.desired = &d
	return nil
}

// shed drops the unpacked body of a pass whose write is handed to the
// writers: the write unpacks it again (unpack) when it runs. A cold sync
// hands off a first apply for every object at once, and the writers take
// them as fast as the apiservers answer: what each waiting write holds is
// live heap every garbage collection marks until it ran.
func (p *pass) shed() { p.desired = nil }

// app returns the application of the pass's spec.
func (p *pass) app() string {
	if p.spec != nil {
		return p.spec.Application
	}
	return p.dec.spec.Application
}

// reconciler runs the pass over one NodeID that the controller asks for:
// it reads the desired spec and the loop's bookkeeping (loopState), the
// actual state through the NodeID's backend, and decides (choose, a pure
// function) what to do; the outcome's write goes through the write gate
// (admit), and what happened is recorded in the status store once
// (controller-runtime's Reconciler, injected into the controller).
type reconciler struct {
	*loopState
	// out records what passes did.
	out *recorder
}

// noBackendRetry is how soon a NodeID whose cluster is ready but whose
// backend is not registered, or was replaced during its pass
// (ErrRestarting), is tried again.
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
	res, write, err := h.rec.reconcile(ctx, id)
	if write != nil {
		if write.ahead != nil {
			write.ahead()
		}
		return write.run(ctx)
	}
	return res, err
}

// writeStep is the part of a pass that writes, and what follows the write.
type writeStep struct {
	// ahead, when set, must be done before the write: a first apply's
	// applied record (marked in memory by the pass) made durable in the
	// state file, or an adopted object's, whose write then does nothing. The controller runs it on a recorder, neither on the
	// worker (which goes on classifying) nor on a writer (whose turn is
	// one of the cluster's calls in flight), so the records of many first
	// applies wait for one fsync together (the state file group-commits
	// them) while the writers keep the apiservers busy. It takes none of
	// the loop's locks: a thousand recorders waiting for a slow fsync
	// never queue on the lock the informers' events and the workers need.
	ahead func()
	// run writes, then records what the write did.
	run func(ctx context.Context) (Result, error)
}

// reconcile runs a pass up to its write: when the pass must write, it
// returns the write as a step to run (with a context of its own), and the
// drift is already classified and published.
func (r *reconciler) reconcile(ctx context.Context, id NodeID) (Result, *writeStep, error) {
	p, res, ok := r.begin(id)
	if !ok {
		return res, nil, nil
	}
	var err error
	if err = p.unpack(); err != nil {
		res, err = r.outcome(p, Result{}, err)
		return res, nil, err
	}
	callCtx, cancel := context.WithTimeout(ctx, r.opts.CallTimeout)
	defer cancel()
	var write *writeStep
	if p.dec != nil {
		res, err = r.decommission(callCtx, p)
	} else {
		res, write, err = r.sync(callCtx, p)
	}
	if write != nil && err == nil {
		p.shed() // the write's own copy unpacks it again
		return Result{}, &writeStep{ahead: write.ahead, run: func(ctx context.Context) (Result, error) {
			wctx, cancel := context.WithTimeout(ctx, r.opts.CallTimeout)
			defer cancel()
			res, err := write.run(wctx)
			return r.outcome(p, res, err)
		}}, nil
	}
	res, err = r.outcome(p, res, err)
	return res, nil, err
}

// outcome turns a pass's error into what the handler does with it.
func (r *reconciler) outcome(p pass, res Result, err error) (Result, error) {
	if errors.Is(err, errStopping) {
		return Result{}, nil // the queue is shut down: nothing to retry
	}
	if errors.Is(err, ErrOwnedByOther) {
		// Another hub's object: not ours to repair, adopt or prune,
		// and not a failed repair either.
		r.out.foreign(p, err)
		return Result{RequeueAfter: r.opts.ForbiddenRetry}, nil
	}
	if errors.Is(err, ErrRestarting) {
		// Not the NodeID's failure: the pass runs again on the
		// cluster's current backend, parked while it is not ready.
		r.out.restarted(p, err)
		r.restore(p)
		return Result{RequeueAfter: noBackendRetry}, nil
	}
	if errors.Is(err, ErrTerminating) {
		// The namespace or the CRD is being deleted: the write goes
		// through once it is gone and recreated; not a failure, and
		// tried again at a steady pace, not the failure backoff's.
		r.out.waitingForDeletion(p, err)
		r.restore(p)
		return Result{RequeueAfter: r.opts.TerminatingRetry}, nil
	}
	if errors.Is(err, ErrKindNotServed) && p.dec == nil && r.neverApplied(p.id) {
		// A first apply waiting for its kind's CRD: retried with the
		// failure backoff, not a failure.
		r.out.waitingForKind(p, err)
		r.restore(p)
		return Result{}, err
	}
	if err != nil {
		r.out.fail(p, err)
		if errors.Is(err, ErrUnreachable) {
			// The cluster is out: what this pass measured from is not
			// the drift the next pass will find (the watch restarts and
			// reports it anew), so the next pass measures from its own
			// event.
			p.observedAt = time.Time{}
		}
		r.restore(p) // the retry keeps the pending work
		return Result{}, err
	}
	return res, nil
}

// errStopping ends a pass that was about to write while the hub stops: no
// write starts once the hub's context has ended.
var errStopping = errors.New("hub is stopping: write not started")

// begin takes a NodeID's pending work, or parks it while its cluster is not
// ready. The readiness check and the parking happen under the same lock as
// ClusterChanged's release of parked NodeIDs, so no wake-up is lost.
func (r *reconciler) begin(id NodeID) (pass, Result, bool) {
	p, backends, ok := r.take(id)
	if !ok {
		return pass{}, Result{}, false
	}

	var backend Backend
	ok = false
	if backends != nil {
		backend, ok = backends.Backend(id.Cluster)
	}
	if !ok {
		r.restore(p)
		return pass{}, Result{RequeueAfter: noBackendRetry}, false
	}
	p.backend = backend
	if p.observedAt.IsZero() {
		p.observedAt = r.opts.Now()
	}
	return p, Result{}, true
}

// take takes a NodeID's pending work under r.mu (released even on a
// panic), or parks the NodeID while its cluster is not ready.
func (r *reconciler) take(id NodeID) (pass, Backends, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.nodes.at(id)
	if !rec.managed() {
		return pass{}, nil, false
	}
	n, spec, dec := &rec.nodeLoop, rec.spec, rec.dec
	cl := r.clusters[id.Cluster]
	if cl == nil {
		cl = &clusterLoop{state: ClusterConnecting}
		r.clusters[id.Cluster] = cl
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
	return p, r.backends, true
}

// restore gives a pass's pending work back after a failure, so the retry
// still measures from the first event and keeps a manual request.
func (r *reconciler) restore(p pass) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.loopLocked(p.id)
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
func (r *reconciler) read(ctx context.Context, p pass, fresh bool) (State, error) {
	st, err := p.backend.ReadState(ctx, *p.desired, fresh)
	if err != nil {
		return State{}, fmt.Errorf("read: %w", err)
	}
	if !st.Fresh && r.stale(p.id, st.Version) {
		r.metrics.staleReads.WithLabelValues(p.id.Cluster).Inc()
		if st, err = p.backend.ReadState(ctx, *p.desired, true); err != nil {
			return State{}, fmt.Errorf("read: %w", err)
		}
	}
	if st.Fresh {
		r.freshRead(p.id, st.Version)
	}
	return st, nil
}

// freshRead applies a fresh read of version to a NodeID's expectation. A
// read that shows the version our last write returned leaves it standing:
// the write's echo is still on its way to the cache (Observe counts it),
// and until it came a cached read is older than the write. Any other
// version (a later write, the object gone) ends it: the cache is trusted
// again.
func (r *reconciler) freshRead(id NodeID, version string) {
	r.withLoop(id, func(n *nodeLoop) {
		if version != n.expect {
			n.expect = ""
		}
	})
}

// stale reports whether a cached version is older than our last write. A
// cache that shows our write meets the expectation: only the watch puts a
// version there, so the write's echo arrived before the write returned
// (Observe counts one that comes after), and it is counted here.
func (r *reconciler) stale(id NodeID, version string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.loopLocked(id)
	if n == nil || n.expect == "" {
		return false
	}
	if version == n.expect {
		r.metrics.echoes.WithLabelValues(id.Cluster).Inc()
		n.expect = ""
		return false
	}
	return true
}

// neverApplied reports whether a NodeID is managed and its object never
// applied nor seen (node.neverApplied).
func (r *reconciler) neverApplied(id NodeID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.nodes.at(id)
	return rec.managed() && rec.neverApplied()
}

// firstApply reports whether a NodeID is still managed and whether its
// missing object is a first apply. An object this hub (or, with a shared
// intent store, another replica of it) applied before is drift when
// missing, never a first apply.
func (r *reconciler) firstApply(id NodeID, st State, d Drift) (managed, first bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.nodes.at(id)
	if !rec.managed() {
		return false, false
	}
	first = rec.neverApplied() && d.Class == DriftMissing
	if st.Exists {
		rec.seen = true
	}
	return true, first
}

// action is what the reconciler decided to do with a desired NodeID.
type action uint8

const (
	// actInSync: the object matches; verify a repair, show progress.
	actInSync action = iota
	// actCreate: the first apply of an object never seen nor applied.
	actCreate
	// actWait: the object is being deleted; recreate it once it is gone.
	actWait
	// actRefused: the intent refuses the repair; show the drift as held.
	actRefused
	// actBackoff: another writer undoes the repairs; back off.
	actBackoff
	// actRepair: repair (the write asks the gate again: admit).
	actRepair
)

// choose is the reconciler's decision for a desired NodeID: a pure function
// of what the pass observed (the drift, and first: the object was never
// seen nor applied), the intent as the write gate judges it for a repair
// (plan) and the loop's fight bookkeeping (fighting).
func choose(d Drift, first bool, plan verdict, fighting bool) action {
	switch {
	case first:
		return actCreate
	case d.InSync():
		return actInSync
	case d.Class == DriftDeleting:
		return actWait
	case !plan.allow:
		return actRefused
	case fighting:
		return actBackoff
	}
	return actRepair
}

// observation is what a pass over a desired NodeID observed: the actual
// state and its drift, the loop's bookkeeping (first apply, fight), the
// gate's plan and who changed the object.
type observation struct {
	st    State
	d     Drift
	first bool
	plan  verdict
	// fighting is set while repairs back off, for wait.
	fighting bool
	wait     time.Duration
	// att is who changed the object, once attributed.
	att        *Attribution
	attributed bool
}

// observe reads a desired NodeID's actual state, classifies it and gathers
// what choose decides over; false when the NodeID is no longer managed.
func (r *reconciler) observe(ctx context.Context, p pass) (o observation, managed bool, err error) {
	if o.st, err = r.read(ctx, p, p.fresh); err != nil {
		return o, false, err
	}
	if o.d, err = p.backend.DetectDrift(ctx, *p.desired, o.st); err != nil {
		return o, false, fmt.Errorf("detect drift: %w", err)
	}
	if managed, o.first = r.firstApply(p.id, o.st, o.d); !managed || o.first {
		return o, managed, nil
	}

	r.out.setIgnored(p.id, o.d.Ignored)

	// What the gate would say now decides what the pass prepares; the
	// write asks again (admit) and that answer is the one that counts.
	o.plan = r.plan(&p, writeRepair)
	if !o.plan.manual && choose(o.d, false, o.plan, false) == actRepair {
		// Who changed it decides whether this is a fight: the same
		// manager undoing repair after repair.
		r.attribute(ctx, p, &o)
		o.wait, o.fighting = r.fight(p.id, managerOf(o.att))
		if c := r.currentContest(p.id); c != nil && !o.fighting {
			r.out.setContest(p.id, c) // the backoff ran out: watching
		}
	}
	if o.d.Class == DriftMissing && !o.st.Fresh && choose(o.d, false, o.plan, o.fighting) != actRepair {
		// A label-filtered watch reports a removed label as a delete:
		// confirm before reporting it.
		if o.st, err = r.read(ctx, p, true); err != nil {
			return o, false, err
		}
		if o.d, err = p.backend.DetectDrift(ctx, *p.desired, o.st); err != nil {
			return o, false, fmt.Errorf("detect drift: %w", err)
		}
		r.out.setIgnored(p.id, o.d.Ignored)
		o.attributed = false
	}
	return o, true, nil
}

// attribute asks the backend who changed the object (once per reading). A
// missing object has no fields to attribute (a delete's manager is
// unknown).
func (r *reconciler) attribute(ctx context.Context, p pass, o *observation) {
	o.attributed = true
	if o.d.InSync() || o.d.Class == DriftMissing || o.d.Class == DriftDeleting {
		return
	}
	a, err := p.backend.Attribute(ctx, *p.desired, o.st, o.d)
	if err != nil {
		r.log.Debug("attribution unavailable", "node", p.id.String(), "err", err)
	}
	o.att = a
}

// sync reconciles a desired NodeID: it observes, decides (choose) and
// carries the decision out. When it must write, it returns the write (and
// what follows it) as a step, the drift already classified and published.
func (r *reconciler) sync(ctx context.Context, p pass) (Result, *writeStep, error) {
	o, managed, err := r.observe(ctx, p)
	if err != nil || !managed {
		return Result{}, nil, err
	}
	act := choose(o.d, o.first, o.plan, o.fighting)
	switch act {
	case actCreate:
		// The applied record is marked now and made durable ahead of the
		// first apply (see create and writeStep.ahead); a create the gate
		// refuses as things stand records nothing.
		var persist func()
		if r.plan(&p, writeCreate).allow {
			persist = r.markApplied(p.spec)
		}
		st, d := o.st, o.d
		p.shed()
		return Result{}, &writeStep{
			ahead: persist,
			run:   func(ctx context.Context) (Result, error) { return r.create(ctx, p, st, d) },
		}, nil
	case actInSync:
		res, persist := r.inSync(ctx, p, o.st, o.d)
		if stuck(o.st) {
			res = r.lookAgainWhileStuck(p, res)
		}
		if persist != nil {
			// The object's applied record is new (an object this hub
			// adopts, found as desired): made durable on a recorder, as
			// a first apply's is, so the worker goes on classifying
			// instead of waiting for the state file's group commit (a
			// restarted hub's first passes over 25,000 objects); the
			// NodeID stays in processing until it is.
			return Result{}, &writeStep{ahead: persist, run: func(context.Context) (Result, error) { return res, nil }}, nil
		}
		return res, nil, nil
	}
	st, d := o.st, o.d
	// A change of the desired state to apply is not drift: not counted as
	// such (see Repair.DesiredChange).
	desired := ""
	if act == actRepair && r.desiredChanged(p.spec) {
		desired = desiredChangeText(p.spec)
	}
	// A missing object read from the cache may turn out unlabelled when
	// repaired: count it once the repair says which.
	countLater := d.Class == DriftMissing && !st.Fresh && act == actRepair
	if !countLater && desired == "" {
		r.metrics.drift.WithLabelValues(p.id.Cluster, string(p.spec.Kind), string(d.Class)).Inc()
	}
	if !o.attributed {
		r.attribute(ctx, p, &o)
	}
	classifiedAt := r.opts.Now()
	r.metrics.classified.Observe(classifiedAt.Sub(p.observedAt).Seconds())
	rep := Repair{ID: p.id, Drift: d, Attribution: o.att, ObservedAt: p.observedAt, ClassifiedAt: classifiedAt, DesiredChange: desired}

	switch act {
	case actWait:
		rep.Action = "wait-deletion"
		r.out.record(p, rep, StatusDrifted, "being deleted; recreated once it is gone", "", StepClassified)
		return Result{}, nil, nil
	case actRefused:
		res, err := r.out.refused(p, rep, o.plan)
		return res, nil, err
	case actBackoff:
		c := r.contest(p.id, o.att, o.wait)
		rep.Action = "backoff"
		r.out.setContest(p.id, &c)
		r.out.record(p, rep, StatusContested, contestedReason(c, r.opts.Now()), "", StepClassified)
		return Result{RequeueAfter: o.wait}, nil, nil
	}

	// Classified: published now (a repair queued), written by a writer.
	step := StepClassified
	if rep.DesiredChange != "" {
		step = StepDesiredChanged
	}
	r.out.record(p, rep, StatusRepairing, "", "", step)
	p.shed()
	return Result{}, &writeStep{run: func(ctx context.Context) (Result, error) { return r.repair(ctx, p, st, d, rep, countLater) }}, nil
}

// repair writes a classified drift's repair, through the write gate, and
// records what the write did.
func (r *reconciler) repair(ctx context.Context, p pass, st State, d Drift, rep Repair, countLater bool) (Result, error) {
	wctx, release, v := r.admit(ctx, &p, writeRepair)
	if !v.allow {
		// The intent changed since the pass classified (a pause, a
		// hold, a warn override): the switch holds at the write.
		return r.out.refused(p, rep, v)
	}
	defer release() // a panicking write releases too
	if err := p.unpack(); err != nil {
		release()
		return Result{}, fmt.Errorf("repair: %w", err)
	}
	// Whether this write applies a change of the desired state is judged
	// again at the write: the record of what was applied may have moved
	// since the pass classified.
	rep.DesiredChange = ""
	if r.desiredChanged(p.spec) {
		rep.DesiredChange = desiredChangeText(p.spec)
	}
	r.noteApplied(p.spec) // written ahead: see create
	rr, err := p.backend.Repair(wctx, *p.desired, st, d)
	release()
	if errors.Is(err, ErrRefused) {
		rep.Action = "refused"
		r.out.record(p, rep, StatusWarnOnly, err.Error(), "", StepWarned)
		return Result{}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("repair: %w", err)
	}
	appliedAt := r.opts.Now()
	rep.AppliedAt = appliedAt
	rep.Action = rr.Action
	if rep.Action == "" {
		rep.Action = "apply"
	}
	if rr.Class != "" && rr.Class != d.Class {
		rep.Drift = Drift{Class: rr.Class, Fields: rr.Fields}
	}
	if countLater && rep.DesiredChange == "" {
		r.metrics.drift.WithLabelValues(p.id.Cluster, string(p.spec.Kind), string(rep.Drift.Class)).Inc()
	}
	if rep.DesiredChange != "" {
		// Nobody drifted it: whoever last wrote the fields is not the cause.
		rep.Attribution = nil
	}
	if rep.Attribution == nil && rep.DesiredChange == "" && len(rr.Conflicts) > 0 {
		rep.Attribution = &Attribution{Manager: rr.Conflicts[0].Manager}
		for _, c := range rr.Conflicts {
			rep.Attribution.Fields = append(rep.Attribution.Fields, c.Field)
		}
	}
	latency := appliedAt.Sub(p.observedAt)
	if rep.DesiredChange != "" {
		r.metrics.desiredApplies.WithLabelValues(p.id.Cluster).Inc()
	} else {
		r.metrics.repairs.WithLabelValues(p.id.Cluster, "success").Inc()
		r.metrics.repaired.Observe(latency.Seconds())
	}

	r.withLoop(p.id, func(n *nodeLoop) {
		n.expect = rr.Version
		if n.rep != nil {
			n.rep.heldLogged = "" // a write went through: a drift held back again is logged again
		}
		if rep.DesiredChange != "" {
			// Not a repair: no fight to count, nothing to show repaired.
			return
		}
		r := n.repairs()
		r.recent = append(r.recent, appliedAt)
		r.fight.repairs++
		n.verifying = true
	})
	r.noteApplied(p.spec)
	r.out.applied(p, rep, rr.Conflicts, latency)
	return Result{}, nil
}

// fight reports whether repairs of a NodeID are being undone by another
// writer, the same field manager (manager, "" when unknown) undoing
// FightThreshold repairs in a row within FightWindow, and, if so, how long
// to back off; the backoff doubles with each fight in a row. When a backoff
// has run out, one repair goes through.
func (r *reconciler) fight(id NodeID, manager string) (time.Duration, bool) {
	now := r.opts.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	nl := r.loopLocked(id)
	if nl == nil {
		return 0, false
	}
	n := nl.repairs()
	recent := n.recent[:0]
	for _, t := range n.recent {
		if now.Sub(t) < r.opts.FightWindow {
			recent = append(recent, t)
		}
	}
	n.recent = recent
	if undone := n.noteUndo(manager); len(recent) < r.opts.FightThreshold || undone < r.opts.FightThreshold {
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
			cp.NextAttempt, cp.ClearsAt = time.Time{}, now.Add(r.opts.FightWindow)
			n.fight.contest = &cp
		}
		return 0, false
	}
	n.fights++
	wait := min(time.Duration(1<<min(n.fights, 10))*time.Second, r.opts.FailureMaxDelay)
	n.backoffTill = now.Add(wait)
	return wait, true
}

// contest returns the NodeID's contest for the backoff fight just decided.
func (r *reconciler) contest(id NodeID, att *Attribution, wait time.Duration) Contest {
	now := r.opts.Now()
	var fields []string
	if att != nil {
		fields = att.Fields
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	nl := r.loopLocked(id)
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
func (r *reconciler) create(ctx context.Context, p pass, st State, d Drift) (Result, error) {
	// The applied record was written before the write (the write step's
	// ahead, see sync): a hub killed between the apiserver's answer and the record
	// would otherwise leave an object no record knows (after a restart an
	// orphan, never pruned when its application leaves). A record whose
	// write is refused or fails is taken back (the next pass is a first
	// apply again).
	wctx, release, v := r.admit(ctx, &p, writeCreate)
	if !v.allow {
		r.unnoteApplied(p.spec)
		return r.out.refused(p, Repair{ID: p.id, Drift: d, ObservedAt: p.observedAt, ClassifiedAt: r.opts.Now()}, v)
	}
	defer release() // a panicking write releases too
	// Written already unless the gate refused at the pass and allows
	// now (the intent changed meanwhile).
	if err := p.unpack(); err != nil {
		release()
		r.unnoteApplied(p.spec)
		return Result{}, fmt.Errorf("create: %w", err)
	}
	r.noteApplied(p.spec)
	rr, err := p.backend.Repair(wctx, *p.desired, st, d)
	release()
	if err != nil {
		r.unnoteApplied(p.spec)
		return Result{}, fmt.Errorf("create: %w", err)
	}
	now := r.opts.Now()
	r.withLoop(p.id, func(n *nodeLoop) {
		n.seen = true
		n.expect = rr.Version
		n.stuck = false
	})
	r.noteApplied(p.spec)
	r.out.created(p, now)
	return Result{}, nil
}

// inSync records that a NodeID matches its desired state, verifying a pending
// repair and checking rollout progress. A contested NodeID stays contested
// until its last repair has held for FightWindow (it is looked at again
// then), or at once when ignore rules now cover the differences.
//
// An existing object's applied record is marked in memory; persist, when
// not nil, makes it durable in the state file (see markApplied).
//
// A stuck NodeID's backend is asked why (see reconciler.diagnose) before
// the status is shown, so that the snapshot (and the notification) that
// first shows it stuck says why.
func (r *reconciler) inSync(ctx context.Context, p pass, st State, d Drift) (res Result, persist func()) {
	now := r.opts.Now()
	s, managed := r.settle(p.id, d, stuck(st), now)
	if !managed {
		return Result{}, nil
	}
	if st.Exists {
		persist = r.markApplied(p.spec)
	}
	if s.diagnose {
		r.diagnose(ctx, p)
	}
	r.out.inSync(p, st.Progress, s, r.opts.Now())
	return s.res, persist
}

// stuck reports whether st's rollout exceeded its progress deadline.
func stuck(st State) bool { return st.Progress != nil && st.Progress.Stuck != "" }

// diagnose asks the NodeID's backend (a Diagnoser) why its stuck rollout
// does not progress, and shows the answer beside the status: at most
// diagnoseTimeout, and an error is said in its place.
func (r *reconciler) diagnose(ctx context.Context, p pass) {
	dg, ok := p.backend.(Diagnoser)
	if !ok {
		return
	}
	dctx, cancel := context.WithTimeout(ctx, diagnoseTimeout)
	lines, err := dg.Diagnose(dctx, *p.desired)
	cancel()
	switch {
	case err != nil && ctx.Err() != nil:
		return // the hub stops: no answer, nothing to say
	case err != nil:
		lines = []string{"why it is stuck could not be read: " + err.Error()}
	}
	r.out.setDiagnosis(p.id, lines)
}

// diagnoseTimeout bounds one Diagnose call.
const diagnoseTimeout = 5 * time.Second

// lookAgainWhileStuck makes a stuck NodeID's pass come back within
// Options.DiagnoseEvery when its backend diagnoses it, so what it says
// follows the rollout even when the object itself does not change.
func (r *reconciler) lookAgainWhileStuck(p pass, res Result) Result {
	if _, ok := p.backend.(Diagnoser); ok && (res.RequeueAfter <= 0 || res.RequeueAfter > r.opts.DiagnoseEvery) {
		res.RequeueAfter = r.opts.DiagnoseEvery
	}
	return res
}

// settled is what the loop's bookkeeping says of a NodeID found in sync.
type settled struct {
	// verifying is set when a repair was being verified; repaired when
	// the latest repair was verified within Options.RepairedHold.
	verifying, repaired bool
	// wasStuck is set when the last status shown was StatusStuck.
	wasStuck bool
	// diagnose is set when the NodeID is stuck and became so, or was last
	// diagnosed Options.DiagnoseEvery ago (see nodeRepairs.diagnosedAt).
	diagnose bool
	// contest is the contest still shown; res when to look again.
	contest *Contest
	res     Result
}

// settle updates the loop bookkeeping of a NodeID found in sync (stuck when
// its rollout is stuck): a pending verification ends and a fight whose last
// repair held clears. It reports what the bookkeeping says, and false when
// the NodeID is no longer managed.
func (r *reconciler) settle(id NodeID, d Drift, stuck bool, now time.Time) (s settled, managed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.loopLocked(id)
	if n == nil {
		return settled{}, false
	}
	n.foreign, n.waiting = false, false
	s.wasStuck, n.stuck = n.stuck, stuck
	if stuck && (!s.wasStuck || n.rep == nil || now.Sub(n.rep.diagnosedAt) >= r.opts.DiagnoseEvery) {
		n.repairs().diagnosedAt, s.diagnose = now, true
	}
	s.verifying = n.verifying
	n.verifying = false
	if rp := n.rep; rp != nil { // none: no repair, no fight, nothing to clear
		if s.verifying {
			rp.verifiedAt = now
		}
		s.repaired = !rp.verifiedAt.IsZero() && now.Sub(rp.verifiedAt) < r.opts.RepairedHold
		var lastRepair time.Time
		if len(rp.recent) > 0 {
			lastRepair = rp.recent[len(rp.recent)-1]
		}
		if rp.fights > 0 && (len(d.Ignored) > 0 || lastRepair.IsZero() || now.Sub(lastRepair) >= r.opts.FightWindow) {
			rp.fights = 0
			rp.fight = fightState{repairs: rp.fight.repairs, counted: rp.fight.repairs}
		}
		rp.backoffTill = time.Time{}
		if c := rp.fight.contest; c != nil && rp.fights > 0 {
			cp := *c
			cp.NextAttempt, cp.ClearsAt = time.Time{}, lastRepair.Add(r.opts.FightWindow)
			rp.fight.contest = &cp
			s.contest = &cp
			s.res.RequeueAfter = cp.ClearsAt.Sub(now) + time.Millisecond
		}
	}
	return s, true
}

// decommission prunes an object whose application left the config and
// tracks it until it is gone; not gone within DecommissionTimeout is stuck.
// The delete carries the identity and version of the object just read, and
// an object that no longer carries our label is released, never deleted.
func (r *reconciler) decommission(ctx context.Context, p pass) (Result, error) {
	spec := *p.desired
	st, err := p.backend.ReadState(ctx, spec, true)
	if errors.Is(err, ErrKindNotServed) {
		// No object of a kind its cluster does not serve can be read or
		// deleted: one the hub never created (its kind never came), or
		// one that went with its CRD. An object of a CRD version no
		// longer served but still stored stays, and shows as an orphan
		// if the version is served again.
		now := r.opts.Now()
		r.out.endDecommission(p, FeedEntry{At: now, ID: p.id, Action: "nothing to prune: its kind is not served", Latency: now.Sub(p.dec.since)})
		return Result{}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("read for prune: %w", err)
	}
	now := r.opts.Now()
	switch {
	case !st.Exists:
		r.out.endDecommission(p, FeedEntry{At: now, ID: p.id, Action: "pruned", Latency: now.Sub(p.dec.since)})
		return Result{}, nil
	case !st.Owned:
		r.out.endDecommission(p, FeedEntry{At: now, ID: p.id, Action: "released: no longer ours, not deleted"})
		return Result{}, nil
	case st.Retain != "":
		r.out.endDecommission(p, FeedEntry{At: now, ID: p.id, Action: "retained, not deleted: " + st.Retain})
		return Result{}, nil
	}
	if !st.Deleting {
		wctx, release, v := r.admit(ctx, &p, writeDelete)
		if !v.allow {
			switch v.action {
			case "stopping":
				return Result{}, errStopping
			case "stale":
				return Result{}, nil // wanted again, or its cluster forgotten
			}
			r.metrics.refused.WithLabelValues(p.id.Cluster, v.action).Inc()
			r.out.show(p.id, v.status, v.reason, now)
			return Result{RequeueAfter: v.retry}, nil
		}
		defer release() // a panicking delete releases too
		err := p.backend.Delete(wctx, spec, st)
		release()
		if errors.Is(err, ErrRefused) {
			// The backend will never delete it (a Namespace that holds
			// objects driftwatch does not manage): leave it in place.
			r.out.endDecommission(p, FeedEntry{At: now, ID: p.id, Action: "retained, not deleted: " + err.Error()})
			return Result{}, nil
		}
		if err != nil {
			return Result{}, fmt.Errorf("prune: %w", err)
		}
		r.out.pruneRequested(p, now)
	}
	remaining := p.dec.since.Add(r.opts.DecommissionTimeout).Sub(now)
	if remaining <= 0 {
		reason := fmt.Sprintf("decommission not finished after %s (finalizers: %s)",
			r.opts.DecommissionTimeout, strings.Join(st.Finalizers, ","))
		r.out.stuck(p, reason, now)
		// The delete event re-enqueues it; this re-checks a stuck one.
		return Result{RequeueAfter: r.opts.DecommissionTimeout}, nil
	}
	r.out.show(p.id, StatusDecommissioning, "waiting for the object to go away", now)
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

// panicked records a pass that panicked (the controller recovered it).
func (r *reconciler) panicked(id NodeID, err error, now time.Time) {
	r.out.panicked(id, err, now)
}

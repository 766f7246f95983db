package hub

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// reconcile is one level-based pass over a NodeID: it re-reads desired and
// actual state, classifies drift and acts on it.
func (h *Hub) reconcile(ctx context.Context, id NodeID) {
	h.mu.Lock()
	spec := h.desired[id]
	dec := h.decom[id]
	n := h.nodes[id]
	cs := h.clusters[id.Cluster]
	backends := h.backends
	if n == nil || (spec == nil && dec == nil) {
		h.mu.Unlock()
		h.queue.Forget(id)
		return
	}
	observedAt := n.pendingAt
	manual := n.manual
	confirm := n.confirm
	n.pendingAt = time.Time{}
	n.manual = false
	n.confirm = false
	paused := cs != nil && cs.paused
	clusterOK := cs != nil && (cs.health.State == ClusterSynced || cs.health.State == ClusterDegraded)
	appPolicy := ""
	if spec != nil {
		appPolicy = string(h.appPolicy[spec.Application])
	}
	h.mu.Unlock()

	if !clusterOK || backends == nil {
		// The cluster's next sync generation enqueues it again.
		return
	}
	backend, ok := backends.Backend(id.Cluster)
	if !ok {
		return
	}
	if observedAt.IsZero() {
		observedAt = h.opts.Now()
	}
	if dec != nil {
		h.decommission(ctx, backend, id, dec, paused)
		return
	}

	callCtx, cancel := context.WithTimeout(ctx, h.opts.CallTimeout)
	defer cancel()
	policy := spec.Policy
	if appPolicy != "" {
		policy = Policy(appPolicy)
	}
	actual, err := backend.Read(callCtx, *spec, confirm)
	// The label-filtered watch reports a removed label as a delete. When the
	// object will be repaired now anyway, apply at once and tell a deleted
	// object from an unlabelled one afterwards by its UID (one apiserver
	// round trip instead of two); otherwise GET before deciding.
	fast, lastUID := false, ""
	if err == nil && !confirm && actual == nil {
		h.mu.Lock()
		n = h.nodes[id]
		fast = n != nil && n.seen && n.uid != "" && (manual || (!paused && policy != PolicyWarn)) &&
			len(n.recent) < h.opts.FightThreshold-1
		if n != nil {
			// Taken now: the apply's own watch event updates n.uid.
			lastUID = n.uid
		}
		h.mu.Unlock()
	}
	if err == nil && !confirm && !fast && (actual == nil || actual.GetLabels()[ManagedByLabel] != h.opts.ManagedBy) {
		actual, err = backend.Read(callCtx, *spec, true)
	}
	if err != nil {
		h.fail(id, observedAt, fmt.Errorf("read: %w", err))
		return
	}
	drift := Classify(spec.Object, actual, h.opts.ManagedBy)
	classifiedAt := h.opts.Now()
	h.mu.Lock()
	n = h.nodes[id]
	create := n != nil && !n.seen && drift.Class == DriftMissing
	if n != nil && actual != nil {
		n.seen = true
	}
	h.mu.Unlock()
	if create {
		h.create(ctx, backend, id, spec)
		return
	}

	if drift.InSync() {
		h.inSync(id, spec, actual, observedAt)
		if manual {
			h.mu.Lock()
			h.appendTimelineLocked(h.nodes[id], StepVerified, "manual repair: already in sync", classifiedAt)
			h.mu.Unlock()
			h.markDirty()
		}
		return
	}

	if !fast {
		h.metrics.drift.WithLabelValues(id.Cluster, string(spec.Kind), string(drift.Class)).Inc()
	}
	h.metrics.classified.Observe(classifiedAt.Sub(observedAt).Seconds())
	rep := &Repair{ID: id, Drift: drift, ObservedAt: observedAt, ClassifiedAt: classifiedAt}

	// Attribution: who changed the drifted fields, from managedFields.
	if drift.Class != DriftMissing && drift.Class != DriftDeleting {
		if owners, err := backend.ManagedFields(callCtx, *spec); err == nil {
			rep.Attribution = attribute(drift, owners)
		}
	}

	switch {
	case drift.Class == DriftDeleting:
		rep.Action = "wait-deletion"
		h.record(id, rep, StatusDrifted, "being deleted; recreated once it is gone", StepClassified)
		return
	case manual:
	case paused:
		rep.Action = "paused"
		h.record(id, rep, StatusPaused, "repairs paused on this cluster", StepPaused)
		return
	case policy == PolicyWarn:
		rep.Action = "warn"
		h.record(id, rep, StatusWarnOnly, "warn-only: reported, not repaired", StepWarned)
		return
	}

	// A fight with another controller backs off exponentially.
	now := h.opts.Now()
	h.mu.Lock()
	n = h.nodes[id]
	recent := n.recent[:0]
	for _, t := range n.recent {
		if now.Sub(t) < h.opts.FightWindow {
			recent = append(recent, t)
		}
	}
	n.recent = recent
	fighting := !manual && len(recent) >= h.opts.FightThreshold
	var wait time.Duration
	if fighting {
		if n.backoffTill.IsZero() || now.After(n.backoffTill) {
			if !n.backoffTill.IsZero() {
				// The last backoff has run out: repair now, back off longer
				// next time.
				fighting = false
				n.backoffTill = time.Time{}
			} else {
				n.fights++
				wait = min(time.Duration(1<<min(n.fights, 10))*time.Second, h.opts.FailureMaxDelay)
				n.backoffTill = now.Add(wait)
			}
		} else {
			wait = n.backoffTill.Sub(now)
		}
	}
	h.mu.Unlock()
	if fighting {
		who := "another controller"
		if rep.Attribution != nil {
			who = rep.Attribution.Manager
		}
		rep.Action = "backoff"
		h.record(id, rep, StatusDrifted, fmt.Sprintf("fighting with %s: next repair in %s", who, wait.Round(time.Second)), StepClassified)
		h.queue.AddAfter(id, wait)
		return
	}

	h.record(id, rep, StatusRepairing, "", StepClassified)
	rep = h.copyRepair(id)
	if rep == nil {
		return
	}
	rep.Action = "apply"
	var added []string
	for _, f := range drift.Fields {
		if f.Added && f.Pointer != "" {
			added = append(added, f.Pointer)
		}
	}
	if len(added) > 0 && actual != nil && !confirm {
		// The JSON patch is guarded by resourceVersion: take both the
		// pointers and the version from a fresh GET, not the cache.
		fresh, err := backend.Read(callCtx, *spec, true)
		if err != nil {
			h.fail(id, observedAt, fmt.Errorf("read: %w", err))
			return
		}
		actual = fresh
		added = added[:0]
		for _, f := range Classify(spec.Object, actual, h.opts.ManagedBy).Fields {
			if f.Added && f.Pointer != "" {
				added = append(added, f.Pointer)
			}
		}
	}
	if len(added) > 0 && actual != nil {
		rep.Action = "remove+apply"
		if err := backend.RemoveFields(callCtx, *spec, actual.GetResourceVersion(), added); err != nil {
			h.fail(id, observedAt, fmt.Errorf("remove added fields: %w", err))
			return
		}
	}
	res, err := backend.Apply(callCtx, *spec)
	if err != nil {
		h.fail(id, observedAt, fmt.Errorf("apply: %w", err))
		return
	}
	appliedAt := h.opts.Now()
	rep.AppliedAt = appliedAt
	if fast {
		if res.Object != nil && string(res.Object.GetUID()) == lastUID {
			// The same object: it had lost our managed-by label.
			rep.Drift = Drift{Class: DriftUnlabelled, Fields: []FieldDiff{{
				Path: "metadata.labels." + ManagedByLabel, Desired: h.opts.ManagedBy, Actual: "<removed or changed>"}}}
		}
		drift = rep.Drift
		h.metrics.drift.WithLabelValues(id.Cluster, string(spec.Kind), string(drift.Class)).Inc()
	}
	if rep.Attribution == nil && len(res.Conflicts) > 0 {
		rep.Attribution = &Attribution{Manager: res.Conflicts[0].Manager}
		for _, c := range res.Conflicts {
			rep.Attribution.Fields = append(rep.Attribution.Fields, c.Field)
		}
	}
	h.metrics.repairs.WithLabelValues(id.Cluster, "success").Inc()
	h.metrics.repaired.Observe(appliedAt.Sub(observedAt).Seconds())
	h.queue.Forget(id)

	h.mu.Lock()
	n = h.nodes[id]
	if n != nil {
		n.repair = rep
		n.repairs++
		n.recent = append(n.recent, appliedAt)
		n.verifying = true
		if res.Object != nil {
			n.appliedRV = res.Object.GetResourceVersion()
			n.uid = string(res.Object.GetUID())
		}
		detail := rep.Action
		if len(res.Conflicts) > 0 {
			detail += fmt.Sprintf(" (took %d field(s) from %s)", len(res.Conflicts), res.Conflicts[0].Manager)
		}
		h.appendTimelineLocked(n, StepApplied, detail, appliedAt)
		if cs := h.clusters[id.Cluster]; cs != nil {
			cs.repairs = append(cs.repairs, appliedAt.Sub(observedAt))
			if len(cs.repairs) > 100 {
				cs.repairs = cs.repairs[len(cs.repairs)-100:]
			}
		}
		h.addFeedLocked(FeedEntry{At: appliedAt, ID: id, Class: drift.Class, Fields: drift.Fields,
			Who: attributionText(rep.Attribution), Action: rep.Action, Latency: appliedAt.Sub(observedAt)})
	}
	h.mu.Unlock()
	h.onRecord(rep)
	h.markDirty()
}

// onRecord hands a copy of a drift record to Options.OnRecord, if set.
func (h *Hub) onRecord(rep *Repair) {
	if h.opts.OnRecord != nil && rep != nil {
		h.opts.OnRecord(*rep)
	}
}

// create applies an object the hub has never seen on its cluster: the first
// apply, not a drift.
func (h *Hub) create(ctx context.Context, backend Backend, id NodeID, spec *NodeSpec) {
	callCtx, cancel := context.WithTimeout(ctx, h.opts.CallTimeout)
	defer cancel()
	res, err := backend.Apply(callCtx, *spec)
	now := h.opts.Now()
	if err != nil {
		h.fail(id, now, fmt.Errorf("create: %w", err))
		return
	}
	h.queue.Forget(id)
	h.mu.Lock()
	if n := h.nodes[id]; n != nil {
		n.seen = true
		if res.Object != nil {
			n.appliedRV = res.Object.GetResourceVersion()
			n.uid = string(res.Object.GetUID())
		}
		h.appendTimelineLocked(n, StepCreated, "first apply", now)
		h.setStatusLocked(n, StatusInSync, "", now)
	}
	h.mu.Unlock()
	h.markDirty()
}

// inSync records that a NodeID matches its desired state, verifying a pending
// repair and checking Deployment progress.
func (h *Hub) inSync(id NodeID, spec *NodeSpec, actual *unstructured.Unstructured, observedAt time.Time) {
	now := h.opts.Now()
	stuck, reason, ready, replicas := deploymentProgress(spec, actual)
	h.mu.Lock()
	n := h.nodes[id]
	if n == nil {
		h.mu.Unlock()
		return
	}
	n.ready, n.replicas = ready, replicas
	if n.verifying {
		n.verifying = false
		n.repairedAt = now
		if n.repair != nil {
			rep := *n.repair
			rep.VerifiedAt = observedAt
			if rep.VerifiedAt.Before(rep.AppliedAt) {
				rep.VerifiedAt = now
			}
			n.repair = &rep
		}
		h.appendTimelineLocked(n, StepVerified, "", now)
	}
	if n.fights > 0 && n.backoffTill.IsZero() && len(n.recent) > 0 && now.Sub(n.recent[len(n.recent)-1]) > h.opts.FightWindow {
		n.fights = 0
	}
	n.backoffTill = time.Time{}
	switch {
	case stuck:
		if n.status != StatusStuck {
			h.appendTimelineLocked(n, StepStuck, reason, now)
		}
		h.setStatusLocked(n, StatusStuck, reason, now)
	case !n.repairedAt.IsZero() && now.Sub(n.repairedAt) < h.opts.RepairedHold:
		h.setStatusLocked(n, StatusRepaired, "", now)
	default:
		h.setStatusLocked(n, StatusInSync, "", now)
	}
	h.mu.Unlock()
	h.queue.Forget(id)
	h.markDirty()
}

// deploymentProgress reads a Deployment's readiness and whether it exceeded
// its progress deadline.
func deploymentProgress(spec *NodeSpec, actual *unstructured.Unstructured) (stuck bool, reason string, ready, replicas int32) {
	if spec.Kind != KindDeployment || actual == nil {
		return false, "", 0, 0
	}
	r, _, _ := unstructured.NestedInt64(actual.Object, "spec", "replicas")
	rd, _, _ := unstructured.NestedInt64(actual.Object, "status", "readyReplicas")
	conds, _, _ := unstructured.NestedSlice(actual.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Progressing" && m["status"] == "False" && m["reason"] == "ProgressDeadlineExceeded" {
			msg, _ := m["message"].(string)
			return true, "ProgressDeadlineExceeded: " + msg, int32(rd), int32(r)
		}
	}
	return false, "", int32(rd), int32(r)
}

// decommission prunes an object whose application left the config and
// tracks it until it is gone; not gone within DecommissionTimeout is stuck.
func (h *Hub) decommission(ctx context.Context, backend Backend, id NodeID, dec *decommission, paused bool) {
	now := h.opts.Now()
	callCtx, cancel := context.WithTimeout(ctx, h.opts.CallTimeout)
	defer cancel()
	actual, err := backend.Read(callCtx, *dec.spec, true)
	if err != nil {
		h.fail(id, now, fmt.Errorf("read for prune: %w", err))
		return
	}
	if actual == nil {
		h.mu.Lock()
		delete(h.decom, id)
		delete(h.nodes, id)
		h.rebuildOrderLocked()
		h.addFeedLocked(FeedEntry{At: now, ID: id, Action: "pruned", Latency: now.Sub(dec.since)})
		h.mu.Unlock()
		h.queue.Forget(id)
		h.markDirty()
		return
	}
	if paused {
		h.mu.Lock()
		if n := h.nodes[id]; n != nil {
			h.setStatusLocked(n, StatusPaused, "prune held: repairs paused on this cluster", now)
		}
		h.mu.Unlock()
		h.markDirty()
		return
	}
	if actual.GetDeletionTimestamp() == nil {
		if err := backend.Delete(callCtx, *dec.spec, PropagationBackground); err != nil {
			h.fail(id, now, fmt.Errorf("prune: %w", err))
			return
		}
		h.mu.Lock()
		if n := h.nodes[id]; n != nil {
			h.appendTimelineLocked(n, StepPruned, "delete requested", now)
		}
		h.mu.Unlock()
	}
	h.mu.Lock()
	n := h.nodes[id]
	if n != nil {
		if now.Sub(dec.since) >= h.opts.DecommissionTimeout {
			reason := fmt.Sprintf("decommission not finished after %s (finalizers: %s)",
				h.opts.DecommissionTimeout, strings.Join(actual.GetFinalizers(), ","))
			if n.status != StatusStuck {
				h.appendTimelineLocked(n, StepStuck, reason, now)
			}
			dec.stuck = true
			h.setStatusLocked(n, StatusStuck, reason, now)
		} else {
			h.setStatusLocked(n, StatusDecommissioning, "waiting for the object to go away", now)
		}
	}
	h.mu.Unlock()
	// The delete event re-enqueues it; this catches the timeout.
	remaining := dec.since.Add(h.opts.DecommissionTimeout).Sub(now)
	if remaining <= 0 {
		remaining = h.opts.DecommissionTimeout
	}
	h.queue.AddAfter(id, remaining)
	h.markDirty()
}

// fail records a failed reconcile and retries with exponential backoff.
func (h *Hub) fail(id NodeID, observedAt time.Time, err error) {
	now := h.opts.Now()
	h.metrics.repairs.WithLabelValues(id.Cluster, "failure").Inc()
	h.log.Warn("reconcile failed", "node", id.String(), "err", err)
	h.mu.Lock()
	if n := h.nodes[id]; n != nil {
		if n.repair != nil {
			rep := *n.repair
			rep.Err = err.Error()
			n.repair = &rep
		}
		h.appendTimelineLocked(n, StepFailed, err.Error(), now)
		h.setStatusLocked(n, StatusFailed, err.Error(), now)
		if n.pendingAt.IsZero() {
			n.pendingAt = observedAt
		}
		h.addFeedLocked(FeedEntry{At: now, ID: id, Action: "failed", Err: err.Error(), Latency: now.Sub(observedAt)})
	}
	h.mu.Unlock()
	h.queue.AddRateLimited(id)
	h.markDirty()
}

// record stores a classified drift with a status.
func (h *Hub) record(id NodeID, rep *Repair, st Status, reason string, step Step) {
	now := h.opts.Now()
	h.mu.Lock()
	n := h.nodes[id]
	if n != nil {
		n.repair = rep
		n.verifying = false
		h.appendTimelineLocked(n, StepObserved, "", rep.ObservedAt)
		h.appendTimelineLocked(n, step, rep.Drift.Summary(), rep.ClassifiedAt)
		h.setStatusLocked(n, st, reason, now)
		if st != StatusRepairing {
			h.addFeedLocked(FeedEntry{At: now, ID: id, Class: rep.Drift.Class, Fields: rep.Drift.Fields,
				Who: attributionText(rep.Attribution), Action: rep.Action, Latency: rep.ClassifiedAt.Sub(rep.ObservedAt)})
		}
	}
	h.mu.Unlock()
	if n != nil {
		h.onRecord(rep)
	}
	h.markDirty()
}

func (h *Hub) copyRepair(id NodeID) *Repair {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.nodes[id]
	if n == nil || n.repair == nil {
		return nil
	}
	r := *n.repair
	return &r
}

func (h *Hub) setStatusLocked(n *nodeState, st Status, reason string, now time.Time) {
	if n.status != st {
		n.lastChange = now
	}
	n.status = st
	n.reason = reason
}

func (h *Hub) appendTimelineLocked(n *nodeState, step Step, detail string, at time.Time) {
	if n == nil {
		return
	}
	tl := make([]TimelineEntry, 0, min(len(n.timeline)+1, h.opts.TimelineLength))
	start := 0
	if len(n.timeline)+1 > h.opts.TimelineLength {
		start = len(n.timeline) + 1 - h.opts.TimelineLength
	}
	tl = append(tl, n.timeline[start:]...)
	tl = append(tl, TimelineEntry{At: at, Step: step, Detail: detail})
	n.timeline = tl
}

func (h *Hub) addFeedLocked(e FeedEntry) {
	if len(h.feed) >= h.opts.FeedLength {
		copy(h.feed, h.feed[1:])
		h.feed = h.feed[:len(h.feed)-1]
	}
	h.feed = append(h.feed, e)
}

func attributionText(a *Attribution) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// attribute finds the field manager (other than driftwatch) that most
// recently changed any of the drifted fields.
func attribute(d Drift, owners []FieldOwner) *Attribution {
	var best *Attribution
	for _, o := range owners {
		if o.Manager == FieldManager {
			continue
		}
		var hit []string
		for _, f := range d.Fields {
			for _, p := range o.Fields {
				if p == f.Path || strings.HasPrefix(p, f.Path+".") || strings.HasPrefix(p, f.Path+"[") || strings.HasPrefix(f.Path, p+".") {
					hit = append(hit, f.Path)
					break
				}
			}
		}
		if len(hit) == 0 {
			continue
		}
		if best == nil || o.Time.After(best.At) {
			best = &Attribution{Manager: o.Manager, Operation: o.Operation, At: o.Time, Fields: hit}
		}
	}
	return best
}

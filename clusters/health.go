package clusters

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/driftwatch/driftwatch/hub"
)

// kstatusAlwaysReady is the message of kstatus's result for the kinds it
// counts as always ready (ConfigMap, Secret, CronJob); kstatus does not
// export that list, and TestProgressOf pins the message.
const kstatusAlwaysReady = "Resource is always ready"

// progressOf reads the rollout progress of any object with kstatus
// (status.Compute, the rules of kubectl's and Flux's waits): the built-in
// workloads by their own rules (a Deployment's progress deadline, a Job's
// failure, a PersistentVolumeClaim's binding, a StatefulSet's or
// DaemonSet's updated and ready pods) and any other object by its standard
// conditions (Ready, Reconciling, Stalled) and observedGeneration. It
// returns nil for objects with no rollout: kinds kstatus counts as always
// ready (ConfigMap, Secret, CronJob) and objects with neither rules nor
// conditions in their status (Role, ServiceAccount).
//
// Ready and Desired count replicas where the object does: spec.replicas and
// status.readyReplicas (Deployment, StatefulSet, ReplicaSet, and custom
// resources that follow them), a DaemonSet's scheduled and ready pods, a
// Job's completions and successes. Stuck is set (the reason, and
// kstatus's message) when kstatus says Failed (ProgressDeadlineExceeded, a
// failed Job, a Stalled condition), or when the object has been in
// progress for longer than deadline (when positive), measured from the
// newest lastTransitionTime of its conditions, or, for objects without
// conditions, from the last write to anything but their status
// (managedFields).
func progressOf(u *unstructured.Unstructured, deadline time.Duration, now time.Time) *hub.Progress {
	if u == nil {
		return nil
	}
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	_, observed, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "observedGeneration")
	if status.GetLegacyConditionsFn(u) == nil && len(conditions) == 0 && !observed {
		return nil
	}
	res, err := status.Compute(u)
	if err != nil {
		return &hub.Progress{State: string(status.UnknownStatus), Message: err.Error()}
	}
	if res.Status == status.CurrentStatus && res.Message == kstatusAlwaysReady {
		return nil // nothing rolls out
	}
	p := &hub.Progress{State: string(res.Status), Message: res.Message}
	p.Desired, p.Ready = replicas(u)
	switch res.Status {
	case status.FailedStatus:
		reason := "Failed"
		for _, c := range res.Conditions {
			if c.Type == status.ConditionStalled && c.Reason != "" {
				reason = c.Reason
				if c.Message != "" {
					res.Message = c.Message
				}
			}
		}
		p.Stuck = reason
		if res.Message != "" {
			p.Stuck += ": " + res.Message
		}
	case status.InProgressStatus:
		if deadline <= 0 {
			break
		}
		since, ok := progressSince(u, conditions)
		if ok && now.Sub(since) > deadline {
			p.Stuck = "InProgress for " + now.Sub(since).Round(time.Second).String()
			if res.Message != "" {
				p.Stuck += ": " + res.Message
			}
		}
	}
	return p
}

// replicas returns the desired and ready counts the object states, by its
// fields: scheduled and ready pods (a DaemonSet), completions and
// successes (a Job: spec.parallelism), or spec.replicas and
// status.readyReplicas; zero when it states none.
func replicas(u *unstructured.Unstructured) (desired, ready int32) {
	o := u.Object
	if n, ok, _ := unstructured.NestedInt64(o, "status", "desiredNumberScheduled"); ok {
		r, _, _ := unstructured.NestedInt64(o, "status", "numberReady")
		return int32(n), int32(r)
	}
	if _, job, _ := unstructured.NestedFieldNoCopy(o, "spec", "parallelism"); job {
		// A Job without completions is done after one success.
		n, ok, _ := unstructured.NestedInt64(o, "spec", "completions")
		if !ok {
			n = 1
		}
		r, _, _ := unstructured.NestedInt64(o, "status", "succeeded")
		return int32(n), int32(r)
	}
	n, ok, _ := unstructured.NestedInt64(o, "spec", "replicas")
	if !ok {
		return 0, 0
	}
	r, _, _ := unstructured.NestedInt64(o, "status", "readyReplicas")
	return int32(n), int32(r)
}

// progressSince returns when the current rollout began: the newest
// lastTransitionTime of the object's conditions, else the newest write to
// the object other than to its status.
func progressSince(u *unstructured.Unstructured, conditions []any) (time.Time, bool) {
	var since time.Time
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		s, _ := m["lastTransitionTime"].(string)
		if t, err := time.Parse(time.RFC3339, s); err == nil && t.After(since) {
			since = t
		}
	}
	if !since.IsZero() {
		return since, true
	}
	for _, e := range u.GetManagedFields() {
		if e.Subresource == "" && e.Time != nil && e.Time.After(since) {
			since = e.Time.Time
		}
	}
	return since, !since.IsZero()
}

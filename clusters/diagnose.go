package clusters

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
)

// Bounds of a diagnosis: the pods one list reads, the events one list of
// an object's reads, the ReplicaSets a Deployment's newest is looked for
// among, the lines it says, and
// the length of each message it quotes (a pod's messages are the
// cluster's words, as long as a webhook makes them).
const (
	diagnosePods        = 200
	diagnoseEvents      = 50
	diagnoseReplicaSets = 50
	diagnoseLines       = 3
	diagnoseMessageLen  = 300
)

// podWorkload reports whether a diagnosis reads the pods of kind: the
// kinds that select their pods with spec.selector.
func podWorkload(kind hub.Kind) bool {
	switch kind {
	case hub.KindDeployment, "statefulset.apps", "daemonset.apps", "replicaset.apps", "job.batch":
		return true
	}
	return false
}

// Diagnose says why spec's rollout does not progress, in the cluster's
// words. For a workload (see podWorkload) it lists the pods its
// spec.selector selects (at most 200) and reads their conditions and
// container states (see diagnosePodList); a pod that waits to have its
// containers created is explained by its Warning events (a volume that
// cannot be mounted). When its pods say nothing (there are none: a quota
// or an admission policy refuses them), and for every other kind (a
// PersistentVolumeClaim no provisioner binds, a custom resource whose
// controller reports an error), the Warning events of the object say it,
// the newest of each reason first; a Deployment's are those of its newest
// ReplicaSet, which creates its pods, then its own (see objectEvents).
// A list the credentials may not make is said as such, not an error.
func (m *Manager) Diagnose(ctx context.Context, spec hub.NodeSpec) ([]string, error) {
	st, err := m.ReadState(ctx, spec, false)
	if err != nil || !st.Exists {
		return nil, err
	}
	live := LiveObject(st)
	if live == nil {
		return nil, nil
	}
	c := m.clientset()
	if c == nil {
		return nil, m.callError("diagnose", spec, errNotConnected)
	}
	d := diagnosis{m: m, c: c, spec: spec}
	if podWorkload(spec.Kind) {
		if d.sel, err = d.selector(live); err != nil {
			return nil, err
		}
		lines, err := d.pods(ctx)
		if err != nil || len(lines) > 0 {
			return lines, err
		}
	}
	return d.objectEvents(ctx, live)
}

// diagnosis is one Diagnose call.
type diagnosis struct {
	m    *Manager
	c    kubernetes.Interface
	spec hub.NodeSpec
	// sel is a workload's spec.selector (nil: none, or not a workload).
	sel labels.Selector
}

// pods says what keeps the workload's pods from being ready.
func (d diagnosis) pods(ctx context.Context) ([]string, error) {
	sel := d.sel
	if sel == nil {
		return nil, nil
	}
	pods, err := d.c.CoreV1().Pods(d.spec.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String(), Limit: diagnosePods})
	if apierrors.IsForbidden(err) {
		return []string{fmt.Sprintf("its pods cannot be read: the credentials may not list pods in namespace %s (RBAC)", d.spec.Namespace)}, nil
	}
	if err != nil {
		return nil, d.m.callError("list the pods of", d.spec, err)
	}
	explain := func(p *corev1.Pod) string {
		lines, _ := d.events(ctx, p.Namespace, p.UID, "", 1)
		return strings.Join(lines, "; ")
	}
	return diagnosePodList(pods.Items, pods.Continue != "", explain), nil
}

// selector returns live's spec.selector as a label selector; nil when it
// has none.
func (d diagnosis) selector(live *unstructured.Unstructured) (labels.Selector, error) {
	raw, found, err := unstructured.NestedMap(live.Object, "spec", "selector")
	if err != nil || !found {
		return nil, err
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); err != nil {
		return nil, d.m.callError("read the selector of", d.spec, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return nil, d.m.callError("read the selector of", d.spec, err)
	}
	return sel, nil
}

// objectEvents says the Warning events of live: for a Deployment, those
// of its newest ReplicaSet first (its pods are that ReplicaSet's to
// create: "FailedCreate: ... exceeded quota"), then its own; at most
// diagnoseLines lines in all. A list that fails is said (the
// credentials' refusal as such) only when nothing else is.
func (d diagnosis) objectEvents(ctx context.Context, live *unstructured.Unstructured) ([]string, error) {
	var lines []string
	var failed error
	if d.spec.Kind == hub.KindDeployment {
		if rs := d.newestReplicaSet(ctx, live); rs != nil {
			lines, failed = d.events(ctx, rs.Namespace, rs.UID, "replicaset "+rs.Name, diagnoseLines)
		}
	}
	if len(lines) < diagnoseLines {
		l, err := d.events(ctx, live.GetNamespace(), live.GetUID(), "", diagnoseLines-len(lines))
		lines = append(lines, l...)
		failed = cmp.Or(failed, err)
	}
	switch {
	case len(lines) > 0 || failed == nil:
		return lines, nil
	case apierrors.IsForbidden(failed):
		return []string{fmt.Sprintf("its events cannot be read: the credentials may not list events in %s (RBAC)", namespaceWords(d.spec.Namespace))}, nil
	}
	return nil, d.m.callError("list the events of", d.spec, failed)
}

// newestReplicaSet returns the ReplicaSet of the Deployment live with the
// highest revision, among the first 50 its selector selects; nil when
// there is none or they cannot be read.
func (d diagnosis) newestReplicaSet(ctx context.Context, live *unstructured.Unstructured) *appsv1.ReplicaSet {
	if d.sel == nil {
		return nil
	}
	list, err := d.c.AppsV1().ReplicaSets(live.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: d.sel.String(), Limit: diagnoseReplicaSets})
	if err != nil {
		return nil
	}
	var newest *appsv1.ReplicaSet
	newestRev := int64(-1)
	for i := range list.Items {
		rs := &list.Items[i]
		if owner := metav1.GetControllerOf(rs); owner == nil || owner.UID != live.GetUID() {
			continue
		}
		rev, _ := strconv.ParseInt(rs.Annotations["deployment.kubernetes.io/revision"], 10, 64)
		if rev > newestRev {
			newest, newestRev = rs, rev
		}
	}
	return newest
}

// events returns the Warning events of the object uid in namespace ns
// ("" for a cluster-scoped object: every namespace), the newest of each
// reason first, at most `most` lines: "event REASON[ on WHO]: message".
func (d diagnosis) events(ctx context.Context, ns string, uid types.UID, who string, most int) ([]string, error) {
	if uid == "" || most <= 0 {
		return nil, nil
	}
	sel := fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.uid", string(uid)), fields.OneTermEqualSelector("type", corev1.EventTypeWarning))
	list, err := d.c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel.String(), Limit: diagnoseEvents})
	if err != nil {
		return nil, err
	}
	return eventLines(list.Items, who, most), nil
}

// eventLines says events, the newest of each reason first, at most `most`
// lines: "event REASON: message", with " on WHO" after the reason when who
// is set.
func eventLines(events []corev1.Event, who string, most int) []string {
	slices.SortStableFunc(events, func(a, b corev1.Event) int { return eventTime(b).Compare(eventTime(a)) })
	if who != "" {
		who = " on " + who
	}
	var lines []string
	said := map[string]bool{}
	for _, e := range events {
		if said[e.Reason] {
			continue
		}
		said[e.Reason] = true
		lines = append(lines, "event "+quote(e.Reason)+who+": "+quote(e.Message))
		if len(lines) == most {
			break
		}
	}
	return lines
}

// eventTime is when e last happened: its series' last observation, its
// last timestamp, its event time or its creation, the first one set.
func eventTime(e corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// namespaceWords names where a list of events was made.
func namespaceWords(ns string) string {
	if ns == "" {
		return "any namespace"
	}
	return "namespace " + ns
}

// diagnosePodList says what keeps pods from being ready, one line per
// cause, the most pods first (at most diagnoseLines lines, then how many
// more pods are not ready): a pod not scheduled (the scheduler's message),
// a container waiting (ImagePullBackOff, CrashLoopBackOff,
// CreateContainerConfigError... with its message and, after restarts, how
// it last ended), a container running but not ready, a pod that failed.
// Pods that are ready, succeeded or being deleted say nothing. more says
// the list stopped at its limit. A pod that waits for its containers to
// be created, or to be scheduled without the scheduler saying why, is
// explained further by explain (its events), when given, for the first
// pod of each cause said.
func diagnosePodList(pods []corev1.Pod, more bool, explain func(*corev1.Pod) string) []string {
	type cause struct {
		text string
		pods []*corev1.Pod
	}
	var causes []*cause
	byText := map[string]*cause{}
	notReady := 0
	for i := range pods {
		p := &pods[i]
		text := podTrouble(p)
		if text == "" {
			continue
		}
		notReady++
		c := byText[text]
		if c == nil {
			c = &cause{text: text}
			byText[text] = c
			causes = append(causes, c)
		}
		c.pods = append(c.pods, p)
	}
	slices.SortStableFunc(causes, func(a, b *cause) int { return cmp.Compare(len(b.pods), len(a.pods)) })
	var lines []string
	said := 0
	for _, c := range causes[:min(len(causes), diagnoseLines)] {
		who := "pod " + c.pods[0].Name
		if len(c.pods) > 1 {
			who = fmt.Sprintf("%d pods (%s, ...)", len(c.pods), c.pods[0].Name)
		}
		text := c.text
		if explain != nil && (text == podCreating || text == podUnscheduled) {
			if why := explain(c.pods[0]); why != "" {
				text += ": " + why
			}
		}
		lines = append(lines, who+": "+text)
		said += len(c.pods)
	}
	switch rest := notReady - said; {
	case rest == 1:
		lines = append(lines, "1 more pod not ready")
	case rest > 1:
		lines = append(lines, fmt.Sprintf("%d more pods not ready", rest))
	}
	if more && len(lines) > 0 {
		lines = append(lines, fmt.Sprintf("(only the first %d pods were read)", diagnosePods))
	}
	return lines
}

// What podTrouble says of a pod that waits to be scheduled without the
// scheduler's word, and of one whose containers wait to be created (a
// volume that cannot be mounted, a sandbox that cannot be made: its events
// say which).
const (
	podUnscheduled = "not scheduled yet"
	podCreating    = "containers not created yet (ContainerCreating)"
)

// podTrouble says what keeps one pod from being ready, "" when nothing
// does.
func podTrouble(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded {
		return ""
	}
	if p.Status.Phase == corev1.PodFailed {
		return "failed: " + quote(joinWords(p.Status.Reason, p.Status.Message))
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return "not scheduled: " + quote(joinWords(c.Reason, c.Message))
		}
	}
	if p.Spec.NodeName == "" && p.Status.Phase == corev1.PodPending {
		return podUnscheduled
	}
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if w := cs.State.Waiting; w != nil && w.Reason == "ContainerCreating" {
			return podCreating
		}
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" {
			s := fmt.Sprintf("container %s %s", cs.Name, quote(joinWords(w.Reason, w.Message)))
			if t := cs.LastTerminationState.Terminated; t != nil && cs.RestartCount > 0 {
				s += fmt.Sprintf(" (last exit %d %s, %d restarts)", t.ExitCode, quote(t.Reason), cs.RestartCount)
			}
			return s
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return strings.TrimSuffix(fmt.Sprintf("container %s exited %d %s", cs.Name, t.ExitCode, quote(joinWords(t.Reason, t.Message))), " ")
		}
	}
	if p.Status.Phase != corev1.PodRunning {
		return ""
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return ""
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if !cs.Ready && cs.State.Running != nil {
			return fmt.Sprintf("container %s running, not ready (its readiness probe)", cs.Name)
		}
	}
	return ""
}

// joinWords joins a reason and a message as "Reason: message", leaving out
// an empty one.
func joinWords(reason, message string) string {
	switch {
	case reason == "":
		return message
	case message == "":
		return reason
	}
	return reason + ": " + message
}

// quote bounds a message from the cluster to diagnoseMessageLen bytes and
// makes it one line (see oneLine).
func quote(s string) string { return oneLine(s, diagnoseMessageLen) }

// oneLine makes s one line (its runs of white space one blank) of at most
// n bytes, cut on a rune boundary with an ellipsis.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

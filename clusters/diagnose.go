package clusters

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/driftwatch/driftwatch/hub"
)

// Bounds of a diagnosis: the pods one list reads, the lines it says, and
// the length of each message it quotes (a pod's messages are the
// cluster's words, as long as a webhook makes them).
const (
	diagnosePods       = 200
	diagnoseLines      = 3
	diagnoseMessageLen = 300
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

// Diagnose says why spec's rollout does not progress, in its pods' words
// (see diagnosePodList): it lists the pods the object's spec.selector
// selects (at most 200) and reads their conditions and container states.
// A kind without pods has nothing to say (nil, nil); a list the
// credentials may not make is said as such, not an error.
func (m *Manager) Diagnose(ctx context.Context, spec hub.NodeSpec) ([]string, error) {
	if !podWorkload(spec.Kind) {
		return nil, nil
	}
	st, err := m.ReadState(ctx, spec, false)
	if err != nil || !st.Exists {
		return nil, err
	}
	live := LiveObject(st)
	if live == nil {
		return nil, nil
	}
	raw, found, err := unstructured.NestedMap(live.Object, "spec", "selector")
	if err != nil || !found {
		return nil, err
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); err != nil {
		return nil, m.callError("read the selector of", spec, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return nil, m.callError("read the selector of", spec, err)
	}
	c := m.clientset()
	if c == nil {
		return nil, m.callError("list the pods of", spec, errNotConnected)
	}
	pods, err := c.CoreV1().Pods(spec.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String(), Limit: diagnosePods})
	if apierrors.IsForbidden(err) {
		return []string{fmt.Sprintf("its pods cannot be read: the credentials may not list pods in namespace %s (RBAC)", spec.Namespace)}, nil
	}
	if err != nil {
		return nil, m.callError("list the pods of", spec, err)
	}
	return diagnosePodList(pods.Items, pods.Continue != ""), nil
}

// diagnosePodList says what keeps pods from being ready, one line per
// cause, the most pods first (at most diagnoseLines lines, then how many
// more pods are not ready): a pod not scheduled (the scheduler's message),
// a container waiting (ImagePullBackOff, CrashLoopBackOff,
// CreateContainerConfigError... with its message and, after restarts, how
// it last ended), a container running but not ready, a pod that failed.
// Pods that are ready, succeeded or being deleted say nothing. more says
// the list stopped at its limit.
func diagnosePodList(pods []corev1.Pod, more bool) []string {
	type cause struct {
		text string
		pods []string
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
		c.pods = append(c.pods, p.Name)
	}
	slices.SortStableFunc(causes, func(a, b *cause) int { return cmp.Compare(len(b.pods), len(a.pods)) })
	var lines []string
	said := 0
	for _, c := range causes[:min(len(causes), diagnoseLines)] {
		who := "pod " + c.pods[0]
		if len(c.pods) > 1 {
			who = fmt.Sprintf("%d pods (%s, ...)", len(c.pods), c.pods[0])
		}
		lines = append(lines, who+": "+c.text)
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
		return "not scheduled yet"
	}
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" && w.Reason != "ContainerCreating" {
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

// quote bounds a message from the cluster to diagnoseMessageLen bytes (on
// a rune boundary) and makes it one line.
func quote(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= diagnoseMessageLen {
		return s
	}
	cut := diagnoseMessageLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

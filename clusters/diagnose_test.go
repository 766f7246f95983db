package clusters

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/hub"
)

// pod builds a pod named name in phase with the given status parts.
func pod(name string, phase corev1.PodPhase, node string, conds []corev1.PodCondition, containers ...corev1.ContainerStatus) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: phase, Conditions: conds, ContainerStatuses: containers}}
}

// TestDiagnosePodList: each way a pod is kept from being ready is said in
// the cluster's words, the cause with the most pods first, at most three
// causes and then how many more; ready, succeeded and deleting pods say
// nothing; a long message is cut and made one line.
func TestDiagnosePodList(t *testing.T) {
	unschedulable := []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
		Message: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."}}
	ready := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	notReady := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	waiting := func(reason, msg string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
	}
	crashing := waiting("CrashLoopBackOff", "back-off 40s restarting failed container=app")
	crashing.RestartCount = 4
	crashing.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}
	deleting := pod("old-1", corev1.PodRunning, "n1", notReady)
	deleting.DeletionTimestamp = &metav1.Time{}

	for _, tt := range []struct {
		name string
		pods []corev1.Pod
		more bool
		want []string
	}{
		{"nothing wrong", []corev1.Pod{pod("web-1", corev1.PodRunning, "n1", ready), pod("job-1", corev1.PodSucceeded, "n1", nil), deleting}, false, nil},
		{"unschedulable", []corev1.Pod{pod("web-1", corev1.PodPending, "", unschedulable)}, false,
			[]string{"pod web-1: not scheduled: Unschedulable: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."}},
		{"no scheduler yet", []corev1.Pod{pod("web-1", corev1.PodPending, "", nil)}, false, []string{"pod web-1: not scheduled yet"}},
		{"image pull", []corev1.Pod{pod("web-1", corev1.PodPending, "n1", nil, waiting("ImagePullBackOff", `Back-off pulling image "registry.example/web:2"`))}, false,
			[]string{`pod web-1: container app ImagePullBackOff: Back-off pulling image "registry.example/web:2"`}},
		{"crashing", []corev1.Pod{pod("web-1", corev1.PodRunning, "n1", notReady, crashing)}, false,
			[]string{"pod web-1: container app CrashLoopBackOff: back-off 40s restarting failed container=app (last exit 1 Error, 4 restarts)"}},
		{"still creating", []corev1.Pod{pod("web-1", corev1.PodPending, "n1", nil, waiting("ContainerCreating", ""))}, false,
			[]string{"pod web-1: containers not created yet (ContainerCreating)"}},
		{"not ready", []corev1.Pod{pod("web-1", corev1.PodRunning, "n1", notReady,
			corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})}, false,
			[]string{"pod web-1: container app running, not ready (its readiness probe)"}},
		{"failed", []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "job-1"}, Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline"}}}, false,
			[]string{"pod job-1: failed: DeadlineExceeded: Job was active longer than specified deadline"}},
		{"grouped, most first, bounded", []corev1.Pod{
			pod("a-1", corev1.PodPending, "n1", nil, waiting("ErrImagePull", "x")),
			pod("b-1", corev1.PodPending, "", unschedulable), pod("b-2", corev1.PodPending, "", unschedulable), pod("b-3", corev1.PodPending, "", unschedulable),
			pod("c-1", corev1.PodRunning, "n1", notReady, crashing), pod("c-2", corev1.PodRunning, "n1", notReady, crashing),
			pod("d-1", corev1.PodPending, "", nil),
		}, true, []string{
			"3 pods (b-1, ...): not scheduled: Unschedulable: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
			"2 pods (c-1, ...): container app CrashLoopBackOff: back-off 40s restarting failed container=app (last exit 1 Error, 4 restarts)",
			"pod a-1: container app ErrImagePull: x",
			"1 more pod not ready",
			fmt.Sprintf("(only the first %d pods were read)", diagnosePods),
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := diagnosePodList(tt.pods, tt.more, nil); !slices.Equal(got, tt.want) {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}

	long := pod("web-1", corev1.PodPending, "n1", nil, waiting("CreateContainerConfigError", strings.Repeat("é", 400)+"\nsecond line"))
	got := diagnosePodList([]corev1.Pod{long}, false, nil)
	if len(got) != 1 || strings.Contains(got[0], "\n") || !strings.HasSuffix(got[0], "…") || len(got[0]) > diagnoseMessageLen+60 || !utf8Valid(got[0]) {
		t.Errorf("a long message: %q", got)
	}
}

// TestDiagnosePodListExplains: a pod waiting for its containers, or to be
// scheduled without the scheduler's word, is explained by what explain
// says of the first pod of its cause (its events), once per cause; other
// causes are not, and an empty explanation adds nothing.
func TestDiagnosePodListExplains(t *testing.T) {
	creating := corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
	pulling := corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}
	pods := []corev1.Pod{
		pod("web-1", corev1.PodPending, "n1", nil, creating), pod("web-2", corev1.PodPending, "n1", nil, creating),
		pod("web-3", corev1.PodPending, "", nil), pod("web-4", corev1.PodPending, "n1", nil, pulling),
	}
	var asked []string
	explain := func(p *corev1.Pod) string {
		asked = append(asked, p.Name)
		if p.Name == "web-3" {
			return ""
		}
		return `event FailedMount: MountVolume.SetUp failed for volume "config" : configmap "web" not found`
	}
	got := diagnosePodList(pods, false, explain)
	want := []string{
		`2 pods (web-1, ...): containers not created yet (ContainerCreating): event FailedMount: MountVolume.SetUp failed for volume "config" : configmap "web" not found`,
		"pod web-3: not scheduled yet",
		"pod web-4: container app ImagePullBackOff",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	if !slices.Equal(asked, []string{"web-1", "web-3"}) {
		t.Errorf("explained %q, want web-1 and web-3 once each", asked)
	}
}

// TestEventLines: the newest event of each reason first (its series', last
// or event time, whichever it has), one line per reason, at most the
// number asked; the object named when it is not the node's own; messages
// bounded to one line.
func TestEventLines(t *testing.T) {
	at := func(min int) metav1.Time { return metav1.NewTime(time.Date(2026, 12, 1, 10, min, 0, 0, time.UTC)) }
	ev := func(reason, msg string, set func(*corev1.Event)) corev1.Event {
		e := corev1.Event{Reason: reason, Message: msg, Type: corev1.EventTypeWarning}
		set(&e)
		return e
	}
	events := []corev1.Event{
		ev("ProvisioningFailed", "old words", func(e *corev1.Event) { e.LastTimestamp = at(1) }),
		ev("FailedMount", "mount\nfailed", func(e *corev1.Event) { e.EventTime = metav1.NewMicroTime(at(3).Time) }),
		ev("ProvisioningFailed", `storageclass.storage.k8s.io "fast" not found`, func(e *corev1.Event) {
			e.Series = &corev1.EventSeries{Count: 9, LastObservedTime: metav1.NewMicroTime(at(5).Time)}
		}),
		ev("BackOff", "created only", func(e *corev1.Event) { e.CreationTimestamp = at(0) }),
	}
	if got, want := eventLines(slices.Clone(events), "", 3), []string{
		`event ProvisioningFailed: storageclass.storage.k8s.io "fast" not found`,
		"event FailedMount: mount failed",
		"event BackOff: created only",
	}; !slices.Equal(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	if got, want := eventLines(slices.Clone(events), "replicaset web-5d8f", 1), []string{
		`event ProvisioningFailed on replicaset web-5d8f: storageclass.storage.k8s.io "fast" not found`,
	}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := eventLines(nil, "", 3); got != nil {
		t.Errorf("no events: %q", got)
	}
}

// utf8Valid reports whether s is valid UTF-8 (a message cut mid-rune is
// not).
func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// TestPodWorkload: the kinds whose pods are read.
func TestPodWorkload(t *testing.T) {
	for k, want := range map[hub.Kind]bool{hub.KindDeployment: true, "statefulset.apps": true, "daemonset.apps": true,
		"replicaset.apps": true, "job.batch": true, hub.KindConfigMap: false, "cronjob.batch": false, hub.KindService: false} {
		if podWorkload(k) != want {
			t.Errorf("%s: %v, want %v", k, !want, want)
		}
	}
}

package clusters

import (
	"fmt"
	"slices"
	"strings"
	"testing"

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
		{"still creating says nothing", []corev1.Pod{pod("web-1", corev1.PodPending, "n1", nil, waiting("ContainerCreating", ""))}, false, nil},
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
			if got := diagnosePodList(tt.pods, tt.more); !slices.Equal(got, tt.want) {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}

	long := pod("web-1", corev1.PodPending, "n1", nil, waiting("CreateContainerConfigError", strings.Repeat("é", 400)+"\nsecond line"))
	got := diagnosePodList([]corev1.Pod{long}, false)
	if len(got) != 1 || strings.Contains(got[0], "\n") || !strings.HasSuffix(got[0], "…") || len(got[0]) > diagnoseMessageLen+60 || !utf8Valid(got[0]) {
		t.Errorf("a long message: %q", got)
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

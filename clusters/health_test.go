package clusters

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/hub"
)

// TestProgressOf reads the progress of objects as the apiserver returns
// them (status written by the controllers).
func TestProgressOf(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const deadline = 10 * time.Minute
	tests := []struct {
		name string
		obj  string
		want *hub.Progress
	}{
		{name: "Deployment rolling out, in time",
			obj: `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "generation": 2},
			  "spec": {"replicas": 3, "progressDeadlineSeconds": 600},
			  "status": {"observedGeneration": 2, "replicas": 3, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1,
			    "conditions": [
			      {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "lastTransitionTime": "2026-03-01T11:58:00Z"},
			      {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated", "lastTransitionTime": "2026-03-01T11:58:00Z"}]}}`,
			want: &hub.Progress{Ready: 1, Desired: 3, State: "InProgress", Message: "Updated: 1/3"}},
		{name: "Deployment past its progress deadline",
			obj: `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "generation": 1},
			  "spec": {"replicas": 2, "progressDeadlineSeconds": 10},
			  "status": {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "unavailableReplicas": 2,
			    "conditions": [
			      {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "lastTransitionTime": "2026-03-01T11:59:00Z"},
			      {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
			       "message": "ReplicaSet \"web-5d8f\" has timed out progressing.", "lastTransitionTime": "2026-03-01T11:59:10Z"}]}}`,
			want: &hub.Progress{Ready: 0, Desired: 2, State: "Failed", Message: "Progress deadline exceeded",
				Stuck: `ProgressDeadlineExceeded: ReplicaSet "web-5d8f" has timed out progressing.`}},
		{name: "Deployment available",
			obj: `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "generation": 3},
			  "spec": {"replicas": 3, "progressDeadlineSeconds": 600},
			  "status": {"observedGeneration": 3, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
			    "conditions": [
			      {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastTransitionTime": "2026-03-01T10:00:00Z"},
			      {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "lastTransitionTime": "2026-03-01T10:00:00Z"}]}}`,
			want: &hub.Progress{Ready: 3, Desired: 3, State: "Current", Message: "Deployment is available. Replicas: 3"}},
		{name: "Deployment in progress for longer than the deadline (no progress deadline of its own)",
			obj: `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "generation": 1},
			  "spec": {"replicas": 1, "progressDeadlineSeconds": 2147483647},
			  "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1,
			    "conditions": [{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "lastTransitionTime": "2026-03-01T11:00:00Z"}]}}`,
			want: &hub.Progress{Ready: 0, Desired: 1, State: "InProgress", Message: "Available: 0/1", Stuck: "InProgress for 1h0m0s: Available: 0/1"}},
		{name: "Deployment being deleted",
			obj: `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "generation": 1, "deletionTimestamp": "2026-03-01T11:00:00Z"},
			  "spec": {"replicas": 1}, "status": {"observedGeneration": 1}}`,
			want: &hub.Progress{Ready: 0, Desired: 1, State: "Terminating", Message: "Resource scheduled for deletion"}},
		{name: "StatefulSet rolling (no conditions): measured from the last write",
			obj: `{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "generation": 2,
			    "managedFields": [
			      {"manager": "driftwatch", "operation": "Apply", "apiVersion": "apps/v1", "time": "2026-03-01T11:30:00Z", "fieldsType": "FieldsV1", "fieldsV1": {}},
			      {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-03-01T11:59:00Z", "fieldsType": "FieldsV1", "fieldsV1": {}, "subresource": "status"}]},
			  "spec": {"replicas": 2, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}},
			  "status": {"observedGeneration": 2, "replicas": 2, "readyReplicas": 1, "currentReplicas": 1, "updatedReplicas": 1,
			    "currentRevision": "db-1", "updateRevision": "db-2", "availableReplicas": 1}}`,
			want: &hub.Progress{Ready: 1, Desired: 2, State: "InProgress", Message: "Ready: 1/2", Stuck: "InProgress for 30m0s: Ready: 1/2"}},
		{name: "StatefulSet current",
			obj: `{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "generation": 1},
			  "spec": {"replicas": 2, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}},
			  "status": {"observedGeneration": 1, "replicas": 2, "readyReplicas": 2, "currentReplicas": 2, "updatedReplicas": 2,
			    "currentRevision": "db-1", "updateRevision": "db-1", "availableReplicas": 2}}`,
			want: &hub.Progress{Ready: 2, Desired: 2, State: "Current", Message: "Partition rollout complete. updated: 2"}},
		{name: "DaemonSet with a pod not ready",
			obj: `{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "generation": 1},
			  "status": {"observedGeneration": 1, "desiredNumberScheduled": 3, "currentNumberScheduled": 3, "updatedNumberScheduled": 3,
			    "numberAvailable": 3, "numberReady": 2}}`,
			want: &hub.Progress{Ready: 2, Desired: 3, State: "InProgress", Message: "Ready: 2/3"}},
		{name: "Job failed",
			obj: `{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate", "generation": 1},
			  "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0},
			  "status": {"startTime": "2026-03-01T11:50:00Z", "failed": 1,
			    "conditions": [
			      {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded", "lastTransitionTime": "2026-03-01T11:51:00Z"},
			      {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit", "lastTransitionTime": "2026-03-01T11:51:00Z"}]}}`,
			want: &hub.Progress{Ready: 0, Desired: 1, State: "Failed", Message: "Job Failed. failed: 1/1", Stuck: "JobFailed: Job Failed. failed: 1/1"}},
		{name: "Job complete",
			obj: `{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate", "generation": 1},
			  "spec": {"parallelism": 2, "completions": 2},
			  "status": {"startTime": "2026-03-01T11:50:00Z", "succeeded": 2, "completionTime": "2026-03-01T11:52:00Z",
			    "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": "2026-03-01T11:52:00Z"}]}}`,
			want: &hub.Progress{Ready: 2, Desired: 2, State: "Current", Message: "Job Completed. succeeded: 2/2"}},
		{name: "PersistentVolumeClaim pending",
			obj: `{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
			  "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "volumeMode": "Filesystem"},
			  "status": {"phase": "Pending"}}`,
			want: &hub.Progress{State: "InProgress", Message: "PVC is not Bound. phase: Pending"}},
		{name: "PersistentVolumeClaim bound",
			obj: `{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
			  "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}}`,
			want: &hub.Progress{State: "Current", Message: "PVC is Bound"}},
		{name: "custom resource not ready yet",
			obj: `{"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "tls", "generation": 1},
			  "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "DoesNotExist", "message": "Issuing certificate as Secret does not exist",
			    "lastTransitionTime": "2026-03-01T11:55:00Z", "observedGeneration": 1}]}}`,
			want: &hub.Progress{State: "InProgress", Message: "Issuing certificate as Secret does not exist"}},
		{name: "custom resource stalled",
			obj: `{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "generation": 4},
			  "spec": {"replicas": 2},
			  "status": {"observedGeneration": 4, "readyReplicas": 1, "conditions": [
			    {"type": "Stalled", "status": "True", "reason": "InvalidConfig", "message": "port 0 is not valid", "lastTransitionTime": "2026-03-01T11:59:00Z"}]}}`,
			want: &hub.Progress{Ready: 1, Desired: 2, State: "Failed", Message: "port 0 is not valid", Stuck: "InvalidConfig: port 0 is not valid"}},
		{name: "custom resource reconciling for too long",
			obj: `{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "generation": 4},
			  "status": {"observedGeneration": 4, "conditions": [
			    {"type": "Reconciling", "status": "True", "reason": "Progressing", "message": "waiting for listeners", "lastTransitionTime": "2026-03-01T11:00:00Z"}]}}`,
			want: &hub.Progress{State: "InProgress", Message: "waiting for listeners", Stuck: "InProgress for 1h0m0s: waiting for listeners"}},
		{name: "custom resource ready",
			obj: `{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "generation": 4},
			  "status": {"observedGeneration": 4, "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-03-01T11:00:00Z"}]}}`,
			want: &hub.Progress{State: "Current", Message: "Resource is Ready"}},
		{name: "custom resource whose generation is not observed yet",
			obj: `{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "generation": 5},
			  "status": {"observedGeneration": 4}}`,
			want: &hub.Progress{State: "InProgress", Message: "Widget generation is 5, but latest observed generation is 4"}},
		{name: "ConfigMap: no rollout", obj: `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}`},
		{name: "Secret: no rollout", obj: `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "type": "Opaque"}`},
		{name: "CronJob: no rollout",
			obj: `{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "r", "generation": 1},
			  "spec": {"schedule": "0 * * * *"}, "status": {"lastScheduleTime": "2026-03-01T11:00:00Z"}}`},
		{name: "Role: no rollout",
			obj: `{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"}, "rules": []}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON([]byte(tt.obj)); err != nil {
				t.Fatal(err)
			}
			got := progressOf(u, deadline, now)
			switch {
			case got == nil && tt.want == nil:
			case got == nil || tt.want == nil:
				t.Fatalf("progress = %+v, want %+v", got, tt.want)
			case *got != *tt.want:
				t.Fatalf("progress =\n  %+v\nwant\n  %+v", *got, *tt.want)
			}
		})
	}
	if progressOf(nil, deadline, now) != nil {
		t.Error("nil object: want nil")
	}
	// No deadline: never stuck for time.
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(`{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
	  "status": {"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2020-01-01T00:00:00Z"}]}}`)); err != nil {
		t.Fatal(err)
	}
	if p := progressOf(u, 0, now); p == nil || p.Stuck != "" || p.State != "InProgress" {
		t.Errorf("no deadline: %+v", p)
	}
}

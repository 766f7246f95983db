package clusters

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

const diagNS = "diag"

// diagManifests are a Deployment whose pods are selected by app=web and a
// PersistentVolumeClaim: a workload and a kind without pods.
var diagManifests = []string{
	`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: diag}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: registry.example/web:1}]
`,
	`apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: diag}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: fast
  resources: {requests: {storage: 1Gi}}
`,
}

// diagKinds are the kinds of diagManifests beyond the built-in three.
var diagKinds = []schema.GroupVersionKind{{Version: "v1", Kind: "PersistentVolumeClaim"}}

// warnEvent records an event of type typ about obj, as a controller
// would, at the given time.
func warnEvent(t *testing.T, c kubernetes.Interface, typ string, obj corev1.ObjectReference, reason, message string, at time.Time) {
	t.Helper()
	e := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: obj.Name + ".", Namespace: obj.Namespace},
		InvolvedObject: obj, Type: typ, Reason: reason, Message: message,
		FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at), Count: 1,
		Source: corev1.EventSource{Component: "test-controller"},
	}
	if _, err := c.CoreV1().Events(obj.Namespace).Create(t.Context(), e, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// refOf is the event reference of a live object.
func refOf(kind, apiVersion string, m metav1.Object) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: kind, APIVersion: apiVersion, Namespace: m.GetNamespace(), Name: m.GetName(), UID: m.GetUID()}
}

// createDiagObjects creates diagManifests for cluster as driftwatch
// would, through the admin's client, and returns their specs by kind.
func createDiagObjects(t *testing.T, lc *localcluster.Cluster) (dep, pvc hub.NodeSpec, depObj, pvcObj *unstructured.Unstructured) {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(lc.RESTConfig())
	for i, m := range diagManifests {
		s := genericSpec(t, lc.Name, m)
		u, err := kubeobj.Object(s)
		if err != nil {
			t.Fatal(err)
		}
		gvk := u.GroupVersionKind()
		res := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: map[string]string{"Deployment": "deployments", "PersistentVolumeClaim": "persistentvolumeclaims"}[gvk.Kind]}
		live, err := dyn.Resource(res).Namespace(diagNS).Create(t.Context(), u, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			dep, depObj = s, live
		} else {
			pvc, pvcObj = s, live
		}
	}
	return dep, pvc, depObj, pvcObj
}

// diagnoseUntil asks be's Diagnose of spec until it says want (the cache
// may not hold the object yet).
func diagnoseUntil(t *testing.T, be hub.Backend, spec hub.NodeSpec, want []string) {
	t.Helper()
	var got []string
	var err error
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		got, err = be.(hub.Diagnoser).Diagnose(t.Context(), spec)
		if err == nil && slices.Equal(got, want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: diagnosis %q (err %v), want %q", spec.ID, got, err, want)
}

// TestDiagnoseEventsOnARealControlPlane: what pods cannot say, events do,
// on a real apiserver. A claim's Warning events (the newest of each reason
// first; Normal events and another object's are not read); a Deployment
// without pods says its newest ReplicaSet's (a quota refusing its pods:
// an older ReplicaSet's events are not said); a pod that waits for its
// containers says its own (a volume that cannot be mounted).
func TestDiagnoseEventsOnARealControlPlane(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	createNamespace(t, admin, diagNS)
	cc := clusterConfig(lc, diagNS)
	cc.Kinds = diagKinds
	cc.HubID = hub.DefaultHubID
	sink := newRecordingSink()
	r := runRegistry(t, sink, cc)
	sink.waitFor(t, 30*time.Second, "synced", func() bool { return sink.state(lc.Name) == hub.ClusterSynced })
	be, _ := r.Backend(lc.Name)
	dep, pvc, depObj, pvcObj := createDiagObjects(t, lc)
	now := time.Now()

	// Nothing happened yet: nothing to say.
	diagnoseUntil(t, be, pvc, nil)
	claim := refOf("PersistentVolumeClaim", "v1", pvcObj)
	warnEvent(t, admin, corev1.EventTypeWarning, claim, "ProvisioningFailed", `storageclass.storage.k8s.io "slow" not found`, now.Add(-time.Minute))
	warnEvent(t, admin, corev1.EventTypeWarning, claim, "ProvisioningFailed", `storageclass.storage.k8s.io "fast" not found`, now)
	warnEvent(t, admin, corev1.EventTypeNormal, claim, "WaitForFirstConsumer", "waiting for first consumer", now)
	other := claim
	other.Name, other.UID = "elsewhere", types.UID("0000")
	warnEvent(t, admin, corev1.EventTypeWarning, other, "Other", "not this claim", now)
	diagnoseUntil(t, be, pvc, []string{`event ProvisioningFailed: storageclass.storage.k8s.io "fast" not found`})

	// A Deployment without pods: its newest ReplicaSet's events.
	diagnoseUntil(t, be, dep, nil)
	owner := metav1.NewControllerRef(depObj, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	var sets []*appsv1.ReplicaSet
	for rev := 1; rev <= 2; rev++ {
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", rev), Namespace: diagNS, Labels: map[string]string{"app": "web"},
				Annotations: map[string]string{"deployment.kubernetes.io/revision": fmt.Sprint(rev)}, OwnerReferences: []metav1.OwnerReference{*owner}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/web:1"}}}}},
		}
		created, err := admin.AppsV1().ReplicaSets(diagNS).Create(t.Context(), rs, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, created)
	}
	warnEvent(t, admin, corev1.EventTypeWarning, refOf("ReplicaSet", "apps/v1", sets[0]), "FailedCreate", "the old revision's words", now)
	quota := `Error creating: pods "web-2-x7k2p" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=0, limited: pods=0`
	warnEvent(t, admin, corev1.EventTypeWarning, refOf("ReplicaSet", "apps/v1", sets[1]), "FailedCreate", quota, now)
	diagnoseUntil(t, be, dep, []string{"event FailedCreate on replicaset web-2: " + quota})

	// A pod waiting for its containers: the pod's own events.
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-2-abcde", Namespace: diagNS, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: "registry.example/web:1"}}}}
	p, err := admin.CoreV1().Pods(diagNS).Create(t.Context(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "registry.example/web:1",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}
	if p, err = admin.CoreV1().Pods(diagNS).UpdateStatus(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	diagnoseUntil(t, be, dep, []string{"pod web-2-abcde: containers not created yet (ContainerCreating)"})
	mount := `MountVolume.SetUp failed for volume "config" : configmap "web-config" not found`
	warnEvent(t, admin, corev1.EventTypeWarning, refOf("Pod", "v1", p), "FailedMount", mount, now)
	diagnoseUntil(t, be, dep, []string{"pod web-2-abcde: containers not created yet (ContainerCreating): event FailedMount: " + mount})
}

// TestDiagnoseWithoutEventRights: credentials that may read the objects
// and their pods but not events say so in place of the events, for a
// claim and for a Deployment without pods; not an error.
func TestDiagnoseWithoutEventRights(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1, Users: []string{"limited"}})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	createNamespace(t, admin, diagNS)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "no-events", Namespace: diagNS}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services", "configmaps", "persistentvolumeclaims", "pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets"}, Verbs: []string{"get", "list", "watch"}},
	}}
	if _, err := admin.RbacV1().Roles(diagNS).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "no-events", Namespace: diagNS},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "no-events"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "limited", APIGroup: "rbac.authorization.k8s.io"}}}
	if _, err := admin.RbacV1().RoleBindings(diagNS).Create(t.Context(), rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cc := ClusterConfig{ID: lc.Name, Kubeconfig: lc.UserKubeconfig("limited"), Namespaces: []string{diagNS}, Kinds: diagKinds, HubID: hub.DefaultHubID}
	sink := newRecordingSink()
	r := runRegistry(t, sink, cc)
	sink.waitFor(t, 30*time.Second, "synced", func() bool { return sink.state(lc.Name) == hub.ClusterSynced })
	be, _ := r.Backend(lc.Name)
	dep, pvc, _, _ := createDiagObjects(t, lc)
	want := []string{"its events cannot be read: the credentials may not list events in namespace diag (RBAC)"}
	diagnoseUntil(t, be, pvc, want)
	diagnoseUntil(t, be, dep, want)

	// Nor write them: refused, not to be tried again.
	retry, err := be.(*Manager).RecordEvent(t.Context(), pvc.ID, "Normal", "DriftRepaired", "x")
	if !apierrors.IsForbidden(err) || retry || !strings.Contains(err.Error(), "events") {
		t.Errorf("RecordEvent without the right: retry %v, %v", retry, err)
	}
}

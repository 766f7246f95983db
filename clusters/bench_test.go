package clusters

import (
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"log/slog"
	"runtime"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/hub"
)

func cacheTombstone(key string, obj any) cache.DeletedFinalStateUnknown {
	return cache.DeletedFinalStateUnknown{Key: key, Obj: obj}
}

// BenchmarkHandlerToQueue measures the informer-handler path: map an object
// to its NodeID and enqueue it in the hub's workqueue.
func BenchmarkHandlerToQueue(b *testing.B) {
	h := hub.New(hub.Options{})
	const n = 1000
	specs := make([]hub.NodeSpec, n)
	objs := make([]*appsv1.Deployment, n)
	for i := range n {
		name := fmt.Sprintf("app-%d", i)
		id := hub.NewNodeID("c1", "shop", name, hub.KindDeployment)
		specs[i] = hub.NodeSpec{ID: id, Namespace: "shop", Name: name, Kind: hub.KindDeployment, Hash: "x"}
		objs[i] = deployment("shop", name, labelled(nil))
		objs[i].Annotations = map[string]string{kubeobj.NodeIDAnnotation: id.String()}
		objs[i].ResourceVersion = "1"
	}
	h.SetDesired(specs)
	m := newManager(ClusterConfig{ID: "c1"}, h, testLoggerB(), HealthOptions{}, nil)
	handler := m.handler(hub.KindDeployment)
	b.ResetTimer()
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		handler.OnUpdate(objs[i%n], objs[i%n])
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkCachedBytes measures the memory an informer cache holds per
// Deployment and ConfigMap in the compact form the transform builds
// (cachedObject), against keeping the typed objects as they arrive.
func BenchmarkCachedBytes(b *testing.B) {
	for _, compact := range []bool{false, true} {
		for _, kind := range []hub.Kind{hub.KindDeployment, hub.KindConfigMap} {
			b.Run(fmt.Sprintf("%s/compact=%v", kind, compact), func(b *testing.B) {
				info, err := kindOf(kind)
				if err != nil {
					b.Fatal(err)
				}
				shared := &cacheShared{cluster: "c1", namespace: "shop", kind: kind, info: info, managedBy: kubeobj.DefaultManagedBy, hubID: "hub-a"}
				const n = 2000
				var perObj float64
				for b.Loop() {
					store := cache.NewStore(cache.MetaNamespaceKeyFunc)
					before := heapAlloc()
					for i := range n {
						var obj any = sampleObject(string(kind), i)
						if compact {
							if obj, err = shared.compact(obj); err != nil {
								b.Fatal(err)
							}
						}
						_ = store.Add(obj)
					}
					perObj = float64(heapAlloc()-before) / n
					runtime.KeepAlive(store)
				}
				b.ReportMetric(perObj, "bytes/object")
			})
		}
	}
}

func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// sampleObject returns an object shaped like one the apiserver returns for a
// driftwatch-managed object, managedFields included.
func sampleObject(kind string, i int) metav1.Object {
	name := fmt.Sprintf("app-%d", i)
	mf := []metav1.ManagedFieldsEntry{
		{Manager: "driftwatch", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", Time: &metav1.Time{Time: time.Now()}, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{"f:driftwatch.io/node-id":{}},"f:labels":{"f:app":{},"f:app.kubernetes.io/managed-by":{},"f:driftwatch.io/application":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:annotations":{"f:driftwatch.io/config-hash":{}},"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:envFrom":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}}}}}}}}}`)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Time: &metav1.Time{Time: time.Now()}, FieldsType: "FieldsV1", Subresource: "status",
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{".":{},"f:deployment.kubernetes.io/revision":{}}},"f:status":{"f:availableReplicas":{},"f:conditions":{".":{},"k:{\"type\":\"Available\"}":{".":{},"f:lastTransitionTime":{},"f:lastUpdateTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:observedGeneration":{},"f:readyReplicas":{},"f:replicas":{},"f:updatedReplicas":{}}}`)},
	}
	meta := metav1.ObjectMeta{Name: name, Namespace: "shop", UID: "3f1c1e0e-4b7a-4c57-9d35-6c0f0d6f9a11", ResourceVersion: "123456", Generation: 1,
		CreationTimestamp: metav1.Now(), Labels: labelled(map[string]string{"app": name, "driftwatch.io/application": name}),
		Annotations:   map[string]string{kubeobj.NodeIDAnnotation: "c1:shop/" + name + ":" + kind, kubeobj.HubAnnotation: "hub-a"},
		ManagedFields: mf}
	if kind == "configmap" {
		return &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"LOG_LEVEL": "info", "FEATURE_X": "on"}}
	}
	d := deployment("shop", name, meta.Labels)
	d.ObjectMeta = meta
	d.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	d.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
	d.Spec.Template.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
	d.Status = appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, Conditions: []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."}}}
	return d
}

func testLoggerB() *slogLogger { return discardLogger() }

type slogLogger = slog.Logger

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

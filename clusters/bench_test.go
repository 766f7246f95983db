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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/pack"
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
// object as it arrives (form=object), in the compact form the transform
// builds (cachedObject) with its body unpacked (form=compact), and packed
// against the kind's dictionary as the managers keep it (form=packed): a
// Deployment and a ConfigMap (protobuf bodies) and a custom resource (JSON).
func BenchmarkCachedBytes(b *testing.B) {
	for _, form := range []string{"object", "compact", "packed"} {
		for _, kind := range []hub.Kind{hub.KindDeployment, hub.KindConfigMap, widgetKind} {
			b.Run(fmt.Sprintf("%s/form=%s", kind, form), func(b *testing.B) {
				shared := benchShared(b, kind, form == "packed")
				const n = 2000
				var perObj float64
				for b.Loop() {
					store := cache.NewStore(cache.MetaNamespaceKeyFunc)
					before := heapAlloc()
					for i := range n {
						obj := benchObject(kind, i)
						if form != "object" {
							var err error
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

// BenchmarkCachedEncodeDecode measures what the compact cache form costs
// in time: the transform of an arriving object (encode: its body marshalled
// and, when packed, packed) and the decode a reconcile's read does
// (object(): unpacked and unmarshalled).
func BenchmarkCachedEncodeDecode(b *testing.B) {
	for _, packed := range []bool{false, true} {
		for _, kind := range []hub.Kind{hub.KindDeployment, hub.KindConfigMap, widgetKind} {
			shared := benchShared(b, kind, packed)
			// The first object makes the kind's dictionary.
			if _, err := shared.compact(benchObject(kind, 0)); err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%s/packed=%v/encode", kind, packed), func(b *testing.B) {
				const n = 64
				objs := make([]any, n)
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if i%n == 0 {
						b.StopTimer()
						for j := range objs {
							objs[j] = benchObject(kind, 1+j)
						}
						b.StartTimer()
					}
					if _, err := shared.compact(objs[i%n]); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%s/packed=%v/decode", kind, packed), func(b *testing.B) {
				out, err := shared.compact(benchObject(kind, 7))
				if err != nil {
					b.Fatal(err)
				}
				c := out.(*cachedObject)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.object(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// widgetKind is the custom resource of the cache benchmarks.
const widgetKind hub.Kind = "widget.example.com"

// benchShared returns the cacheShared of a kind of the cache benchmarks,
// packing bodies when packed.
func benchShared(b *testing.B, kind hub.Kind, packed bool) *cacheShared {
	b.Helper()
	var info kindInfo
	if kind == widgetKind {
		info = newGenericKind(&meta.RESTMapping{
			Resource:         schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"},
			GroupVersionKind: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"},
			Scope:            meta.RESTScopeNamespace,
		}, nil)
	} else {
		var err error
		if info, err = kindOf(kind); err != nil {
			b.Fatal(err)
		}
	}
	s := &cacheShared{cluster: "c1", namespace: "shop", kind: kind, info: info, managedBy: kubeobj.DefaultManagedBy, hubID: "hub-a", fieldManager: kubeobj.FieldManager}
	if packed {
		s.dicts = &pack.Dicts[hub.Kind]{}
	}
	return s
}

// benchObject returns object i of a kind of the cache benchmarks as an
// informer hands it over.
func benchObject(kind hub.Kind, i int) any {
	if kind == widgetKind {
		u := widget("shop", i)
		u.SetManagedFields(sampleObject("configmap", i).GetManagedFields()[:1])
		return u
	}
	return sampleObject(string(kind), i)
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
	// Strings of their own, as a decode makes them.
	meta := metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID(fmt.Sprintf("3f1c1e0e-4b7a-4c57-9d35-%012d", i)), ResourceVersion: fmt.Sprint(123456 + i), Generation: 1,
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

// BenchmarkCachedEventMeta measures what the informer and the event handler
// read of a cached object at every event: its key, its resource version
// and its NodeID (eventFor).
func BenchmarkCachedEventMeta(b *testing.B) {
	shared := benchShared(b, hub.KindDeployment, true)
	out, err := shared.compact(benchObject(hub.KindDeployment, 1))
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cache.MetaNamespaceKeyFunc(out); err != nil {
			b.Fatal(err)
		}
		acc, err := meta.Accessor(out)
		if err != nil || acc.GetResourceVersion() == "" {
			b.Fatal(err)
		}
		if _, ok := eventFor("c1", hub.KindDeployment, hub.EventUpdated, out, now); !ok {
			b.Fatal("no event")
		}
	}
}

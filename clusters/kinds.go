package clusters

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/hub"
)

// kindInfo is everything kind-specific the watch manager and the backend
// need about one managed kind. Adding a kind means adding an entry to
// kindTable (and the kind to hub.Kinds); nothing else switches on kinds.
type kindInfo struct {
	// gvk is the kind's apiVersion and kind, set on converted objects.
	gvk schema.GroupVersionKind
	// resource is the plural resource name, for messages ("deployments").
	resource string
	// newInformer returns a new informer of the kind in one namespace,
	// without indexers (the watch caches are only read by namespace/name).
	newInformer func(c kubernetes.Interface, namespace string, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer
	// newObject returns an empty typed object of the kind, which the
	// compact cache form decodes its body into.
	newObject func() protoObject
	// dropStatus clears the status of a typed object of the kind (the
	// compact cache form keeps the Progress, not the status); nil for kinds
	// without one.
	dropStatus func(obj runtime.Object)
	// client returns the kind's typed client in a namespace.
	client func(c kubernetes.Interface, namespace string) kindClient
	// progress reads the rollout progress of a typed object of the kind;
	// nil for kinds without one.
	progress func(obj runtime.Object) *hub.Progress

	// namespaced is false for a cluster-scoped kind (only generic kinds
	// may be: the typed three are namespaced).
	namespaced bool
	// generic marks a kind outside kindTable, served by the dynamic client
	// (dynamicClient and newDynamicInformer instead of client and
	// newInformer; see generic.go).
	generic            bool
	dynamicClient      func(namespace string) kindClient
	newDynamicInformer func(namespace string, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer
}

// gvr is the kind's group, version and resource.
func (k kindInfo) gvr() schema.GroupVersionResource {
	return k.gvk.GroupVersion().WithResource(k.resource)
}

// kindTable holds one entry per managed kind. It is never written.
var kindTable = map[hub.Kind]kindInfo{
	hub.KindDeployment: {
		namespaced: true,
		gvk:        appsv1.SchemeGroupVersion.WithKind("Deployment"),
		resource:   "deployments",
		newInformer: func(c kubernetes.Interface, ns string, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
			return appsinformers.NewFilteredDeploymentInformer(c, ns, 0, cache.Indexers{}, tweak)
		},
		newObject: func() protoObject { return &appsv1.Deployment{} },
		dropStatus: func(obj runtime.Object) {
			if d, ok := obj.(*appsv1.Deployment); ok {
				d.Status = appsv1.DeploymentStatus{}
			}
		},
		client: func(c kubernetes.Interface, ns string) kindClient {
			return typedClient[*appsv1.Deployment]{c.AppsV1().Deployments(ns)}
		},
		progress: deploymentProgress,
	},
	hub.KindService: {
		namespaced: true,
		gvk:        corev1.SchemeGroupVersion.WithKind("Service"),
		resource:   "services",
		newInformer: func(c kubernetes.Interface, ns string, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
			return coreinformers.NewFilteredServiceInformer(c, ns, 0, cache.Indexers{}, tweak)
		},
		newObject: func() protoObject { return &corev1.Service{} },
		dropStatus: func(obj runtime.Object) {
			if s, ok := obj.(*corev1.Service); ok {
				s.Status = corev1.ServiceStatus{}
			}
		},
		client: func(c kubernetes.Interface, ns string) kindClient {
			return typedClient[*corev1.Service]{c.CoreV1().Services(ns)}
		},
	},
	hub.KindConfigMap: {
		namespaced: true,
		gvk:        corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		resource:   "configmaps",
		newInformer: func(c kubernetes.Interface, ns string, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
			return coreinformers.NewFilteredConfigMapInformer(c, ns, 0, cache.Indexers{}, tweak)
		},
		newObject: func() protoObject { return &corev1.ConfigMap{} },
		client: func(c kubernetes.Interface, ns string) kindClient {
			return typedClient[*corev1.ConfigMap]{c.CoreV1().ConfigMaps(ns)}
		},
	},
}

// kindOf returns the table entry of a kind.
func kindOf(k hub.Kind) (kindInfo, error) {
	info, ok := kindTable[k]
	if !ok {
		return kindInfo{}, fmt.Errorf("unsupported kind %q", k)
	}
	return info, nil
}

// resourceOf returns the resource name of a kind, for messages.
func resourceOf(k hub.Kind) string {
	if info, ok := kindTable[k]; ok {
		return info.resource
	}
	return string(k)
}

// toUnstructured converts a typed object of the kind to unstructured content
// with its apiVersion and kind set. The result shares nothing with obj, so
// obj may be a cached object.
func (k kindInfo) toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	switch o := obj.(type) {
	case *jsonObject:
		u := o.Unstructured.DeepCopy()
		u.SetGroupVersionKind(k.gvk)
		return u, nil
	case *unstructured.Unstructured:
		u := o.DeepCopy()
		u.SetGroupVersionKind(k.gvk)
		return u, nil
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(k.gvk)
	return u, nil
}

// protoObject is a typed Kubernetes object with its generated protobuf
// encoding: the compact cache form keeps objects as these bytes.
type protoObject interface {
	runtime.Object
	metav1.Object
	Marshal() ([]byte, error)
	Unmarshal(data []byte) error
}

// kindClient is a typed client of one kind in one namespace, with results
// as runtime.Object.
type kindClient interface {
	get(ctx context.Context, name string) (runtime.Object, error)
	patch(ctx context.Context, name string, pt types.PatchType, body []byte, opts metav1.PatchOptions) (runtime.Object, error)
	delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// typedInterface is the part of a client-go typed client driftwatch uses.
type typedInterface[T runtime.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// typedClient adapts a client-go typed client (protobuf on the wire) to
// kindClient.
type typedClient[T runtime.Object] struct{ c typedInterface[T] }

func (t typedClient[T]) get(ctx context.Context, name string) (runtime.Object, error) {
	obj, err := t.c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return obj, nil
}

func (t typedClient[T]) patch(ctx context.Context, name string, pt types.PatchType, body []byte, opts metav1.PatchOptions) (runtime.Object, error) {
	obj, err := t.c.Patch(ctx, name, pt, body, opts)
	if err != nil {
		return nil, err
	}
	return obj, nil
}

func (t typedClient[T]) delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return t.c.Delete(ctx, name, opts)
}

// progressDeadlineExceeded is the reason of a Deployment's Progressing=False
// condition once its rollout exceeded progressDeadlineSeconds.
const progressDeadlineExceeded = "ProgressDeadlineExceeded"

// deploymentProgress reads a Deployment's ready and desired replicas, and
// whether its rollout exceeded its progress deadline.
func deploymentProgress(obj runtime.Object) *hub.Progress {
	d, ok := obj.(*appsv1.Deployment)
	if !ok || d == nil {
		return nil
	}
	p := &hub.Progress{Desired: 1, Ready: d.Status.ReadyReplicas}
	if d.Spec.Replicas != nil {
		p.Desired = *d.Spec.Replicas
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == progressDeadlineExceeded {
			p.Stuck = progressDeadlineExceeded + ": " + c.Message
		}
	}
	return p
}

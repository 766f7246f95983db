package localcluster_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

const (
	managedByKey   = "app.kubernetes.io/managed-by"
	managedByValue = "driftwatch"
	imageV1        = "registry.example/app:1"
	imageV2        = "registry.example/app:2"
	waitTimeout    = 90 * time.Second
)

func TestThreeClusters(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 3, Full: true})
	for _, c := range set.Clusters {
		t.Logf("control plane %s: time to ready %v", c.Name, c.StartupTime.Round(time.Millisecond))
	}
	logMemory(t, set)
	for _, c := range set.Clusters {
		// Starting etcd and kube-apiserver takes seconds of CPU.
		if cpu, err := c.CPUTime(); err != nil || cpu <= 0 {
			t.Fatalf("cluster %s: CPUTime = %v, %v", c.Name, cpu, err)
		}
	}
	for _, c := range set.Clusters {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("component logs:\n%s", c.Logs())
				}
			})
			exerciseCluster(t, c)
		})
	}
}

// exerciseCluster creates managed objects and one unmanaged ConfigMap,
// watches them through a label-filtered informer, edits and deletes them
// with a second client and waits for the Deployment to run on kwok nodes.
func exerciseCluster(t *testing.T, c *localcluster.Cluster) {
	ctx := t.Context()
	cs := newClientset(t, c)
	ns := createNamespace(t, cs)

	events := &eventLog{}
	informerCtx, stopInformers := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = managedByKey + "=" + managedByValue
		}))
	for kind, inf := range map[string]cache.SharedIndexInformer{
		"Deployment": factory.Apps().V1().Deployments().Informer(),
		"Service":    factory.Core().V1().Services().Informer(),
		"ConfigMap":  factory.Core().V1().ConfigMaps().Informer(),
	} {
		if _, err := inf.AddEventHandler(events.handler(kind)); err != nil {
			t.Fatal(err)
		}
	}
	factory.Start(informerCtx.Done())
	t.Cleanup(func() {
		stopInformers()
		factory.Shutdown() // waits for the informer goroutines
	})
	for typ, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}

	labels := map[string]string{managedByKey: managedByValue}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "app",
					Image: imageV1,
					Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
				}}},
			},
		},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: labels},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "web-config", Labels: labels},
		Data:       map[string]string{"greeting": "hello"},
	}
	stray := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "stray"},
		Data:       map[string]string{"managed": "no"},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, stray, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"Deployment", "Service", "ConfigMap"} {
		events.waitFor(t, "ADDED "+kind, func(e event) bool { return e.typ == "ADDED" && e.kind == kind })
	}

	// Someone else edits the Deployment and deletes the ConfigMap.
	edit := c.RESTConfig()
	edit.UserAgent = "kubectl-edit"
	editor, err := kubernetes.NewForConfig(edit)
	if err != nil {
		t.Fatal(err)
	}
	if err := editor.CoreV1().ConfigMaps(ns).Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := editor.AppsV1().Deployments(ns).Get(ctx, deploy.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = imageV2
		_, err = editor.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	events.waitFor(t, "DELETED ConfigMap", func(e event) bool {
		return e.typ == "DELETED" && e.kind == "ConfigMap" && e.name == cm.Name
	})
	edited := events.waitFor(t, "MODIFIED Deployment with the new image", func(e event) bool {
		d, ok := e.obj.(*appsv1.Deployment)
		return e.typ == "MODIFIED" && ok && d.Spec.Template.Spec.Containers[0].Image == imageV2
	})
	if !hasManager(edited.obj.(*appsv1.Deployment).ManagedFields, "kubectl-edit") {
		t.Errorf("managedFields of the edited Deployment lack manager kubectl-edit: %+v", edited.obj.(*appsv1.Deployment).ManagedFields)
	}

	// The controller manager, scheduler and kwok roll the edit out.
	events.waitFor(t, "Deployment Available with 2 ready replicas of the new image", func(e event) bool {
		d, ok := e.obj.(*appsv1.Deployment)
		return ok && e.typ != "DELETED" && deploymentRolledOut(d, imageV2, 2)
	})
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Spec.Containers[0].Image != imageV2 {
			continue
		}
		if p.Status.Phase != corev1.PodRunning || !strings.HasPrefix(p.Spec.NodeName, "kwok-node-") {
			t.Errorf("pod %s: phase %s on node %q, want Running on a kwok node", p.Name, p.Status.Phase, p.Spec.NodeName)
			continue
		}
		node, err := cs.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if node.Labels["type"] != "kwok" {
			t.Errorf("node %s labels %v, want type=kwok", node.Name, node.Labels)
		}
		running++
	}
	if running != 2 {
		t.Errorf("%d running pods of the new image, want 2", running)
	}

	// The unlabelled ConfigMap exists but the informer never saw it.
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, stray.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("get unlabelled ConfigMap: %v", err)
	}
	if _, err := factory.Core().V1().ConfigMaps().Lister().ConfigMaps(ns).Get(stray.Name); !apierrors.IsNotFound(err) {
		t.Errorf("informer cache holds the unlabelled ConfigMap (err %v)", err)
	}
	for _, e := range events.all() {
		if e.name == stray.Name {
			t.Errorf("informer saw the unlabelled ConfigMap: %s", e)
		}
	}
}

func deploymentRolledOut(d *appsv1.Deployment, image string, replicas int32) bool {
	if d.Spec.Template.Spec.Containers[0].Image != image || d.Status.ObservedGeneration < d.Generation {
		return false
	}
	s := d.Status
	if s.Replicas != replicas || s.UpdatedReplicas != replicas || s.ReadyReplicas != replicas || s.AvailableReplicas != replicas {
		return false
	}
	for _, c := range s.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func hasManager(fields []metav1.ManagedFieldsEntry, manager string) bool {
	for _, f := range fields {
		if f.Manager == manager {
			return true
		}
	}
	return false
}

// event is one informer notification.
type event struct {
	typ  string // ADDED, MODIFIED, DELETED
	kind string
	name string
	obj  any
}

func (e event) String() string { return e.typ + " " + e.kind + " " + e.name }

// eventLog records informer notifications; waitFor polls it.
type eventLog struct {
	mu     sync.Mutex
	events []event
}

func (l *eventLog) add(e event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *eventLog) all() []event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]event(nil), l.events...)
}

func (l *eventLog) handler(kind string) cache.ResourceEventHandler {
	name := func(obj any) string {
		if m, err := metaAccessor(obj); err == nil {
			return m
		}
		return "?"
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { l.add(event{typ: "ADDED", kind: kind, name: name(obj), obj: obj}) },
		UpdateFunc: func(_, obj any) {
			l.add(event{typ: "MODIFIED", kind: kind, name: name(obj), obj: obj})
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			l.add(event{typ: "DELETED", kind: kind, name: name(obj), obj: obj})
		},
	}
}

func metaAccessor(obj any) (string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return "", fmt.Errorf("%T is not an object", obj)
	}
	return m.GetName(), nil
}

// waitFor returns the first recorded event matching pred, waiting up to
// waitTimeout for it.
func (l *eventLog) waitFor(t *testing.T, what string, pred func(event) bool) event {
	t.Helper()
	var found event
	testwait.For(t, waitTimeout, what, func() error {
		var seen []string
		for _, e := range l.all() {
			if pred(e) {
				found = e
				return nil
			}
			seen = append(seen, e.String())
		}
		return fmt.Errorf("events: %v", seen)
	})
	return found
}

func newClientset(t testing.TB, c *localcluster.Cluster) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// createNamespace creates a fresh namespace and returns its name.
func createNamespace(t testing.TB, cs kubernetes.Interface) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "lc-test-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// logMemory logs the resident memory of each cluster's components (Linux).
func logMemory(t *testing.T, set *localcluster.Set) {
	for _, c := range set.Clusters {
		var parts []string
		total := 0
		for name, pid := range localcluster.PIDs(c) {
			kb := rssKiB(pid)
			if kb == 0 {
				return // no /proc here
			}
			total += kb
			parts = append(parts, fmt.Sprintf("%s %d MiB", name, kb/1024))
		}
		t.Logf("cluster %s memory: %d MiB RSS (%s)", c.Name, total/1024, strings.Join(parts, ", "))
	}
}

// rssKiB returns VmRSS of pid from /proc, or 0.
func rssKiB(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}

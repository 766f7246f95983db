package clusters

import (
	"context"
	"errors"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/conc"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// fastHealth makes outages visible within a second or two.
var fastHealth = HealthOptions{Interval: 500 * time.Millisecond, RetryInterval: 200 * time.Millisecond, Timeout: time.Second, FailureThreshold: 3, ReportInterval: 200 * time.Millisecond}

// runRegistry starts a registry and stops it (waiting for it) at cleanup.
func runRegistry(t *testing.T, sink hub.Sink, cfgs ...ClusterConfig) *Registry {
	t.Helper()
	r := NewRegistry(sink, RegistryOptions{Logger: testLogger(t), Health: fastHealth, MinBackoff: 200 * time.Millisecond, MaxBackoff: time.Second})
	for _, c := range cfgs {
		if err := r.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	wg.Go(func() { _ = r.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return r
}

func labelled(extra map[string]string) map[string]string {
	l := map[string]string{kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

func createNamespace(t testing.TB, c kubernetes.Interface, name string) {
	t.Helper()
	if _, err := c.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func deployment(ns, name string, lbls map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: lbls},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
			},
		},
	}
}

func clusterConfig(lc *localcluster.Cluster, namespaces ...string) ClusterConfig {
	return ClusterConfig{ID: lc.Name, Kubeconfig: lc.Kubeconfig, Namespaces: namespaces}
}

// TestWatchThreeClusters: an external delete, edit and label removal of a
// managed object each produce the right event for the right NodeID on every
// cluster; objects without the label never do.
func TestWatchThreeClusters(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 3})
	sink := newRecordingSink()
	var cfgs []ClusterConfig
	for _, lc := range set.Clusters {
		cfgs = append(cfgs, clusterConfig(lc, "shop"))
		createNamespace(t, kubernetes.NewForConfigOrDie(lc.RESTConfig()), "shop")
	}
	r := runRegistry(t, sink, cfgs...)
	sink.waitFor(t, 30*time.Second, "all clusters synced", func() bool {
		for _, lc := range set.Clusters {
			if sink.state(lc.Name) != hub.ClusterSynced {
				return false
			}
		}
		return true
	})
	if got := r.IDs(); len(got) != 3 {
		t.Fatalf("IDs = %v", got)
	}
	for _, lc := range set.Clusters {
		t.Run(lc.Name, func(t *testing.T) {
			c := kubernetes.NewForConfigOrDie(lc.RESTConfig())
			ctx := t.Context()
			dep := deployment("shop", "web", labelled(nil))
			dep.Annotations = map[string]string{kubeobj.NodeIDAnnotation: lc.Name + ":shop/web:deployment"}
			if _, err := c.AppsV1().Deployments("shop").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Labels: labelled(nil)},
				Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}
			if _, err := c.CoreV1().Services("shop").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Labels: labelled(nil)}, Data: map[string]string{"a": "1"}}
			if _, err := c.CoreV1().ConfigMaps("shop").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "foreign", Namespace: "shop"}, Data: map[string]string{"a": "1"}}
			if _, err := c.CoreV1().ConfigMaps("shop").Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			depID := hub.NewNodeID(lc.Name, "shop", "web", hub.KindDeployment)
			svcID := hub.NewNodeID(lc.Name, "shop", "web", hub.KindService)
			cmID := hub.NewNodeID(lc.Name, "shop", "web", hub.KindConfigMap)
			sink.waitFor(t, 10*time.Second, "added events", func() bool {
				return sink.hasEvent(depID, hub.EventAdded) && sink.hasEvent(svcID, hub.EventAdded) && sink.hasEvent(cmID, hub.EventAdded)
			})
			// External edit, delete and label removal from a second client.
			edit := kubernetes.NewForConfigOrDie(lc.RESTConfig())
			patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"registry.example/app:2"}]}}}}`)
			if _, err := edit.AppsV1().Deployments("shop").Patch(ctx, "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
				t.Fatal(err)
			}
			if err := edit.CoreV1().ConfigMaps("shop").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			unlabel := []byte(`{"metadata":{"labels":{"` + kubeobj.ManagedByLabel + `":null}}}`)
			if _, err := edit.CoreV1().Services("shop").Patch(ctx, "web", types.StrategicMergePatchType, unlabel, metav1.PatchOptions{FieldManager: "kubectl-label"}); err != nil {
				t.Fatal(err)
			}
			_, _ = edit.CoreV1().ConfigMaps("shop").Patch(ctx, "foreign", types.MergePatchType, []byte(`{"data":{"b":"2"}}`), metav1.PatchOptions{})
			sink.waitFor(t, 10*time.Second, "updated, deleted and unlabelled events", func() bool {
				return sink.hasEvent(depID, hub.EventUpdated) && sink.hasEvent(cmID, hub.EventDeleted) && sink.hasEvent(svcID, hub.EventDeleted)
			})
			sink.mu.Lock()
			defer sink.mu.Unlock()
			for _, e := range sink.events {
				if strings.Contains(e.ID.Resource, "foreign") {
					t.Errorf("event for an unlabelled object: %+v", e)
				}
				if e.ID.Cluster == lc.Name && e.ObservedAt.IsZero() {
					t.Errorf("event without time: %+v", e)
				}
			}
		})
	}
}

// TestOutageAndRecovery: stopping one cluster's apiserver makes it
// unreachable while the others keep delivering events; starting it again
// returns it to synced with a new generation.
func TestOutageAndRecovery(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 3})
	sink := newRecordingSink()
	var cfgs []ClusterConfig
	for _, lc := range set.Clusters {
		cfgs = append(cfgs, clusterConfig(lc, "ops"))
		createNamespace(t, kubernetes.NewForConfigOrDie(lc.RESTConfig()), "ops")
	}
	runRegistry(t, sink, cfgs...)
	allSynced := func() bool {
		for _, lc := range set.Clusters {
			if sink.state(lc.Name) != hub.ClusterSynced {
				return false
			}
		}
		return true
	}
	sink.waitFor(t, 30*time.Second, "all synced", allSynced)
	down := set.Clusters[1]
	sink.mu.Lock()
	gen := sink.health[down.Name].Generation
	sink.mu.Unlock()
	if err := down.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	sink.waitFor(t, 20*time.Second, down.Name+" unreachable", func() bool { return sink.state(down.Name) == hub.ClusterUnreachable })
	sink.mu.Lock()
	if msg := sink.health[down.Name].LastError; !strings.Contains(msg, down.Name) {
		t.Errorf("unreachable error %q does not name the cluster", msg)
	}
	sink.mu.Unlock()
	// The others keep delivering events.
	for _, i := range []int{0, 2} {
		lc := set.Clusters[i]
		c := kubernetes.NewForConfigOrDie(lc.RESTConfig())
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "during-outage", Namespace: "ops", Labels: labelled(nil)}}
		if _, err := c.CoreV1().ConfigMaps("ops").Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		id := hub.NewNodeID(lc.Name, "ops", "during-outage", hub.KindConfigMap)
		sink.waitFor(t, 10*time.Second, "event from "+lc.Name, func() bool { return sink.hasEvent(id, hub.EventAdded) })
	}
	if err := down.StartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	sink.waitFor(t, 60*time.Second, down.Name+" synced again", func() bool {
		h := sink.health[down.Name]
		return h.State == hub.ClusterSynced && h.Generation > gen
	})
	// And its watches work again.
	c := kubernetes.NewForConfigOrDie(down.RESTConfig())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-outage", Namespace: "ops", Labels: labelled(nil)}}
	if _, err := c.CoreV1().ConfigMaps("ops").Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	id := hub.NewNodeID(down.Name, "ops", "after-outage", hub.KindConfigMap)
	sink.waitFor(t, 40*time.Second, "event after recovery", func() bool { return sink.hasEvent(id, hub.EventAdded) })
}

// TestRBACDegraded: a user who may not watch Deployments makes the cluster
// degraded with a message naming the cluster, verb, resource and namespace;
// another cluster is unaffected.
func TestRBACDegraded(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 2, Users: []string{"limited"}})
	limited, ok := set.Clusters[0], true
	_ = ok
	admin := kubernetes.NewForConfigOrDie(limited.RESTConfig())
	createNamespace(t, admin, "team")
	createNamespace(t, kubernetes.NewForConfigOrDie(set.Clusters[1].RESTConfig()), "team")
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "partial", Namespace: "team"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services", "configmaps"}, Verbs: []string{"get", "list", "watch"}},
	}}
	if _, err := admin.RbacV1().Roles("team").Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "partial", Namespace: "team"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "partial"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "limited", APIGroup: "rbac.authorization.k8s.io"}}}
	if _, err := admin.RbacV1().RoleBindings("team").Create(t.Context(), rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sink := newRecordingSink()
	runRegistry(t, sink,
		ClusterConfig{ID: limited.Name, Kubeconfig: limited.UserKubeconfig("limited"), Namespaces: []string{"team"}},
		clusterConfig(set.Clusters[1], "team"))
	sink.waitFor(t, 30*time.Second, "degraded and synced", func() bool {
		return sink.state(limited.Name) == hub.ClusterDegraded && sink.state(set.Clusters[1].Name) == hub.ClusterSynced
	})
	sink.mu.Lock()
	msg := sink.health[limited.Name].LastError
	sink.mu.Unlock()
	for _, want := range []string{`cluster "` + limited.Name + `"`, "forbidden", "deployments", `namespace "team"`, "list"} {
		if !strings.Contains(msg, want) {
			t.Errorf("degraded error %q does not mention %q", msg, want)
		}
	}
}

// TestBackend exercises the backend contract on a real apiserver: a missing
// object is read, classified and created (with its namespace); cached and
// fresh reads agree and never hand out the cache's objects; an edit and an
// added env var by another manager are classified, attributed to that
// manager and repaired (the env var removed, the conflict reported); a
// removed label is told from a delete by the repair's Class; Delete refuses
// objects without our label and honours its preconditions.
func TestBackend(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	sink := newRecordingSink()
	cc := clusterConfig(lc, "apps")
	cc.HubID = "hub-a"
	r := runRegistry(t, sink, cc)
	sink.waitFor(t, 30*time.Second, "synced", func() bool { return sink.state(lc.Name) == hub.ClusterSynced })
	be, ok := r.Backend(lc.Name)
	if !ok {
		t.Fatal("no backend")
	}
	ctx := t.Context()
	c := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	dep := deployment("apps", "api", labelled(nil))
	dep.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	dep.Annotations = map[string]string{
		kubeobj.NodeIDAnnotation: hub.NewNodeID(lc.Name, "apps", "api", hub.KindDeployment).String(),
		kubeobj.HubAnnotation:    "hub-a",
	}
	content, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(dep)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(obj.Object, "spec", "template", "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(obj.Object, "spec", "strategy")
	unstructured.RemoveNestedField(obj.Object, "status")
	unstructured.RemoveNestedField(obj.Object, "spec", "template", "spec", "containers")
	_ = unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"name": "app", "image": "registry.example/app:1"}}, "spec", "template", "spec", "containers")
	spec := hub.NodeSpec{ID: hub.NewNodeID(lc.Name, "apps", "api", hub.KindDeployment), Namespace: "apps", Name: "api", Kind: hub.KindDeployment, Body: kubeobj.MustEncodeBody(obj)}

	// read, classify and repair in one step, as the loop does.
	readDetect := func(t *testing.T, fresh bool) (hub.State, hub.Drift) {
		t.Helper()
		st, err := be.ReadState(ctx, spec, fresh)
		if err != nil {
			t.Fatal(err)
		}
		d, err := be.DetectDrift(ctx, spec, st)
		if err != nil {
			t.Fatal(err)
		}
		return st, d
	}
	events := func(typ hub.EventType) int { // call with sink.mu held
		n := 0
		for _, e := range sink.events {
			if e.ID == spec.ID && e.Type == typ {
				n++
			}
		}
		return n
	}
	cachedVersion := func(version string) func() bool { // call with sink.mu held
		return func() bool {
			for _, e := range sink.events {
				if e.ID == spec.ID && e.ResourceVersion == version {
					return true
				}
			}
			return false
		}
	}
	liveOf := func(t *testing.T, st hub.State) *unstructured.Unstructured {
		t.Helper()
		u := LiveObject(st)
		if u == nil {
			t.Fatalf("Live is %T", st.Live)
		}
		return u
	}

	t.Run("missing", func(t *testing.T) {
		st, d := readDetect(t, true)
		if st.Exists || !st.Fresh || d.Class != hub.DriftMissing {
			t.Fatalf("state %+v, drift %s", st, d.Summary())
		}
		// The namespace does not exist yet: Repair creates it.
		res, err := be.Repair(ctx, spec, st, d)
		if err != nil {
			t.Fatal(err)
		}
		if res.Version == "" || res.Action != "apply" || len(res.Conflicts) != 0 || res.Class != "" {
			t.Fatalf("repair = %+v", res)
		}
		sink.waitFor(t, 10*time.Second, "the applied version in the cache", cachedVersion(res.Version))
	})

	t.Run("cached and fresh reads", func(t *testing.T) {
		cached, d := readDetect(t, false)
		if !cached.Exists || cached.Fresh || !cached.Owned || cached.Deleting || cached.Version == "" || !d.InSync() {
			t.Fatalf("cached state %+v, drift %s", cached, d.Summary())
		}
		if cached.Progress == nil || cached.Progress.Desired != 1 || cached.Progress.Stuck != "" {
			t.Fatalf("progress = %+v", cached.Progress)
		}
		live := liveOf(t, cached)
		if live.GetKind() != "Deployment" || live.GetAPIVersion() != "apps/v1" || len(live.GetManagedFields()) != 0 || live.GetUID() == "" {
			t.Fatalf("cached live object: %s %s, %d managedFields, uid %q", live.GetAPIVersion(), live.GetKind(), len(live.GetManagedFields()), live.GetUID())
		}
		// The state holds a copy: changing it leaves the cache alone.
		live.SetLabels(nil)
		_ = unstructured.SetNestedField(live.Object, int64(9), "spec", "replicas")
		again, d := readDetect(t, false)
		if !again.Owned || !d.InSync() {
			t.Fatalf("the cache changed with the state: %+v %s", again, d.Summary())
		}
		fresh, d := readDetect(t, true)
		if !fresh.Exists || !fresh.Fresh || !fresh.Owned || fresh.Version != cached.Version || !d.InSync() {
			t.Fatalf("fresh state %+v (cached version %s), drift %s", fresh, cached.Version, d.Summary())
		}
		if len(liveOf(t, fresh).GetManagedFields()) != 0 {
			t.Error("fresh read holds managedFields")
		}
	})

	t.Run("modified and added", func(t *testing.T) {
		// Another manager changes the image and adds an env var.
		patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"evil:1","env":[{"name":"DEBUG","value":"true"}]}]}}}}`)
		edited, err := c.AppsV1().Deployments("apps").Patch(ctx, "api", types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{"spec.template.spec.containers[app].image": false, "spec.template.spec.containers[app].env[DEBUG]": true}
		checkDrift := func(t *testing.T, d hub.Drift) {
			t.Helper()
			if d.Class != hub.DriftModified || len(d.Fields) != 2 {
				t.Fatalf("drift = %s", d.Summary())
			}
			for _, f := range d.Fields {
				if added, ok := want[f.Path]; !ok || added != f.Added {
					t.Fatalf("drift = %s", d.Summary())
				}
			}
		}
		// The cache holds the edit in its compact form: no status, none of
		// our managedFields, but the entry of the manager that edited the
		// spec; detection from it finds the same drift.
		sink.waitFor(t, 10*time.Second, "the edit in the cache", cachedVersion(edited.ResourceVersion))
		item, ok, err := be.(*Manager).informerFor("apps", hub.KindDeployment).GetIndexer().GetByKey("apps/api")
		if err != nil || !ok {
			t.Fatalf("cached item: %v, %v", ok, err)
		}
		co, ok := item.(*cachedObject)
		if !ok {
			t.Fatalf("the cache holds %T, not the compact form", item)
		}
		if len(co.body()) >= edited.Size() {
			t.Errorf("cached body %d bytes, the object %d: not compact", len(co.body()), edited.Size())
		}
		decoded, err := co.object()
		if err != nil {
			t.Fatal(err)
		}
		if mf := decoded.GetManagedFields(); len(mf) != 1 || mf[0].Manager != "kubectl-edit" {
			t.Errorf("cached managedFields = %v, want kubectl-edit's entry only", managers(mf))
		}
		if len(edited.ManagedFields) < 2 {
			t.Errorf("the live object's managedFields = %v, want ours and kubectl-edit's", managers(edited.ManagedFields))
		}
		cachedSt, cd := readDetect(t, false)
		if cachedSt.Fresh || cachedSt.Version != edited.ResourceVersion {
			t.Fatalf("cached state %+v, want version %s", cachedSt, edited.ResourceVersion)
		}
		checkDrift(t, cd)
		// Attribution reads the entries the cache kept (ours it skips).
		if a, err := be.Attribute(ctx, spec, cachedSt, cd); err != nil || a == nil || a.Manager != "kubectl-edit" {
			t.Fatalf("attribution from a cached drift = %+v, %v", a, err)
		}
		st, d := readDetect(t, true)
		checkDrift(t, d)
		a, err := be.Attribute(ctx, spec, st, d)
		if err != nil {
			t.Fatal(err)
		}
		if a == nil || a.Manager != "kubectl-edit" || a.Operation != "Update" || a.At.IsZero() || len(a.Fields) != 2 {
			t.Fatalf("attribution = %+v", a)
		}
		res, err := be.Repair(ctx, spec, st, d)
		if err != nil {
			t.Fatal(err)
		}
		if res.Action != "remove+apply" || res.Version == "" || res.Class != "" {
			t.Fatalf("repair = %+v", res)
		}
		if len(res.Conflicts) != 1 || res.Conflicts[0].Manager != "kubectl-edit" || !strings.Contains(res.Conflicts[0].Field, "image") {
			t.Fatalf("conflicts = %+v, want kubectl-edit's image", res.Conflicts)
		}
		after, d := readDetect(t, true)
		if !d.InSync() || after.Version != res.Version {
			t.Fatalf("after repair: %s (version %s, repair returned %s)", d.Summary(), after.Version, res.Version)
		}
		if env, found, _ := unstructured.NestedFieldNoCopy(liveOf(t, after).Object, "spec", "template", "spec", "containers"); !found || strings.Contains(fmt.Sprint(env), "DEBUG") {
			t.Fatalf("containers after repair: %v", env)
		}
		sink.waitFor(t, 10*time.Second, "the repaired version in the cache", cachedVersion(res.Version))
	})

	t.Run("scaled", func(t *testing.T) {
		if _, err := c.AppsV1().Deployments("apps").Patch(ctx, "api", types.MergePatchType, []byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{FieldManager: "kubectl-scale"}); err != nil {
			t.Fatal(err)
		}
		st, d := readDetect(t, true)
		if d.Class != hub.DriftModified || d.Summary() != "modified spec.replicas: 1 -> 4" || st.Progress == nil || st.Progress.Desired != 4 {
			t.Fatalf("drift = %s, progress %+v", d.Summary(), st.Progress)
		}
		if a, err := be.Attribute(ctx, spec, st, d); err != nil || a == nil || a.Manager != "kubectl-scale" {
			t.Fatalf("attribution = %+v, %v", a, err)
		}
		res, err := be.Repair(ctx, spec, st, d)
		if err != nil || res.Action != "apply" || len(res.Conflicts) != 1 || res.Conflicts[0].Manager != "kubectl-scale" {
			t.Fatalf("repair = %+v, %v", res, err)
		}
		sink.waitFor(t, 10*time.Second, "the repaired version in the cache", cachedVersion(res.Version))
	})

	t.Run("unlabelled", func(t *testing.T) {
		sink.mu.Lock()
		deletes := events(hub.EventDeleted)
		sink.mu.Unlock()
		unlabel := []byte(`{"metadata":{"labels":{"` + kubeobj.ManagedByLabel + `":null}}}`)
		if _, err := c.AppsV1().Deployments("apps").Patch(ctx, "api", types.StrategicMergePatchType, unlabel, metav1.PatchOptions{FieldManager: "kubectl-label"}); err != nil {
			t.Fatal(err)
		}
		sink.waitFor(t, 10*time.Second, "the label-filtered watch's delete", func() bool { return events(hub.EventDeleted) > deletes })
		st, d := readDetect(t, false)
		if st.Exists || st.Fresh || d.Class != hub.DriftMissing {
			t.Fatalf("cached state %+v, drift %s", st, d.Summary())
		}
		// A fresh read tells it too.
		if fresh, d := readDetect(t, true); !fresh.Exists || fresh.Owned || d.Class != hub.DriftUnlabelled {
			t.Fatalf("fresh state %+v, drift %s", fresh, d.Summary())
		}
		res, err := be.Repair(ctx, spec, st, d)
		if err != nil {
			t.Fatal(err)
		}
		if res.Class != hub.DriftUnlabelled {
			t.Fatalf("repair = %+v, want class %s", res, hub.DriftUnlabelled)
		}
		sink.waitFor(t, 10*time.Second, "the relabelled object in the cache", cachedVersion(res.Version))
		if st, d := readDetect(t, false); !st.Owned || !d.InSync() {
			t.Fatalf("after repair: %+v %s", st, d.Summary())
		}
	})

	t.Run("deleted", func(t *testing.T) {
		sink.mu.Lock()
		deletes := events(hub.EventDeleted)
		sink.mu.Unlock()
		if err := c.AppsV1().Deployments("apps").Delete(ctx, "api", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		sink.waitFor(t, 10*time.Second, "the delete", func() bool { return events(hub.EventDeleted) > deletes })
		st, d := readDetect(t, false)
		if st.Exists || d.Class != hub.DriftMissing {
			t.Fatalf("cached state %+v, drift %s", st, d.Summary())
		}
		res, err := be.Repair(ctx, spec, st, d)
		if err != nil {
			t.Fatal(err)
		}
		if res.Class != "" || res.Version == "" {
			t.Fatalf("repair of a deleted object = %+v, want no class correction", res)
		}
	})

	t.Run("delete", func(t *testing.T) {
		// An object without our label is never deleted.
		foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "foreign", Namespace: "apps"}, Data: map[string]string{"a": "1"}}
		if _, err := c.CoreV1().ConfigMaps("apps").Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		fspec := hub.NodeSpec{ID: hub.NewNodeID(lc.Name, "apps", "foreign", hub.KindConfigMap), Namespace: "apps", Name: "foreign", Kind: hub.KindConfigMap}
		fst, err := be.ReadState(ctx, fspec, true)
		if err != nil || !fst.Exists || fst.Owned {
			t.Fatalf("foreign state %+v, %v", fst, err)
		}
		if err := be.Delete(ctx, fspec, fst); err == nil || !strings.Contains(err.Error(), lc.Name) || !strings.Contains(err.Error(), "configmaps foreign") {
			t.Fatalf("deleting an unowned object: %v", err)
		}
		if _, err := c.CoreV1().ConfigMaps("apps").Get(ctx, "foreign", metav1.GetOptions{}); err != nil {
			t.Fatalf("the unowned object is gone: %v", err)
		}

		// An object of another hub (same label, other hub id) is never
		// deleted, and is not listed as ours; ours is.
		other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other-hub", Namespace: "apps", Labels: labelled(nil),
			Annotations: map[string]string{kubeobj.HubAnnotation: "hub-b",
				kubeobj.NodeIDAnnotation: hub.NewNodeID(lc.Name, "apps", "other-hub", hub.KindConfigMap).String()}}}
		if _, err := c.CoreV1().ConfigMaps("apps").Create(ctx, other, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ospec := hub.NodeSpec{ID: hub.NewNodeID(lc.Name, "apps", "other-hub", hub.KindConfigMap), Namespace: "apps", Name: "other-hub", Kind: hub.KindConfigMap}
		ost, err := be.ReadState(ctx, ospec, true)
		if err != nil || !ost.Exists || ost.Owned {
			t.Fatalf("another hub's object: %+v, %v (want not owned)", ost, err)
		}
		ost.Owned = true // even if the loop got it wrong
		if err := be.Delete(ctx, ospec, ost); !errors.Is(err, hub.ErrOwnedByOther) || !strings.Contains(err.Error(), `owned by hub "hub-b"`) {
			t.Fatalf("deleting another hub's object: %v", err)
		}
		sink.waitFor(t, 10*time.Second, "the other hub's object in the cache", func() bool {
			for _, ev := range sink.events {
				if ev.ID == ospec.ID {
					return true
				}
			}
			return false
		})
		owned, err := be.(hub.OwnedLister).ListOwned(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range owned {
			ids = append(ids, r.ID.String())
		}
		if !slices.Contains(ids, spec.ID.String()) || slices.Contains(ids, ospec.ID.String()) {
			t.Fatalf("ListOwned = %v, want ours (%s) and not the other hub's", ids, spec.ID)
		}

		// A change after the read meets the resourceVersion precondition:
		// the delete reads the object again, checks it and retries.
		st, _ := readDetect(t, true)
		if _, err := c.AppsV1().Deployments("apps").Patch(ctx, "api", types.MergePatchType, []byte(`{"metadata":{"annotations":{"touched":"yes"}}}`), metav1.PatchOptions{FieldManager: "kubectl-annotate"}); err != nil {
			t.Fatal(err)
		}
		if err := be.Delete(ctx, spec, st); err != nil {
			t.Fatalf("delete after a concurrent change: %v", err)
		}
		if _, err := c.AppsV1().Deployments("apps").Get(ctx, "api", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("after delete: %v", err)
		}
		if err := be.Delete(ctx, spec, st); err != nil {
			t.Fatalf("deleting a missing object: %v", err)
		}
		if a, err := be.Attribute(ctx, spec, hub.State{Fresh: true}, hub.Drift{Class: hub.DriftModified, Fields: []hub.FieldDiff{{Path: "spec.replicas"}}}); a != nil || err != nil {
			t.Fatalf("attribution of a missing object = %+v, %v", a, err)
		}
	})
}

// TestPanicRestartAndRemove: a panic inside one cluster's manager is
// recovered, reported on that cluster and the cluster restarted, while the
// other one goes on; removing a cluster stops all of its goroutines.
func TestPanicRestartAndRemove(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 2})
	sink := newRecordingSink()
	base := runtime.NumGoroutine()
	r := NewRegistry(sink, RegistryOptions{Logger: testLogger(t), Health: fastHealth, MinBackoff: 100 * time.Millisecond, MaxBackoff: 500 * time.Millisecond})
	panicked := make(chan string, 1)
	r.beforeRun = func(id string, attempt int) {
		if id == set.Clusters[0].Name && attempt == 0 {
			panic("boom in " + id)
		}
	}
	for _, lc := range set.Clusters {
		if err := r.Add(clusterConfig(lc, "default")); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	wg.Go(func() { _ = r.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	first := set.Clusters[0].Name
	sink.waitFor(t, 10*time.Second, "panic reported", func() bool {
		if strings.Contains(sink.health[first].LastError, "panic: boom") {
			select {
			case panicked <- sink.health[first].LastError:
			default:
			}
			return true
		}
		return false
	})
	sink.waitFor(t, 30*time.Second, "both synced after the restart", func() bool {
		return sink.state(first) == hub.ClusterSynced && sink.state(set.Clusters[1].Name) == hub.ClusterSynced
	})
	// Removing both clusters stops every goroutine they started.
	for _, id := range r.IDs() {
		if !r.Remove(id) {
			t.Fatalf("Remove(%s) = false", id)
		}
		if _, ok := r.Backend(id); ok {
			t.Fatalf("backend of removed cluster %s still there", id)
		}
	}
	if sink.state(first) != hub.ClusterRemoved {
		t.Fatalf("state after remove = %s", sink.state(first))
	}
	// No goroutine of a manager, an informer or a cluster connection may
	// remain (the registry's own Run goroutine and the local clusters'
	// process waiters do).
	testwait.For(t, 10*time.Second, "the goroutines of removed clusters to end", func() error {
		leaked := clusterGoroutines()
		return testwait.Check(len(leaked) == 0, "%d remain (%d goroutines before they were added):\n%s", len(leaked), base, strings.Join(leaked, "\n\n"))
	})
}

// TestBadKubeconfig: a missing file and an unknown context become clear
// cluster errors naming the cluster, file and context; no control plane
// needed.
func TestBadKubeconfig(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: x, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: x, user: {token: t}}]
contexts: [{name: real, context: {cluster: x, user: x}}]
current-context: real
`), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nope.yaml")
	tests := []struct {
		cfg  ClusterConfig
		want []string
	}{
		{ClusterConfig{ID: "gone", Kubeconfig: missing}, []string{`cluster "gone"`, missing}},
		{ClusterConfig{ID: "ctx", Kubeconfig: kc, Context: "typo"}, []string{`cluster "ctx"`, `"typo"`}},
		{ClusterConfig{ID: "empty", Getenv: func(string) string { return "" }}, []string{`cluster "empty"`, "no kubeconfig"}},
		{ClusterConfig{ID: "junk", KubeconfigData: []byte("{")}, []string{`cluster "junk"`, "kubeconfig data"}},
	}
	for _, tt := range tests {
		t.Run(tt.cfg.ID, func(t *testing.T) {
			_, err := RESTConfig(tt.cfg)
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	// In a registry, a broken cluster reports unreachable and is retried.
	sink := newRecordingSink()
	runRegistry(t, sink, tests[0].cfg)
	sink.waitFor(t, 5*time.Second, "unreachable", func() bool {
		return sink.state("gone") == hub.ClusterUnreachable && strings.Contains(sink.health["gone"].LastError, missing)
	})
}

func TestEventFor(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "ns", ResourceVersion: "7", UID: "u",
		Annotations: map[string]string{kubeobj.NodeIDAnnotation: "c1:ns/n:configmap"}}}
	now := time.Now()
	ev, ok := eventFor("c1", hub.KindConfigMap, hub.EventAdded, cm, now)
	if !ok || ev.ID.String() != "c1:ns/n:configmap" || ev.ResourceVersion != "7" || ev.UID != "u" || !ev.ObservedAt.Equal(now) {
		t.Fatalf("event = %+v", ev)
	}
	// An annotation naming another cluster is ignored.
	cm.Annotations[kubeobj.NodeIDAnnotation] = "other:ns/n:configmap"
	ev, _ = eventFor("c1", hub.KindConfigMap, hub.EventUpdated, cm, now)
	if ev.ID.String() != "c1:ns/n:configmap" {
		t.Fatalf("id = %s", ev.ID)
	}
	// DeletedFinalStateUnknown is unwrapped.
	ev, ok = eventFor("c1", hub.KindConfigMap, hub.EventDeleted, cacheTombstone("ns/n", cm), now)
	if !ok || ev.Type != hub.EventDeleted || ev.ID.String() != "c1:ns/n:configmap" {
		t.Fatalf("tombstone event = %+v", ev)
	}
	ev, ok = eventFor("c1", hub.KindConfigMap, hub.EventDeleted, cacheTombstone("ns/x", nil), now)
	if !ok || ev.ID.String() != "c1:ns/x:configmap" {
		t.Fatalf("empty tombstone event = %+v", ev)
	}
	// A compact cached object maps to the same event.
	info, _ := kindOf(hub.KindConfigMap)
	shared := &cacheShared{cluster: "c1", namespace: "ns", kind: hub.KindConfigMap, info: info, managedBy: kubeobj.DefaultManagedBy}
	cm.ResourceVersion, cm.UID = "7", "u-1"
	want, _ := eventFor("c1", hub.KindConfigMap, hub.EventUpdated, cm, now)
	cached, err := shared.compact(cm.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if ev, ok := eventFor("c1", hub.KindConfigMap, hub.EventUpdated, cached, now); !ok || ev != want {
		t.Fatalf("event of the cached object = %+v, want %+v", ev, want)
	}
	_ = fmt.Sprint()
}

// clusterGoroutines returns the stacks of goroutines that belong to a cluster
// manager, an informer or a cluster connection.
func clusterGoroutines() []string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, marker := range []string{"clusters.(*Manager)", "k8s.io/client-go/tools/cache", "golang.org/x/net/http2", "net/http.(*persistConn)", "k8s.io/client-go/informers"} {
			if strings.Contains(g, marker) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

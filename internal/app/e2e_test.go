package app

import (
	"context"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/e2etest"

	"github.com/sourcegraph/conc"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// e2eConfig writes a config for the local clusters (see e2etest.Config).
func e2eConfig(t *testing.T, set *localcluster.Set, ns string, extra string, skip ...string) string {
	t.Helper()
	return e2etest.Config(t, set, ns, extra, skip...)
}

var fastHealth = clusters.HealthOptions{Interval: 500 * time.Millisecond, RetryInterval: 200 * time.Millisecond, Timeout: time.Second, FailureThreshold: 3}

type testApp struct {
	*App
	cancel context.CancelFunc
	wg     *conc.WaitGroup
	snaps  <-chan *hub.Snapshot
	unsub  func()
	last   *hub.Snapshot
}

func (a *testApp) stop() {
	a.unsub()
	a.cancel()
	a.wg.Wait()
	_ = a.Close()
}

// startApp starts a hub on the config at path, loaded with the options'
// LoadOptions (sources isolated, as a running hub loads them, unless mutate
// changes them).
func startApp(t testing.TB, path string, mutate func(*Options)) *testApp {
	t.Helper()
	return runApp(t, newApp(t, path, mutate))
}

// newApp loads the config at path and makes its App, not running yet (see
// startApp).
func newApp(t testing.TB, path string, mutate func(*Options)) *App {
	t.Helper()
	opts := Options{Logger: slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})), Health: fastHealth,
		LoadOptions: config.LoadOptions{IsolateSources: true}}
	if mutate != nil {
		mutate(&opts)
	}
	cfg, err := config.Load(path, opts.LoadOptions)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// allocate allocates n MiB of garbage.
func allocate(n int) {
	garbage := make([][]byte, 0, n)
	for range n {
		garbage = append(garbage, make([]byte, 1<<20))
	}
	runtime.KeepAlive(garbage)
}

// runApp runs a until the test ends (or stop).
func runApp(t testing.TB, a *App) *testApp {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	wg := &conc.WaitGroup{}
	wg.Go(func() { _ = a.Run(ctx) })
	ch, unsub := a.hub.Subscribe()
	ta := &testApp{App: a, cancel: cancel, wg: wg, snaps: ch, unsub: unsub}
	t.Cleanup(func() {
		if ctx.Err() == nil {
			ta.stop()
		}
	})
	return ta
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// waitSnap waits until cond holds on a published snapshot.
func (a *testApp) waitSnap(t testing.TB, timeout time.Duration, what string, cond func(*hub.Snapshot) bool) *hub.Snapshot {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if a.last != nil && cond(a.last) {
			return a.last
		}
		select {
		case s := <-a.snaps:
			a.last = s
		case <-deadline.C:
			var lines []string
			if a.last != nil {
				for _, n := range a.last.Nodes {
					if n.Status != hub.StatusInSync {
						lines = append(lines, fmt.Sprintf("%s %s %s", n.ID, n.Status, n.Reason))
					}
				}
				for _, c := range a.last.Clusters {
					lines = append(lines, fmt.Sprintf("cluster %s %s %s", c.Cluster, c.State, c.LastError))
				}
			}
			t.Fatalf("timed out after %s waiting for %s; not in sync:\n%s", timeout, what, strings.Join(lines, "\n"))
		}
	}
}

// allInSync holds when n NodeIDs are in sync or repaired.
func allInSync(n int) func(*hub.Snapshot) bool { return e2etest.AllInSync(n) }

// repairedAfter holds when id has a verified repair of a drift observed
// after t0.
func repairedAfter(id hub.NodeID, t0 time.Time) func(*hub.Snapshot) bool {
	return func(s *hub.Snapshot) bool {
		n, ok := s.Node(id)
		return ok && n.LastRepair != nil && !n.LastRepair.ObservedAt.Before(t0) && !n.LastRepair.VerifiedAt.IsZero()
	}
}

func statusIs(id hub.NodeID, st hub.Status) func(*hub.Snapshot) bool {
	return func(s *hub.Snapshot) bool {
		n, ok := s.Node(id)
		return ok && n.Status == st
	}
}

// TestHubEndToEnd: 3 clusters x 3 applications; every object is created;
// then a separate client deletes, scales, edits, adds an env var and a
// ConfigMap key, removes a label and deletes a ConfigMap; each is classified
// correctly, attributed to that client's field manager and repaired.
func TestHubEndToEnd(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 3})
	path := e2eConfig(t, set, "shop", "")
	// A first sync of 21 objects allocates less than the hub needs to
	// return its heap (32 MiB): this process allocates 64 MiB first, as
	// the first sync of a large config would.
	allocate(64)
	a := startApp(t, path, nil)
	// 3 clusters x (web: 3 objects, api: 2, worker: 2).
	a.waitSnap(t, 60*time.Second, "every object created and in sync", allInSync(21))
	// Once the first sync's wave (the creates and their watch echoes) is
	// over, the hub returns the heap it freed, once.
	deadline := time.Now().Add(10 * time.Second)
	for a.Hub().HeapReturns() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the hub never returned its first sync's heap")
		}
		time.Sleep(10 * time.Millisecond)
	}
	firstReturn := time.Now()

	c := func(i int) kubernetes.Interface { return kubernetes.NewForConfigOrDie(set.Clusters[i].RESTConfig()) }
	id := func(i int, name string, k hub.Kind) hub.NodeID {
		return hub.NewNodeID(set.Clusters[i].Name, "shop", name, k)
	}
	ctx := t.Context()
	type drift struct {
		name    string
		id      hub.NodeID
		do      func() error
		class   hub.DriftClass
		fields  []string
		manager string
		check   func(t *testing.T)
	}
	mp := func(m string) metav1.PatchOptions { return metav1.PatchOptions{FieldManager: m} }
	drifts := []drift{
		{name: "delete deployment", id: id(0, "web", hub.KindDeployment), class: hub.DriftMissing,
			do: func() error { return c(0).AppsV1().Deployments("shop").Delete(ctx, "web", metav1.DeleteOptions{}) }},
		{name: "scale", id: id(1, "api", hub.KindDeployment), class: hub.DriftModified, fields: []string{"spec.replicas: 2 -> 1"}, manager: "kubectl-scale",
			do: func() error {
				_, err := c(1).AppsV1().Deployments("shop").Patch(ctx, "api", types.MergePatchType, []byte(`{"spec":{"replicas":1}}`), mp("kubectl-scale"), "scale")
				return err
			}},
		{name: "image", id: id(2, "web", hub.KindDeployment), class: hub.DriftModified,
			fields: []string{"spec.template.spec.containers[app].image: registry.example/web:1 -> registry.example/web:evil"}, manager: "kubectl-edit",
			do: func() error {
				_, err := c(2).AppsV1().Deployments("shop").Patch(ctx, "web", types.StrategicMergePatchType,
					[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"registry.example/web:evil"}]}}}}`), mp("kubectl-edit"))
				return err
			}},
		{name: "env var added", id: id(0, "api", hub.KindDeployment), class: hub.DriftAdded,
			fields: []string{"+spec.template.spec.containers[app].env[DEBUG]={name: DEBUG, value: true}"}, manager: "kubectl-set",
			do: func() error {
				_, err := c(0).AppsV1().Deployments("shop").Patch(ctx, "api", types.StrategicMergePatchType,
					[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"DEBUG","value":"true"}]}]}}}}`), mp("kubectl-set"))
				return err
			},
			check: func(t *testing.T) {
				d, err := c(0).AppsV1().Deployments("shop").Get(ctx, "api", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if env := d.Spec.Template.Spec.Containers[0].Env; len(env) != 0 {
					t.Fatalf("env after repair = %+v, want none", env)
				}
			}},
		{name: "configmap key added", id: id(1, "worker", hub.KindConfigMap), class: hub.DriftAdded,
			fields: []string{"+data.drift=yes"}, manager: "kubectl-patch",
			do: func() error {
				_, err := c(1).CoreV1().ConfigMaps("shop").Patch(ctx, "worker", types.MergePatchType, []byte(`{"data":{"drift":"yes"}}`), mp("kubectl-patch"))
				return err
			},
			check: func(t *testing.T) {
				cm, err := c(1).CoreV1().ConfigMaps("shop").Get(ctx, "worker", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := cm.Data["drift"]; ok || cm.Data["QUEUE"] != "jobs" {
					t.Fatalf("data after repair = %v", cm.Data)
				}
			}},
		{name: "label removed", id: id(2, "web", hub.KindService), class: hub.DriftUnlabelled,
			fields: []string{"metadata.labels.app.kubernetes.io/managed-by: driftwatch -> <removed or changed>"},
			do: func() error {
				_, err := c(2).CoreV1().Services("shop").Patch(ctx, "web", types.MergePatchType,
					[]byte(`{"metadata":{"labels":{"app.kubernetes.io/managed-by":null}}}`), mp("kubectl-label"))
				return err
			},
			check: func(t *testing.T) {
				s, err := c(2).CoreV1().Services("shop").Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if s.Labels[kubeobj.ManagedByLabel] != "driftwatch" || len(s.Spec.Selector) != 1 || s.Spec.Selector["app"] != "web" {
					t.Fatalf("service after repair: labels %v selector %v", s.Labels, s.Spec.Selector)
				}
			}},
		{name: "delete configmap", id: id(1, "web", hub.KindConfigMap), class: hub.DriftMissing,
			do: func() error { return c(1).CoreV1().ConfigMaps("shop").Delete(ctx, "web", metav1.DeleteOptions{}) }},
	}
	// The drifts' waves allocate as much again, within the minute after
	// the first return: the hub returns nothing more (once a minute).
	allocate(64)
	for _, d := range drifts {
		t.Run(d.name, func(t *testing.T) {
			t0 := time.Now()
			if err := d.do(); err != nil {
				t.Fatal(err)
			}
			s := a.waitSnap(t, 20*time.Second, "repair of "+d.id.String(), repairedAfter(d.id, t0))
			n, _ := s.Node(d.id)
			r := n.LastRepair
			if r.Drift.Class != d.class {
				t.Fatalf("class = %s, want %s (%s)", r.Drift.Class, d.class, r.Drift.Summary())
			}
			var got []string
			for _, f := range r.Drift.Fields {
				got = append(got, f.String())
			}
			if d.fields != nil && strings.Join(got, "\n") != strings.Join(d.fields, "\n") {
				t.Fatalf("fields = %q, want %q", got, d.fields)
			}
			if d.manager != "" && (r.Attribution == nil || r.Attribution.Manager != d.manager) {
				t.Fatalf("attribution = %+v, want %s", r.Attribution, d.manager)
			}
			if r.AppliedAt.IsZero() || r.ClassifiedAt.Before(r.ObservedAt) || r.AppliedAt.Before(r.ClassifiedAt) || r.VerifiedAt.Before(r.AppliedAt) {
				t.Fatalf("timeline out of order: %+v", r)
			}
			t.Logf("%s: %s; detect %s, repair %s, verified %s", d.id, r.Drift.Summary(), r.DetectLatency(), r.RepairLatency(), r.VerifyLatency())
			if d.check != nil {
				d.check(t)
			}
		})
	}
	s := a.waitSnap(t, 20*time.Second, "all in sync after the drifts", allInSync(21))
	// Past the 200 ms window that ends the last drift's wave,
	// still one return.
	time.Sleep(time.Second)
	if n := a.Hub().HeapReturns(); n != 1 || time.Since(firstReturn) >= time.Minute {
		t.Errorf("heap returns %s after the first: %d in all, want 1", time.Since(firstReturn).Round(time.Millisecond), n)
	}
	// One drift, one repair: the echoes of our own writes (and of the
	// remove patch before an apply) never cause a second apply.
	for _, d := range drifts {
		n, _ := s.Node(d.id)
		applied := 0
		for _, e := range n.Timeline {
			if e.Step == hub.StepApplied {
				applied++
			}
		}
		if applied != 1 {
			t.Errorf("%s: %d %q entries in its timeline, want 1: %+v", d.id, applied, hub.StepApplied, n.Timeline)
		}
	}
}

// TestHubPoliciesPauseAndRecovery: warn-only reports without repairing; a
// paused cluster holds repairs until resumed; drift made while the hub is
// down is repaired on start; a cluster that was unreachable shows unknown
// and is caught up when it returns; reloads prune and reject.
func TestHubPoliciesPauseAndRecovery(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 2})
	extra := `  - id: audit
    namespace: ops
    clusters: [c1, c2]
    image: registry.example/audit:1
    policy: warn
`
	path := e2eConfig(t, set, "ops", extra, "web")
	a := startApp(t, path, nil)
	const total = 2 * (2 + 2 + 1) // api 2, worker 2, audit 1 per cluster
	a.waitSnap(t, 60*time.Second, "created", allInSync(total))
	ctx := t.Context()
	c1 := kubernetes.NewForConfigOrDie(set.Clusters[0].RESTConfig())
	c2 := kubernetes.NewForConfigOrDie(set.Clusters[1].RESTConfig())
	scale := func(c kubernetes.Interface, name string, n int) {
		t.Helper()
		if _, err := c.AppsV1().Deployments("ops").Patch(ctx, name, types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)), metav1.PatchOptions{FieldManager: "tester"}); err != nil {
			t.Fatal(err)
		}
	}
	replicas := func(c kubernetes.Interface, name string) int32 {
		d, err := c.AppsV1().Deployments("ops").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *d.Spec.Replicas
	}

	// warn: detected, reported, not repaired.
	auditID := hub.NewNodeID("c1", "ops", "audit", hub.KindDeployment)
	scale(c1, "audit", 4)
	a.waitSnap(t, 20*time.Second, "audit warn-only", statusIs(auditID, hub.StatusWarnOnly))
	if r := replicas(c1, "audit"); r != 4 {
		t.Fatalf("warn-only object was changed: replicas %d", r)
	}

	// Paused cluster: held until resumed.
	a.hub.PauseCluster("c2", true)
	apiID := hub.NewNodeID("c2", "ops", "api", hub.KindDeployment)
	scale(c2, "api", 5)
	a.waitSnap(t, 20*time.Second, "api on c2 paused", statusIs(apiID, hub.StatusPaused))
	if r := replicas(c2, "api"); r != 5 {
		t.Fatalf("paused cluster was repaired: replicas %d", r)
	}
	a.hub.PauseCluster("c2", false)
	a.waitSnap(t, 20*time.Second, "api on c2 repaired after resume", statusIs(apiID, hub.StatusRepaired))
	if r := replicas(c2, "api"); r != 2 {
		t.Fatalf("after resume replicas = %d, want 2", r)
	}

	// Drift while the hub is down is repaired on start.
	a.stop()
	if err := c1.AppsV1().Deployments("ops").Delete(ctx, "worker", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	scale(c1, "api", 7)
	a = startApp(t, path, nil)
	a.waitSnap(t, 60*time.Second, "repaired after restart", func(s *hub.Snapshot) bool {
		n, ok := s.Node(hub.NewNodeID("c1", "ops", "api", hub.KindDeployment))
		return ok && n.Status == hub.StatusRepaired && allInSyncOrWarn(s)
	})
	if _, err := c1.AppsV1().Deployments("ops").Get(ctx, "worker", metav1.GetOptions{}); err != nil {
		t.Fatalf("worker not recreated on start: %v", err)
	}

	// Unreachable: nodes show unknown, never stale in-sync; caught up after.
	down := set.Clusters[1]
	if err := down.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	a.waitSnap(t, 20*time.Second, "c2 nodes unknown", func(s *hub.Snapshot) bool {
		for _, n := range s.Nodes {
			if n.ID.Cluster == "c2" && n.Status != hub.StatusUnknown {
				return false
			}
		}
		cs, _ := s.Cluster("c2")
		return cs.State == hub.ClusterUnreachable
	})
	if err := down.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := c2.CoreV1().ConfigMaps("ops").Delete(ctx, "worker", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	a.waitSnap(t, 60*time.Second, "c2 caught up", func(s *hub.Snapshot) bool {
		cs, _ := s.Cluster("c2")
		// The repair is applied after the delete; it may be counted from
		// the outage (the NodeID pending since then) when the catch-up
		// pass had not run yet when the delete came.
		n, ok := s.Node(hub.NewNodeID("c2", "ops", "worker", hub.KindConfigMap))
		return cs.State == hub.ClusterSynced && allInSyncOrWarn(s) &&
			ok && n.LastRepair != nil && n.LastRepair.AppliedAt.After(t0) && !n.LastRepair.VerifiedAt.IsZero()
	})
	if _, err := c2.CoreV1().ConfigMaps("ops").Get(ctx, "worker", metav1.GetOptions{}); err != nil {
		t.Fatalf("configmap deleted after the outage (%s ago) not repaired: %v", time.Since(t0), err)
	}

	// An invalid reload changes nothing and reports every error.
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(good), "replicas: 2", "replicas: two", 1) + "bogus: 1\n"
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	err = a.Reload(false)
	if err == nil || !strings.Contains(err.Error(), "replicas") || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("invalid reload error = %v", err)
	}
	if n := len(a.hub.Snapshot().Nodes); n != total {
		t.Fatalf("after an invalid reload the hub manages %d nodes, want %d", n, total)
	}

	// A reload that removes worker prunes its objects; one held by a
	// finalizer is reported stuck.
	if _, err := c2.CoreV1().ConfigMaps("ops").Patch(ctx, "worker", types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	noWorker := e2eConfig(t, set, "ops", extra, "web", "worker")
	data, err := os.ReadFile(noWorker)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := a.Reload(false); err != nil {
		t.Fatal(err)
	}
	held := hub.NewNodeID("c2", "ops", "worker", hub.KindConfigMap)
	a.waitSnap(t, 30*time.Second, "worker pruned, held one stuck", func(s *hub.Snapshot) bool {
		for _, n := range s.Nodes {
			if n.ID.Resource == "ops/worker" && n.ID != held {
				return false
			}
		}
		n, ok := s.Node(held)
		return ok && n.Status == hub.StatusStuck
	})
	for _, c := range []kubernetes.Interface{c1, c2} {
		if _, err := c.AppsV1().Deployments("ops").Get(ctx, "worker", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("worker deployment not pruned: %v", err)
		}
	}
	// Releasing the finalizer lets the prune finish.
	if _, err := c2.CoreV1().ConfigMaps("ops").Patch(ctx, "worker", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	a.waitSnap(t, 30*time.Second, "held prune finished", func(s *hub.Snapshot) bool {
		_, ok := s.Node(held)
		return !ok
	})
}

func allInSyncOrWarn(s *hub.Snapshot) bool {
	for _, n := range s.Nodes {
		switch n.Status {
		case hub.StatusInSync, hub.StatusRepaired, hub.StatusWarnOnly:
		default:
			return false
		}
	}
	return true
}

// TestHubStuckDeployment: with the controller manager, a scheduler and a
// node running, a Deployment whose pods can never be scheduled exceeds its
// progress deadline, is reported stuck, and says why in its pod's words:
// the scheduler's message. One whose pods a ResourceQuota refuses has no
// pod to speak for it: it says why in its ReplicaSet's event.
func TestHubStuckDeployment(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1, Full: true})
	admin := kubernetes.NewForConfigOrDie(set.Clusters[0].RESTConfig())
	if _, err := admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "quota"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	noPods := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-pods", Namespace: "quota"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}}
	q, err := admin.CoreV1().ResourceQuotas("quota").Create(t.Context(), noPods, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A quota holds back nothing until it has been counted, which the
	// quota controller does (the local control plane does not run it):
	// counted by hand, nothing used.
	q.Status = corev1.ResourceQuotaStatus{Hard: noPods.Spec.Hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}
	if _, err := admin.CoreV1().ResourceQuotas("quota").UpdateStatus(t.Context(), q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	extra := `  - id: nowhere
    namespace: stuck
    clusters: [c1]
    image: registry.example/nowhere:1
    progressDeadlineSeconds: 3
    nodeSelector: {disk: none}
  - id: over-quota
    namespace: quota
    clusters: [c1]
    image: registry.example/over-quota:1
    progressDeadlineSeconds: 3
`
	path := e2eConfig(t, set, "stuck", extra, "web", "api", "worker")
	a := startApp(t, path, nil)
	id := hub.NewNodeID("c1", "stuck", "nowhere", hub.KindDeployment)
	s := a.waitSnap(t, 60*time.Second, "stuck deployment", statusIs(id, hub.StatusStuck))
	n, _ := s.Node(id)
	if !strings.Contains(n.Reason, "ProgressDeadlineExceeded") {
		t.Fatalf("reason = %q", n.Reason)
	}
	s = a.waitSnap(t, 10*time.Second, "the stuck deployment's diagnosis", func(s *hub.Snapshot) bool {
		n, _ := s.Node(id)
		return len(n.Diagnosis) > 0
	})
	n, _ = s.Node(id)
	if len(n.Diagnosis) != 1 || !strings.HasPrefix(n.Diagnosis[0], "pod nowhere-") ||
		!strings.Contains(n.Diagnosis[0], ": not scheduled: Unschedulable: 0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector") {
		t.Fatalf("diagnosis = %q", n.Diagnosis)
	}
	quota := hub.NewNodeID("c1", "quota", "over-quota", hub.KindDeployment)
	s = a.waitSnap(t, 60*time.Second, "the deployment over its quota stuck, with a diagnosis", func(s *hub.Snapshot) bool {
		n, _ := s.Node(quota)
		return n.Status == hub.StatusStuck && len(n.Diagnosis) > 0
	})
	n, _ = s.Node(quota)
	if len(n.Diagnosis) != 1 || !strings.HasPrefix(n.Diagnosis[0], "event FailedCreate on replicaset over-quota-") ||
		!strings.Contains(n.Diagnosis[0], "is forbidden: exceeded quota: no-pods") {
		t.Fatalf("diagnosis = %q", n.Diagnosis)
	}
}

package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// receiver is a webhook receiver: it answers its first `fail` requests
// with 500 and records the events it accepts.
type receiver struct {
	mu       sync.Mutex
	fail     int
	rejected []string
	accepted []notify.Event
	bodies   []string
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.rejected) < r.fail {
		r.rejected = append(r.rejected, string(b))
		http.Error(w, "try again", http.StatusInternalServerError)
		return
	}
	var ev notify.Event
	if err := json.Unmarshal(b, &ev); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.accepted = append(r.accepted, ev)
	r.bodies = append(r.bodies, string(b))
}

func (r *receiver) events() []notify.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.accepted)
}

func eventKey(ev notify.Event) string {
	k := string(ev.Type) + " " + ev.Cluster
	if ev.NodeID != "" {
		k = string(ev.Type) + " " + ev.NodeID
	}
	if ev.Reason != "" {
		k += " " + ev.Reason
	}
	return k
}

// waitEvent waits until the receiver has accepted an event with key.
func (r *receiver) waitEvent(t *testing.T, key string, timeout time.Duration) {
	t.Helper()
	testwait.For(t, timeout, fmt.Sprintf("a %q event", key), func() error {
		var got []string
		for _, ev := range r.events() {
			if eventKey(ev) == key {
				return nil
			}
			got = append(got, eventKey(ev))
		}
		return fmt.Errorf("got:\n%s", strings.Join(got, "\n"))
	})
}

// denyConfigMap makes the apiserver refuse every write of the ConfigMap
// ns/name (a ValidatingAdmissionPolicy), and waits until it does.
func denyConfigMap(t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	ctx := t.Context()
	fail := admissionv1.Fail
	pol := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-" + name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: fmt.Sprintf("object.metadata.namespace != %q || object.metadata.name != %q", ns, name),
				Message:    "writes of this ConfigMap are blocked by policy",
			}},
		},
	}
	if _, err := c.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, pol, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-" + name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: pol.Name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	if _, err := c.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, bind, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	testwait.For(t, 30*time.Second, "the admission policy enforced", func() error {
		_, err := c.CoreV1().ConfigMaps(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return testwait.Check(err != nil && strings.Contains(err.Error(), "blocked by policy"), "last answer: %v", err)
	})
}

// TestNotifications: a webhook receiver gets each event type once -- drift
// repaired, left unrepaired (warn, hold, pause), repair failed, stuck, the
// cluster unreachable and back -- after two 500s it retried through; and
// while two other webhooks hang or refuse connections, the hub keeps
// repairing and counts their failures.
func TestNotifications(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1, ControllerManager: true})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	ctx := t.Context()
	const ns = "alerts"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	denyConfigMap(t, admin, ns, "blocked")

	good := &receiver{fail: 2}
	goodSrv := httptest.NewServer(good)
	defer goodSrv.Close()
	var hanging atomic.Int32
	release := make(chan struct{})
	hangSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hanging.Add(1)
		defer hanging.Add(-1)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hangSrv.Close()
	defer close(release)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The paths stand for the secret part of a real webhook URL.
	refusedURL := "http://" + l.Addr().String() + "/hook/SECRET-TOKEN"
	l.Close() // nothing listens there: connections are refused

	cfg := fmt.Sprintf(`hub:
  id: e2e-notify
  workers: 4
clusters:
  - id: %s
    kubeconfig: %s
applications:
  - {id: web, namespace: %[3]s, clusters: [%[1]s], image: registry.example/web:1, port: 8080, config: {LOG_LEVEL: info}}
  - {id: watch, namespace: %[3]s, clusters: [%[1]s], image: registry.example/watch:1, config: {A: b}, policy: warn}
  - {id: blocked, namespace: %[3]s, clusters: [%[1]s], image: registry.example/blocked:1, config: {A: b}}
  - {id: nowhere, namespace: %[3]s, clusters: [%[1]s], image: registry.example/nowhere:1, progressDeadlineSeconds: 3, nodeSelector: {disk: none}}
notifications:
  webhooks:
    - {name: good, url: "%[4]s/hook", perMinute: 6000, burst: 100, timeout: 5s, maxAttempts: 5}
    - {name: hang, url: "%[5]s/hook/SECRET-TOKEN", timeout: 5s, maxAttempts: 3, queueSize: 2}
    - {name: refused, url: "%[6]s", maxAttempts: 2}
`, lc.Name, lc.Kubeconfig, ns, goodSrv.URL, hangSrv.URL, refusedURL)
	path := filepath.Join(t.TempDir(), "driftwatch.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startApp(t, path, nil)
	id := func(app string, k hub.Kind) hub.NodeID { return hub.NewNodeID(lc.Name, ns, app, k) }
	key := func(typ notify.EventType, id hub.NodeID, reason string) string {
		return strings.TrimSpace(string(typ) + " " + id.String() + " " + reason)
	}

	// At start: the blocked ConfigMap cannot be created, the Deployment
	// that can never schedule gets stuck.
	good.waitEvent(t, key(notify.EventRepairFailed, id("blocked", hub.KindConfigMap), ""), 60*time.Second)
	good.waitEvent(t, key(notify.EventStuck, id("nowhere", hub.KindDeployment), ""), 60*time.Second)

	// Repaired, while one webhook hangs and one refuses: the repair does
	// not wait for them.
	t0 := time.Now()
	if err := admin.CoreV1().ConfigMaps(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s := a.waitSnap(t, 20*time.Second, "web configmap repaired", repairedAfter(id("web", hub.KindConfigMap), t0))
	if hanging.Load() == 0 {
		t.Error("the hanging webhook had no request in flight while the hub repaired")
	}
	n, _ := s.Node(id("web", hub.KindConfigMap))
	if lat := n.LastRepair.RepairLatency(); lat >= 5*time.Second {
		t.Errorf("repair took %v, as long as the hanging webhook's timeout", lat)
	}
	good.waitEvent(t, key(notify.EventRepaired, id("web", hub.KindConfigMap), ""), 20*time.Second)

	// Left unrepaired: warn-only.
	patch := []byte(`{"data":{"A":"changed"}}`)
	if _, err := admin.CoreV1().ConfigMaps(ns).Patch(ctx, "watch", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	good.waitEvent(t, key(notify.EventUnrepaired, id("watch", hub.KindConfigMap), notify.ReasonWarn), 20*time.Second)

	// Left unrepaired: held; repaired once the hold is released.
	target := hub.HoldTarget{Scope: hub.HoldNode, Name: id("web", hub.KindDeployment).String()}
	if _, err := a.hub.Hold(target, time.Hour, "change freeze"); err != nil {
		t.Fatal(err)
	}
	if err := admin.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	good.waitEvent(t, key(notify.EventUnrepaired, id("web", hub.KindDeployment), notify.ReasonHold), 20*time.Second)
	if err := a.hub.ReleaseHold(target); err != nil {
		t.Fatal(err)
	}
	good.waitEvent(t, key(notify.EventRepaired, id("web", hub.KindDeployment), ""), 20*time.Second)

	// Left unrepaired: paused; repaired once resumed.
	if err := a.hub.PauseCluster(lc.Name, true); err != nil {
		t.Fatal(err)
	}
	if err := admin.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	good.waitEvent(t, key(notify.EventUnrepaired, id("web", hub.KindService), notify.ReasonPause), 20*time.Second)
	if err := a.hub.PauseCluster(lc.Name, false); err != nil {
		t.Fatal(err)
	}
	good.waitEvent(t, key(notify.EventRepaired, id("web", hub.KindService), ""), 20*time.Second)

	// The cluster unreachable, and back.
	if err := lc.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	good.waitEvent(t, string(notify.EventClusterUnreachable)+" "+lc.Name, 30*time.Second)
	if err := lc.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	good.waitEvent(t, string(notify.EventClusterRecovered)+" "+lc.Name, 60*time.Second)

	// Each event arrived once: the two 500s were retried, not repeated. A
	// duplicate would be sent right after its original (this webhook's
	// limit is 6000/min): 500 ms lets it arrive before counting.
	time.Sleep(500 * time.Millisecond)
	seen := map[string]int{}
	for _, ev := range good.events() {
		seen[eventKey(ev)]++
		if ev.Version != notify.PayloadVersion || ev.Hub != "e2e-notify" || ev.Message == "" || ev.Time.IsZero() {
			t.Errorf("event %+v lacks header fields", ev)
		}
	}
	for k, c := range seen {
		if c != 1 {
			t.Errorf("event %q delivered %d times", k, c)
		}
	}
	good.mu.Lock()
	rejected, firstBody := slices.Clone(good.rejected), good.bodies[0]
	good.mu.Unlock()
	if len(rejected) != 2 || rejected[0] != firstBody || rejected[1] != firstBody {
		t.Errorf("the first event was not retried after the 500s: rejected %d bodies", len(rejected))
	}

	// The dead webhooks are reported failing, counted, and never shown
	// with their URL.
	st := map[string]notify.WebhookStatus{}
	for _, w := range a.Notifier().Status() {
		st[w.Name] = w
	}
	if w := st["good"]; w.Failing || w.Sent != int64(len(good.events())) {
		t.Errorf("good webhook status %+v, want %d sent and not failing", w, len(good.events()))
	}
	for _, name := range []string{"hang", "refused"} {
		w := st[name]
		if !w.Failing || w.Failed+w.Dropped == 0 || strings.Contains(w.LastError, "SECRET") {
			t.Errorf("%s webhook status %+v, want failing with failures counted and no URL", name, w)
		}
	}
	if alerts := a.notificationAlerts(); !slices.Contains(alerts, "webhook refused failing") {
		t.Errorf("status bar alerts %v lack the refused webhook", alerts)
	}
	rec := httptest.NewRecorder()
	a.hub.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		fmt.Sprintf(`driftwatch_notifications_sent_total{webhook="good"} %d`, len(good.events())),
		`driftwatch_notifications_failed_total{webhook="refused"}`,
		`driftwatch_notification_webhook_up{webhook="refused"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	t.Logf("events: %v; hang %+v; refused %+v", seen, st["hang"], st["refused"])
}

// TestKubernetesEventsOnObjects: with notifications.kubernetesEvents, what
// the hub does about an object is written on it as a Kubernetes Event, as
// kubectl describe finds it: a deleted ConfigMap recreated says
// DriftRepaired (who deleted it, how fast), a warn-only one edited says
// DriftNotRepaired.
func TestKubernetesEventsOnObjects(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	const ns = "described"
	cfg := fmt.Sprintf(`hub:
  id: e2e-events
clusters:
  - id: %s
    kubeconfig: %s
applications:
  - {id: web, namespace: %[3]s, clusters: [%[1]s], image: registry.example/web:1, config: {LOG_LEVEL: info}}
  - {id: watch, namespace: %[3]s, clusters: [%[1]s], image: registry.example/watch:1, config: {A: b}, policy: warn}
notifications:
  kubernetesEvents: {}
`, lc.Name, lc.Kubeconfig, ns)
	path := filepath.Join(t.TempDir(), "driftwatch.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startApp(t, path, nil)
	a.waitSnap(t, 60*time.Second, "in sync", allInSync(4))
	ctx := t.Context()
	if err := admin.CoreV1().ConfigMaps(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cm, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, "watch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["A"] = "edited"
	if _, err := admin.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	described := func(name string) string {
		t.Helper()
		var said string
		testwait.For(t, 30*time.Second, "the events of configmap "+name, func() error {
			obj, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			l, err := admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(obj.UID)})
			if err != nil {
				return err
			}
			var lines []string
			for _, e := range l.Items {
				lines = append(lines, e.Type+" "+e.Reason+" "+e.Source.Component+": "+e.Message)
			}
			said = strings.Join(lines, "\n")
			return testwait.Check(len(lines) > 0, "none yet")
		})
		return said
	}
	if got := described("web"); !strings.HasPrefix(got, "Normal DriftRepaired driftwatch: hub e2e-events: missing drift repaired in ") {
		t.Errorf("the recreated ConfigMap's events:\n%s", got)
	}
	if got := described("watch"); !strings.HasPrefix(got, "Warning DriftNotRepaired driftwatch: hub e2e-events: modified drift left unrepaired") ||
		!strings.Contains(got, "data.A, changed by kubectl-edit") {
		t.Errorf("the warn-only ConfigMap's events:\n%s", got)
	}
}

// eventBackend is a backend that writes Kubernetes Events: it records
// them and answers err.
type eventBackend struct {
	hub.Backend
	mu      sync.Mutex
	written []string
	err     error
}

func (b *eventBackend) RecordEvent(_ context.Context, id hub.NodeID, typ, reason, message string) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.written = append(b.written, id.String()+" "+typ+" "+reason+" "+message)
	return false, b.err
}

// TestKubeEventsRecorder: an event about an object is written on it
// through its cluster's backend, with its reason and type and a message
// without the NodeID; a cluster that refuses one (RBAC) has its events
// dropped (notify.ErrDropped) for ten minutes, then tried again; a
// cluster without an event writer (a workspace) gets none, without an
// error.
func TestKubeEventsRecorder(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	prod, tf := &eventBackend{}, hub.Backend(nil)
	k := &kubeEvents{now: func() time.Time { return now }, refused: map[string]time.Time{},
		backend: func(cluster string) (hub.Backend, bool) {
			switch cluster {
			case "prod":
				return prod, true
			case "tf":
				return tf, true
			}
			return nil, false
		}}
	web := hub.NewNodeID("prod", "shop", "web", hub.KindDeployment)
	ev := notify.Event{Type: notify.EventRepaired, Hub: "hq", Cluster: "prod", NodeID: web.String(),
		Message: web.String() + ": modified drift repaired in 12ms (spec.replicas, changed by kubectl-scale)"}
	if _, err := k.RecordEvent(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	want := web.String() + " Normal DriftRepaired hub hq: modified drift repaired in 12ms (spec.replicas, changed by kubectl-scale)"
	if len(prod.written) != 1 || prod.written[0] != want {
		t.Fatalf("written %q, want %q", prod.written, want)
	}
	prod.err = apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", errors.New("RBAC"))
	if _, err := k.RecordEvent(t.Context(), ev); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "dropped for 10m0s") {
		t.Fatalf("refused: %v", err)
	}
	now = now.Add(9 * time.Minute)
	if _, err := k.RecordEvent(t.Context(), ev); !errors.Is(err, notify.ErrDropped) || len(prod.written) != 2 {
		t.Fatalf("within 10 minutes of a refusal: %v, %d written", err, len(prod.written))
	}
	now = now.Add(2 * time.Minute)
	prod.err = nil
	if _, err := k.RecordEvent(t.Context(), ev); err != nil || len(prod.written) != 3 {
		t.Fatalf("after 10 minutes: %v, %d written", err, len(prod.written))
	}
	for _, cluster := range []string{"tf", "gone"} {
		other := ev
		other.Cluster, other.NodeID = cluster, hub.NewNodeID(cluster, "", "x", hub.KindConfigMap).String()
		if retry, err := k.RecordEvent(t.Context(), other); err != nil || retry {
			t.Errorf("cluster %s: retry %v, %v", cluster, retry, err)
		}
	}
}

package clusters

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// heldDeletes holds the next DELETE request in the transport, before it is
// sent, until released, and counts the requests it saw.
type heldDeletes struct {
	seen    atomic.Int64
	mu      sync.Mutex
	armed   bool
	arrived chan struct{}
	release chan struct{}
}

func (h *heldDeletes) arm() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.armed, h.arrived, h.release = true, make(chan struct{}), make(chan struct{})
}

func (h *heldDeletes) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		h.seen.Add(1)
		if req.Method == http.MethodDelete {
			h.mu.Lock()
			armed, arrived, release := h.armed, h.arrived, h.release
			h.armed = false
			h.mu.Unlock()
			if armed {
				close(arrived)
				<-release
			}
		}
		return rt.RoundTrip(req)
	})
}

// TestCallsAcrossARestartOnARealControlPlane: a prune's delete is in
// flight when the cluster's manager restarts (a reload that changed what
// it watches). The call fails with an error that unwraps to
// hub.ErrRestarting, not to hub.ErrUnreachable ("use of closed network
// connection" from the closed connection): the loop runs the pass again
// on the new manager, neither counting nor showing a failure. Every later
// call on the replaced manager, cached reads and the orphan listing
// included (its caches stopped with it), fails the same way at once,
// without a request; the new manager deletes the object.
func TestCallsAcrossARestartOnARealControlPlane(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	const ns = "restart"
	createNamespace(t, admin, ns)
	held := &heldDeletes{}
	cc := clusterConfig(lc, ns)
	cc.HubID = "e2e"
	cc.WrapTransport = held.wrap
	r, old := runRegistryFor(t, cc)
	ctx := t.Context()

	id := hub.NewNodeID(lc.Name, ns, "web", hub.KindConfigMap)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "web", "namespace": ns,
			"labels":      map[string]any{kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy},
			"annotations": map[string]any{kubeobj.NodeIDAnnotation: id.String(), kubeobj.HubAnnotation: cc.HubID}},
		"data": map[string]any{"k": "v"},
	}}
	spec := hub.NodeSpec{ID: id, Namespace: ns, Name: "web", Kind: hub.KindConfigMap, Body: kubeobj.MustEncodeBody(obj)}
	if _, err := old.Repair(ctx, spec, hub.State{}, hub.Drift{Class: hub.DriftMissing}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "the object in the watch cache", func() error {
		st, err := old.ReadState(ctx, spec, false)
		if err != nil {
			return err
		}
		return testwait.Check(st.Exists, "not cached yet")
	})
	st, err := old.ReadState(ctx, spec, true)
	if err != nil {
		t.Fatal(err)
	}

	held.arm()
	deleted := make(chan error, 1)
	go func() { deleted <- old.Delete(ctx, spec, st) }()
	select {
	case <-held.arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the delete never reached the transport")
	}
	next := cc
	next.Namespaces = []string{ns, "restart-more"}
	next.WrapTransport = nil               // held counts the replaced manager's requests only
	if err := r.Update(next); err != nil { // returns once the old manager's run ended
		t.Fatal(err)
	}
	close(held.release)
	err = <-deleted
	if !errors.Is(err, hub.ErrRestarting) || errors.Is(err, hub.ErrUnreachable) {
		t.Fatalf("the delete cut by the restart: %v (restarting %t, unreachable %t), want restarting only",
			err, errors.Is(err, hub.ErrRestarting), errors.Is(err, hub.ErrUnreachable))
	}
	if !strings.Contains(err.Error(), lc.Name) || !strings.Contains(err.Error(), "restarting") {
		t.Errorf("message %q names neither the cluster nor the restart", err)
	}

	// Fail at once, without a request: client-go retries a GET whose
	// connection closed ten times, a second apart.
	sent := held.seen.Load()
	for name, call := range map[string]func() error{
		"cached read": func() error { _, err := old.ReadState(ctx, spec, false); return err },
		"fresh read":  func() error { _, err := old.ReadState(ctx, spec, true); return err },
		"repair": func() error {
			_, err := old.Repair(ctx, spec, st, hub.Drift{Class: hub.DriftModified})
			return err
		},
		"delete":     func() error { return old.Delete(ctx, spec, st) },
		"list owned": func() error { _, err := old.ListOwned(ctx); return err },
		"custom resource schema": func() error {
			// Not compared without one on a stale cache: detectDrift
			// describes the error as it describes every call's.
			if _, err := old.SchemaFor(ctx, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}); err != nil {
				return old.callError("compare", spec, err)
			}
			return nil
		},
	} {
		if err := call(); !errors.Is(err, hub.ErrRestarting) {
			t.Errorf("%s on the replaced manager: %v, want an error that unwraps to hub.ErrRestarting", name, err)
		}
	}

	if n := held.seen.Load() - sent; n != 0 {
		t.Errorf("the calls on the replaced manager sent %d request(s), want none", n)
	}

	var cur *Manager
	testwait.For(t, 30*time.Second, "the new manager synced", func() error {
		be, ok := r.Backend(lc.Name)
		if !ok || be.(*Manager) == old {
			return errors.New("not replaced yet")
		}
		cur = be.(*Manager)
		return testwait.Check(cur.Health().State == hub.ClusterSynced, "state %s", cur.Health().State)
	})
	refs, err := cur.ListOwned(ctx)
	if err != nil || len(refs) != 1 || refs[0].ID != spec.ID {
		t.Fatalf("ListOwned on the new manager = %v, %v; want %s", refs, err, spec.ID)
	}
	st, err = cur.ReadState(ctx, spec, true)
	if err != nil || !st.Exists {
		t.Fatalf("read on the new manager: %+v, %v", st, err)
	}
	if err := cur.Delete(ctx, spec, st); err != nil {
		t.Fatalf("delete on the new manager: %v", err)
	}
	testwait.For(t, 30*time.Second, "the object gone", func() error {
		st, err := cur.ReadState(context.WithoutCancel(ctx), spec, true)
		if err != nil {
			return err
		}
		return testwait.Check(!st.Exists || st.Deleting, "still there")
	})
}

// panickingSink records every health report, and panics in Observe the
// first time an event of the object named boom comes (a broken event
// handler).
type panickingSink struct {
	recordingSink
	panicked atomic.Bool
	reports  []hub.ClusterHealth // under recordingSink.mu
}

func (s *panickingSink) Observe(ev hub.Event) {
	if ev.ID.Name() == "boom" && s.panicked.CompareAndSwap(false, true) {
		panic("boom")
	}
	s.recordingSink.Observe(ev)
}

func (s *panickingSink) ClusterChanged(h hub.ClusterHealth) {
	s.mu.Lock()
	s.reports = append(s.reports, h)
	s.mu.Unlock()
	s.recordingSink.ClusterChanged(h)
}

// TestHandlerPanicIsNotReady: an event handler that panics ends the
// cluster's manager run, which the registry restarts after a backoff.
// Until the new manager reports, the cluster is reported unreachable with
// the panic as its error, not left synced (the hub would take it for
// ready while nothing watches it); then it is synced again.
func TestHandlerPanicIsNotReady(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	const ns = "handler-panic"
	createNamespace(t, admin, ns)
	sink := &panickingSink{recordingSink: recordingSink{health: make(map[string]hub.ClusterHealth)}}
	r := NewRegistry(sink, RegistryOptions{Logger: testLogger(t), Health: fastHealth, MinBackoff: time.Second, MaxBackoff: time.Second})
	if err := r.Add(clusterConfig(lc, ns)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = r.Run(ctx) }()
	defer func() { cancel(); <-stopped }()
	sink.waitFor(t, 30*time.Second, "synced", func() bool { return sink.health[lc.Name].State == hub.ClusterSynced })

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "boom", Namespace: ns,
		Labels: map[string]string{kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy}}}
	if _, err := admin.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var at int
	sink.waitFor(t, 30*time.Second, "the panic reported", func() bool {
		for i, h := range sink.reports {
			if h.State == hub.ClusterUnreachable && strings.Contains(h.LastError, "panic in") {
				at = i
				return true
			}
		}
		return false
	})
	sink.waitFor(t, 30*time.Second, "synced again after the restart", func() bool {
		for _, h := range sink.reports[at+1:] {
			if h.State == hub.ClusterSynced {
				return true
			}
		}
		return false
	})
}

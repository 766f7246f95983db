package clusters

import (
	"context"
	"errors"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"maps"
	"net/http"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// applyGate is a transport wrapper that counts the backend's patches and,
// when armed, holds the next server-side apply until released, as a slow
// network would. A held call whose context ends fails like a real one.
type applyGate struct {
	mu      sync.Mutex
	armed   bool
	held    chan struct{} // closed when an apply is held
	release chan struct{}
	patches map[types.PatchType]int
}

func newApplyGate() *applyGate {
	return &applyGate{patches: make(map[types.PatchType]int)}
}

// arm makes the next apply wait for the returned release func; held is
// closed once it waits.
func (g *applyGate) arm() (held <-chan struct{}, release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed = true
	g.held = make(chan struct{})
	g.release = make(chan struct{})
	return g.held, sync.OnceFunc(func() { close(g.release) })
}

// counts returns the patches sent so far by type, and resets them.
func (g *applyGate) counts() map[types.PatchType]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := maps.Clone(g.patches)
	clear(g.patches)
	return c
}

func (g *applyGate) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodPatch {
			return rt.RoundTrip(req)
		}
		pt := types.PatchType(req.Header.Get("Content-Type"))
		g.mu.Lock()
		g.patches[pt]++
		hold := g.armed && pt == types.ApplyPatchType
		var held, release chan struct{}
		if hold {
			g.armed = false
			held, release = g.held, g.release
		}
		g.mu.Unlock()
		if hold {
			close(held)
			select {
			case <-release:
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
			if err := req.Context().Err(); err != nil {
				return nil, err
			}
		}
		return rt.RoundTrip(req)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestRemoveApplyPairOnCancel: a repair that must remove an entry someone
// added and then apply is a pair. If the caller (a hub shutting down) has
// given up before the repair starts, nothing is sent; if it gives up after
// the removal went through, the apply still completes, so the object is
// never left half-repaired.
func TestRemoveApplyPairOnCancel(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	createNamespace(t, admin, "pair")
	gate := newApplyGate()
	cc := clusterConfig(lc, "pair")
	cc.HubID = "hub-p"
	cc.WrapTransport = gate.wrap
	sink := newRecordingSink()
	r := runRegistry(t, sink, cc)
	sink.waitFor(t, 30*time.Second, "synced", func() bool { return sink.state(lc.Name) == hub.ClusterSynced })
	be, ok := r.Backend(lc.Name)
	if !ok {
		t.Fatal("no backend")
	}
	id := hub.NewNodeID(lc.Name, "pair", "settings", hub.KindConfigMap)
	desired := map[string]string{"LOG_LEVEL": "info"}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{
			"name": "settings", "namespace": "pair",
			"labels":      map[string]any{kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy},
			"annotations": map[string]any{kubeobj.NodeIDAnnotation: id.String(), kubeobj.HubAnnotation: "hub-p"},
		},
		"data": map[string]any{"LOG_LEVEL": "info"},
	}}
	spec := hub.NodeSpec{ID: id, Namespace: "pair", Name: "settings", Kind: hub.KindConfigMap, Body: kubeobj.MustEncodeBody(obj)}
	ctx := t.Context()
	// Create it, then someone adds a key: drift with an added entry.
	st, err := be.ReadState(ctx, spec, true)
	if err != nil {
		t.Fatal(err)
	}
	d, err := be.DetectDrift(ctx, spec, st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := be.Repair(ctx, spec, st, d); err != nil {
		t.Fatal(err)
	}
	addKey := func(t *testing.T) (hub.State, hub.Drift) {
		t.Helper()
		patch := []byte(`{"data":{"DEBUG":"true"}}`)
		if _, err := admin.CoreV1().ConfigMaps("pair").Patch(ctx, "settings", types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatal(err)
		}
		st, err := be.ReadState(ctx, spec, true)
		if err != nil {
			t.Fatal(err)
		}
		d, err := be.DetectDrift(ctx, spec, st)
		if err != nil {
			t.Fatal(err)
		}
		if !hasAddedEntries(d) {
			t.Fatalf("drift %+v lists no added entry", d)
		}
		gate.counts()
		return st, d
	}
	liveData := func(t *testing.T) map[string]string {
		t.Helper()
		cm, err := admin.CoreV1().ConfigMaps("pair").Get(ctx, "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data
	}

	t.Run("given up before it starts: nothing is sent", func(t *testing.T) {
		st, d := addKey(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := be.Repair(cctx, spec, st, d); !errors.Is(err, context.Canceled) {
			t.Fatalf("repair with a cancelled context: %v, want context.Canceled", err)
		}
		if c := gate.counts(); len(c) != 0 {
			t.Fatalf("patches sent: %v, want none", c)
		}
		if got := liveData(t); got["DEBUG"] != "true" {
			t.Fatalf("live data %v: the added key is gone although nothing was to be sent", got)
		}
	})

	t.Run("given up between remove and apply: the apply completes", func(t *testing.T) {
		st, d := addKey(t)
		held, release := gate.arm()
		defer release()
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := be.Repair(cctx, spec, st, d)
			done <- err
		}()
		select {
		case <-held:
		case err := <-done:
			t.Fatalf("repair ended before its apply: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatal("the apply never came")
		}
		cancel() // the hub stops while the apply is on the wire
		release()
		if err := <-done; err != nil {
			t.Fatalf("repair: %v (the pair was cut in half)", err)
		}
		if c := gate.counts(); c[types.JSONPatchType] != 1 || c[types.ApplyPatchType] != 1 {
			t.Fatalf("patches sent: %v, want one removal and one apply", c)
		}
		if got := liveData(t); !maps.Equal(got, desired) {
			t.Fatalf("live data %v, want %v", got, desired)
		}
	})
}

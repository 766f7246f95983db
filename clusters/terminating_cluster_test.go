package clusters

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// patchCounter counts the PATCH requests (server-side applies) a
// cluster's client sends.
type patchCounter struct{ n atomic.Int64 }

func (c *patchCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodPatch {
			c.n.Add(1)
		}
		return rt.RoundTrip(r)
	})
}

// roundTripFunc is a RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestTerminatingNamespaceAskedOnceASecond: on a real apiserver, writes
// into a namespace being deleted are refused (hub.ErrTerminating, each
// error naming its own object); once one was refused, the others within a
// second get the same answer without a request, so a namespace of many
// objects costs one refused apply a second; after that second the next
// write asks again. An object that exists there is updated as usual.
func TestTerminatingNamespaceAskedOnceASecond(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	const ns = "ending"
	createNamespace(t, admin, ns)
	var patches patchCounter
	cc := clusterConfig(lc, ns)
	cc.HubID = hub.DefaultHubID
	cc.WrapTransport = patches.wrap
	_, m := runRegistryFor(t, cc)
	ctx := t.Context()
	kept := func(v string) hub.NodeSpec {
		return genericSpec(t, lc.Name, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept, namespace: %s}\ndata: {a: %q}\n", ns, v))
	}
	if _, err := m.Repair(ctx, kept("1"), hub.State{Fresh: true}, hub.Drift{Class: hub.DriftMissing}); err != nil {
		t.Fatal(err)
	}
	// No namespace controller runs here: the namespace stays terminating.
	if err := admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "the namespace terminating", func() error {
		n, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return testwait.Check(n.DeletionTimestamp != nil, "not deleting")
	})
	write := func(i int) error {
		spec := genericSpec(t, lc.Name, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, namespace: %s}\ndata: {a: \"1\"}\n", i, ns))
		_, err := m.Repair(ctx, spec, hub.State{Fresh: true}, hub.Drift{Class: hub.DriftMissing})
		if !errors.Is(err, hub.ErrTerminating) || errors.Is(err, hub.ErrForbidden) || !strings.Contains(err.Error(), fmt.Sprintf(`"cm-%d"`, i)) ||
			!strings.Contains(err.Error(), "its namespace is being deleted") {
			t.Errorf("write %d into the terminating namespace: %v", i, err)
		}
		return err
	}
	began := time.Now()
	for i := range 20 {
		_ = write(i)
	}
	if time.Since(began) < terminatingEvery {
		if got := patches.n.Load(); got != 2 { // kept's create, then one
			t.Errorf("applies sent for 20 writes within a second: %d, want 1", got-1)
		}
	}
	// An object that exists is updated as usual: the apiserver refuses
	// only creates in a terminating namespace.
	st, err := m.ReadState(ctx, kept("2"), true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Repair(ctx, kept("2"), st, hub.Drift{Class: hub.DriftModified}); err != nil {
		t.Errorf("an update in the terminating namespace: %v", err)
	}
	time.Sleep(terminatingEvery)
	before := patches.n.Load()
	_ = write(20)
	if got := patches.n.Load() - before; got != 1 {
		t.Errorf("applies sent for a write a second later: %d, want 1 (asking again)", got)
	}
}

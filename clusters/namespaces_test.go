package clusters

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// callCounter counts a manager's namespace creates and its applies, by
// namespace and by whether the apiserver accepted them.
type callCounter struct {
	mu         sync.Mutex
	nsCreates  int
	applies    map[string]int // namespace -> accepted applies
	applyFails map[string]int // namespace -> refused applies
}

func newCallCounter() *callCounter {
	return &callCounter{applies: map[string]int{}, applyFails: map[string]int{}}
}

func (c *callCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		c.mu.Lock()
		defer c.mu.Unlock()
		switch {
		case req.Method == http.MethodPost && req.URL.Path == "/api/v1/namespaces":
			c.nsCreates++
		case req.Method == http.MethodPatch && types.PatchType(req.Header.Get("Content-Type")) == types.ApplyPatchType:
			ns, _, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/apis/apps/v1/namespaces/"), "/")
			if err == nil && resp.StatusCode < 300 {
				c.applies[ns]++
			} else {
				c.applyFails[ns]++
			}
		}
		return resp, err
	})
}

func (c *callCounter) take() (nsCreates int, applies, fails map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nsCreates, applies, fails = c.nsCreates, c.applies, c.applyFails
	c.nsCreates, c.applies, c.applyFails = 0, map[string]int{}, map[string]int{}
	return nsCreates, applies, fails
}

// TestNamespaceCreatedOnceAhead: workers creating objects at once in a
// namespace that does not exist yet send one namespace create between
// them, and every apply lands at the first try; a namespace that exists
// but holds no object of ours costs one create (AlreadyExists); a manager
// whose watch cache holds objects in the namespace sends none. Before
// this, each worker's first apply failed for the missing namespace and
// each then created it.
func TestNamespaceCreatedOnceAhead(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	const fresh, existing = "ns-fresh", "ns-existing"
	createNamespace(t, admin, existing)
	calls := newCallCounter()
	cc := clusterConfig(lc, fresh, existing)
	cc.WrapTransport = calls.wrap
	_, be := runRegistryFor(t, cc)

	// createAll creates app-from ... app-(to-1) in ns at once.
	createAll := func(t *testing.T, be hub.Backend, ns string, from, to int) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, to-from)
		for i := from; i < to; i++ {
			spec := deploymentSpec(t, lc.Name, ns, fmt.Sprintf("app-%d", i))
			wg.Go(func() {
				st, err := be.ReadState(t.Context(), spec, false)
				if err == nil && st.Exists {
					err = fmt.Errorf("%s exists", spec.Name)
				}
				if err == nil {
					_, err = be.Repair(t.Context(), spec, st, hub.Drift{Class: hub.DriftMissing})
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(t *testing.T, ns string, wantCreates, wantApplies int) {
		t.Helper()
		creates, applies, fails := calls.take()
		if creates != wantCreates || applies[ns] != wantApplies || len(fails) != 0 {
			t.Fatalf("namespace %s: %d namespace creates (want %d), %d applies accepted (want %d), refused applies %v (want none)",
				ns, creates, wantCreates, applies[ns], wantApplies, fails)
		}
	}

	t.Run("missing namespace, 16 workers", func(t *testing.T) {
		createAll(t, be, fresh, 0, 16)
		check(t, fresh, 1, 16)
		createAll(t, be, fresh, 16, 20) // the namespace was checked
		check(t, fresh, 0, 4)
	})
	t.Run("existing namespace", func(t *testing.T) {
		createAll(t, be, existing, 0, 4)
		check(t, existing, 1, 4)
	})
	t.Run("a new manager whose cache holds the namespace's objects", func(t *testing.T) {
		calls2 := newCallCounter()
		cc2 := cc
		cc2.WrapTransport = calls2.wrap
		_, be2 := runRegistryFor(t, cc2)
		testwait.For(t, 10*time.Second, "the cache to hold the objects", func() error {
			st, err := be2.ReadState(t.Context(), deploymentSpec(t, lc.Name, fresh, "app-0"), false)
			if err != nil {
				return err
			}
			return testwait.Check(st.Exists, "app-0 not cached")
		})
		createAll(t, be2, fresh, 20, 24)
		creates, applies, fails := calls2.take()
		if creates != 0 || applies[fresh] != 4 || len(fails) != 0 {
			t.Fatalf("%d namespace creates (want 0), %d applies (want 4), refused %v", creates, applies[fresh], fails)
		}
	})
}

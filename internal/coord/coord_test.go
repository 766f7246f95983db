package coord

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// Timing of the real-cluster test: short leases, generous waits.
const (
	testLease = 2 * time.Second
	waitLimit = 60 * time.Second
	testHub   = "hub"
	testNS    = "coord-test"
)

func TestOptionsValidation(t *testing.T) {
	never := kubernetes.NewForConfigOrDie(&rest.Config{Host: "http://127.0.0.1:1"})
	ok := Options{Client: never, Namespace: "ns", HubID: "hub", ReplicaID: "r1", Handler: &recorder{}}
	if _, err := New(ok); err != nil {
		t.Fatalf("New(valid) = %v", err)
	}
	c, _ := New(ok)
	if c.opts.LeaseDuration != DefaultLeaseDuration || c.opts.RenewDeadline != DefaultLeaseDuration*2/3 || c.opts.RetryPeriod != DefaultLeaseDuration/5 {
		t.Errorf("defaults = %v/%v/%v", c.opts.LeaseDuration, c.opts.RenewDeadline, c.opts.RetryPeriod)
	}
	if c.ReplicaID() != "r1" {
		t.Errorf("ReplicaID() = %q", c.ReplicaID())
	}
	bad := map[string]func(o *Options){
		"no client":           func(o *Options) { o.Client = nil },
		"no handler":          func(o *Options) { o.Handler = nil },
		"deadline >= lease":   func(o *Options) { o.LeaseDuration, o.RenewDeadline = time.Second, time.Second },
		"retry >= deadline":   func(o *Options) { o.RenewDeadline, o.RetryPeriod = time.Second, time.Second },
		"no replica id":       func(o *Options) { o.ReplicaID = "" },
		"no hub id":           func(o *Options) { o.HubID = "" },
		"invalid replica id":  func(o *Options) { o.ReplicaID = "R_1" },
		"invalid namespace":   func(o *Options) { o.Namespace = "a.b" },
		"no namespace":        func(o *Options) { o.Namespace = "" },
		"replica id too long": func(o *Options) { o.ReplicaID = string(make([]byte, 300)) },
	}
	for name, mod := range bad {
		o := ok
		mod(&o)
		if _, err := New(o); err == nil {
			t.Errorf("%s: New accepted %+v", name, o)
		}
	}
}

// events is a Handler that keeps the clusters it was told it owns and
// every call, and reports a call that does not match its state.
type events struct {
	mu    sync.Mutex
	owned map[string]bool
	owns  []string // Own calls since the last reset
	drops []string // Disown calls since the last reset
	errs  []string
	// onOwn, when set, runs on every Own call (from the loop).
	onOwn func(cluster string)
}

func (e *events) Own(cluster string) {
	e.mu.Lock()
	if e.owned[cluster] {
		e.errs = append(e.errs, "Own("+cluster+") while owned")
	}
	e.owned[cluster] = true
	e.owns = append(e.owns, cluster)
	f := e.onOwn
	e.mu.Unlock()
	if f != nil {
		f(cluster)
	}
}

func (e *events) Disown(cluster string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.owned[cluster] {
		e.errs = append(e.errs, "Disown("+cluster+") while not owned")
	}
	delete(e.owned, cluster)
	e.drops = append(e.drops, cluster)
}

func (e *events) snapshot() (owned, owns, drops, errs []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Sorted(maps.Keys(e.owned)), slices.Clone(e.owns), slices.Clone(e.drops), slices.Clone(e.errs)
}

func (e *events) reset() {
	e.mu.Lock()
	e.owns, e.drops = nil, nil
	e.mu.Unlock()
}

func (e *events) setOnOwn(f func(string)) {
	e.mu.Lock()
	e.onOwn = f
	e.mu.Unlock()
}

// rtFunc is an http.RoundTripper function.
type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// node is one coordinator running in the test, with a client that can be
// cut off from the control plane.
type node struct {
	id      string
	c       *Coordinator
	h       *events
	reg     *prometheus.Registry
	blocked atomic.Bool
	cancel  context.CancelFunc
	done    chan error
}

func startNode(t *testing.T, cfg *rest.Config, id string, clusters []string) *node {
	t.Helper()
	n := &node{id: id, h: &events{owned: make(map[string]bool)}, reg: prometheus.NewRegistry(), done: make(chan error, 1)}
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return rtFunc(func(r *http.Request) (*http.Response, error) {
			if n.blocked.Load() {
				return nil, errors.New("partitioned (test)")
			}
			return rt.RoundTrip(r)
		})
	}
	c, err := New(Options{
		Client: kubernetes.NewForConfigOrDie(cfg), Namespace: testNS, HubID: testHub, ReplicaID: id,
		LeaseDuration: testLease, Handler: n.h, Registerer: n.reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	c.SetAddress(id + ".example:8080")
	c.SetClusters(clusters)
	n.c = c
	ctx, cancel := context.WithCancel(t.Context())
	n.cancel = cancel
	go func() { n.done <- c.Run(ctx) }()
	t.Cleanup(func() { n.stop(t) })
	return n
}

// stop ends the node's Run and waits for it to return (idempotent).
func (n *node) stop(t *testing.T) {
	t.Helper()
	n.cancel()
	if err, ok := <-n.done; ok {
		close(n.done)
		if err != nil {
			t.Errorf("replica %s: Run: %v", n.id, err)
		}
	}
}

// gauge returns the value of the node's gauge or counter name, as
// gathered from its registry (NaN when absent or on error).
func (n *node) gauge(name string) float64 {
	mfs, err := n.reg.Gather()
	if err != nil {
		return math.NaN()
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return math.NaN()
}

// converged reports why the nodes do not (yet) agree on the rendezvous
// assignment of clusters over exactly their ids: views, handler state,
// Owns, the owned gauge and the claim Leases' holders.
func converged(ctx context.Context, admin kubernetes.Interface, nodes []*node, clusters []string) error {
	var live []string
	for _, n := range nodes {
		live = append(live, n.id)
	}
	slices.Sort(live)
	want := make(map[string]string)
	for _, id := range clusters {
		want[id] = Owner(id, live)
	}
	for _, n := range nodes {
		v := n.c.View()
		var ids []string
		for _, r := range v.Replicas {
			ids = append(ids, r.ID)
			if r.Self != (r.ID == n.id) || r.Address != r.ID+".example:8080" {
				return fmt.Errorf("%s sees replica %+v", n.id, r)
			}
			if share := Assign(r.ID, clusters, live); !slices.Equal(r.Clusters, share) {
				return fmt.Errorf("%s sees %s holding %v, want %v", n.id, r.ID, r.Clusters, share)
			}
		}
		if !slices.Equal(ids, live) {
			return fmt.Errorf("%s sees replicas %v, want %v", n.id, ids, live)
		}
		if !maps.Equal(v.Owners, want) {
			return fmt.Errorf("%s sees owners %v, want %v", n.id, v.Owners, want)
		}
		share := Assign(n.id, clusters, live)
		owned, _, _, _ := n.h.snapshot()
		if !slices.Equal(owned, share) {
			return fmt.Errorf("%s's handler owns %v, want %v", n.id, owned, share)
		}
		for _, id := range clusters {
			if n.c.Owns(id) != (want[id] == n.id) {
				return fmt.Errorf("%s: Owns(%s) = %v, owner %s", n.id, id, n.c.Owns(id), want[id])
			}
		}
		if g := n.gauge("driftwatch_coordination_clusters_owned"); g != float64(len(share)) {
			return fmt.Errorf("%s: owned gauge %v, want %d", n.id, g, len(share))
		}
		if g := n.gauge("driftwatch_coordination_replicas"); g != float64(len(live)) {
			return fmt.Errorf("%s: replicas gauge %v, want %d", n.id, g, len(live))
		}
	}
	for _, id := range clusters {
		l, err := admin.CoordinationV1().Leases(testNS).Get(ctx, claimName(testHub, id), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if h := holderOf(l); h != want[id] {
			return fmt.Errorf("claim of %s held by %q, want %q", id, h, want[id])
		}
		if l.Labels[KindLabel] != kindCluster || l.Labels[HubLabel] != testHub || l.Annotations[ClusterAnnotation] != id {
			return fmt.Errorf("claim of %s: labels %v annotations %v", id, l.Labels, l.Annotations)
		}
	}
	return nil
}

func noHandlerErrors(t *testing.T, nodes ...*node) {
	t.Helper()
	for _, n := range nodes {
		if _, _, _, errs := n.h.snapshot(); len(errs) > 0 {
			t.Errorf("%s: handler calls out of order: %v", n.id, errs)
		}
	}
}

func incarnationOf(ctx context.Context, t *testing.T, admin kubernetes.Interface, id string) string {
	t.Helper()
	l, err := admin.CoordinationV1().Leases(testNS).Get(ctx, memberName(testHub, id), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("membership lease of %s: %v", id, err)
	}
	inc := l.Annotations[IncarnationAnnotation]
	if inc == "" || holderOf(l) != id {
		t.Fatalf("membership lease of %s: holder %q incarnation %q", id, holderOf(l), inc)
	}
	return inc
}

// TestCoordinators runs coordinators in-process against one real control
// plane: two share the clusters, a third joins and takes only its share,
// one is partitioned (fenced before the others take over, evicted, back
// as a new incarnation), one leaves gracefully (claims released at once).
func TestCoordinators(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	cfg := set.Clusters[0].RESTConfig()
	admin := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	var clusters []string
	for i := range 12 {
		clusters = append(clusters, fmt.Sprintf("c%02d", i))
	}

	// Without its namespace, a replica is not ready and says why; it joins
	// once the namespace exists.
	a := startNode(t, cfg, "a", clusters)
	testwait.For(t, waitLimit, "a says its namespace is missing", func() error {
		const says = `coordination namespace "` + testNS + `" does not exist on the coordination cluster: create it`
		if err := a.c.Ready(); err == nil || !strings.Contains(err.Error(), says) {
			return fmt.Errorf("Ready = %v, want it to say %q", err, says)
		}
		return nil
	})
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, waitLimit, "a joined once its namespace exists", a.c.Ready)

	// Two replicas divide the clusters.
	b := startNode(t, cfg, "b", clusters)
	testwait.For(t, waitLimit, "a and b share the clusters", func() error { return converged(ctx, admin, []*node{a, b}, clusters) })
	noHandlerErrors(t, a, b)

	// A third joins: only its rendezvous share moves, from a and b to c.
	a.h.reset()
	b.h.reset()
	c := startNode(t, cfg, "c", clusters)
	all3 := []*node{a, b, c}
	testwait.For(t, waitLimit, "c joined", func() error { return converged(ctx, admin, all3, clusters) })
	cShare := Assign("c", clusters, []string{"a", "b", "c"})
	if len(cShare) == 0 || len(cShare) == len(clusters) {
		t.Fatalf("c's share %v: the test needs a proper subset", cShare)
	}
	var moved []string
	for _, n := range []*node{a, b} {
		_, owns, drops, _ := n.h.snapshot()
		if len(owns) > 0 {
			t.Errorf("%s took %v when c joined", n.id, owns)
		}
		for _, id := range drops {
			if !slices.Contains(cShare, id) {
				t.Errorf("%s gave up %s, not in c's share %v", n.id, id, cShare)
			}
		}
		moved = append(moved, drops...)
	}
	slices.Sort(moved)
	if !slices.Equal(moved, cShare) {
		t.Errorf("clusters moved to c: %v, want %v", moved, cShare)
	}
	noHandlerErrors(t, all3...)

	// b is partitioned: its writes are fenced before a or c take any of
	// its clusters, they evict it and take over; back, it rejoins as a new
	// incarnation and gets its share again.
	t.Run("partition", func(t *testing.T) {
		bShare := Assign("b", clusters, []string{"a", "b", "c"})
		oldInc := incarnationOf(ctx, t, admin, "b")
		takeovers := func() float64 {
			return a.gauge("driftwatch_coordination_takeovers_total") + c.gauge("driftwatch_coordination_takeovers_total")
		}
		evictions := func() float64 {
			return a.gauge("driftwatch_coordination_evictions_total") + c.gauge("driftwatch_coordination_evictions_total")
		}
		takeovers0, evictions0 := takeovers(), evictions()
		fenced0 := testutil.ToFloat64(b.c.metrics.fenced)

		// A guarded write in flight on b when it is cut off.
		wctx, done, err := b.c.Guard(ctx, bShare[0])
		if err != nil {
			t.Fatalf("b: Guard(%s) before the partition: %v", bShare[0], err)
		}
		var writer sync.WaitGroup
		writer.Go(func() { <-wctx.Done(); done() })
		defer writer.Wait()

		var violations atomic.Int32
		var mu sync.Mutex
		var report []string
		check := func(id string) {
			if !slices.Contains(bShare, id) {
				return
			}
			if wctx.Err() == nil {
				violations.Add(1)
			}
			if _, d, err := b.c.Guard(ctx, id); err == nil || !errors.Is(err, ErrNotOwner) {
				violations.Add(1)
				if d != nil {
					d()
				}
				mu.Lock()
				report = append(report, "b's Guard("+id+") passed while another replica owned it")
				mu.Unlock()
			}
		}
		a.h.setOnOwn(check)
		c.h.setOnOwn(check)
		b.blocked.Store(true)

		testwait.For(t, waitLimit, "a and c took b's clusters", func() error { return converged(ctx, admin, []*node{a, c}, clusters) })
		a.h.setOnOwn(nil)
		c.h.setOnOwn(nil)
		if n := violations.Load(); n > 0 {
			mu.Lock()
			t.Errorf("%d fencing violations: %v", n, report)
			mu.Unlock()
		}
		if wctx.Err() == nil {
			t.Error("b's guarded write still runs after the takeover")
		}
		for _, id := range bShare {
			if b.c.Owns(id) {
				t.Errorf("b still Owns(%s) while partitioned", id)
			}
		}
		if got := testutil.ToFloat64(b.c.metrics.fenced); got <= fenced0 {
			t.Errorf("fenced writes on b: %v, want more than %v", got, fenced0)
		}
		if _, err := admin.CoordinationV1().Leases(testNS).Get(ctx, memberName(testHub, "b"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("b's membership lease after eviction: %v, want NotFound", err)
		}
		if got := evictions() - evictions0; got != 1 {
			t.Errorf("evictions of b: %v, want 1", got)
		}
		if got := takeovers() - takeovers0; got != float64(len(bShare)) {
			t.Errorf("takeovers: %v, want %d (b's share)", got, len(bShare))
		}
		if got := b.gauge("driftwatch_coordination_renewal_failures_total"); got < 1 {
			t.Errorf("b's renewal failures: %v", got)
		}
		if owned, _, _, _ := b.h.snapshot(); len(owned) > 0 {
			t.Errorf("b's handler still owns %v while partitioned", owned)
		}

		b.blocked.Store(false)
		testwait.For(t, waitLimit, "b rejoined", func() error { return converged(ctx, admin, all3, clusters) })
		if inc := incarnationOf(ctx, t, admin, "b"); inc == oldInc {
			t.Errorf("b rejoined with its old incarnation %q", inc)
		}
		noHandlerErrors(t, all3...)
	})

	// c leaves gracefully: its claims are released and its membership
	// Lease deleted before Run returns; a and b take its clusters.
	t.Run("graceful stop", func(t *testing.T) {
		cShare := Assign("c", clusters, []string{"a", "b", "c"})
		c.stop(t)
		if _, err := admin.CoordinationV1().Leases(testNS).Get(ctx, memberName(testHub, "c"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("c's membership lease after Run returned: %v, want NotFound", err)
		}
		for _, id := range cShare {
			l, err := admin.CoordinationV1().Leases(testNS).Get(ctx, claimName(testHub, id), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if h := holderOf(l); h == "c" {
				t.Errorf("claim of %s still held by c after Run returned", id)
			}
		}
		if owned, _, _, _ := c.h.snapshot(); len(owned) > 0 {
			t.Errorf("c's handler still owns %v", owned)
		}
		if g := c.gauge("driftwatch_coordination_clusters_owned"); g != 0 {
			t.Errorf("c's owned gauge after stop: %v", g)
		}
		for _, id := range cShare {
			if _, _, err := c.c.Guard(ctx, id); !errors.Is(err, ErrNotOwner) {
				t.Errorf("c: Guard(%s) after stop: %v", id, err)
			}
		}
		testwait.For(t, waitLimit, "a and b took c's clusters", func() error { return converged(ctx, admin, []*node{a, b}, clusters) })
		noHandlerErrors(t, all3...)
	})

	// Fewer clusters: the claims of the removed ones are released.
	t.Run("cluster removed", func(t *testing.T) {
		fewer := clusters[:6]
		a.c.SetClusters(fewer)
		b.c.SetClusters(append(slices.Clone(fewer), fewer[0])) // duplicates are ignored
		testwait.For(t, waitLimit, "clusters removed", func() error { return converged(ctx, admin, []*node{a, b}, fewer) })
		for _, id := range clusters[6:] {
			l, err := admin.CoordinationV1().Leases(testNS).Get(ctx, claimName(testHub, id), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if h := holderOf(l); h != "" {
				t.Errorf("claim of removed cluster %s still held by %q", id, h)
			}
		}
	})
}

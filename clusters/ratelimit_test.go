package clusters

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sourcegraph/conc"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// rlServer is a minimal apiserver for the limiter tests: GETs of configmaps
// answer a ConfigMap, watches stay open, /readyz says ok, and every response
// carries the APF headers while apf is true. Requests for configmaps named
// "held-*" wait for release; patch, when set, answers PATCHes.
type rlServer struct {
	*httptest.Server
	apf     atomic.Bool
	release chan struct{}
	stop    chan struct{}
	patch   func(w http.ResponseWriter, r *http.Request)

	active, maxActive atomic.Int64 // non-watch requests in the handler
	watches           atomic.Int64 // watches that reached the handler
}

func newRLServer(t *testing.T, apf bool) *rlServer {
	t.Helper()
	s := &rlServer{release: make(chan struct{}), stop: make(chan struct{})}
	s.apf.Store(apf)
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		close(s.stop)
		s.Close()
	})
	return s
}

func (s *rlServer) serve(w http.ResponseWriter, r *http.Request) {
	if s.apf.Load() {
		w.Header().Set(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID, "fs-uid")
		w.Header().Set(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID, "pl-uid")
	}
	if r.URL.Query().Get("watch") == "true" {
		s.watches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-s.stop:
		}
		return
	}
	n := s.active.Add(1)
	defer s.active.Add(-1)
	for {
		m := s.maxActive.Load()
		if n <= m || s.maxActive.CompareAndSwap(m, n) {
			break
		}
	}
	name := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	switch {
	case r.URL.Path == "/readyz":
		_, _ = io.WriteString(w, "ok")
		return
	case r.Method == http.MethodPatch && s.patch != nil:
		s.patch(w, r)
		return
	case strings.HasPrefix(name, "held-"):
		select {
		case <-s.release:
		case <-s.stop:
		}
	}
	writeConfigMap(w, name)
}

func writeConfigMap(w http.ResponseWriter, name string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q,"namespace":"shop","resourceVersion":"7"}}`, name)
}

// rlKubeconfig writes a kubeconfig for url and returns its path.
func rlKubeconfig(t *testing.T, url string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: secret}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, url)
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// rlClient returns a clientset for cfg built like a Manager's, and its
// limiter.
func rlClient(t *testing.T, cfg ClusterConfig, log *slog.Logger) (kubernetes.Interface, *clientLimiter) {
	t.Helper()
	rc, err := restConfig(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	l, ok := rc.RateLimiter.(*clientLimiter)
	if !ok {
		t.Fatalf("RateLimiter is %T", rc.RateLimiter)
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.CloseIdleConnections)
	c, err := kubernetes.NewForConfigAndClient(rc, hc)
	if err != nil {
		t.Fatal(err)
	}
	return c, l
}

// getMany GETs n configmaps at once and fails the test on any error.
func getMany(t *testing.T, c kubernetes.Interface, n int, prefix string) {
	t.Helper()
	var wg conc.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			if _, err := c.CoreV1().ConfigMaps("shop").Get(t.Context(), fmt.Sprintf("%s%d", prefix, i), metav1.GetOptions{}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// lockedBuffer is a log destination safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestClientLimiterAdaptive: without qps/burst, the client starts with the
// token bucket, drops it at the first response with APF headers (300
// concurrent calls then wait for nothing), takes it again at a response
// without them (calls past the burst wait), and drops it again when they
// come back, letting the calls waiting for a token go at once. Each switch
// is one info line naming the cluster.
func TestClientLimiterAdaptive(t *testing.T) {
	srv := newRLServer(t, true)
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil)).With("cluster", "c1")
	c, l := rlClient(t, ClusterConfig{ID: "c1", Kubeconfig: rlKubeconfig(t, srv.URL)}, log)

	if got := l.stats().mode; got != limitBucket {
		t.Fatalf("mode before any call = %s, want %s", got, limitBucket)
	}
	getMany(t, c, 1, "first-")
	if st := l.stats(); st.mode != limitAPF || st.switches != 1 {
		t.Fatalf("after a response with APF headers: %+v, want mode %s after 1 switch", st, limitAPF)
	}
	getMany(t, c, 300, "apf-")
	if st := l.stats(); st.delayed != 0 || st.waited != 0 {
		t.Fatalf("APF mode delayed %d calls for %v, want none", st.delayed, st.waited)
	}

	srv.apf.Store(false)
	getMany(t, c, 1, "plain-")
	if st := l.stats(); st.mode != limitBucket || st.switches != 2 {
		t.Fatalf("after a response without APF headers: %+v, want mode %s after 2 switches", st, limitBucket)
	}
	getMany(t, c, 150, "bucket-") // past the burst of 100
	st := l.stats()
	if st.mode != limitBucket || st.delayed == 0 || st.waited <= 0 {
		t.Fatalf("bucket mode: %+v, want calls past the burst delayed", st)
	}

	// Calls wait for a token: their responses (with APF headers again) are
	// held until some calls are waiting in the limiter, so the bucket is
	// drained however slow the machine; the first response then lets the
	// waiting calls go at once.
	srv.apf.Store(true)
	var held conc.WaitGroup
	heldErrs := make(chan error, 1000)
	for i := range 1000 {
		held.Go(func() {
			if _, err := c.CoreV1().ConfigMaps("shop").Get(t.Context(), fmt.Sprintf("held-back-%d", i), metav1.GetOptions{}); err != nil {
				heldErrs <- err
			}
		})
	}
	testwait.For(t, time.Minute, "calls waiting for a token", func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		return testwait.Check(len(l.waiters) > 0, "no call waits")
	})
	close(srv.release)
	held.Wait()
	close(heldErrs)
	for err := range heldErrs {
		t.Fatal(err)
	}
	st = l.stats()
	if st.mode != limitAPF || st.switches != 3 || st.released == 0 {
		t.Fatalf("after APF came back: %+v, want mode %s after 3 switches with waiting calls released", st, limitAPF)
	}
	out := logs.String()
	if n := strings.Count(out, "client rate limit"); n != 3 {
		t.Errorf("%d switch lines, want 3:\n%s", n, out)
	}
	for _, want := range []string{"mode=apf", "mode=bucket", "cluster=c1"} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
}

// TestClientLimiterFixed: an explicit qps or burst is a fixed token bucket
// that APF headers never lift (the unset half is the default); a negative
// qps is no client-side limit.
func TestClientLimiterFixed(t *testing.T) {
	tests := []struct {
		name       string
		qps        float32
		burst      int
		wantMode   string
		wantQPS    float32
		wantBurst  int
		calls      int
		wantDelays bool
	}{
		{"qps and burst", 50, 10, limitFixed, 50, 10, 30, true},
		{"burst only", 0, 10, limitFixed, DefaultQPS, 10, 30, true},
		{"qps only", 20, 0, limitFixed, 20, DefaultBurst, 110, true},
		{"negative qps", -1, 0, limitNone, -1, 0, 200, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newRLServer(t, true)
			cfg := ClusterConfig{ID: "c1", Kubeconfig: rlKubeconfig(t, srv.URL), QPS: tt.qps, Burst: tt.burst}
			rc, err := RESTConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if rc.QPS != tt.wantQPS || rc.Burst != tt.wantBurst {
				t.Errorf("rest.Config QPS/Burst = %g/%d, want %g/%d", rc.QPS, rc.Burst, tt.wantQPS, tt.wantBurst)
			}
			c, l := rlClient(t, cfg, nil)
			getMany(t, c, tt.calls, "c-")
			st := l.stats()
			if st.mode != tt.wantMode || st.switches != 0 {
				t.Fatalf("stats %+v, want mode %s, no switch", st, tt.wantMode)
			}
			if got := st.delayed > 0; got != tt.wantDelays {
				t.Fatalf("%d of %d calls delayed, want delays: %v", st.delayed, tt.calls, tt.wantDelays)
			}
		})
	}
}

func TestDescribeRateLimit(t *testing.T) {
	tests := []struct {
		qps   float32
		burst int
		want  string
	}{
		{0, 0, "adaptive (APF-aware; 50/100 until the apiserver shows API Priority and Fairness)"},
		{20, 40, "fixed 20/40"},
		{7.5, 0, "fixed 7.5/100"},
		{0, 10, "fixed 50/10"},
		{-1, 0, "none"},
	}
	for _, tt := range tests {
		if got := DescribeRateLimit(tt.qps, tt.burst); got != tt.want {
			t.Errorf("DescribeRateLimit(%g, %d) = %q, want %q", tt.qps, tt.burst, got, tt.want)
		}
	}
}

// TestClientLimiterInFlight: 200 concurrent calls never have more than
// MaxInFlight requests at the apiserver; the rest wait for a slot. Watches
// hold no slot: 40 of them open while every slot is taken.
func TestClientLimiterInFlight(t *testing.T) {
	srv := newRLServer(t, true)
	c, l := rlClient(t, ClusterConfig{ID: "c1", Kubeconfig: rlKubeconfig(t, srv.URL)}, nil)
	getMany(t, c, 1, "warm-") // APF mode: the token bucket stays out of the way

	const calls = 200
	var wg conc.WaitGroup
	errs := make(chan error, calls)
	for i := range calls {
		wg.Go(func() {
			if _, err := c.CoreV1().ConfigMaps("shop").Get(t.Context(), fmt.Sprintf("held-%d", i), metav1.GetOptions{}); err != nil {
				errs <- err
			}
		})
	}
	testwait.For(t, time.Minute, "every slot taken and the other calls queued", func() error {
		st, active := l.stats(), srv.active.Load()
		return testwait.Check(active == MaxInFlight && st.queued == calls-MaxInFlight, "%d calls in flight, %d queued", active, st.queued)
	})

	const watches = 40
	var ws []watch.Interface
	// A watch that waited for a slot would wait until the calls end: give
	// up after a while instead.
	wctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for range watches {
		w, err := c.CoreV1().ConfigMaps("shop").Watch(wctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("watch while every slot is taken: %v", err)
		}
		ws = append(ws, w)
	}
	if got := srv.watches.Load(); got != watches {
		t.Errorf("%d watches reached the apiserver, want %d", got, watches)
	}
	if st := l.stats(); st.inFlight != MaxInFlight {
		t.Errorf("watches took slots: %d in flight, want %d", st.inFlight, MaxInFlight)
	}

	close(srv.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, w := range ws {
		w.Stop()
	}
	st := l.stats()
	if got := srv.maxActive.Load(); got != MaxInFlight || st.maxInFlight != MaxInFlight {
		t.Errorf("most requests in flight: %d at the apiserver, %d by the limiter; want %d", got, st.maxInFlight, MaxInFlight)
	}
	if st.inFlight != 0 || st.queued != 0 {
		t.Errorf("after the calls: %+v, want no slot held or awaited", st)
	}
}

// TestClientLimiterSlotWaitEndsWithContext: a call waiting for a slot gives
// up when its context ends, and its error is the context's.
func TestClientLimiterSlotWaitEndsWithContext(t *testing.T) {
	l := newClientLimiter(0, 0, nil)
	var releases []func()
	for range MaxInFlight {
		release, err := l.acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := l.acquire(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire with every slot taken and a cancelled context = %v, want context.Canceled", err)
	}
	for _, release := range releases {
		release()
		release() // a second call is a no-op
	}
	if st := l.stats(); st.inFlight != 0 || st.queued != 0 || len(l.slots) != 0 {
		t.Fatalf("after releasing: %+v, %d slots held", st, len(l.slots))
	}
}

// configMapSpec is the NodeSpec of ConfigMap shop/web on cluster c1.
func configMapSpec() hub.NodeSpec {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
		"data":     map[string]any{"k": "v"},
	}}
	return hub.NodeSpec{ID: hub.NewNodeID("c1", "shop", "web", hub.KindConfigMap), Namespace: "shop", Name: "web", Kind: hub.KindConfigMap, Body: kubeobj.MustEncodeBody(obj)}
}

// tooMany answers like APF rejecting a request: 429, Retry-After, plain
// text.
func tooMany(w http.ResponseWriter, retryAfter string) {
	w.Header().Set("Retry-After", retryAfter)
	http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
}

// TestRepairHonoursRetryAfter: a server-side apply answered 429 with
// Retry-After is retried by client-go once the delay has passed, and
// succeeds. A 429 that outlasts client-go's retries, or one whose wait the
// call's deadline cuts short, fails the repair with an error that is
// neither unreachable nor forbidden: the hub backs the NodeID off as after
// any failure.
func TestRepairHonoursRetryAfter(t *testing.T) {
	type attempt struct {
		at          time.Time
		contentType string
	}
	run := func(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request), ctx context.Context) ([]attempt, hub.RepairResult, error) {
		t.Helper()
		srv := newRLServer(t, true)
		var mu sync.Mutex
		var attempts []attempt
		srv.patch = func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			attempts = append(attempts, attempt{time.Now(), r.Header.Get("Content-Type")})
			n := len(attempts)
			mu.Unlock()
			answer(n, w, r)
		}
		m, release, err := Connect(t.Context(), ClusterConfig{ID: "c1", Kubeconfig: rlKubeconfig(t, srv.URL)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		res, err := m.Repair(ctx, configMapSpec(), hub.State{}, hub.Drift{})
		mu.Lock()
		defer mu.Unlock()
		return attempts, res, err
	}

	t.Run("retried after Retry-After", func(t *testing.T) {
		attempts, res, err := run(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				tooMany(w, "1")
				return
			}
			writeConfigMap(w, "web")
		}, t.Context())
		if err != nil {
			t.Fatalf("Repair: %v", err)
		}
		if res.Version != "7" || len(attempts) != 2 {
			t.Fatalf("result %+v after %d attempts, want version 7 after 2", res, len(attempts))
		}
		for _, a := range attempts {
			if a.contentType != "application/apply-patch+yaml" {
				t.Errorf("attempt content type %q, want a server-side apply", a.contentType)
			}
		}
		if gap := attempts[1].at.Sub(attempts[0].at); gap < 900*time.Millisecond {
			t.Errorf("retried after %v, before the 1s Retry-After", gap)
		}
	})

	throttledFailure := func(t *testing.T, err error) {
		t.Helper()
		if err == nil {
			t.Fatal("Repair succeeded against a server that always answers 429")
		}
		if errors.Is(err, hub.ErrUnreachable) || errors.Is(err, hub.ErrForbidden) {
			t.Errorf("a throttled repair fails as unreachable or forbidden (no backoff growth): %v", err)
		}
		if !strings.Contains(err.Error(), `cluster "c1"`) || !strings.Contains(err.Error(), "429 Too Many Requests") {
			t.Errorf("error does not name the cluster and the throttling: %v", err)
		}
	}
	t.Run("outlasts the retries", func(t *testing.T) {
		attempts, _, err := run(t, func(_ int, w http.ResponseWriter, _ *http.Request) { tooMany(w, "0") }, t.Context())
		throttledFailure(t, err)
		if len(attempts) != 11 {
			t.Errorf("%d attempts, want 11 (client-go's 10 retries)", len(attempts))
		}
	})
	t.Run("no time left for the wait", func(t *testing.T) {
		// The first Retry-After fits in the deadline, the second does not:
		// the call fails with the 429, not with the deadline after a
		// useless wait.
		ctx, cancel := context.WithTimeout(t.Context(), 1900*time.Millisecond)
		defer cancel()
		attempts, _, err := run(t, func(_ int, w http.ResponseWriter, _ *http.Request) { tooMany(w, "1") }, ctx)
		throttledFailure(t, err)
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("the 429 is lost to the deadline: %v", err)
		}
		if len(attempts) != 2 {
			t.Errorf("%d attempts, want 2 (one retry after Retry-After)", len(attempts))
		}
	})
}

// TestClientLimiterRealAPF: the local apiserver has API Priority and
// Fairness on, so once the cluster's manager has synced, its limiter is in
// APF mode, and a burst of 300 concurrent server-side applies (three times
// the default bucket's burst) goes through the cluster's client without the
// limiter delaying one request, and never with more than MaxInFlight at the
// apiserver.
func TestClientLimiterRealAPF(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	createNamespace(t, kubernetes.NewForConfigOrDie(lc.RESTConfig()), "burst")
	sink := newRecordingSink()
	r := runRegistry(t, sink, clusterConfig(lc, "burst"))
	sink.waitFor(t, 60*time.Second, "synced", func() bool { return sink.state(lc.Name) == hub.ClusterSynced })
	be, ok := r.Backend(lc.Name)
	if !ok {
		t.Fatal("no backend")
	}
	m := be.(*Manager)
	m.mu.Lock()
	l, ok := m.restConfig.RateLimiter.(*clientLimiter)
	m.mu.Unlock()
	if !ok {
		t.Fatal("the cluster's client has no clientLimiter")
	}
	before := l.stats()
	if before.mode != limitAPF || before.switches != 1 {
		t.Fatalf("after sync: %+v, want mode %s after one switch", before, limitAPF)
	}

	const applies = 300 // > DefaultBurst: the bucket would delay two thirds
	var wg conc.WaitGroup
	errs := make(chan error, applies)
	for i := range applies {
		wg.Go(func() {
			name := fmt.Sprintf("cm-%d", i)
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": name, "namespace": "burst", "labels": map[string]any{kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy}},
				"data":     map[string]any{"i": fmt.Sprint(i)},
			}}
			spec := hub.NodeSpec{ID: hub.NewNodeID(lc.Name, "burst", name, hub.KindConfigMap), Namespace: "burst", Name: name, Kind: hub.KindConfigMap, Body: kubeobj.MustEncodeBody(obj)}
			if _, err := be.Repair(t.Context(), spec, hub.State{}, hub.Drift{}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	after := l.stats()
	t.Logf("limiter after %d applies: %+v", applies, after)
	if after.mode != limitAPF || after.switches != before.switches {
		t.Errorf("mode %s after %d switches, want %s without a switch", after.mode, after.switches, limitAPF)
	}
	if after.delayed != before.delayed || after.waited != before.waited {
		t.Errorf("the limiter delayed %d requests for %v during the burst, want none",
			after.delayed-before.delayed, after.waited-before.waited)
	}
	if after.maxInFlight > MaxInFlight {
		t.Errorf("%d requests in flight at once, want at most %d", after.maxInFlight, MaxInFlight)
	}
}

package clusters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// The client-side rate limit of a cluster (see ClusterConfig.QPS).
const (
	// DefaultQPS and DefaultBurst are the token bucket a cluster's client
	// starts with while its limit is adaptive (QPS and Burst both 0), until
	// the apiserver shows API Priority and Fairness; a fixed limit that sets
	// only one of QPS and Burst takes the other from here. Never client-go's
	// 5/10, which makes 200 repairs take 38 s.
	DefaultQPS   float32 = 50
	DefaultBurst int     = 100
	// MaxInFlight is the most requests a cluster's client has in flight at
	// once, whatever its rate limit; watches (long-running GETs with
	// watch=true) do not count. It keeps one hub from filling the
	// apiserver's priority level with its own requests during a burst
	// (APF's default levels give a few dozen to a few hundred seats), and
	// is as many as the repair workers of a 1,000-object burst keep busy on
	// a 2-core machine. A request waits for a free slot within its context.
	MaxInFlight = 32
)

// Modes of a cluster's client rate limit, as logged.
const (
	// limitFixed: a token bucket from the configured QPS and Burst.
	limitFixed = "fixed"
	// limitNone: no client-side limit (a negative QPS, client-go's
	// convention).
	limitNone = "none"
	// limitBucket: adaptive, the apiserver has not shown APF (yet, or any
	// more): the DefaultQPS/DefaultBurst token bucket.
	limitBucket = "bucket"
	// limitAPF: adaptive, the last response carried the APF headers: no
	// client-side limit, the apiserver's fairness protects it.
	limitAPF = "apf"
)

// errAPFOn is the cause that ends a bucket wait when the apiserver turns out
// to have APF: the request goes at once.
var errAPFOn = errors.New("apiserver has API priority and fairness")

// clientLimiter is the client-side rate limit and in-flight bound of one
// cluster's client. It is both the rest.Config's RateLimiter (every request,
// and every retry client-go makes after a 429 or a 5xx with Retry-After,
// waits in Wait) and, through wrap, a transport that bounds the requests in
// flight and reads each response's APF headers.
//
// Adaptive (QPS and Burst 0), it starts with a DefaultQPS/DefaultBurst token
// bucket; a response carrying X-Kubernetes-PF-FlowSchema-UID or
// X-Kubernetes-PF-PriorityLevel-UID switches it to no client-side limit (and
// releases requests waiting for a token), a later response without them
// (APF turned off, a proxy in front) back to the bucket. Responses that say
// nothing about APF are ignored: transport errors, and 401s, which the
// apiserver sends before APF classifies a request. Every switch is logged
// once.
type clientLimiter struct {
	// log receives the switch logs (it names the cluster).
	log *slog.Logger
	// adaptive says whether APF headers switch the mode; bucket is nil for
	// limitNone.
	adaptive bool
	bucket   flowcontrol.RateLimiter
	qps      float32
	burst    int
	// apf is true in limitAPF mode; changed only with mu held.
	apf atomic.Bool

	mu sync.Mutex
	// waiters cancel the bucket waits in progress (by id), so a switch to
	// APF lets them go at once.
	waiters map[uint64]context.CancelCauseFunc
	nextID  uint64

	// slots holds one token per request in flight (MaxInFlight).
	slots chan struct{}

	// Accounting, for tests and logs.
	delayed     atomic.Int64 // requests the bucket did not admit at once
	waited      atomic.Int64 // their total wait, in nanoseconds
	released    atomic.Int64 // of those, the ones a switch to APF let go
	switches    atomic.Int64 // mode switches
	inFlight    atomic.Int64 // requests holding a slot now
	maxInFlight atomic.Int64 // the most ever held at once
	queued      atomic.Int64 // requests waiting for a slot now
}

var _ flowcontrol.RateLimiter = (*clientLimiter)(nil)

// newClientLimiter returns the limiter of a cluster for the configured qps
// and burst (see ClusterConfig.QPS). log names the cluster; nil discards.
func newClientLimiter(qps float32, burst int, log *slog.Logger) *clientLimiter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &clientLimiter{
		log:     log,
		waiters: make(map[uint64]context.CancelCauseFunc),
		slots:   make(chan struct{}, MaxInFlight),
	}
	switch {
	case qps < 0:
		return l
	case qps == 0 && burst <= 0:
		l.adaptive = true
		qps, burst = DefaultQPS, DefaultBurst
	case qps == 0:
		qps = DefaultQPS
	case burst <= 0:
		burst = DefaultBurst
	}
	l.qps, l.burst = qps, burst
	l.bucket = flowcontrol.NewTokenBucketRateLimiter(qps, burst)
	return l
}

// mode returns the current mode (limitFixed, limitNone, limitBucket or
// limitAPF).
func (l *clientLimiter) mode() string {
	switch {
	case l.bucket == nil:
		return limitNone
	case !l.adaptive:
		return limitFixed
	case l.apf.Load():
		return limitAPF
	}
	return limitBucket
}

// DescribeRateLimit says in words what rate limit a cluster's client gets
// for the configured qps and burst (see ClusterConfig.QPS), as `driftwatch
// check` shows it: "adaptive (APF-aware; 50/100 until the apiserver shows
// API Priority and Fairness)", "fixed 20/40" or "none".
func DescribeRateLimit(qps float32, burst int) string {
	l := newClientLimiter(qps, burst, nil)
	switch l.mode() {
	case limitNone:
		return "none"
	case limitFixed:
		return fmt.Sprintf("fixed %g/%d", l.qps, l.burst)
	}
	return fmt.Sprintf("adaptive (APF-aware; %g/%d until the apiserver shows API Priority and Fairness)", l.qps, l.burst)
}

// limiterStats is the limiter's accounting.
type limiterStats struct {
	mode string
	// delayed counts the requests the token bucket did not admit at once,
	// waited is their total wait; released counts those a switch to APF
	// let go before they had a token.
	delayed  int64
	waited   time.Duration
	released int64
	// switches counts mode switches.
	switches int64
	// inFlight and queued are the requests holding and waiting for a slot
	// now; maxInFlight is the most that ever held one at once.
	inFlight, queued, maxInFlight int64
}

func (l *clientLimiter) stats() limiterStats {
	return limiterStats{
		mode:        l.mode(),
		delayed:     l.delayed.Load(),
		waited:      time.Duration(l.waited.Load()),
		released:    l.released.Load(),
		switches:    l.switches.Load(),
		inFlight:    l.inFlight.Load(),
		queued:      l.queued.Load(),
		maxInFlight: l.maxInFlight.Load(),
	}
}

// TryAccept takes a token if one is free now (always, without a bucket).
func (l *clientLimiter) TryAccept() bool {
	return l.bucket == nil || l.apf.Load() || l.bucket.TryAccept()
}

// Accept waits for a token.
func (l *clientLimiter) Accept() { _ = l.Wait(context.Background()) }

// Stop stops the token bucket.
func (l *clientLimiter) Stop() {
	if l.bucket != nil {
		l.bucket.Stop()
	}
}

// QPS returns the token bucket's rate; 0 while there is no client-side
// limit.
func (l *clientLimiter) QPS() float32 {
	if l.bucket == nil || l.apf.Load() {
		return 0
	}
	return l.qps
}

// Wait returns nil once the request may go: at once without a client-side
// limit, else when the token bucket gives it a token or the limiter
// switches to APF mode meanwhile. It returns ctx's error when ctx ends
// first.
func (l *clientLimiter) Wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.TryAccept() {
		return nil
	}
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	l.mu.Lock()
	if l.apf.Load() {
		l.mu.Unlock()
		return nil
	}
	id := l.nextID
	l.nextID++
	l.waiters[id] = cancel
	l.mu.Unlock()
	start := time.Now()
	err := l.bucket.Wait(wctx)
	l.delayed.Add(1)
	l.waited.Add(int64(time.Since(start)))
	l.mu.Lock()
	delete(l.waiters, id)
	l.mu.Unlock()
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(wctx), errAPFOn) {
		l.released.Add(1)
		return nil
	}
	return err
}

// observe switches an adaptive limiter by the APF headers of a response.
func (l *clientLimiter) observe(resp *http.Response) {
	if !l.adaptive || resp.StatusCode == http.StatusUnauthorized {
		return
	}
	on := resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID) != "" ||
		resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID) != ""
	if l.apf.Load() == on {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.apf.Load() == on {
		return
	}
	l.apf.Store(on)
	l.switches.Add(1)
	if on {
		for id, cancel := range l.waiters {
			cancel(errAPFOn)
			delete(l.waiters, id)
		}
		l.log.Info("client rate limit: the apiserver has API priority and fairness, no client-side limit",
			"mode", limitAPF, "maxInFlight", MaxInFlight)
		return
	}
	l.log.Info("client rate limit: a response without API priority and fairness headers, back to the token bucket",
		"mode", limitBucket, "qps", l.qps, "status", resp.StatusCode)
}

// install makes l the rate limiter of rc and wraps rc's transport (outside
// any wrapper already set) with l's in-flight bound and APF observer. rc's
// QPS and Burst, which client-go ignores once RateLimiter is set, say the
// token bucket (-1 for none, client-go's convention).
func (l *clientLimiter) install(rc *rest.Config) {
	rc.RateLimiter = l
	rc.QPS, rc.Burst = l.qps, l.burst
	if l.bucket == nil {
		rc.QPS = -1
	}
	rc.Wrap(l.wrap)
}

// wrap returns the transport that bounds rt's requests in flight and
// observes the responses (a transport.WrapperFunc).
func (l *clientLimiter) wrap(rt http.RoundTripper) http.RoundTripper {
	return &limitedTransport{l: l, next: rt}
}

// limitedTransport holds one of its limiter's slots from the start of a
// request until its response body is read to the end or closed; watches go
// through without one.
type limitedTransport struct {
	l    *clientLimiter
	next http.RoundTripper
}

// RoundTrip sends req once a slot is free (a watch at once).
func (t *limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if isWatch(req) {
		resp, err := t.next.RoundTrip(req)
		if err == nil {
			t.l.received(req, resp)
		}
		return resp, err
	}
	release, err := t.l.acquire(req.Context())
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		release()
		return nil, err
	}
	t.l.received(req, resp)
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// An upgraded connection (exec, port-forward) is long-running, and
		// its body must stay the connection itself.
		release()
		return resp, nil
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: release}
	return resp, nil
}

// received observes resp (the APF headers) and drops the Retry-After of a
// 429 when req's context ends before it: client-go would sleep until then
// and fail with the context's error, which reads as an unreachable
// apiserver; without it, client-go returns the 429 at once, and the caller
// backs off as after any failure.
func (l *clientLimiter) received(req *http.Request, resp *http.Response) {
	l.observe(resp)
	if resp.StatusCode != http.StatusTooManyRequests {
		return
	}
	deadline, ok := req.Context().Deadline()
	if !ok {
		return
	}
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err == nil && time.Until(deadline) < time.Duration(secs)*time.Second {
		resp.Header.Del("Retry-After")
	}
}

// acquire takes a slot, waiting within ctx, and returns its release (safe to
// call more than once).
func (l *clientLimiter) acquire(ctx context.Context) (func(), error) {
	select {
	case l.slots <- struct{}{}:
	default:
		l.queued.Add(1)
		select {
		case l.slots <- struct{}{}:
			l.queued.Add(-1)
		case <-ctx.Done():
			l.queued.Add(-1)
			return nil, ctx.Err()
		}
	}
	n := l.inFlight.Add(1)
	for {
		m := l.maxInFlight.Load()
		if n <= m || l.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			l.inFlight.Add(-1)
			<-l.slots
		})
	}, nil
}

// isWatch reports whether req is a watch: a long-running GET with
// watch=true (or 1).
func isWatch(req *http.Request) bool {
	if req.Method != http.MethodGet {
		return false
	}
	w := req.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

// releasingBody releases its request's slot once read to the end or
// closed.
type releasingBody struct {
	io.ReadCloser
	release func()
}

func (b *releasingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.release()
	}
	return n, err
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

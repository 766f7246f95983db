package clusters

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// connTracker dials a cluster's connections and ends them all when the
// cluster's manager stops: CloseAll cancels the dials in flight, waits for
// them to return and closes every connection, so no HTTP/2 read loop and no
// dial outlives the manager. net/http dials on a context detached from the
// request's (a dial goes on after its request was cancelled, for a later
// request to use), so without this a dial to an address that drops
// packets would hang for the dial timeout after the manager stopped.
type connTracker struct {
	// dial opens a connection (a net.Dialer's DialContext; tests replace
	// it).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// stop ends at CloseAll and cancels every dial in flight.
	stop    context.Context
	stopNow context.CancelFunc
	// dials counts the DialContext calls in flight; CloseAll waits for
	// them.
	dials sync.WaitGroup

	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	closed bool
}

// dialTimeout bounds one dial (client-go's default too).
const dialTimeout = 30 * time.Second

// newConnTracker tracks the connections dial makes; nil dial means a plain
// net.Dialer (dialTimeout and a 30 s keep-alive).
func newConnTracker(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *connTracker {
	if dial == nil {
		dial = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	}
	return newConnTrackerWith(dial)
}

func newConnTrackerWith(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *connTracker {
	stop, stopNow := context.WithCancel(context.Background())
	return &connTracker{dial: dial, stop: stop, stopNow: stopNow, conns: make(map[*trackedConn]struct{})}
}

// DialContext dials and remembers the connection. The dial ends when ctx
// ends or CloseAll is called; after CloseAll it fails with net.ErrClosed.
func (t *connTracker) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, net.ErrClosed
	}
	t.dials.Add(1)
	t.mu.Unlock()
	defer t.dials.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	unhook := context.AfterFunc(t.stop, cancel)
	defer unhook()
	c, err := t.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, t: t}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		_ = c.Close()
		return nil, net.ErrClosed
	}
	t.conns[tc] = struct{}{}
	t.mu.Unlock()
	return tc, nil
}

// CloseAll cancels the dials in flight and waits for them to return,
// closes every open connection and refuses new ones. It returns once no
// DialContext call is running; it does not wait for the network.
func (t *connTracker) CloseAll() {
	t.mu.Lock()
	t.closed = true
	conns := make([]*trackedConn, 0, len(t.conns))
	for c := range t.conns {
		conns = append(conns, c)
	}
	t.mu.Unlock()
	t.stopNow()
	for _, c := range conns {
		_ = c.Close()
	}
	t.dials.Wait()
}

type trackedConn struct {
	net.Conn
	t    *connTracker
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.t.mu.Lock()
		delete(c.t.conns, c)
		c.t.mu.Unlock()
	})
	return c.Conn.Close()
}

// boundTransport ends each request it sends when life ends, besides when
// the request's own context does. client-go's discovery (the REST mapper's
// and the schema cache's reads of /api, /apis and the OpenAPI documents)
// sends its requests on context.TODO(): bound to the manager's run, a
// discovery in flight when the manager stops fails at once instead of
// holding the manager, and the hub's shutdown, until the apiserver answers.
//
// It also drops the Retry-After of the answers: client-go sleeps it out
// before retrying, a sleep nothing cancels (up to ten times a throttled
// apiserver's 30 s). A discovery that fails is tried again by the
// manager's own retries instead (a kind not yet watched: every second,
// every ten after a minute), which end with the manager.
type boundTransport struct {
	rt   http.RoundTripper
	life context.Context
}

// RoundTrip sends req on a context that also ends with life, until the
// response's body is closed.
func (b boundTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := context.Cause(b.life); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	stop := context.AfterFunc(b.life, func() { cancel(context.Cause(b.life)) })
	end := func() {
		stop()
		cancel(nil)
	}
	resp, err := b.rt.RoundTrip(req.WithContext(ctx))
	if err != nil {
		end()
		return nil, err
	}
	resp.Header.Del("Retry-After")
	resp.Body = &endingBody{ReadCloser: resp.Body, end: end}
	return resp, nil
}

// endingBody is a response body that calls end once closed.
type endingBody struct {
	io.ReadCloser
	once sync.Once
	end  func()
}

func (b *endingBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.end)
	return err
}

// closedGuard fails every request at once with errReleased once closed is
// set (the manager's run ended and closed its connections). Without it a
// call on the closed connections failed only after client-go's retries: a
// GET whose dial fails with "use of closed network connection" reads to
// client-go as a probable EOF, retried ten times a second apart.
type closedGuard struct {
	rt     http.RoundTripper
	closed *atomic.Bool
}

// RoundTrip refuses req once the guard is closed, else sends it.
func (g closedGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if g.closed.Load() {
		if req.Body != nil {
			_ = req.Body.Close() // a RoundTripper closes the body, even on errors
		}
		return nil, errReleased
	}
	return g.rt.RoundTrip(req)
}

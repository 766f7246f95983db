package clusters

import (
	"context"
	"net"
	"sync"
	"time"
)

// connTracker dials a cluster's connections and closes them all when the
// cluster's manager stops, so no HTTP/2 read loop outlives it (an idle
// HTTP/2 connection would otherwise live until its idle timeout).
type connTracker struct {
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	closed bool
}

// newConnTracker tracks the connections dial makes; nil dial means a plain
// net.Dialer (30 s timeout and keep-alive).
func newConnTracker(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *connTracker {
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	return &connTracker{dial: dial, conns: make(map[*trackedConn]struct{})}
}

// DialContext dials and remembers the connection.
func (t *connTracker) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
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

// CloseAll closes every open connection and refuses new ones.
func (t *connTracker) CloseAll() {
	t.mu.Lock()
	t.closed = true
	conns := make([]*trackedConn, 0, len(t.conns))
	for c := range t.conns {
		conns = append(conns, c)
	}
	t.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
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

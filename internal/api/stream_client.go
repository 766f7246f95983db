package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/hub"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
	"github.com/driftwatch/driftwatch/internal/rescue"
)

// Snapshot fetches the latest snapshot.
func (c *Client) Snapshot(ctx context.Context) (*hub.Snapshot, error) {
	var s apiv1.Snapshot
	if err := c.do(ctx, http.MethodGet, "/api/v1/snapshot", nil, &s); err != nil {
		return nil, err
	}
	hs, err := s.ToHub()
	if err != nil {
		return nil, fmt.Errorf("hub %s: %w", c.base, err)
	}
	return hs, nil
}

// Subscribe streams snapshots from the hub, reconnecting with backoff when
// the connection drops (at least as long as a 503's Retry-After). It keeps
// the last snapshot across reconnects and resumes with Last-Event-ID, so the
// hub sends only what changed meanwhile when it still can. The channel
// holds the latest snapshot. A panic reading the stream (applying an
// event) is logged to ClientOptions.Logger and ends the connection as an
// error does: the reconnect starts afresh with a full snapshot. The
// returned func stops the stream and waits for its goroutine.
func (c *Client) Subscribe() (<-chan *hub.Snapshot, func()) {
	ch := make(chan *hub.Snapshot, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	wg.Go(func() {
		ws := watchState{applyDelta: c.opts.applyDelta}
		backoff := 200 * time.Millisecond
		for ctx.Err() == nil {
			wait, err := c.streamRecovered(ctx, ch, &ws)
			if err == nil {
				backoff = 200 * time.Millisecond
			} else if c.opts.StreamLost != nil && ctx.Err() == nil {
				c.opts.StreamLost(err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(max(backoff, wait)):
			}
			backoff = min(2*backoff, 5*time.Second)
		}
	})
	return ch, func() { cancel(); wg.Wait() }
}

// watchState is what a subscription keeps across reconnects: the last
// snapshot and the id of the event that produced it.
type watchState struct {
	last   *hub.Snapshot
	lastID string
	// applyDelta is ClientOptions.applyDelta; nil means
	// (*apiv1.Delta).Apply.
	applyDelta func(d *apiv1.Delta, prev *hub.Snapshot) (*hub.Snapshot, error)
}

// streamRecovered is stream, with a panic in it recovered, logged and
// returned as the stream's error; ws is then reset, as what it holds may
// be half applied.
func (c *Client) streamRecovered(ctx context.Context, ch chan *hub.Snapshot, ws *watchState) (wait time.Duration, err error) {
	if perr := rescue.Call(c.opts.Logger, "the watch stream of hub "+c.base, func() { wait, err = c.stream(ctx, ch, ws) }); perr != nil {
		*ws = watchState{applyDelta: ws.applyDelta}
		return 0, fmt.Errorf("hub %s: watch: %w", c.base, perr)
	}
	return wait, err
}

// stream reads one watch connection until it ends, applying its events to
// ws and handing every new snapshot to ch. It returns how long the hub asked
// to wait before reconnecting (503 Retry-After), and why the stream ended
// (nil: the hub closed it).
func (c *Client) stream(ctx context.Context, ch chan *hub.Snapshot, ws *watchState) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/v1/watch", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", eventStreamMIMEType)
	if ws.lastID != "" {
		req.Header.Set(lastEventIDHeader, ws.lastID)
	}
	c.authorize(req)
	resp, err := c.connect(req, cancel)
	if err != nil {
		return 0, fmt.Errorf("hub %s: watch: %w", c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		wait := time.Duration(0)
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			wait = time.Duration(s) * time.Second
		}
		var e apiv1.Error
		_ = json.NewDecoder(io.LimitReader(resp.Body, maxErrorBytes)).Decode(&e)
		if e.Message == "" {
			e.Message = resp.Status
		}
		return wait, fmt.Errorf("hub %s: watch: %w", c.base, &Error{StatusCode: resp.StatusCode, Message: e.Message})
	}
	r := bufio.NewReaderSize(resp.Body, 1<<16)
	ev := sseEvent{max: c.maxAnswer()}
	for {
		ok, err := ev.read(r)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0, nil
			}
			if errors.Is(err, errEventTooLarge) {
				// Start afresh: the reconnect gets a full snapshot.
				ws.last, ws.lastID = nil, ""
				return 0, c.tooLarge("an event of GET /api/v1/watch")
			}
			return 0, fmt.Errorf("hub %s: watch: %w", c.base, err)
		}
		if !ok {
			continue
		}
		next, err := ws.apply(ev)
		if err != nil {
			// Start afresh: the reconnect gets a full snapshot.
			ws.last, ws.lastID = nil, ""
			return 0, fmt.Errorf("hub %s: watch: %w", c.base, err)
		}
		if next == nil {
			continue
		}
		select {
		case <-ch:
		default:
		}
		ch <- next
	}
}

// connect sends the request of a watch stream; cancel (its context's) ends
// it when the hub has not started answering within ResponseTimeout. Only
// the wait for the response headers is bounded: the stream itself is not.
func (c *Client) connect(req *http.Request, cancel context.CancelFunc) (*http.Response, error) {
	timeout := c.ResponseTimeout()
	timer := time.AfterFunc(timeout, cancel)
	resp, err := c.http.Do(req)
	if !timer.Stop() {
		// The timer fired: the request is cancelled, whatever Do returned.
		if resp != nil {
			resp.Body.Close()
		}
		return nil, fmt.Errorf("no answer within %s", timeout)
	}
	return resp, err
}

// apply applies one event to the state and returns the new snapshot (nil
// for an event of another type, ignored).
func (ws *watchState) apply(ev sseEvent) (*hub.Snapshot, error) {
	var next *hub.Snapshot
	switch ev.typ {
	case eventSnapshot:
		var s apiv1.Snapshot
		if err := json.Unmarshal(ev.data, &s); err != nil {
			return nil, fmt.Errorf("decode snapshot: %w", err)
		}
		hs, err := s.ToHub()
		if err != nil {
			return nil, err
		}
		next = hs
	case eventDelta:
		var d apiv1.Delta
		if err := json.Unmarshal(ev.data, &d); err != nil {
			return nil, fmt.Errorf("decode delta: %w", err)
		}
		apply := (*apiv1.Delta).Apply
		if ws.applyDelta != nil {
			apply = ws.applyDelta
		}
		hs, err := apply(&d, ws.last)
		if err != nil {
			return nil, err
		}
		next = hs
	default:
		return nil, nil
	}
	ws.last, ws.lastID = next, ev.id
	return next, nil
}

// sseEvent is one server-sent event. The reader is hand-written: the hub
// sends only the id, event and data fields and comments, which take a few
// lines to parse, where the Go SSE packages come with a web framework.
type sseEvent struct {
	id   string
	typ  string
	data []byte
	// max caps a line and the data of an event (0: no cap).
	max int64
}

// errEventTooLarge is returned by sseEvent.read for a line or an event's
// data longer than its cap.
var errEventTooLarge = errors.New("server-sent event too large")

// read reads the next event into e: true when one was dispatched (a blank
// line after at least one data field), false after a comment or a blank
// line with no data. A line or data longer than e.max is errEventTooLarge.
func (e *sseEvent) read(r *bufio.Reader) (bool, error) {
	e.typ, e.data = "", e.data[:0]
	gotData := false
	for {
		line, err := readLine(r, e.max)
		if err != nil {
			return false, err
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) == 0 {
			if !gotData {
				return false, nil
			}
			if e.typ == "" {
				e.typ = "message"
			}
			return true, nil
		}
		if line[0] == ':' {
			continue // comment (keepalive)
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "id":
			e.id = string(value)
		case "event":
			e.typ = string(value)
		case "data":
			if e.max > 0 && int64(len(e.data)+1+len(value)) > e.max {
				return false, errEventTooLarge
			}
			if gotData {
				e.data = append(e.data, '\n')
			}
			e.data = append(e.data, value...)
			gotData = true
		}
	}
}

// readLine is r.ReadBytes('\n'), but fails with errEventTooLarge as soon
// as the line is longer than limit (0: no limit), before buffering more of
// it.
func readLine(r *bufio.Reader, limit int64) ([]byte, error) {
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		if limit > 0 && int64(len(line)+len(frag)) > limit {
			return nil, errEventTooLarge
		}
		line = append(line, frag...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

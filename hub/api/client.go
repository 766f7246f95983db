package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/hub"
)

// Client talks to a headless hub's API; the terminal UI attaches through it.
type Client struct {
	base string
	http *http.Client
}

// NewClient returns a client for the hub at base (e.g.
// "http://127.0.0.1:7070").
func NewClient(base string) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("hub address %q: want http://host:port", base)
	}
	return &Client{base: strings.TrimRight(base, "/"), http: &http.Client{}}, nil
}

// Snapshot fetches the latest snapshot.
func (c *Client) Snapshot(ctx context.Context) (*hub.Snapshot, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/v1/snapshot", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("hub %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("hub %s: snapshot: %s", c.base, resp.Status)
	}
	var s hub.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return nil, fmt.Errorf("hub %s: decode snapshot: %w", c.base, err)
	}
	return &s, nil
}

// Subscribe streams snapshots from the hub, reconnecting with backoff when
// the connection drops. The channel holds the latest snapshot. The returned
// func stops the stream and waits for its goroutine.
func (c *Client) Subscribe() (<-chan *hub.Snapshot, func()) {
	ch := make(chan *hub.Snapshot, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	wg.Go(func() {
		backoff := 200 * time.Millisecond
		for ctx.Err() == nil {
			if err := c.stream(ctx, ch); err == nil {
				backoff = 200 * time.Millisecond
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
		}
	})
	return ch, func() { cancel(); wg.Wait() }
}

func (c *Client) stream(ctx context.Context, ch chan *hub.Snapshot) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/v1/watch", nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("watch: %s", resp.Status)
	}
	r := bufio.NewReaderSize(resp.Body, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		var s hub.Snapshot
		if err := json.Unmarshal(bytes.TrimSpace(data), &s); err != nil {
			return fmt.Errorf("decode snapshot: %w", err)
		}
		select {
		case <-ch:
		default:
		}
		ch <- &s
	}
}

// Error is an error answer of the hub: its HTTP status and message. A 409
// Conflict (a reload the prune guard refused) unwraps to
// hub.ErrPruneRefused.
type Error struct {
	StatusCode int
	Message    string
}

func (e *Error) Error() string { return e.Message }

// Unwrap makes errors.Is(err, hub.ErrPruneRefused) hold for a 409.
func (e *Error) Unwrap() error {
	if e.StatusCode == http.StatusConflict {
		return hub.ErrPruneRefused
	}
	return nil
}

// do sends a request with a JSON body (nil: none) and decodes a JSON answer
// into out (nil: ignored). Errors name the hub; an error answer is an
// *Error.
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("hub %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var e struct{ Error string }
		_ = json.NewDecoder(resp.Body).Decode(&e)
		if e.Error == "" {
			e.Error = resp.Status
		}
		return fmt.Errorf("hub %s: %w", c.base, &Error{StatusCode: resp.StatusCode, Message: e.Error})
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return fmt.Errorf("hub %s: decode answer: %w", c.base, err)
		}
	}
	return nil
}

// post sends an action, bounded by 10 seconds.
func (c *Client) post(path string, body any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.do(ctx, http.MethodPost, path, body, nil)
}

// RepairNow asks the hub to repair one NodeID now.
func (c *Client) RepairNow(id hub.NodeID) error {
	return c.post("/api/v1/nodes/"+url.PathEscape(id.String())+"/repair", nil)
}

// PauseCluster pauses or resumes repairs on a cluster.
func (c *Client) PauseCluster(cluster string, paused bool) error {
	verb := "resume"
	if paused {
		verb = "pause"
	}
	return c.post("/api/v1/clusters/"+url.PathEscape(cluster)+"/"+verb, nil)
}

// SetApplicationPolicy sets ("" clears) an application's runtime policy.
func (c *Client) SetApplicationPolicy(app string, p hub.Policy) error {
	return c.post("/api/v1/applications/"+url.PathEscape(app)+"/policy", PolicyRequest{Policy: p})
}

// Hold stops repairs of a NodeID, an application or a cluster for ttl, with
// a reason, and returns the hold the hub placed.
func (c *Client) Hold(t hub.HoldTarget, ttl time.Duration, reason string) (hub.Hold, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var hd hub.Hold
	err := c.do(ctx, http.MethodPost, "/api/v1/holds", HoldRequest{Scope: t.Scope, Name: t.Name, TTL: ttl.String(), Reason: reason}, &hd)
	return hd, err
}

// ReleaseHold ends the hold on a target.
func (c *Client) ReleaseHold(t hub.HoldTarget) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.do(ctx, http.MethodDelete, "/api/v1/holds/"+url.PathEscape(string(t.Scope))+"/"+url.PathEscape(t.Name), nil, nil)
}

// Holds lists the active holds.
func (c *Client) Holds(ctx context.Context) ([]hub.Hold, error) {
	var hs []hub.Hold
	err := c.do(ctx, http.MethodGet, "/api/v1/holds", nil, &hs)
	return hs, err
}

// Reload asks the hub to reload its config file. Unless allowPrune, a
// change that would decommission every managed object of a cluster or more
// than the hub's prune limit is refused: the error then wraps
// hub.ErrPruneRefused and says what would have been pruned. It waits at
// most a minute for the hub.
func (c *Client) Reload(allowPrune bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := "/api/v1/reload"
	if allowPrune {
		path += "?allowPrune=true"
	}
	return c.do(ctx, http.MethodPost, path, nil, nil)
}

// authorize sets the request's credentials (the bearer token, when the
// client has one).
func (c *Client) authorize(req *http.Request) {
	_ = req
}

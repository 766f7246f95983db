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

func (c *Client) post(path string, body any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
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
		return fmt.Errorf("hub %s: %s", c.base, e.Error)
	}
	return nil
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

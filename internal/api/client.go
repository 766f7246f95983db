package api

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/hub"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
)

// Client talks to a headless hub's API; the terminal UI attaches through it.
type Client struct {
	base  string
	http  *http.Client
	token string
	// opts made the client: a ReplicaClient reaches the other replicas
	// with the same ones.
	opts ClientOptions
}

// ClientOptions configure a Client.
type ClientOptions struct {
	// Token is the bearer token sent with every request; "" sends none
	// (a hub with tokens then answers 401).
	Token string
	// CAFile is a PEM file of the certificate authorities trusted for an
	// https hub, instead of the system's. It needs an https address.
	CAFile string
	// ResponseTimeout is how long the hub has to start answering a watch
	// connection (its response headers: the stream then lasts as long as
	// it lasts) and, for attach, the first contact. Default 30s. The other
	// requests have timeouts of their own (actions 10s, a reload a
	// minute) or their caller's context.
	ResponseTimeout time.Duration
	// Logger receives a panic recovered in a subscription's stream, with
	// its stack (the subscription then reconnects). Default: none.
	Logger *slog.Logger
	// StreamLost, when set, is told why a subscription's stream ended
	// with an error (a refused connection, a broken stream, a panic), just
	// before it waits to reconnect; it is called from the subscription's
	// goroutine. A stream the hub ends cleanly is not an error.
	StreamLost func(error)
	// maxAnswerBytes caps a success answer and a watch event (tests
	// shrink it); 0 means defaultMaxAnswerBytes.
	maxAnswerBytes int64
	// applyDelta applies a watch delta (tests make it panic); nil means
	// (*apiv1.Delta).Apply.
	applyDelta func(d *apiv1.Delta, prev *hub.Snapshot) (*hub.Snapshot, error)
}

// defaultResponseTimeout is ClientOptions.ResponseTimeout's default.
const defaultResponseTimeout = 30 * time.Second

// defaultMaxAnswerBytes caps what the client reads of one answer of the
// hub: a JSON body, or one event of the watch stream (a line, and the data
// of an event), so a hostile or broken hub cannot make it buffer without
// end. The largest legitimate answer is a full snapshot (GET
// /api/v1/snapshot, and the watch stream's first event). Measured with
// 100,000 objects: 35.5 MiB when each has 3 timeline steps (created,
// observed, verified: a fleet in sync), 373 MiB when every timeline is
// full (32 steps, each a short drift summary) and each object has a repair
// record; the feed adds at most 200 entries. 1 GiB is over 2.5 times the
// worst of these (and the client's memory of a snapshot that size is
// larger than its JSON anyway).
const defaultMaxAnswerBytes = 1 << 30

// maxErrorBytes caps what the client reads of an error answer: a message.
const maxErrorBytes = 64 << 10

// ResponseTimeout is how long the hub has to start answering a watch
// connection or the first contact (ClientOptions.ResponseTimeout).
func (c *Client) ResponseTimeout() time.Duration {
	if c.opts.ResponseTimeout > 0 {
		return c.opts.ResponseTimeout
	}
	return defaultResponseTimeout
}

// maxAnswer returns the cap of an answer or watch event.
func (c *Client) maxAnswer() int64 {
	if c.opts.maxAnswerBytes > 0 {
		return c.opts.maxAnswerBytes
	}
	return defaultMaxAnswerBytes
}

// tooLarge is the error of an answer over the client's cap; what names it
// with its endpoint.
func (c *Client) tooLarge(what string) error {
	return fmt.Errorf("hub %s: %s is larger than the client's limit of %s: refused", c.base, what, byteSize(c.maxAnswer()))
}

// byteSize writes n bytes in the largest binary unit that divides it.
func byteSize(n int64) string {
	for _, u := range [...]struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

// NewClient returns a client without credentials for the hub at base (e.g.
// "http://127.0.0.1:7070"); see NewClientWithOptions.
func NewClient(base string) (*Client, error) {
	return NewClientWithOptions(base, ClientOptions{})
}

// NewClientWithOptions returns a client for the hub at base
// ("http://host:port" or "https://host:port") that sends opts.Token and,
// over https, trusts opts.CAFile's authorities (the system's when empty),
// with TLS 1.2 at least. A token is never sent over plain http to a host
// that is not loopback (127.0.0.0/8, ::1, localhost): such a base is an
// error. The client follows no redirect (a 3xx is an error answer), so the
// token only goes to base.
func NewClientWithOptions(base string, opts ClientOptions) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("hub address %q: want http://host:port or https://host:port", base)
	}
	if opts.Token != "" {
		if err := checkToken(opts.Token); err != nil {
			return nil, fmt.Errorf("hub %s: %w", base, err)
		}
		if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
			return nil, fmt.Errorf("hub address %q: refusing to send the token over plain http to %s, which is not a loopback address: use https:// (serve --tls-cert-file/--tls-key-file; --ca-file for a private CA)", base, u.Hostname())
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	if opts.CAFile != "" {
		if u.Scheme != "https" {
			return nil, fmt.Errorf("hub address %q: a CA file needs an https address", base)
		}
		pem, err := os.ReadFile(opts.CAFile)
		if err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s: no PEM certificate in it", opts.CAFile)
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	hc := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Client{base: strings.TrimRight(base, "/"), http: hc, token: opts.Token, opts: opts}, nil
}

// loopbackHost reports whether host (a URL's Hostname) is this machine:
// localhost or a loopback address. Other names are not resolved: DNS could
// answer anything.
func loopbackHost(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// CloseIdleConnections closes the client's idle connections.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

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
// into out (nil: ignored), reading at most maxAnswer bytes of it
// (maxErrorBytes of an error answer). Errors name the hub; an error answer
// is an *Error.
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
	c.authorize(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("hub %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var e struct{ Error string }
		_ = json.NewDecoder(io.LimitReader(resp.Body, maxErrorBytes)).Decode(&e)
		if e.Error == "" {
			e.Error = resp.Status
		}
		return fmt.Errorf("hub %s: %w", c.base, &Error{StatusCode: resp.StatusCode, Message: e.Error})
	}
	if out != nil {
		// One byte past the cap tells a body of exactly the cap from a
		// larger one.
		body := &countingReader{r: io.LimitReader(resp.Body, c.maxAnswer()+1)}
		err := json.NewDecoder(body).Decode(out)
		if body.n > c.maxAnswer() {
			return c.tooLarge("the answer to " + method + " " + path)
		}
		if err != nil {
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

// PauseClusterNote pauses repairs on a cluster with note's reason. Who
// paused it is the hub's to say (the name of this client's token): note.By
// is not sent. A hub from before pause notes pauses without the reason.
func (c *Client) PauseClusterNote(cluster string, note hub.SwitchNote) error {
	var body any
	if note.Reason != "" {
		body = PauseRequest{Reason: note.Reason}
	}
	return c.post("/api/v1/clusters/"+url.PathEscape(cluster)+"/pause", body)
}

// SetApplicationPolicy sets ("" clears) an application's runtime policy.
func (c *Client) SetApplicationPolicy(app string, p hub.Policy) error {
	return c.SetApplicationPolicyNote(app, p, hub.SwitchNote{})
}

// SetApplicationPolicyNote sets an application's runtime policy with
// note's reason; who set it is the hub's to say (the name of this
// client's token): note.By is not sent.
func (c *Client) SetApplicationPolicyNote(app string, p hub.Policy, note hub.SwitchNote) error {
	return c.post("/api/v1/applications/"+url.PathEscape(app)+"/policy", PolicyRequest{Policy: p, Reason: note.Reason})
}

// Hold stops repairs of a NodeID, an application or a cluster for ttl, with
// a reason, and returns the hold the hub placed.
func (c *Client) Hold(t hub.HoldTarget, ttl time.Duration, reason string) (hub.Hold, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var doc apiv1.HoldDocument
	if err := c.do(ctx, http.MethodPost, "/api/v1/holds", HoldRequest{Scope: t.Scope, Name: t.Name, TTL: ttl.String(), Reason: reason}, &doc); err != nil {
		return hub.Hold{}, err
	}
	hd, err := doc.ToHub()
	if err != nil {
		return hub.Hold{}, fmt.Errorf("hub %s: %w", c.base, err)
	}
	return hd, nil
}

// ReleaseHold ends the hold on a target.
func (c *Client) ReleaseHold(t hub.HoldTarget) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.do(ctx, http.MethodDelete, "/api/v1/holds/"+url.PathEscape(string(t.Scope))+"/"+url.PathEscape(t.Name), nil, nil)
}

// Holds lists the active holds.
func (c *Client) Holds(ctx context.Context) ([]hub.Hold, error) {
	var l apiv1.HoldList
	if err := c.do(ctx, http.MethodGet, "/api/v1/holds", nil, &l); err != nil {
		return nil, err
	}
	hs, err := l.ToHub()
	if err != nil {
		return nil, fmt.Errorf("hub %s: %w", c.base, err)
	}
	return hs, nil
}

// Node reads one NodeID's status with its desired object (the status's
// Spec; nil when the hub has none), which snapshots do not carry. A
// NodeID the hub does not know answers an *Error with StatusCode 404.
func (c *Client) Node(ctx context.Context, id hub.NodeID) (hub.NodeStatus, error) {
	d, err := c.NodeDetail(ctx, id)
	if err != nil {
		return hub.NodeStatus{}, err
	}
	n, err := d.ToHub()
	if err != nil {
		return hub.NodeStatus{}, fmt.Errorf("hub %s: %w", c.base, err)
	}
	return n, nil
}

// NodeDetail reads one NodeID's detail as the API answers it: its status,
// desired object, cluster, the holds covering it and its application's
// override (apiv1.NodeDetail.View converts it to a snapshot of its own).
func (c *Client) NodeDetail(ctx context.Context, id hub.NodeID) (apiv1.NodeDetail, error) {
	var d apiv1.NodeDetail
	if err := c.do(ctx, http.MethodGet, "/api/v1/nodes/"+url.PathEscape(id.String()), nil, &d); err != nil {
		return apiv1.NodeDetail{}, err
	}
	return d, nil
}

// Replicas lists the live replicas of a hub that runs as several, each
// with its API address and the clusters it manages (empty for a hub of
// one process).
func (c *Client) Replicas(ctx context.Context) (apiv1.ReplicaList, error) {
	var l apiv1.ReplicaList
	if err := c.do(ctx, http.MethodGet, "/api/v1/replicas", nil, &l); err != nil {
		return apiv1.ReplicaList{}, err
	}
	return l, nil
}

// Whoami asks the hub who the client's token belongs to. A hub older than
// the route answers 404 (an *Error with that StatusCode).
func (c *Client) Whoami(ctx context.Context) (apiv1.Whoami, error) {
	var w apiv1.Whoami
	if err := c.do(ctx, http.MethodGet, "/api/v1/whoami", nil, &w); err != nil {
		return apiv1.Whoami{}, err
	}
	return w, nil
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
// client has one). Every request the client makes goes through it.
func (c *Client) authorize(req *http.Request) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
}

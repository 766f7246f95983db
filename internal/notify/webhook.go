package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/rescue"
)

// Format is a webhook's body format.
type Format string

// Formats.
const (
	// FormatJSON sends the Event as JSON.
	FormatJSON Format = "json"
	// FormatSlack sends {"text": Event.Text()}, which Slack's incoming
	// webhooks and the many services compatible with them accept, escaped
	// as their markup needs (see slackText).
	FormatSlack Format = "slack"
)

// Webhook defaults.
const (
	DefaultPerMinute   = 60
	DefaultBurst       = 20
	DefaultQueueSize   = 256
	DefaultTimeout     = 10 * time.Second
	DefaultMaxAttempts = 5
	DefaultMinBackoff  = time.Second
	DefaultMaxBackoff  = time.Minute
)

// Filter selects the events a webhook receives. Each list, when not empty,
// must match; an empty list matches everything.
type Filter struct {
	// Types are event types.
	Types []EventType
	// Classes are drift classes; events that are not about a drift
	// (cluster events, failures, stuck) pass this filter.
	Classes []hub.DriftClass
	// Clusters and Applications are path.Match patterns ("prod-*");
	// Applications is not applied to cluster events.
	Clusters     []string
	Applications []string
	// MinSeverity is the least severity sent; "" means SeverityInfo.
	MinSeverity Severity
}

// Match reports whether ev passes the filter.
func (f Filter) Match(ev Event) bool {
	if f.MinSeverity != "" && !ev.Severity.AtLeast(f.MinSeverity) {
		return false
	}
	if len(f.Types) > 0 && !slices.Contains(f.Types, ev.Type) {
		return false
	}
	if len(f.Classes) > 0 && ev.Class != "" && !slices.Contains(f.Classes, hub.DriftClass(ev.Class)) {
		return false
	}
	if len(f.Clusters) > 0 && !matchAny(f.Clusters, ev.Cluster) {
		return false
	}
	if len(f.Applications) > 0 && ev.NodeID != "" && !matchAny(f.Applications, ev.Application) {
		return false
	}
	return true
}

func matchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, s); ok {
			return true
		}
	}
	return false
}

// Webhook is one receiver of notifications.
type Webhook struct {
	// Name identifies the webhook in logs, metrics and the status bar: its
	// URL may hold a secret and is never shown.
	Name string
	// URL is where events are POSTed (http or https).
	URL string
	// Headers are added to every request (e.g. Authorization).
	Headers map[string]string
	// Format is the body's format; "" means FormatJSON.
	Format Format
	// Filter selects the events sent.
	Filter Filter
	// PerMinute and Burst are the rate limit (a token bucket): events
	// over it are dropped and counted, and the next event sent says how
	// many (Event.Suppressed). Defaults DefaultPerMinute, DefaultBurst.
	PerMinute float64
	Burst     int
	// QueueSize bounds the events waiting for delivery; when full, new
	// events are dropped and counted. Default DefaultQueueSize.
	QueueSize int
	// Timeout bounds one delivery attempt. Default DefaultTimeout.
	Timeout time.Duration
	// MaxAttempts bounds the attempts per event (network errors, 408, 429
	// and 5xx are retried; other answers are final). Default
	// DefaultMaxAttempts.
	MaxAttempts int
	// MinBackoff and MaxBackoff bound the exponential backoff between
	// attempts (with jitter); a Retry-After answer waits longer, up to
	// MaxBackoff. Defaults DefaultMinBackoff, DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
}

func (w *Webhook) defaults() {
	if w.Format == "" {
		w.Format = FormatJSON
	}
	if w.PerMinute <= 0 {
		w.PerMinute = DefaultPerMinute
	}
	if w.Burst <= 0 {
		w.Burst = DefaultBurst
	}
	if w.QueueSize <= 0 {
		w.QueueSize = DefaultQueueSize
	}
	if w.Timeout <= 0 {
		w.Timeout = DefaultTimeout
	}
	if w.MaxAttempts <= 0 {
		w.MaxAttempts = DefaultMaxAttempts
	}
	if w.MinBackoff <= 0 {
		w.MinBackoff = DefaultMinBackoff
	}
	if w.MaxBackoff <= 0 {
		w.MaxBackoff = DefaultMaxBackoff
	}
	if w.MaxBackoff < w.MinBackoff {
		w.MaxBackoff = w.MinBackoff
	}
}

// check validates a webhook (defaults applied).
func (w *Webhook) check() error {
	if w.Name == "" {
		return errors.New("webhook without a name")
	}
	u, err := url.Parse(w.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// Never repeat the URL: it may hold a secret.
		return fmt.Errorf("webhook %q: url is not an http or https URL", w.Name)
	}
	if w.Format != FormatJSON && w.Format != FormatSlack {
		return fmt.Errorf("webhook %q: unknown format %q", w.Name, w.Format)
	}
	return nil
}

// WebhookStatus is the delivery state of one webhook.
type WebhookStatus struct {
	Name string
	// Failing is set when the latest delivery attempt failed; LastError
	// says why (never with the URL) and Since when it started failing.
	Failing   bool
	LastError string
	Since     time.Time
	// Sent, Failed and Dropped count events delivered, given up on, and
	// dropped (rate limit or full queue).
	Sent, Failed, Dropped int64
}

// sender delivers one webhook's events, one at a time, from its queue;
// or, with record set, writes them as Kubernetes Events (see
// KubernetesEvents).
type sender struct {
	cfg     Webhook
	record  ObjectRecorder
	client  *http.Client
	m       *metrics
	log     *slog.Logger
	queue   chan Event
	limiter *rate.Limiter

	mu         sync.Mutex
	suppressed int
	status     WebhookStatus
}

func newSender(cfg Webhook, client *http.Client, m *metrics, log *slog.Logger) *sender {
	return &sender{
		cfg: cfg, client: client, m: m, log: log,
		queue:   make(chan Event, cfg.QueueSize),
		limiter: rate.NewLimiter(rate.Limit(cfg.PerMinute/60), cfg.Burst),
		status:  WebhookStatus{Name: cfg.Name},
	}
}

// offer queues ev if the filter takes it and the rate limit and the queue
// have room; it never blocks.
func (s *sender) offer(ev Event) {
	if !s.cfg.Filter.Match(ev) || s.record != nil && ev.NodeID == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.limiter.Allow() {
		s.suppressed++
		s.dropLocked("rate-limited")
		return
	}
	ev.Suppressed = s.suppressed
	select {
	case s.queue <- ev:
		s.suppressed = 0
	default:
		s.dropLocked("queue-full")
	}
}

func (s *sender) dropLocked(reason string) {
	s.status.Dropped++
	s.m.dropped.WithLabelValues(s.cfg.Name, reason).Inc()
}

// run delivers queued events until ctx ends. A panic delivering one is
// recovered, logged with its stack and counted as the event's failure (the
// webhook shows failing with the panic as its error); the next is
// delivered as usual.
func (s *sender) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-s.queue:
			if err := rescue.Call(s.log, fmt.Sprintf("webhook %q's delivery", s.cfg.Name), func() { s.deliver(ctx, ev) }); err != nil {
				s.attemptFailed(err)
				s.gaveUp(ev, err)
			}
		}
	}
}

// body encodes ev in the webhook's format.
func (s *sender) body(ev Event) ([]byte, error) {
	if s.cfg.Format == FormatSlack {
		return json.Marshal(struct {
			Text string `json:"text"`
		}{slackText(ev)})
	}
	return json.Marshal(ev)
}

// slackText is ev.Text() as the "slack" format's text. Its parts come from
// clusters (a field manager's name is whatever the editor chose, errors
// quote the apiserver), so it carries no markup of its own and all of it
// is escaped: &, < and > as &amp;, &lt; and &gt;, as Slack's message
// formatting requires (a "<!channel>" would ping the channel, a
// "<https://...|text>" disguise a link), and a zero-width space follows
// each @, which breaks the plain-text mentions of the services compatible
// with Slack's webhooks (Mattermost's and Rocket.Chat's @channel, @all,
// @here, Discord's @everyone) and reads the same.
func slackText(ev Event) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "@", "@\u200b").Replace(ev.Text())
}

// deliver sends one event, retrying with backoff.
func (s *sender) deliver(ctx context.Context, ev Event) {
	var try func(ctx context.Context) (time.Duration, bool, error)
	if s.record != nil {
		try = s.recordOnce(ev)
	} else {
		body, err := s.body(ev)
		if err != nil {
			err = fmt.Errorf("webhook %q: encode %s event: %w", s.cfg.Name, ev.Type, err)
			s.attemptFailed(err)
			s.gaveUp(ev, err)
			return
		}
		try = func(ctx context.Context) (time.Duration, bool, error) { return s.post(ctx, body) }
	}
	bo := wait.Backoff{Duration: s.cfg.MinBackoff, Factor: 2, Jitter: 0.2, Steps: s.cfg.MaxAttempts, Cap: s.cfg.MaxBackoff}
	for attempt := 1; ; attempt++ {
		retryAfter, retry, err := try(ctx)
		if err == nil {
			s.delivered()
			return
		}
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, ErrDropped) {
			s.mu.Lock()
			s.dropLocked("refused")
			s.mu.Unlock()
			return
		}
		s.attemptFailed(err)
		if !retry || attempt >= s.cfg.MaxAttempts {
			s.gaveUp(ev, err)
			return
		}
		s.m.retries.WithLabelValues(s.cfg.Name).Inc()
		d := bo.Step()
		if retryAfter > d {
			d = min(retryAfter, s.cfg.MaxBackoff)
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// recordOnce is one attempt of a sender that writes Kubernetes Events:
// RecordEvent within the timeout.
func (s *sender) recordOnce(ev Event) func(ctx context.Context) (time.Duration, bool, error) {
	return func(ctx context.Context) (time.Duration, bool, error) {
		ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		defer cancel()
		retry, err := s.record.RecordEvent(ctx, ev)
		return 0, retry, err
	}
}

// post makes one attempt. retry says whether another attempt may succeed;
// retryAfter is the wait the receiver asked for, if any.
func (s *sender) post(ctx context.Context, body []byte) (retryAfter time.Duration, retry bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return 0, false, fmt.Errorf("webhook %q: bad request: %v", s.cfg.Name, redact(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "driftwatch")
	for k, v := range s.cfg.Headers {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, true, fmt.Errorf("webhook %q: %v", s.cfg.Name, redact(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return 0, false, nil
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return 0, false, fmt.Errorf("webhook %q: HTTP %s to %s: redirects are not followed (the request carries the webhook's headers); configure the final URL", s.cfg.Name, resp.Status, location(resp))
	}
	err = fmt.Errorf("webhook %q: HTTP %s", s.cfg.Name, resp.Status)
	switch {
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode >= 500:
		return parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()), true, err
	}
	return 0, false, err
}

// noRedirects returns a copy of c that follows no redirect: a 3xx answer
// comes back as it is, so the body and the webhook's headers (an
// Authorization or an X-Api-Key) are only ever sent to the configured URL.
func noRedirects(c *http.Client) *http.Client {
	cp := *c
	cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cp
}

// location names where a redirect points, as scheme and host only: its
// path and query may hold a secret, like the webhook's own URL.
func location(resp *http.Response) string {
	u, err := resp.Location()
	if err != nil {
		return "no valid Location"
	}
	return "Location " + u.Scheme + "://" + u.Host + "/..."
}

// redact drops the URL from a client error (it may hold a secret).
func redact(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func (s *sender) delivered() {
	s.m.sent.WithLabelValues(s.cfg.Name).Inc()
	s.m.up.WithLabelValues(s.cfg.Name).Set(1)
	s.mu.Lock()
	s.status.Sent++
	s.status.Failing, s.status.LastError, s.status.Since = false, "", time.Time{}
	s.mu.Unlock()
}

func (s *sender) attemptFailed(err error) {
	s.m.up.WithLabelValues(s.cfg.Name).Set(0)
	s.mu.Lock()
	if !s.status.Failing {
		s.status.Since = time.Now()
	}
	s.status.Failing, s.status.LastError = true, err.Error()
	s.mu.Unlock()
}

func (s *sender) gaveUp(ev Event, err error) {
	s.m.failed.WithLabelValues(s.cfg.Name).Inc()
	s.mu.Lock()
	s.status.Failed++
	s.mu.Unlock()
	s.log.Warn("notification not delivered", "webhook", s.cfg.Name, "event", ev.Type, "node", ev.NodeID, "cluster", ev.Cluster, "err", err)
}

func (s *sender) snapshot() WebhookStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

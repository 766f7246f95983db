package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/driftwatch/driftwatch/hub"
)

var (
	web = hub.NewNodeID("prod", "shop", "web", hub.KindDeployment)
	cm  = hub.NewNodeID("prod", "shop", "settings", hub.KindConfigMap)
	t0  = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

// snap builds a snapshot of one cluster in state cs with the given nodes.
func snap(seq uint64, cs hub.ClusterState, nodes ...hub.NodeStatus) *hub.Snapshot {
	return &hub.Snapshot{HubID: "hq", Seq: seq, Taken: t0.Add(time.Duration(seq) * time.Second),
		Clusters: []hub.ClusterStatus{{ClusterHealth: hub.ClusterHealth{Cluster: "prod", State: cs, LastError: "dial tcp: refused", Since: t0}}},
		Nodes:    nodes}
}

func node(id hub.NodeID, st hub.Status, repairs int) hub.NodeStatus {
	return hub.NodeStatus{ID: id, Application: "shop", Status: st, Reason: "why", Repairs: repairs,
		LastRepair: &hub.Repair{ID: id, Drift: hub.Drift{Class: hub.DriftModified, Fields: []hub.FieldDiff{{Path: "spec.replicas", Desired: "3", Actual: "5"}}},
			Attribution: &hub.Attribution{Manager: "kubectl-scale"}}}
}

func TestDeriver(t *testing.T) {
	type want struct {
		typ    EventType
		reason string
		count  int
	}
	tests := []struct {
		name  string
		snaps []*hub.Snapshot
		want  []want
	}{
		{"repaired counts every repair", []*hub.Snapshot{
			snap(1, hub.ClusterSynced, node(web, hub.StatusInSync, 0)),
			snap(2, hub.ClusterSynced, node(web, hub.StatusRepaired, 1)),
			snap(3, hub.ClusterSynced, node(web, hub.StatusInSync, 3)),
			snap(4, hub.ClusterSynced, node(web, hub.StatusInSync, 3)),
		}, []want{{EventRepaired, "", 1}, {EventRepaired, "", 2}}},
		{"unrepaired once per entry into the status", []*hub.Snapshot{
			snap(1, hub.ClusterSynced, node(web, hub.StatusWarnOnly, 0), node(cm, hub.StatusHeld, 0)),
			snap(2, hub.ClusterSynced, node(web, hub.StatusWarnOnly, 0), node(cm, hub.StatusHeld, 0)),
			snap(3, hub.ClusterSynced, node(web, hub.StatusPaused, 0), node(cm, hub.StatusInSync, 0)),
			snap(4, hub.ClusterSynced, node(web, hub.StatusPaused, 0), node(cm, hub.StatusHeld, 0)),
		}, []want{{EventUnrepaired, ReasonWarn, 0}, {EventUnrepaired, ReasonHold, 0}, {EventUnrepaired, ReasonPause, 0}, {EventUnrepaired, ReasonHold, 0}}},
		{"failed, forbidden, stuck, contested", []*hub.Snapshot{
			snap(1, hub.ClusterSynced, node(web, hub.StatusFailed, 0), node(cm, hub.StatusStuck, 0)),
			snap(2, hub.ClusterSynced, node(web, hub.StatusForbidden, 0), node(cm, "contested", 0)),
		}, []want{{EventRepairFailed, "", 0}, {EventStuck, "", 0}, {EventRepairFailed, "", 0}, {EventContested, "", 0}}},
		{"unreachable and back; unknown while down is no news", []*hub.Snapshot{
			snap(1, hub.ClusterSynced, node(web, hub.StatusFailed, 0)),
			snap(2, hub.ClusterUnreachable, node(web, hub.StatusUnknown, 0)),
			snap(3, hub.ClusterUnreachable, node(web, hub.StatusUnknown, 0)),
			snap(4, hub.ClusterConnecting, node(web, hub.StatusUnknown, 0)),
			snap(5, hub.ClusterSynced, node(web, hub.StatusFailed, 0)),
		}, []want{{EventRepairFailed, "", 0}, {EventClusterUnreachable, "", 0}, {EventClusterRecovered, "", 0}}},
		{"credentials refused, then renewed", []*hub.Snapshot{
			snap(1, hub.ClusterSynced),
			snap(2, hub.ClusterUnauthorized),
			snap(3, hub.ClusterUnauthorized),
			snap(4, hub.ClusterSynced),
		}, []want{{EventClusterUnreachable, "", 0}, {EventClusterRecovered, "", 0}}},
		{"another hub's object", []*hub.Snapshot{
			snap(1, hub.ClusterSynced, node(web, hub.StatusForeign, 0)),
		}, []want{{EventUnrepaired, ReasonForeign, 0}}},
		{"a cluster unreachable from the start", []*hub.Snapshot{
			snap(1, hub.ClusterConnecting),
			snap(2, hub.ClusterUnreachable),
			snap(3, hub.ClusterDegraded),
		}, []want{{EventClusterUnreachable, "", 0}, {EventClusterRecovered, "", 0}}},
		{"a NodeID that left and came back starts afresh", []*hub.Snapshot{
			snap(1, hub.ClusterSynced, node(web, hub.StatusStuck, 0)),
			snap(2, hub.ClusterSynced),
			snap(3, hub.ClusterSynced, node(web, hub.StatusStuck, 0)),
		}, []want{{EventStuck, "", 0}, {EventStuck, "", 0}}},
	}
	paused := func(s *hub.Snapshot, at time.Time, by, reason string) *hub.Snapshot {
		c := &s.Clusters[0]
		c.Paused, c.PausedAt, c.PausedBy, c.PauseReason = true, at, by, reason
		return s
	}
	tests = append(tests, struct {
		name  string
		snaps []*hub.Snapshot
		want  []want
	}{"paused, paused again with a new note, resumed; a pause from before the first snapshot is no news", []*hub.Snapshot{
		paused(snap(1, hub.ClusterSynced), t0, "bob", "old"),
		snap(2, hub.ClusterSynced),
		paused(snap(3, hub.ClusterSynced), t0.Add(3*time.Second), "alice", "INC-4211"),
		paused(snap(4, hub.ClusterSynced), t0.Add(3*time.Second), "alice", "INC-4211"),
		paused(snap(5, hub.ClusterUnreachable), t0.Add(5*time.Second), "", ""),
		snap(6, hub.ClusterUnreachable),
	}, []want{{EventClusterResumed, "", 0}, {EventClusterPaused, "INC-4211", 0}, {EventClusterPaused, "", 0},
		{EventClusterUnreachable, "", 0}, {EventClusterResumed, "", 0}}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeriver("hq")
			var got []want
			for _, s := range tt.snaps {
				for _, ev := range d.next(s) {
					if ev.Version != PayloadVersion || ev.Hub != "hq" || ev.Cluster != "prod" || ev.Message == "" || ev.Severity != severityOf(ev.Type) {
						t.Errorf("event %+v: header fields not filled in", ev)
					}
					got = append(got, want{ev.Type, ev.Reason, ev.Count})
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("events = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDeriverEventContent(t *testing.T) {
	d := newDeriver("hq")
	d.next(snap(1, hub.ClusterSynced, node(web, hub.StatusInSync, 0)))
	repaired := node(web, hub.StatusRepaired, 1)
	repaired.Revision = "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"
	evs := d.next(snap(2, hub.ClusterSynced, repaired))
	if len(evs) != 1 {
		t.Fatalf("events = %v", evs)
	}
	ev := evs[0]
	if ev.NodeID != web.String() || ev.Application != "shop" || ev.Kind != "deployment" || ev.Class != "modified" ||
		!slices.Equal(ev.Fields, []string{"spec.replicas"}) || ev.ChangedBy != "kubectl-scale" || ev.Count != 1 ||
		ev.Revision != repaired.Revision {
		t.Errorf("event = %+v", ev)
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	// Field values may be secrets: they never leave the hub.
	if strings.Contains(string(b), `"5"`) || strings.Contains(ev.Message, "->") {
		t.Errorf("payload carries field values: %s", b)
	}
}

func TestFilter(t *testing.T) {
	repaired := Event{Type: EventRepaired, Severity: SeverityInfo, Cluster: "prod-eu", NodeID: "x", Application: "shop", Class: "modified"}
	down := Event{Type: EventClusterUnreachable, Severity: SeverityCritical, Cluster: "prod-eu"}
	tests := []struct {
		name   string
		f      Filter
		ev     Event
		wanted bool
	}{
		{"empty filter", Filter{}, repaired, true},
		{"severity below", Filter{MinSeverity: SeverityWarning}, repaired, false},
		{"severity above", Filter{MinSeverity: SeverityWarning}, down, true},
		{"type", Filter{Types: []EventType{EventStuck}}, repaired, false},
		{"class", Filter{Classes: []hub.DriftClass{hub.DriftMissing}}, repaired, false},
		{"class does not apply to cluster events", Filter{Classes: []hub.DriftClass{hub.DriftMissing}}, down, true},
		{"cluster glob", Filter{Clusters: []string{"prod-*"}}, repaired, true},
		{"cluster glob misses", Filter{Clusters: []string{"staging-*"}}, down, false},
		{"application", Filter{Applications: []string{"billing"}}, repaired, false},
		{"application does not apply to cluster events", Filter{Applications: []string{"billing"}}, down, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.Match(tt.ev); got != tt.wanted {
				t.Errorf("Match = %v, want %v", got, tt.wanted)
			}
		})
	}
}

// transport answers requests with programmed status codes (a pure unit
// test: the real control-plane test uses an httptest server).
type transport struct {
	mu      sync.Mutex
	answers []int // popped per request; empty: 200
	header  http.Header
	hang    bool
	reqs    []recorded
}

type recorded struct {
	at   time.Time
	body string
	hdr  http.Header
}

func (tr *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	var b []byte
	if r.Body != nil {
		b, _ = io.ReadAll(r.Body)
	}
	tr.mu.Lock()
	tr.reqs = append(tr.reqs, recorded{time.Now(), string(b), r.Header.Clone()})
	hang := tr.hang
	code := http.StatusOK
	if len(tr.answers) > 0 {
		code, tr.answers = tr.answers[0], tr.answers[1:]
	}
	tr.mu.Unlock()
	if hang {
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	return &http.Response{StatusCode: code, Status: http.StatusText(code), Header: tr.header.Clone(), Body: io.NopCloser(strings.NewReader(""))}, nil
}

func (tr *transport) requests() []recorded {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.reqs)
}

// fakeSource hands snapshots to the notifier.
type fakeSource struct{ ch chan *hub.Snapshot }

func (f *fakeSource) Subscribe() (<-chan *hub.Snapshot, func()) { return f.ch, func() {} }

func startNotifier(t *testing.T, tr *transport, w Webhook) (*Notifier, *fakeSource, *prometheus.Registry, func()) {
	t.Helper()
	w.Name = "oncall"
	w.URL = "https://hooks.example.com/services/T0/SECRET"
	return runNotifier(t, Options{Webhooks: []Webhook{w}, Client: &http.Client{Transport: tr}})
}

// runNotifier runs a notifier with opts over a fake source and a registry
// of its own; the func returned stops it and waits for it.
func runNotifier(t *testing.T, opts Options) (*Notifier, *fakeSource, *prometheus.Registry, func()) {
	t.Helper()
	reg := prometheus.NewRegistry()
	src := &fakeSource{ch: make(chan *hub.Snapshot)}
	opts.Source, opts.Registerer = src, reg
	n, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- n.Run(ctx) }()
	return n, src, reg, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// repairs returns snapshots in which web is repaired k times, one each.
func repairs(k int) []*hub.Snapshot {
	out := []*hub.Snapshot{snap(0, hub.ClusterSynced, node(web, hub.StatusInSync, 0))}
	for i := 1; i <= k; i++ {
		out = append(out, snap(uint64(i), hub.ClusterSynced, node(web, hub.StatusRepaired, i)))
	}
	return out
}

func TestRetryWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &transport{answers: []int{500, 503, 200}}
		n, src, reg, stop := startNotifier(t, tr, Webhook{MinBackoff: time.Second, MaxBackoff: 10 * time.Second})
		defer stop()
		start := time.Now()
		for _, s := range repairs(1) {
			src.ch <- s
		}
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		reqs := tr.requests()
		if len(reqs) != 3 {
			t.Fatalf("%d attempts, want 3", len(reqs))
		}
		// Exponential backoff with at most 20% jitter: 1-1.2 s, then 2-2.4 s.
		gaps := []time.Duration{reqs[1].at.Sub(reqs[0].at), reqs[2].at.Sub(reqs[1].at)}
		if gaps[0] < time.Second || gaps[0] > 1200*time.Millisecond || gaps[1] < 2*time.Second || gaps[1] > 2400*time.Millisecond {
			t.Errorf("gaps between attempts %v, want about 1s then 2s", gaps)
		}
		if reqs[0].at.Sub(start) != 0 {
			t.Errorf("first attempt after %v, want at once", reqs[0].at.Sub(start))
		}
		if reqs[0].body != reqs[2].body {
			t.Error("retry sent another body")
		}
		st := n.Status()[0]
		if st.Sent != 1 || st.Failed != 0 || st.Failing {
			t.Errorf("status %+v", st)
		}
		if got := testutil.ToFloat64(mustVec(t, reg, "driftwatch_notification_retries_total")); got != 2 {
			t.Errorf("retries metric = %v, want 2", got)
		}
	})
}

func mustVec(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	return gathererCollector{reg, name}
}

// gathererCollector exposes one metric family of a registry to testutil.
type gathererCollector struct {
	reg  *prometheus.Registry
	name string
}

func (g gathererCollector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(g, ch) }
func (g gathererCollector) Collect(ch chan<- prometheus.Metric) {
	fams, _ := g.reg.Gather()
	for _, f := range fams {
		if f.GetName() != g.name {
			continue
		}
		var sum float64
		for _, m := range f.Metric {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(g.name, "sum", nil, nil), prometheus.UntypedValue, sum)
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &transport{answers: []int{429}, header: http.Header{"Retry-After": {"7"}}}
		_, src, _, stop := startNotifier(t, tr, Webhook{MinBackoff: time.Second, MaxBackoff: time.Minute})
		defer stop()
		for _, s := range repairs(1) {
			src.ch <- s
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		reqs := tr.requests()
		if len(reqs) != 2 {
			t.Fatalf("%d attempts, want 2", len(reqs))
		}
		if gap := reqs[1].at.Sub(reqs[0].at); gap != 7*time.Second {
			t.Errorf("retried after %v, want the 7s Retry-After asked for", gap)
		}
	})
}

func TestFinalAnswersAndGivingUp(t *testing.T) {
	tests := []struct {
		name     string
		answers  []int
		attempts int
	}{
		{"400 is final", []int{400}, 1},
		{"500s until the attempts run out", []int{500, 500, 500, 500}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := &transport{answers: tt.answers}
				n, src, reg, stop := startNotifier(t, tr, Webhook{MaxAttempts: 3})
				defer stop()
				for _, s := range repairs(1) {
					src.ch <- s
				}
				time.Sleep(10 * time.Minute)
				synctest.Wait()
				if got := len(tr.requests()); got != tt.attempts {
					t.Errorf("%d attempts, want %d", got, tt.attempts)
				}
				st := n.Status()[0]
				if st.Failed != 1 || !st.Failing || st.Sent != 0 {
					t.Errorf("status %+v, want one failed and failing", st)
				}
				if strings.Contains(st.LastError, "SECRET") {
					t.Errorf("last error shows the URL: %s", st.LastError)
				}
				if got := testutil.ToFloat64(mustVec(t, reg, "driftwatch_notifications_failed_total")); got != 1 {
					t.Errorf("failed metric = %v", got)
				}
				if got := testutil.ToFloat64(mustVec(t, reg, "driftwatch_notification_webhook_up")); got != 0 {
					t.Errorf("up = %v, want 0", got)
				}
			})
		})
	}
}

func TestFullQueueDropsAndNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &transport{hang: true}
		n, src, reg, stop := startNotifier(t, tr, Webhook{QueueSize: 4, PerMinute: 1e6, Burst: 1000, Timeout: time.Hour})
		defer stop()
		start := time.Now()
		snaps := repairs(50)
		src.ch <- snaps[0]
		src.ch <- snaps[1]
		synctest.Wait() // the first event is in flight, hanging
		for _, s := range snaps[2:] {
			src.ch <- s // Run takes every snapshot at once
		}
		synctest.Wait()
		if d := time.Since(start); d != 0 {
			t.Errorf("feeding snapshots took %v of fake time with a hanging receiver", d)
		}
		// One in flight, four queued, the rest dropped.
		st := n.Status()[0]
		if st.Dropped != 45 {
			t.Errorf("dropped %d, want 45", st.Dropped)
		}
		if got := testutil.ToFloat64(mustVec(t, reg, "driftwatch_notifications_dropped_total")); got != 45 {
			t.Errorf("dropped metric = %v", got)
		}
	})
}

func TestRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &transport{}
		n, src, _, stop := startNotifier(t, tr, Webhook{PerMinute: 60, Burst: 2, Format: FormatSlack})
		defer stop()
		for _, s := range repairs(5) {
			src.ch <- s
		}
		synctest.Wait()
		if got := len(tr.requests()); got != 2 {
			t.Fatalf("%d sent in a burst of 5, want 2", got)
		}
		time.Sleep(time.Second)
		src.ch <- snap(6, hub.ClusterSynced, node(web, hub.StatusRepaired, 6))
		synctest.Wait()
		reqs := tr.requests()
		if len(reqs) != 3 {
			t.Fatalf("%d sent, want 3", len(reqs))
		}
		var body struct{ Text string }
		if err := json.Unmarshal([]byte(reqs[2].body), &body); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(body.Text, "3 earlier notification(s) suppressed") || !strings.Contains(body.Text, web.String()) {
			t.Errorf("slack text %q does not report the 3 suppressed", body.Text)
		}
		if st := n.Status()[0]; st.Dropped != 3 || st.Sent != 3 {
			t.Errorf("status %+v", st)
		}
	})
}

func TestHeadersAndJSONBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &transport{}
		_, src, _, stop := startNotifier(t, tr, Webhook{Headers: map[string]string{"Authorization": "Bearer abc"}})
		defer stop()
		for _, s := range repairs(1) {
			src.ch <- s
		}
		synctest.Wait()
		reqs := tr.requests()
		if len(reqs) != 1 {
			t.Fatalf("%d requests", len(reqs))
		}
		if reqs[0].hdr.Get("Authorization") != "Bearer abc" || reqs[0].hdr.Get("Content-Type") != "application/json" {
			t.Errorf("headers %v", reqs[0].hdr)
		}
		var ev Event
		if err := json.Unmarshal([]byte(reqs[0].body), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type != EventRepaired || ev.Version != PayloadVersion || ev.NodeID != web.String() {
			t.Errorf("body %s", reqs[0].body)
		}
	})
}

func TestNewRejects(t *testing.T) {
	src := &fakeSource{}
	tests := []struct {
		name string
		w    []Webhook
	}{
		{"no name", []Webhook{{URL: "https://x"}}},
		{"not http", []Webhook{{Name: "a", URL: "ftp://user:SECRET@x"}}},
		{"bad format", []Webhook{{Name: "a", URL: "https://x", Format: "xml"}}},
		{"name twice", []Webhook{{Name: "a", URL: "https://x"}, {Name: "a", URL: "https://y"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Options{Source: src, Webhooks: tt.w})
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error shows the URL: %v", err)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	_, err := (&http.Client{Transport: &transport{hang: true}}).Do(mustReq(t))
	if err == nil {
		t.Fatal("no error")
	}
	if got := redact(err).Error(); strings.Contains(got, "SECRET") {
		t.Errorf("redact kept the URL: %s", got)
	}
}

func mustReq(t *testing.T) *http.Request {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://hooks.example.com/SECRET", nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseRetryAfter(t *testing.T) {
	now := t0
	for _, tt := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0}, {"3", 3 * time.Second}, {"-1", 0}, {"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
	} {
		if got := parseRetryAfter(tt.v, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

func TestRedirectsAreNotFollowed(t *testing.T) {
	for _, tt := range []struct {
		name   string
		code   int
		client *http.Client // nil: the notifier's own
	}{
		{"301", http.StatusMovedPermanently, nil},
		{"302", http.StatusFound, nil},
		{"303", http.StatusSeeOther, nil},
		{"307", http.StatusTemporaryRedirect, nil},
		{"308", http.StatusPermanentRedirect, nil},
		{"308 with a caller's client", http.StatusPermanentRedirect, &http.Client{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var elsewhere atomic.Int32
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				elsewhere.Add(1)
				if r.Header.Get("X-Api-Key") != "" || r.Header.Get("Authorization") != "" {
					t.Errorf("redirect target got the webhook's headers: %v", r.Header)
				}
			}))
			defer other.Close()
			hook := httptest.NewServer(http.RedirectHandler(other.URL+"/collect?token=LEAK", tt.code))
			defer hook.Close()
			n, err := New(Options{Source: &fakeSource{}, Client: tt.client, Webhooks: []Webhook{{
				Name: "oncall", URL: hook.URL + "/services/SECRET",
				Headers: map[string]string{"X-Api-Key": "k", "Authorization": "Bearer abc"},
			}}})
			if err != nil {
				t.Fatal(err)
			}
			_, retry, err := n.senders[0].post(t.Context(), []byte(`{}`))
			if err == nil {
				t.Fatal("a redirect counted as delivered")
			}
			if retry {
				t.Error("a redirect is retried")
			}
			if got := elsewhere.Load(); got != 0 {
				t.Errorf("the redirect target got %d requests", got)
			}
			msg := err.Error()
			if !strings.Contains(msg, strconv.Itoa(tt.code)) || !strings.Contains(msg, "Location "+other.URL+"/...") {
				t.Errorf("error does not name the status and the Location: %s", msg)
			}
			if strings.Contains(msg, "SECRET") || strings.Contains(msg, "LEAK") {
				t.Errorf("error shows a path or query: %s", msg)
			}
		})
	}
}

// sourceSnap is a snapshot of a synced cluster and one Git source at
// commit, stale with errMsg unless it is "".
func sourceSnap(seq uint64, commit, errMsg string) *hub.Snapshot {
	s := snap(seq, hub.ClusterSynced)
	s.Revisions = []hub.SourceRevision{{ID: "web", URL: "https://git.example.com/deploy.git", Ref: "refs/heads/main",
		Commit: commit, Subject: "scale web", Error: errMsg}}
	return s
}

// TestDeriverSources: a Git source's new commit in force is source-applied,
// a source turning stale is source-stale (once), and what a source is at
// start is no news.
func TestDeriverSources(t *testing.T) {
	const c1, c2 = "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	d := newDeriver("hq")
	type got struct {
		typ      EventType
		revision string
	}
	var evs []got
	var msgs []string
	for _, s := range []*hub.Snapshot{
		sourceSnap(1, c1, "fetch: connection refused"), // at start: no news
		sourceSnap(2, c1, "fetch: connection refused"),
		sourceSnap(3, c1, ""),
		sourceSnap(4, c2, ""),
		sourceSnap(5, c2, "signature refused"),
		sourceSnap(6, c2, "does not render"),
		snap(7, hub.ClusterSynced), // the source left the config
		sourceSnap(8, c1, ""),      // and came back: no news
	} {
		for _, ev := range d.next(s) {
			if ev.Version != PayloadVersion || ev.Hub != "hq" || ev.Application != "web" || ev.Severity != severityOf(ev.Type) {
				t.Errorf("event %+v: fields not filled in", ev)
			}
			evs = append(evs, got{ev.Type, ev.Revision})
			msgs = append(msgs, ev.Message)
		}
	}
	want := []got{{EventSourceApplied, c2}, {EventSourceStale, c2}}
	if !slices.Equal(evs, want) {
		t.Fatalf("events = %v, want %v", evs, want)
	}
	if msgs[0] != "source web: commit 2222222 is in force (scale web)" ||
		msgs[1] != "source web is stale, commit 2222222 stays in force: signature refused" {
		t.Errorf("messages = %q", msgs)
	}
	if severityOf(EventSourceApplied) != SeverityInfo || severityOf(EventSourceStale) != SeverityWarning {
		t.Errorf("severities: applied %s, stale %s", severityOf(EventSourceApplied), severityOf(EventSourceStale))
	}
}

// TestStuckEventSaysWhy: a stuck event carries the hub's diagnosis and
// its message the first line of it.
func TestStuckEventSaysWhy(t *testing.T) {
	d := newDeriver("hq")
	d.next(snap(1, hub.ClusterSynced, node(web, hub.StatusInSync, 0)))
	stuck := node(web, hub.StatusStuck, 0)
	stuck.Reason = "ProgressDeadlineExceeded"
	stuck.Diagnosis = []string{"pod web-1: not scheduled: Unschedulable: 0/3 nodes are available", "1 more pod not ready"}
	evs := d.next(snap(2, hub.ClusterSynced, stuck))
	if len(evs) != 1 || evs[0].Type != EventStuck || !slices.Equal(evs[0].Diagnosis, stuck.Diagnosis) ||
		evs[0].Message != web.String()+": stuck: ProgressDeadlineExceeded; why: pod web-1: not scheduled: Unschedulable: 0/3 nodes are available" {
		t.Fatalf("events = %+v", evs)
	}
}

// TestContestedSaysItOnce: a contested event's message is the hub's
// reason, which says "contested with ..." itself, not "contested:
// contested with ...".
func TestContestedSaysItOnce(t *testing.T) {
	d := newDeriver("hq")
	d.next(snap(1, hub.ClusterSynced, node(web, hub.StatusInSync, 0)))
	n := node(web, hub.StatusContested, 0)
	n.Reason = "contested with hpa: 3 repairs undone; backoff 8s"
	evs := d.next(snap(2, hub.ClusterSynced, n))
	if len(evs) != 1 || evs[0].Type != EventContested || evs[0].Message != web.String()+": contested with hpa: 3 repairs undone; backoff 8s" {
		t.Errorf("events %+v", evs)
	}
}

// TestPauseEventContent: a pause's event says who paused the cluster and
// why, in its fields and its message; a pause made again says so.
func TestPauseEventContent(t *testing.T) {
	d := newDeriver("hq")
	s := snap(1, hub.ClusterSynced)
	d.next(s)
	s = snap(2, hub.ClusterSynced)
	c := &s.Clusters[0]
	c.Paused, c.PausedAt, c.PausedBy, c.PauseReason = true, t0, "alice", "INC-4211: failover"
	evs := d.next(s)
	if len(evs) != 1 || evs[0].Type != EventClusterPaused || evs[0].Severity != SeverityWarning || evs[0].ChangedBy != "alice" ||
		evs[0].Reason != "INC-4211: failover" ||
		evs[0].Message != "repairs on cluster prod paused by alice: INC-4211: failover; its drift is reported, not repaired" {
		t.Fatalf("pause events = %+v", evs)
	}
	s = snap(3, hub.ClusterSynced)
	c = &s.Clusters[0]
	c.Paused, c.PausedAt = true, t0.Add(time.Minute)
	if evs := d.next(s); len(evs) != 1 || evs[0].Message != "repairs on cluster prod paused again; its drift is reported, not repaired" {
		t.Fatalf("pause again events = %+v", evs)
	}
	if evs := d.next(snap(4, hub.ClusterSynced)); len(evs) != 1 || evs[0].Type != EventClusterResumed || evs[0].Severity != SeverityInfo ||
		evs[0].Message != "repairs on cluster prod resumed: its drift is repaired again" {
		t.Fatalf("resume events = %+v", evs)
	}
}

// TestUnrepairedSaysWhoHoldsIt: a drift-unrepaired event says whose switch
// holds the drift back, as the snapshot has it: the pause's author and
// reason, the warn-only override's (the config's warn-only has none, nor
// a pause without a note).
func TestUnrepairedSaysWhoHoldsIt(t *testing.T) {
	d := newDeriver("hq")
	api := hub.NewNodeID("prod", "api", "api", hub.KindDeployment)
	paused, warned, configWarn := node(web, hub.StatusInSync, 0), node(cm, hub.StatusInSync, 0), node(api, hub.StatusInSync, 0)
	warned.Application, configWarn.Application = "shop", "api"
	d.next(snap(1, hub.ClusterSynced, paused, warned, configWarn))

	s := snap(2, hub.ClusterSynced, paused, warned, configWarn)
	c := &s.Clusters[0]
	c.Paused, c.PausedAt, c.PausedBy, c.PauseReason = true, t0, "alice", "INC-4211: failover"
	s.Nodes[0].Status, s.Nodes[0].Reason = hub.StatusPaused, "repairs paused on this cluster"
	s.Nodes[1].Status, s.Nodes[1].Reason = hub.StatusWarnOnly, "warn-only: reported, not repaired"
	s.Nodes[2].Status, s.Nodes[2].Reason = hub.StatusWarnOnly, "warn-only: reported, not repaired"
	s.AppPolicies = map[string]hub.Policy{"shop": hub.PolicyWarn}
	s.AppPolicyNotes = map[string]hub.OverrideNote{"shop": {At: t0, By: "dave", Reason: "DB migration"}}
	got := map[string]string{}
	for _, ev := range d.next(s) {
		if ev.Type == EventUnrepaired {
			got[ev.NodeID] = ev.Message
		}
	}
	for id, want := range map[hub.NodeID]string{
		web: web.String() + ": modified drift left unrepaired: repairs paused on this cluster by alice: INC-4211: failover",
		cm:  cm.String() + ": modified drift left unrepaired: warn-only: reported, not repaired (policy overridden by dave: DB migration)",
		api: api.String() + ": modified drift left unrepaired: warn-only: reported, not repaired",
	} {
		if msg := got[id.String()]; !strings.HasPrefix(msg, want) || strings.Contains(strings.TrimPrefix(msg, want), " by alice") ||
			strings.Contains(strings.TrimPrefix(msg, want), "policy overridden") {
			t.Errorf("%s: message %q, want %q then the drift's detail", id, msg, want)
		}
	}
}

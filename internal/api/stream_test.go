package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/hub"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// fakeSource publishes the snapshots a test builds, as the hub does: a
// subscriber's channel holds the latest one, and a new subscriber gets the
// latest at once.
type fakeSource struct {
	mu     sync.Mutex
	latest *hub.Snapshot
	subs   map[chan *hub.Snapshot]bool
}

func newFakeSource(first *hub.Snapshot) *fakeSource {
	return &fakeSource{latest: first, subs: map[chan *hub.Snapshot]bool{}}
}

func (f *fakeSource) Subscribe() (<-chan *hub.Snapshot, func()) {
	ch := make(chan *hub.Snapshot, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs[ch] = true
	if f.latest != nil {
		ch <- f.latest
	}
	return ch, func() {
		f.mu.Lock()
		delete(f.subs, ch)
		f.mu.Unlock()
	}
}

func (f *fakeSource) publish(s *hub.Snapshot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.latest = s
	for ch := range f.subs {
		select {
		case <-ch:
		default:
		}
		ch <- s
	}
}

// testSnapshot has n Deployments on cluster c1, one drifted.
func testSnapshot(n int) *hub.Snapshot {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := &hub.Snapshot{HubID: "h", Seq: 1, Taken: t0, Policy: hub.PolicyRepair, AppPolicies: map[string]hub.Policy{},
		Clusters: []hub.ClusterStatus{{ClusterHealth: hub.ClusterHealth{Cluster: "c1", State: hub.ClusterSynced}, Objects: n,
			Counts: map[hub.Status]int{hub.StatusInSync: n}}}}
	for i := range n {
		id := hub.NewNodeID("c1", "ns", fmt.Sprintf("app%05d", i), hub.KindDeployment)
		s.Nodes = append(s.Nodes, hub.NodeStatus{ID: id, Application: fmt.Sprintf("app%05d", i), Kind: hub.KindDeployment,
			Policy: hub.PolicyRepair, Status: hub.StatusInSync, LastChange: t0, ReadyReplicas: 2, DesiredReplicas: 2,
			Timeline: []hub.TimelineEntry{{At: t0, Step: hub.StepCreated}, {At: t0, Step: hub.StepObserved}, {At: t0, Step: hub.StepVerified}}})
	}
	return s
}

// nextSnapshot returns the hub's next snapshot after s, with NodeID i's
// status replaced by st (the other NodeStatus values shared, as the hub
// shares them).
func nextSnapshot(s *hub.Snapshot, i int, st hub.Status) *hub.Snapshot {
	n := *s
	n.Seq++
	n.Taken = n.Taken.Add(100 * time.Millisecond)
	n.Nodes = append([]hub.NodeStatus(nil), s.Nodes...)
	n.Nodes[i].Status = st
	return &n
}

// asRole serves h with the caller's role set as the authentication would.
func asRole(role Role, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(withCaller(r.Context(), Caller{Role: role, Name: role.String()})))
	})
}

// sseConn is one open watch stream of a test.
type sseConn struct {
	t      *testing.T
	cancel context.CancelFunc
	body   io.ReadCloser
	r      *bufio.Reader
	events chan sseEvent
	wg     conc.WaitGroup
}

// openWatch opens GET /api/v1/watch on url, with a Last-Event-ID when
// lastID is not empty; it fails the test unless the answer is 200.
func openWatch(t *testing.T, url, lastID string) *sseConn {
	t.Helper()
	return openWatchWith(t, http.DefaultClient, url, lastID)
}

func openWatchWith(t *testing.T, client *http.Client, url, lastID string) *sseConn {
	t.Helper()
	resp, cancel := watchRequestWith(t, client, url, lastID)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("watch = %s %s", resp.Status, b)
	}
	c := &sseConn{t: t, cancel: cancel, body: resp.Body, r: bufio.NewReader(resp.Body), events: make(chan sseEvent, 256)}
	c.wg.Go(func() {
		defer close(c.events)
		for {
			var ev sseEvent
			ok, err := ev.read(c.r)
			if err != nil {
				return
			}
			if ok {
				ev.data = bytes.Clone(ev.data)
				c.events <- ev
			}
		}
	})
	t.Cleanup(c.close)
	return c
}

func watchRequest(t *testing.T, url, lastID string) (*http.Response, context.CancelFunc) {
	t.Helper()
	return watchRequestWith(t, http.DefaultClient, url, lastID)
}

func watchRequestWith(t *testing.T, client *http.Client, url, lastID string) (*http.Response, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/v1/watch", nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set(lastEventIDHeader, lastID)
	}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	return resp, cancel
}

func (c *sseConn) close() {
	c.cancel()
	c.body.Close()
	c.wg.Wait()
}

// next returns the next event (failing the test after 5 s).
func (c *sseConn) next() sseEvent {
	c.t.Helper()
	select {
	case ev, ok := <-c.events:
		if !ok {
			c.t.Fatal("watch stream ended")
		}
		return ev
	case <-time.After(5 * time.Second):
		c.t.Fatal("timed out waiting for a watch event")
	}
	return sseEvent{}
}

// snapshotEvent decodes ev, which must be a snapshot event.
func snapshotEvent(t *testing.T, ev sseEvent) apiv1.Snapshot {
	t.Helper()
	if ev.typ != eventSnapshot {
		t.Fatalf("event %q (id %s), want a snapshot", ev.typ, ev.id)
	}
	var s apiv1.Snapshot
	if err := json.Unmarshal(ev.data, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// deltaEvent decodes ev, which must be a delta event.
func deltaEvent(t *testing.T, ev sseEvent) apiv1.Delta {
	t.Helper()
	if ev.typ != eventDelta {
		t.Fatalf("event %q (id %s), want a delta", ev.typ, ev.id)
	}
	var d apiv1.Delta
	if err := json.Unmarshal(ev.data, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func startStreamer(t *testing.T, src snapshotSource, cfg streamConfig, role Role) (*streamer, *httptest.Server) {
	t.Helper()
	st := newStreamer(src, cfg)
	srv := httptest.NewServer(asRole(role, st))
	t.Cleanup(func() {
		st.close()
		srv.Close()
	})
	return st, srv
}

func TestWatchDeltasAndResume(t *testing.T) {
	s1 := testSnapshot(5)
	src := newFakeSource(s1)
	st, srv := startStreamer(t, src, streamConfig{ringSize: 3}, RoleOperator)

	// At connect: one full snapshot.
	a := openWatch(t, srv.URL, "")
	ev := a.next()
	if got := snapshotEvent(t, ev); got.Seq != 1 || len(got.Nodes) != 5 || got.APIVersion != apiv1.APIVersion {
		t.Fatalf("first event = seq %d, %d nodes, %q", got.Seq, len(got.Nodes), got.APIVersion)
	}
	if ev.id != st.eventID(1) {
		t.Fatalf("id = %q, want %q", ev.id, st.eventID(1))
	}

	// A change: a delta with only the changed NodeID and the header.
	s2 := nextSnapshot(s1, 3, hub.StatusDrifted)
	src.publish(s2)
	ev2 := a.next()
	d := deltaEvent(t, ev2)
	if d.Since != 1 || d.Seq != 2 || len(d.Nodes) != 1 || d.Nodes[0].ID != s1.Nodes[3].ID.String() || d.Nodes[0].Status != "drifted" ||
		len(d.Clusters) != 0 || d.HubID != "h" || ev2.id != st.eventID(2) {
		t.Fatalf("delta = %+v, id %s", d, ev2.id)
	}
	if strings.Contains(string(ev2.data), "app00000") {
		t.Fatalf("the delta carries unchanged NodeIDs: %s", ev2.data)
	}

	// B connects, reads its snapshot and leaves; two more changes follow,
	// seen by A (which keeps the broadcaster running).
	b := openWatch(t, srv.URL, "")
	if got := snapshotEvent(t, b.next()); got.Seq != 2 {
		t.Fatalf("B's snapshot seq = %d", got.Seq)
	}
	b.close()
	s3 := nextSnapshot(s2, 0, hub.StatusFailed)
	src.publish(s3)
	deltaEvent(t, a.next())
	s4 := nextSnapshot(s3, 1, hub.StatusFailed)
	src.publish(s4)
	deltaEvent(t, a.next())

	// B resumes from event 2: only the two deltas since.
	b = openWatch(t, srv.URL, st.eventID(2))
	for _, want := range []uint64{3, 4} {
		ev := b.next()
		if d := deltaEvent(t, ev); d.Since != want-1 || d.Seq != want || len(d.Nodes) != 1 {
			t.Fatalf("resumed delta = since %d seq %d, %d nodes; want %d->%d", d.Since, d.Seq, len(d.Nodes), want-1, want)
		}
	}
	b.close()

	// Three more changes push event 2 out of the ring (3 deltas): B gets a
	// full snapshot again, as does an id of another server.
	for i := range 3 {
		s4 = nextSnapshot(s4, 4, []hub.Status{hub.StatusDrifted, hub.StatusRepairing, hub.StatusRepaired}[i])
		src.publish(s4)
		deltaEvent(t, a.next())
	}
	for _, id := range []string{st.eventID(2), "0123456789ab-7", "garbage"} {
		b = openWatch(t, srv.URL, id)
		if got := snapshotEvent(t, b.next()); got.Seq != s4.Seq {
			t.Fatalf("Last-Event-ID %s: snapshot seq %d, want %d", id, got.Seq, s4.Seq)
		}
		b.close()
	}
	// Resuming at the latest event sends nothing until the next change.
	b = openWatch(t, srv.URL, st.eventID(s4.Seq))
	src.publish(nextSnapshot(s4, 2, hub.StatusDrifted))
	if d := deltaEvent(t, b.next()); d.Since != s4.Seq {
		t.Fatalf("delta since %d, want %d", d.Since, s4.Seq)
	}
}

// TestWatchTooFarBehind: a stream whose cursor has left the ring (a
// client that did not read while the hub published) is sent the latest full
// snapshot, then deltas again.
func TestWatchTooFarBehind(t *testing.T) {
	s := testSnapshot(3)
	st := newStreamer(newFakeSource(nil), streamConfig{ringSize: 2})
	st.publish(s)
	first := s
	for i := range 4 {
		s = nextSnapshot(s, i%3, hub.StatusDrifted)
		st.publish(s)
	}
	for _, tc := range []struct {
		name   string
		cursor uint64
		have   bool
		want   []string
	}{
		{"new stream", 0, false, []string{eventSnapshot}},
		{"far behind", first.Seq, true, []string{eventSnapshot}},
		{"just behind the ring", s.Seq - 3, true, []string{eventSnapshot}},
		{"at the ring's start", s.Seq - 2, true, []string{eventDelta, eventDelta}},
		{"one behind", s.Seq - 1, true, []string{eventDelta}},
		{"up to date", s.Seq, true, nil},
	} {
		evs, _ := st.pending(tc.cursor, tc.have)
		var got []string
		for _, e := range evs {
			got = append(got, e.kind)
			if e.kind == eventSnapshot && e.seq != s.Seq {
				t.Errorf("%s: snapshot %d, want the latest %d", tc.name, e.seq, s.Seq)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: pending = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestWatchStreamCap: past the cap of all open streams (each of a caller
// of its own here) a new one answers 503 with Retry-After.
func TestWatchStreamCap(t *testing.T) {
	src := newFakeSource(testSnapshot(1))
	st := newStreamer(src, streamConfig{maxStreams: 2})
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := Caller{Role: RoleViewer, Name: fmt.Sprint("viewer ", n.Add(1))}
		st.ServeHTTP(w, r.WithContext(withCaller(r.Context(), c)))
	}))
	t.Cleanup(func() {
		st.close()
		srv.Close()
	})
	a := openWatch(t, srv.URL, "")
	a.next()
	b := openWatch(t, srv.URL, "")
	b.next()
	resp, cancel := watchRequest(t, srv.URL, "")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	cancel()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"error"`) {
		t.Fatalf("third stream = %s, Retry-After %q, %s", resp.Status, resp.Header.Get("Retry-After"), body)
	}
	// A slot frees when a stream ends.
	a.close()
	testwait.For(t, 5*time.Second, "a new stream after one ended", func() error {
		resp, cancel := watchRequest(t, srv.URL, "")
		code := resp.StatusCode
		resp.Body.Close()
		cancel()
		return testwait.Check(code == http.StatusOK, "it answers %d", code)
	})
}

// tapWriter copies what a handler writes.
type tapWriter struct {
	http.ResponseWriter
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (w tapWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	w.buf.Write(b)
	w.mu.Unlock()
	return w.ResponseWriter.Write(b)
}

func (w tapWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestClientAppliesDeltas: the client's snapshots equal the hub's (in
// their wire form) as it applies deltas, and after a dropped connection it
// resumes with Last-Event-ID and gets only deltas.
func TestClientAppliesDeltas(t *testing.T) {
	s := testSnapshot(20)
	src := newFakeSource(s)
	st := newStreamer(src, streamConfig{})
	var mu sync.Mutex
	var served bytes.Buffer
	var lastIDs []string
	srv := httptest.NewServer(asRole(RoleOperator, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		lastIDs = append(lastIDs, r.Header.Get(lastEventIDHeader))
		mu.Unlock()
		st.ServeHTTP(tapWriter{w, &mu, &served}, r)
	})))
	defer srv.Close()
	defer st.close()
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	snaps, stop := c.Subscribe()
	defer stop()
	wire := func(s *hub.Snapshot) *hub.Snapshot {
		t.Helper()
		var w apiv1.Snapshot
		b, _ := json.Marshal(apiv1.FromSnapshot(s))
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatal(err)
		}
		hs, err := w.ToHub()
		if err != nil {
			t.Fatal(err)
		}
		return hs
	}
	waitFor := func(want *hub.Snapshot) {
		t.Helper()
		w := wire(want)
		deadline := time.After(5 * time.Second)
		for {
			select {
			case got := <-snaps:
				if got.Seq > want.Seq {
					t.Fatalf("client at seq %d, past %d", got.Seq, want.Seq)
				}
				if got.Seq == want.Seq {
					if !reflect.DeepEqual(got, w) {
						t.Fatalf("client snapshot %d differs:\n got %+v\nwant %+v", got.Seq, got, w)
					}
					return
				}
			case <-deadline:
				t.Fatalf("timed out waiting for snapshot %d", want.Seq)
			}
		}
	}
	waitFor(s)
	for i := range 5 {
		s = nextSnapshot(s, i*3, hub.StatusDrifted)
		src.publish(s)
		waitFor(s)
	}
	mu.Lock()
	before := strings.Count(served.String(), "event: snapshot")
	mu.Unlock()
	srv.CloseClientConnections()
	s = nextSnapshot(s, 19, hub.StatusFailed)
	src.publish(s)
	waitFor(s)
	mu.Lock()
	defer mu.Unlock()
	if len(lastIDs) < 2 || lastIDs[0] != "" || lastIDs[len(lastIDs)-1] == "" {
		t.Fatalf("Last-Event-ID of each connection: %q", lastIDs)
	}
	if after := strings.Count(served.String(), "event: snapshot"); before != 1 || after != 1 {
		t.Fatalf("full snapshots served: %d before the reconnect, %d after; want 1 and 1", before, after)
	}
}

// TestClientStreamPanicReconnects: a panic applying a watch event (a bug,
// made here by the test's delta applier) is recovered and logged with its
// stack, and the subscription
// reconnects afresh (no Last-Event-ID: a full snapshot) instead of going
// quiet; stopping it then does not panic.
func TestClientStreamPanicReconnects(t *testing.T) {
	s1 := testSnapshot(0)
	next := func(s *hub.Snapshot) *hub.Snapshot {
		n := *s
		n.Seq++
		return &n
	}
	s2 := next(s1)
	s3 := next(s2)
	delta := apiv1.Delta{Header: apiv1.FromHeader(s2), Since: s1.Seq, Clusters: []apiv1.Cluster{}, Nodes: []apiv1.Node{}}
	send := func(w http.ResponseWriter, kind string, seq uint64, doc any) {
		data, err := json.Marshal(doc)
		if err != nil {
			t.Error(err)
		}
		fmt.Fprintf(w, "id: test-%d\nevent: %s\ndata: %s\n\n", seq, kind, data)
		w.(http.Flusher).Flush()
	}
	var mu sync.Mutex
	var lastIDs []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		lastIDs = append(lastIDs, r.Header.Get(lastEventIDHeader))
		first := len(lastIDs) == 1
		mu.Unlock()
		w.Header().Set("Content-Type", eventStreamMIMEType)
		if first {
			send(w, eventSnapshot, s1.Seq, apiv1.FromSnapshot(s1))
			send(w, eventDelta, s2.Seq, delta)
		} else {
			send(w, eventSnapshot, s3.Seq, apiv1.FromSnapshot(s3))
		}
		<-r.Context().Done()
	}))
	defer srv.Close()
	var logs authLogBuffer
	var applied atomic.Int32
	c, err := NewClientWithOptions(srv.URL, ClientOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		applyDelta: func(d *apiv1.Delta, prev *hub.Snapshot) (*hub.Snapshot, error) {
			if applied.Add(1) == 1 {
				var nodes []hub.NodeStatus
				_ = nodes[len(prev.Nodes)+1] // a bug applying it
			}
			return d.Apply(prev)
		}})
	if err != nil {
		t.Fatal(err)
	}
	snaps, stop := c.Subscribe()
	stop = sync.OnceFunc(stop)
	defer stop()
	waitSnapshot(t, snaps, 10*time.Second, "the snapshot after the reconnect", func(s *hub.Snapshot) bool { return s.Seq == s3.Seq })
	stop() // waits for the stream's goroutine: nothing re-panics
	if l := logs.String(); !strings.Contains(l, "panic recovered") || !strings.Contains(l, `in="the watch stream of hub `+srv.URL+`"`) ||
		!strings.Contains(l, "stream_test.go") {
		t.Errorf("the panic is not logged with its stack:\n%s", l)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lastIDs) != 2 || lastIDs[1] != "" {
		t.Errorf("Last-Event-ID of each connection: %q; want a second connection without one", lastIDs)
	}
}

// TestServerClose: Close ends open streams, refuses new ones and stops the
// broadcaster; the rest of the API keeps answering.
func TestServerClose(t *testing.T) {
	h := hub.New(hub.Options{ID: "close-test", SnapshotInterval: 10 * time.Millisecond})
	h.SetDesired([]hub.NodeSpec{{ID: hub.NewNodeID("c1", "ns", "web", hub.KindDeployment), Namespace: "ns", Name: "web",
		Kind: hub.KindDeployment, Application: "web", Policy: hub.PolicyRepair, Hash: "1"}})
	ctx, cancel := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	wg.Go(func() { _ = h.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	s := NewServer(h, Options{})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	a := openWatch(t, srv.URL, "")
	if got := snapshotEvent(t, a.next()); got.HubID != "close-test" || len(got.Nodes) != 1 {
		t.Fatalf("snapshot = %+v", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-a.events:
		for ok {
			_, ok = <-a.events
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end on Close")
	}
	s.streams.mu.Lock()
	running := s.streams.run != nil
	s.streams.mu.Unlock()
	if running {
		t.Fatal("the broadcaster still runs after Close")
	}
	resp, cancelReq := watchRequest(t, srv.URL, "")
	resp.Body.Close()
	cancelReq()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("watch after Close = %s", resp.Status)
	}
	c, _ := NewClient(srv.URL)
	if snap, err := c.Snapshot(t.Context()); err != nil || snap.HubID != "close-test" {
		t.Fatalf("snapshot after Close = %v, %v", snap, err)
	}
	if err := s.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
}

// TestWatchBroadcasterStopsWithLastStream: the bare Handler's stream needs
// no Close: its broadcaster runs only while streams are open.
func TestWatchBroadcasterStopsWithLastStream(t *testing.T) {
	src := newFakeSource(testSnapshot(1))
	st, srv := startStreamer(t, src, streamConfig{}, RoleOperator)
	running := func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.run != nil
	}
	a := openWatch(t, srv.URL, "")
	a.next()
	if !running() {
		t.Fatal("no broadcaster while a stream is open")
	}
	a.close()
	// leave clears the run under the lock and then waits for the goroutine
	// outside it, so its subscription ends a moment after running() turns
	// false: wait for both.
	subs := func() int {
		src.mu.Lock()
		defer src.mu.Unlock()
		return len(src.subs)
	}
	testwait.For(t, 5*time.Second, "the broadcaster to stop after the last stream ended", func() error {
		if running() {
			return errors.New("it still runs")
		}
		if n := subs(); n != 0 {
			return fmt.Errorf("%d subscriptions left", n)
		}
		return nil
	})
}

// TestWatchSurvivesPanics: a panic while publishing a snapshot is
// recovered and logged with its stack, and the streams go on. A snapshot
// whose delta panics reaches the streams in full; one that makes the
// publish itself panic is skipped, and the next one's delta covers it;
// stopping the broadcaster then does not panic.
func TestWatchSurvivesPanics(t *testing.T) {
	s1 := testSnapshot(3)
	src := newFakeSource(s1)
	var logs authLogBuffer
	diff := func(prev, next *hub.Snapshot) *apiv1.Delta {
		if next.Seq == 2 {
			panic("injected delta failure")
		}
		return apiv1.Diff(prev, next)
	}
	st, srv := startStreamer(t, src, streamConfig{log: slog.New(slog.NewTextHandler(&logs, nil)), diff: diff}, RoleOperator)
	a := openWatch(t, srv.URL, "")
	snapshotEvent(t, a.next())

	s2 := nextSnapshot(s1, 0, hub.StatusDrifted)
	src.publish(s2)
	if got := snapshotEvent(t, a.next()); got.Seq != 2 || got.Nodes[0].Status != "drifted" {
		t.Fatalf("after a delta's panic: snapshot seq %d, node status %q; want 2, drifted", got.Seq, got.Nodes[0].Status)
	}
	if l := logs.String(); !strings.Contains(l, "injected delta failure") || !strings.Contains(l, `in="the watch stream's delta"`) ||
		!strings.Contains(l, "stream_test.go") {
		t.Fatalf("the delta's panic is not logged with its stack:\n%s", l)
	}

	src.publish(nil) // publish panics on it
	testwait.For(t, 5*time.Second, "the publish's panic logged", func() error {
		return testwait.Check(strings.Contains(logs.String(), `in="the watch stream's publish"`), "not logged")
	})
	s3 := nextSnapshot(s2, 1, hub.StatusFailed)
	src.publish(s3)
	if d := deltaEvent(t, a.next()); d.Since != 2 || d.Seq != 3 || len(d.Nodes) != 1 || d.Nodes[0].Status != "failed" {
		t.Fatalf("after a publish's panic: delta %+v, want 2->3 with one failed node", d)
	}
	a.close()
	st.close() // waits for the broadcaster: nothing re-panics
}

func TestSSEReader(t *testing.T) {
	in := ": keepalive\n\nid: 1\nevent: snapshot\ndata: {\"a\":\ndata: 1}\n\nid: 2\r\ndata: x\r\n\r\n\n"
	r := bufio.NewReader(strings.NewReader(in))
	var got []string
	var ev sseEvent
	for {
		ok, err := ev.read(r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			got = append(got, ev.id+"|"+ev.typ+"|"+string(ev.data))
		}
	}
	want := []string{"1|snapshot|{\"a\":\n1}", "2|message|x"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events = %q, want %q", got, want)
	}
}

// TestWatchOutlivesServerTimeouts: the server's read and write timeouts,
// meant for the other routes, do not end a watch stream, over HTTP/1.1 or
// HTTP/2.
func TestWatchOutlivesServerTimeouts(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(map[bool]string{false: "HTTP/1.1", true: "HTTP/2"}[h2], func(t *testing.T) {
			s := testSnapshot(2)
			src := newFakeSource(s)
			st := newStreamer(src, streamConfig{})
			srv := httptest.NewUnstartedServer(asRole(RoleOperator, st))
			srv.Config.ReadTimeout, srv.Config.WriteTimeout = 200*time.Millisecond, 200*time.Millisecond
			if h2 {
				srv.EnableHTTP2 = true
				srv.StartTLS()
			} else {
				srv.Start()
			}
			defer func() {
				st.close()
				srv.Close()
			}()
			a := openWatchWith(t, srv.Client(), srv.URL, "")
			snapshotEvent(t, a.next())
			time.Sleep(600 * time.Millisecond) // past both timeouts
			s = nextSnapshot(s, 1, hub.StatusDrifted)
			src.publish(s)
			if d := deltaEvent(t, a.next()); d.Seq != s.Seq {
				t.Fatalf("delta seq %d, want %d", d.Seq, s.Seq)
			}
			a.close()
		})
	}
}

// bearer adds a token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestWatchPerTokenCap: one token cannot take every watch stream. Past
// its cap (MaxStreamsPerCaller, 8 by default) a token's next stream
// answers 429 with Retry-After and a message naming the token and the
// cap, while another token still gets one; a stream that ends frees a
// place for its token.
func TestWatchPerTokenCap(t *testing.T) {
	const other = "other-viewer-token-0123456789-abcdefgh"
	toks, err := ParseTokens("mem", []byte(viewerToken+" viewer alice\n"+other+" viewer bob\n"+opToken+" operator\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		perCall int // Options.MaxStreamsPerCaller
		want    int // the cap in effect
	}{
		{"default", 0, defaultMaxPerCaller},
		{"configured", 3, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := NewServer(startHub(t), Options{Tokens: toks, MaxStreamsPerCaller: tt.perCall})
			ts := httptest.NewServer(srv.Handler())
			t.Cleanup(func() {
				_ = srv.Close()
				ts.Close()
			})
			alice := &http.Client{Transport: bearer{viewerToken}}
			var open []*sseConn
			defer func() {
				for _, c := range open {
					c.close()
				}
			}()
			for range tt.want {
				c := openWatchWith(t, alice, ts.URL, "")
				c.next()
				open = append(open, c)
			}
			resp, cancel := watchRequestWith(t, alice, ts.URL, "")
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			cancel()
			want := fmt.Sprintf(`too many watch streams for viewer token \"alice\" (at most %d per token): close one of them, or retry later`, tt.want)
			if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), want) {
				t.Fatalf("stream %d of one token = %s, Retry-After %q, %s; want 429 with %s", tt.want+1, resp.Status, resp.Header.Get("Retry-After"), body, want)
			}
			for _, tok := range []string{other, opToken} {
				c := openWatchWith(t, &http.Client{Transport: bearer{tok}}, ts.URL, "")
				c.next()
				open = append(open, c)
			}
			// A stream that ends frees a place for its token.
			open[0].close()
			open = open[1:]
			testwait.For(t, 5*time.Second, "a token's new stream after one of its streams ended", func() error {
				resp, cancel := watchRequestWith(t, alice, ts.URL, "")
				code := resp.StatusCode
				resp.Body.Close()
				cancel()
				return testwait.Check(code == http.StatusOK, "it answers %d", code)
			})
		})
	}
}

// TestSubscribeSaysStreamLost: ClientOptions.StreamLost is told each time
// a subscription's stream fails (here a 500), with the hub's words, and
// not when the hub ends a stream cleanly.
func TestSubscribeSaysStreamLost(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) <= 2 {
			w.Header().Set("Content-Type", eventStreamMIMEType)
			return // a clean end: no error
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"error":"the hub is stopping"}`))
	}))
	defer srv.Close()
	var mu sync.Mutex
	var lost []error
	c, err := NewClientWithOptions(srv.URL, ClientOptions{StreamLost: func(err error) {
		mu.Lock()
		lost = append(lost, err)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, stop := c.Subscribe()
	testwait.For(t, 10*time.Second, "a lost stream said", func() error {
		mu.Lock()
		defer mu.Unlock()
		return testwait.Check(len(lost) > 0, "nothing said after %d requests", requests.Load())
	})
	stop()
	mu.Lock()
	defer mu.Unlock()
	// The last failed request may have been cut by the stop: not said.
	if n := int(requests.Load()) - 2; len(lost) != n && len(lost) != n-1 {
		t.Errorf("%d streams lost said, want %d (the failed ones only)", len(lost), n)
	}
	if !strings.Contains(lost[0].Error(), "the hub is stopping") {
		t.Errorf("lost: %v", lost[0])
	}
}

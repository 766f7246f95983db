package notify

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// panicOnce is a RoundTripper whose first request panics (a bug in the
// client or its transport); the others go to next.
type panicOnce struct {
	next  http.RoundTripper
	calls atomic.Int32
}

func (p *panicOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	if p.calls.Add(1) == 1 {
		panic("round trip: boom (test)")
	}
	return p.next.RoundTrip(r)
}

// lockedBuffer is a log sink goroutines may write while a test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestPanicsAreRecovered: a panic delivering an event is recovered,
// logged with its stack and counted as that event's failure, and the next
// event is delivered; a panic deriving a snapshot's events (a nil
// snapshot) is recovered and logged, and the next snapshots' events are
// derived and delivered. Run then ends without a panic.
func TestPanicsAreRecovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &transport{}
		logs := &lockedBuffer{}
		src := &fakeSource{ch: make(chan *hub.Snapshot)}
		n, err := New(Options{Source: src, Logger: slog.New(slog.NewTextHandler(logs, nil)),
			Webhooks: []Webhook{{Name: "oncall", URL: "https://hooks.example.com/services/T0/SECRET"}},
			Client:   &http.Client{Transport: &panicOnce{next: tr}}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- n.Run(ctx) }()

		for _, s := range repairs(2) { // two events: the first delivery panics
			src.ch <- s
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := len(tr.requests()); got != 1 {
			t.Errorf("%d events delivered after the panic, want 1", got)
		}
		if st := n.Status()[0]; st.Sent != 1 || st.Failed != 1 || st.Failing || st.Dropped != 0 {
			t.Errorf("status %+v, want one sent and one failed (the panic), not failing", st)
		}
		if out := logs.String(); !strings.Contains(out, "panic recovered") || !strings.Contains(out, `webhook \"oncall\"'s delivery`) ||
			!strings.Contains(out, "panic_test.go") {
			t.Errorf("the delivery's panic is not logged with its stack:\n%s", out)
		}

		src.ch <- nil // the derivation panics
		src.ch <- snap(3, hub.ClusterSynced, node(web, hub.StatusRepaired, 3))
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := len(tr.requests()); got != 2 {
			t.Errorf("%d events delivered after the derivation's panic, want 2", got)
		}
		if out := logs.String(); !strings.Contains(out, "the notifier's event derivation") {
			t.Errorf("the derivation's panic is not logged:\n%s", out)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

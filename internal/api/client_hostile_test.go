package api

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
)

// endlessAnswer answers every request with code, prefix, then chunk over
// and over until the client hangs up or 48 MiB were written; written
// counts what was written.
func endlessAnswer(code int, prefix, chunk string, written *atomic.Int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/watch") && code == http.StatusOK {
			w.Header().Set("Content-Type", eventStreamMIMEType)
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte(prefix))
		for written.Load() < 48<<20 {
			if _, err := w.Write([]byte(chunk)); err != nil {
				return
			}
			written.Add(int64(len(chunk)))
		}
	}
}

// TestClientCapsHostileAnswers: the client attach uses reads at most its
// limit of one answer of the hub (1 GiB by default; 1 MiB here) and of
// one watch event, however the hub sends more (one endless line, endless
// data lines of one event, an endless JSON value), and fails with an error
// naming the hub, the endpoint and the limit; an error answer is read to
// 64 KiB at most. An answer of exactly the limit is read.
func TestClientCapsHostileAnswers(t *testing.T) {
	const limit = 1 << 20
	mib := strings.Repeat("a", 1<<20)
	dataLines := strings.Repeat("data: "+strings.Repeat("a", 1017)+"\n", 1024)
	for _, tt := range []struct {
		name, prefix, chunk string
		code                int
		call                func(ctx context.Context, c *Client) error
		want                string // in the error
	}{
		{"watch line", "id: x-1\nevent: snapshot\ndata: ", mib, http.StatusOK, watchOnce,
			"an event of GET /api/v1/watch is larger than the client's limit of 1 MiB"},
		{"watch data lines", "id: x-1\nevent: snapshot\n", dataLines, http.StatusOK, watchOnce,
			"an event of GET /api/v1/watch is larger than the client's limit of 1 MiB"},
		{"snapshot answer", `{"hubId":"`, mib, http.StatusOK, func(ctx context.Context, c *Client) error { _, err := c.Snapshot(ctx); return err },
			"the answer to GET /api/v1/snapshot is larger than the client's limit of 1 MiB"},
		{"error answer", `{"error":"`, mib, http.StatusInternalServerError, func(ctx context.Context, c *Client) error { _, err := c.Holds(ctx); return err },
			"500 Internal Server Error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var written atomic.Int64
			srv := httptest.NewServer(endlessAnswer(tt.code, tt.prefix, tt.chunk, &written))
			defer srv.Close()
			c, err := NewClientWithOptions(srv.URL, ClientOptions{maxAnswerBytes: limit})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			err = tt.call(ctx, c)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), srv.URL) {
				t.Errorf("error = %v, want one naming %s and saying %q", err, srv.URL, tt.want)
			}
			if n := written.Load(); n >= 48<<20 {
				t.Errorf("the client read all the %d MiB of one answer", n>>20)
			}
		})
	}

	if c, _ := NewClient("http://127.0.0.1:1"); c.maxAnswer() != 1<<30 || byteSize(c.maxAnswer()) != "1 GiB" {
		t.Errorf("the default limit is %s, want 1 GiB", byteSize(c.maxAnswer()))
	}

	// At the limit: read; one byte past it: refused.
	doc := `{"apiVersion":"` + apiv1.APIVersion + `","holds":[]}`
	for _, size := range []int{limit, limit + 1} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(strings.Repeat(" ", size-len(doc)) + doc))
		}))
		c, _ := NewClientWithOptions(srv.URL, ClientOptions{maxAnswerBytes: limit})
		_, err := c.Holds(t.Context())
		srv.Close()
		if (err == nil) != (size == limit) {
			t.Errorf("an answer of %d bytes with a limit of %d: %v", size, limit, err)
		}
	}
}

// watchOnce reads one watch connection of c until it ends.
func watchOnce(ctx context.Context, c *Client) error {
	var ws watchState
	_, err := c.stream(ctx, make(chan *hub.Snapshot, 1), &ws)
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.New("the client still reads the watch event")
	}
	return err
}

// TestWatchConnectBounded: a hub that takes a watch connection but never
// answers it ends the connection after the client's response timeout, with
// an error naming the hub; a stream that did answer lives on well past
// that timeout, on one connection.
func TestWatchConnectBounded(t *testing.T) {
	const timeout = 100 * time.Millisecond
	release := make(chan struct{})
	defer close(release)
	mute := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer mute.Close()
	c, err := NewClientWithOptions(mute.URL, ClientOptions{ResponseTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := watchOnce(ctx, c); err == nil || !strings.Contains(err.Error(), "hub "+mute.URL+": watch: no answer within 100ms") {
		t.Fatalf("watch of a hub that does not answer = %v", err)
	}

	src := newFakeSource(testSnapshot(1))
	st := newStreamer(src, streamConfig{})
	var conns atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conns.Add(1)
		st.ServeHTTP(w, r)
	}))
	defer func() {
		st.close() // ends the streams first: a server's Close waits for them
		srv.Close()
	}()
	c, err = NewClientWithOptions(srv.URL, ClientOptions{ResponseTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	snaps, stop := c.Subscribe()
	defer stop()
	next := func() *hub.Snapshot {
		t.Helper()
		select {
		case s := <-snaps:
			return s
		case <-time.After(10 * time.Second):
			t.Fatal("no snapshot")
		}
		return nil
	}
	if s := next(); s.Seq != 1 {
		t.Fatalf("first snapshot seq %d", s.Seq)
	}
	time.Sleep(5 * timeout)
	s2 := *src.latest
	s2.Seq++
	src.publish(&s2)
	if s := next(); s.Seq != 2 || conns.Load() != 1 {
		t.Fatalf("after %s: snapshot seq %d over %d connections, want seq 2 over one", 5*timeout, s.Seq, conns.Load())
	}
}

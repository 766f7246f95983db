package app

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/api"
)

// TestAttachHubThatNeverAnswers: a hub that takes the connection but never
// answers (a wedged process, a proxy holding it), at the first snapshot or
// at the list of replicas, ends attach after the response timeout with an
// error naming its address, instead of a blank wait.
func TestAttachHubThatNeverAnswers(t *testing.T) {
	h := hub.New(hub.Options{ID: "attach-test"})
	hubAPI := api.Handler(h, api.Options{})
	env := Env{Getenv: func(string) string { return "" }, Terminal: func() bool { return true }}
	for _, path := range []string{"/api/v1/snapshot", "/api/v1/replicas"} {
		t.Run(path, func(t *testing.T) {
			release := make(chan struct{})
			ctx, cancel := context.WithCancel(t.Context())
			// stop lets the hub answer at last and ends attach: the test
			// can end whatever attach does.
			stop := sync.OnceFunc(func() { close(release); cancel() })
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == path {
					select { // never answers
					case <-r.Context().Done():
					case <-release:
					}
					return
				}
				hubAPI.ServeHTTP(w, r)
			}))
			defer srv.Close()
			done := make(chan error, 1)
			var wg conc.WaitGroup
			defer wg.Wait()
			defer stop()
			wg.Go(func() {
				done <- Attach(ctx, srv.URL, true, api.ClientOptions{ResponseTimeout: 200 * time.Millisecond}, env)
			})
			select {
			case err := <-done:
				want := "attach: the hub at " + srv.URL + " did not answer within 200ms"
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("attach = %v, want %q", err, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("attach still waits for a hub that does not answer")
			}
		})
	}
}

// TestAttachLog: what attach logs while its UI runs is kept, up to
// attachLogMax bytes, and written once the UI ended, with how many
// records did not fit.
func TestAttachLog(t *testing.T) {
	var l attachLog
	var out strings.Builder
	l.writeTo(&out)
	if out.Len() != 0 {
		t.Fatalf("nothing logged, yet written: %q", out.String())
	}
	log := slog.New(slog.NewTextHandler(&l, nil))
	log.Error("panic recovered", "in", "the watch stream")
	big := strings.Repeat("x", attachLogMax/2)
	log.Error("big", "stack", big)
	log.Error("big again", "stack", big)
	log.Error("and another")
	l.writeTo(nil) // nowhere: nothing happens
	l.writeTo(&out)
	got := out.String()
	if !strings.Contains(got, "panic recovered") || !strings.Contains(got, "msg=big") || strings.Contains(got, "big again") ||
		!strings.HasSuffix(got, "(2 more log records left out)\n") || len(got) > attachLogMax+100 {
		t.Errorf("written (%d bytes): %.200q ... %q", len(got), got, got[max(0, len(got)-80):])
	}
}

// TestAttachReadOnlyForAViewer: attach with a viewer's token leaves the
// actions out, saying whose token it is; an operator's token, and a hub
// without GET /api/v1/whoami, attach as asked.
func TestAttachReadOnlyForAViewer(t *testing.T) {
	h := hub.New(hub.Options{})
	toks, err := api.ParseTokens("mem", []byte(strings.Repeat("o", 40)+" operator alice\n"+strings.Repeat("v", 40)+" viewer bob\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler(h, api.Options{Tokens: toks}))
	defer srv.Close()
	old := httptest.NewServer(http.NotFoundHandler()) // a hub older than the route
	defer old.Close()
	for _, tc := range []struct {
		url, token string
		asked      bool
		want       bool
		msg        string
	}{
		{srv.URL, strings.Repeat("v", 40), false, true, `read-only: token "bob" is a viewer's (actions need an operator token)`},
		{srv.URL, strings.Repeat("o", 40), false, false, ""},
		{srv.URL, strings.Repeat("o", 40), true, true, ""},
		{old.URL, strings.Repeat("v", 40), false, false, ""},
	} {
		c, err := api.NewClientWithOptions(tc.url, api.ClientOptions{Token: tc.token})
		if err != nil {
			t.Fatal(err)
		}
		got, msg := attachReadOnly(t.Context(), c, tc.asked)
		if got != tc.want || msg != tc.msg {
			t.Errorf("%s, token %.1s..., asked %v: read-only %v %q; want %v %q", tc.url, tc.token, tc.asked, got, msg, tc.want, tc.msg)
		}
	}
}

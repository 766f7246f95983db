package api

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/hub"
)

// Test tokens: long enough, and easy to spot if they leak into an error or
// a log line.
const (
	opToken     = "operator-token-0123456789-abcdefghij"
	viewerToken = "viewer-token-0123456789-abcdefghijkl"
)

// writeTokens writes a token file with mode perm and returns its path.
func writeTokens(t *testing.T, content string, perm os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil { // past the umask
		t.Fatal(err)
	}
	return path
}

func TestLoadTokens(t *testing.T) {
	good := "# the on-call rota\n\n" + opToken + " operator alice\n  " + viewerToken + "   viewer\n"
	for _, tt := range []struct {
		name    string
		content string
		perm    os.FileMode
		want    map[string]Caller // token -> caller
		wantErr string            // substring; the error must never hold a token
	}{
		{name: "roles, names, comments", content: good, perm: 0o600,
			want: map[string]Caller{opToken: {RoleOperator, "alice"}, viewerToken: {RoleViewer, "line 4"}}},
		{name: "read-only file", content: good, perm: 0o400,
			want: map[string]Caller{opToken: {RoleOperator, "alice"}}},
		{name: "group readable", content: good, perm: 0o640, wantErr: "mode 0640 lets group or others access"},
		{name: "world readable", content: good, perm: 0o644, wantErr: "chmod 600"},
		{name: "group writable", content: good, perm: 0o620, wantErr: "mode 0620"},
		{name: "unknown role", content: "# c\n" + opToken + " admin bob\n", perm: 0o600, wantErr: `tokens:2: role "admin": want viewer or operator`},
		{name: "no role", content: opToken + "\n", perm: 0o600, wantErr: "tokens:1: want <token> <role> [name], got 1 fields"},
		{name: "too many fields", content: opToken + " viewer bob smith\n", perm: 0o600, wantErr: "tokens:1: want <token> <role> [name], got 4"},
		{name: "short token", content: "\n\nshort-secret-value operator\n", perm: 0o600, wantErr: "tokens:3: token too short (18 characters, want at least 32)"},
		{name: "non-ASCII token", content: "operator-token-0123456789-abcdefghé operator\n", perm: 0o600, wantErr: "tokens:1: token holds a character that is not printable ASCII"},
		{name: "duplicate", content: opToken + " operator a\n" + opToken + " viewer b\n", perm: 0o600, wantErr: "tokens:2: the token of line 1 again"},
		{name: "empty", content: "# nobody\n\n", perm: 0o600, wantErr: "no tokens"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTokens(t, tt.content, tt.perm)
			toks, err := LoadTokens(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("LoadTokens = %v, want an error naming %s with %q", err, path, tt.wantErr)
				}
				for _, secret := range []string{opToken, viewerToken, "short-secret-value", "abcdefgh"} {
					if strings.Contains(err.Error(), secret) {
						t.Fatalf("the error echoes a token: %v", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for tok, want := range tt.want {
				if got, ok := toks.Lookup(tok); !ok || got != want {
					t.Errorf("Lookup(%s) = %+v %v, want %+v", tok[:8], got, ok, want)
				}
			}
		})
	}
	if _, err := LoadTokens(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file = %v", err)
	}
}

// TestLoadTokensSymlink: a link is followed (Secret volumes are links) and
// the mode checked is the target's.
func TestLoadTokensSymlink(t *testing.T) {
	for _, tt := range []struct {
		perm os.FileMode
		ok   bool
	}{{0o600, true}, {0o644, false}} {
		target := writeTokens(t, opToken+" operator\n", tt.perm)
		link := filepath.Join(t.TempDir(), "tokens")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		_, err := LoadTokens(link)
		if (err == nil) != tt.ok {
			t.Errorf("link to a %04o file: %v", tt.perm, err)
		}
	}
}

func TestTokensLookup(t *testing.T) {
	toks, err := ParseTokens("mem", []byte(opToken+" operator ops\n"+viewerToken+" viewer\n"))
	if err != nil {
		t.Fatal(err)
	}
	if toks.Len() != 2 {
		t.Fatalf("Len = %d", toks.Len())
	}
	for _, tt := range []struct {
		token string
		want  Caller
		ok    bool
	}{
		{opToken, Caller{RoleOperator, "ops"}, true},
		{viewerToken, Caller{RoleViewer, "line 2"}, true},
		{"", Caller{}, false},
		{opToken[:len(opToken)-1], Caller{}, false},
		{opToken + "x", Caller{}, false},
		{strings.ToUpper(opToken), Caller{}, false},
	} {
		if got, ok := toks.Lookup(tt.token); got != tt.want || ok != tt.ok {
			t.Errorf("Lookup(%q) = %+v %v, want %+v %v", tt.token, got, ok, tt.want, tt.ok)
		}
	}
	// Only hashes are kept.
	for _, e := range toks.entries {
		if e.hash == sha256.Sum256(nil) || bytes.Contains(e.hash[:], []byte(opToken[:8])) {
			t.Fatalf("entry %+v", e)
		}
	}
}

func TestNewTokenAndFirstToken(t *testing.T) {
	a, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewToken()
	if len(a) != 43 || a == b || strings.ContainsAny(a, "+/=") {
		t.Fatalf("NewToken = %q, %q", a, b)
	}
	if _, err := ParseTokens("new", []byte(a+" operator\n")); err != nil {
		t.Fatalf("a new token is refused: %v", err)
	}
	for _, tt := range []struct{ content, want, wantErr string }{
		{a + "\n", a, ""},
		{"# serve's file\n\n" + a + " operator default\n" + b + " viewer\n", a, ""},
		{"# nothing\n", "", "no token"},
		{"short\n", "", "token too short"},
	} {
		path := writeTokens(t, tt.content, 0o600)
		got, err := ReadToken(path)
		if got != tt.want || (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("ReadToken(%q) = %q, %v; want %q, %q", tt.content, got, err, tt.want, tt.wantErr)
		}
	}
	if _, err := ReadToken(writeTokens(t, a+"\n", 0o604)); err == nil || !strings.Contains(err.Error(), "mode 0604") {
		t.Fatalf("a world-readable client token file = %v", err)
	}
}

// TestMiddleware drives the API handler with raw requests: authentication,
// roles, browser safety and body limits, and what is logged.
func TestMiddleware(t *testing.T) {
	h := startHub(t)
	toks, err := ParseTokens("mem", []byte(opToken+" operator alice\n"+viewerToken+" viewer victor\n"))
	if err != nil {
		t.Fatal(err)
	}
	var logs authLogBuffer
	srv := httptest.NewServer(Handler(h, Options{Tokens: toks, MaxBodyBytes: 1 << 10,
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))}))
	defer srv.Close()
	bigHold := `{"scope":"cluster","name":"c1","ttl":"1m","reason":"` + strings.Repeat("x", 2<<10) + `"}`
	for _, tt := range []struct {
		name         string
		method, path string
		token        string
		contentType  string
		body         string
		chunked      bool
		header       map[string]string
		want         int
		wantErr      string // in the answer
	}{
		{name: "no token", method: "GET", path: "/api/v1/holds", want: 401, wantErr: "authentication required"},
		{name: "wrong token", method: "GET", path: "/api/v1/holds", token: "x" + opToken[1:], want: 401, wantErr: "invalid bearer token"},
		{name: "no token write", method: "POST", path: "/api/v1/clusters/c1/pause", want: 401},
		{name: "unknown route no token", method: "GET", path: "/api/v1/secrets", want: 401},
		{name: "basic auth", method: "GET", path: "/api/v1/holds", header: map[string]string{"Authorization": "Basic b3A6cHc="}, want: 401},
		{name: "viewer reads", method: "GET", path: "/api/v1/holds", token: viewerToken, want: 200},
		{name: "viewer reads snapshot", method: "GET", path: "/api/v1/snapshot", token: viewerToken, want: 200},
		{name: "lowercase scheme", method: "GET", path: "/api/v1/holds", header: map[string]string{"Authorization": "bearer " + viewerToken}, want: 200},
		{name: "viewer pause", method: "POST", path: "/api/v1/clusters/c1/pause", token: viewerToken, want: 403, wantErr: "operator role is required"},
		{name: "viewer reload", method: "POST", path: "/api/v1/reload", token: viewerToken, want: 403},
		{name: "viewer release", method: "DELETE", path: "/api/v1/holds/cluster/c1", token: viewerToken, want: 403},
		{name: "operator pause", method: "POST", path: "/api/v1/clusters/c1/pause", token: opToken, want: 202},
		{name: "operator resume", method: "POST", path: "/api/v1/clusters/c1/resume", token: opToken, want: 202},
		{name: "cross-site", method: "POST", path: "/api/v1/clusters/c1/pause", token: opToken,
			header: map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, want: 403, wantErr: "cross-origin"},
		{name: "cross-origin without fetch metadata", method: "POST", path: "/api/v1/clusters/c1/pause", token: opToken,
			header: map[string]string{"Origin": "http://evil.example"}, want: 403},
		{name: "same-origin browser", method: "POST", path: "/api/v1/clusters/c1/resume", token: opToken,
			header: map[string]string{"Sec-Fetch-Site": "same-origin"}, want: 202},
		{name: "text/plain policy", method: "POST", path: "/api/v1/applications/web/policy", token: opToken,
			contentType: "text/plain", body: `{"policy":"warn"}`, want: 415},
		{name: "policy without type", method: "POST", path: "/api/v1/applications/web/policy", token: opToken,
			body: `{"policy":"warn"}`, want: 415},
		{name: "form body on pause", method: "POST", path: "/api/v1/clusters/c1/pause", token: opToken,
			contentType: "application/x-www-form-urlencoded", body: "a=b", want: 415},
		{name: "json policy with charset", method: "POST", path: "/api/v1/applications/web/policy", token: opToken,
			contentType: "application/json; charset=utf-8", body: `{"policy":""}`, want: 202},
		{name: "oversized body", method: "POST", path: "/api/v1/holds", token: opToken,
			contentType: "application/json", body: bigHold, want: 413},
		{name: "oversized chunked body", method: "POST", path: "/api/v1/holds", token: opToken,
			contentType: "application/json", body: bigHold, chunked: true, want: 413},
		{name: "oversized chunked policy", method: "POST", path: "/api/v1/applications/web/policy", token: opToken,
			contentType: "application/json", body: `{"policy":"` + strings.Repeat("w", 2<<10) + `"}`, chunked: true, want: 413},
		{name: "pause unknown cluster", method: "POST", path: "/api/v1/clusters/nope/pause", token: opToken, want: 404, wantErr: `cluster "nope": unknown cluster`},
		{name: "resume unknown cluster", method: "POST", path: "/api/v1/clusters/nope/resume", token: opToken, want: 404},
		{name: "policy unknown application", method: "POST", path: "/api/v1/applications/nope/policy", token: opToken,
			contentType: "application/json", body: `{"policy":"warn"}`, want: 404, wantErr: `application "nope": unknown application`},
		{name: "repair unknown node", method: "POST", path: "/api/v1/nodes/c1:ns%2Fnope:deployment/repair", token: opToken, want: 404},
		{name: "hold unknown node", method: "POST", path: "/api/v1/holds", token: opToken, contentType: "application/json",
			body: `{"scope":"node","name":"c1:ns/nope:deployment","ttl":"1m","reason":"x"}`, want: 404, wantErr: "unknown node id"},
		{name: "hold unknown application", method: "POST", path: "/api/v1/holds", token: opToken, contentType: "application/json",
			body: `{"scope":"application","name":"nope","ttl":"1m","reason":"x"}`, want: 404, wantErr: "unknown application"},
		{name: "hold unknown cluster", method: "POST", path: "/api/v1/holds", token: opToken, contentType: "application/json",
			body: `{"scope":"cluster","name":"nope","ttl":"1m","reason":"x"}`, want: 404, wantErr: "unknown cluster"},
		{name: "hold known cluster", method: "POST", path: "/api/v1/holds", token: opToken, contentType: "application/json",
			body: `{"scope":"cluster","name":"c1","ttl":"1m","reason":"x"}`, want: 201},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
				if tt.chunked {
					body = io.MultiReader(body) // unknown length: sent chunked
				}
			}
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var answer struct{ Error string }
			_ = json.Unmarshal(b, &answer)
			if resp.StatusCode != tt.want || !strings.Contains(answer.Error, tt.wantErr) {
				t.Fatalf("%s %s = %d %s, want %d with %q", tt.method, tt.path, resp.StatusCode, b, tt.want, tt.wantErr)
			}
			if got := resp.Header.Get("WWW-Authenticate"); (resp.StatusCode == 401) != strings.HasPrefix(got, "Bearer") {
				t.Fatalf("WWW-Authenticate = %q on a %d", got, resp.StatusCode)
			}
		})
	}

	// Nothing was created for the unknown ids.
	snap := h.Snapshot()
	if _, ok := snap.Cluster("nope"); ok {
		t.Fatal("a phantom cluster nope is in the snapshot")
	}
	if _, ok := snap.AppPolicies["nope"]; ok {
		t.Fatal("a phantom policy for application nope is in the snapshot")
	}
	for _, hd := range snap.Holds {
		if hd.Target.Name != "c1" {
			t.Fatalf("a hold on an unknown target: %+v", hd)
		}
	}

	// Every write is logged with the caller, reads are not (at info), and
	// no token is ever logged.
	out := logs.String()
	for _, want := range []string{
		`"method":"POST","path":"/api/v1/clusters/c1/pause","status":202,"role":"operator","caller":"alice"`,
		`"method":"POST","path":"/api/v1/clusters/c1/pause","status":403,"role":"viewer","caller":"victor"`,
		`"method":"POST","path":"/api/v1/clusters/c1/pause","status":401,"role":"none"`,
		`"method":"POST","path":"/api/v1/holds","status":413,"role":"operator","caller":"alice"`,
		`"method":"DELETE","path":"/api/v1/holds/cluster/c1","status":403`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, `"method":"GET"`) {
		t.Errorf("a read was logged at info:\n%s", out)
	}
	if strings.Contains(out, opToken[:12]) || strings.Contains(out, viewerToken[:12]) {
		t.Fatalf("a token was logged:\n%s", out)
	}
}

// TestPolicyOfLeftApplication: an application that left the config may
// still have its override cleared, never set.
func TestPolicyOfLeftApplication(t *testing.T) {
	h := startHub(t)
	srv := httptest.NewServer(Handler(h, Options{}))
	defer srv.Close()
	c, _ := NewClient(srv.URL)
	if err := c.SetApplicationPolicy("web", hub.PolicyWarn); err != nil {
		t.Fatal(err)
	}
	h.ForgetCluster("c1") // web's only cluster leaves the config; the override stays
	if h.KnowsApplication("web") {
		t.Fatal("web is still known")
	}
	var apiErr *Error
	if err := c.SetApplicationPolicy("web", hub.PolicyRepair); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Fatalf("setting the policy of a gone application = %v, want a 404", err)
	}
	if err := c.SetApplicationPolicy("web", ""); err != nil {
		t.Fatalf("clearing the override of a gone application = %v", err)
	}
	if _, ok := h.Snapshot().AppPolicies["web"]; ok {
		t.Fatal("the override was not cleared")
	}
	if err := c.SetApplicationPolicy("web", ""); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Fatalf("clearing again = %v, want a 404", err)
	}
}

// TestClientOptions: the client sends its token, trusts its CA file over
// https, and refuses options that cannot work.
func TestClientOptions(t *testing.T) {
	h := startHub(t)
	toks, _ := ParseTokens("mem", []byte(viewerToken+" viewer\n"+opToken+" operator\n"))
	srv := httptest.NewUnstartedServer(Handler(h, Options{Tokens: toks}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	srv.StartTLS()
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	var apiErr *Error
	for _, tt := range []struct {
		name string
		opts ClientOptions
		want int // of Holds: 0 for success, -1 for a TLS error
	}{
		{"operator", ClientOptions{Token: opToken, CAFile: caFile}, 0},
		{"viewer", ClientOptions{Token: viewerToken, CAFile: caFile}, 0},
		{"no token", ClientOptions{CAFile: caFile}, http.StatusUnauthorized},
		{"system roots", ClientOptions{Token: opToken}, -1},
	} {
		c, err := NewClientWithOptions(srv.URL, tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Holds(t.Context())
		switch {
		case tt.want == 0 && err != nil, tt.want > 0 && (!errors.As(err, &apiErr) || apiErr.StatusCode != tt.want),
			tt.want < 0 && (err == nil || !strings.Contains(err.Error(), "certificate")):
			t.Errorf("%s: Holds = %v, want %d", tt.name, err, tt.want)
		}
		c.CloseIdleConnections()
	}
	op, _ := NewClientWithOptions(srv.URL, ClientOptions{Token: opToken, CAFile: caFile})
	if err := op.PauseCluster("c1", true); err != nil {
		t.Fatal(err)
	}
	viewer, _ := NewClientWithOptions(srv.URL, ClientOptions{Token: viewerToken, CAFile: caFile})
	if _, err := viewer.Hold(hub.HoldTarget{Scope: hub.HoldCluster, Name: "c1"}, time.Minute, "x"); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusForbidden {
		t.Fatalf("viewer hold = %v, want a 403", err)
	}
	op.CloseIdleConnections()
	viewer.CloseIdleConnections()

	bad := filepath.Join(t.TempDir(), "bad.pem")
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		base    string
		opts    ClientOptions
		wantErr string
	}{
		{"localhost:7070", ClientOptions{}, "want http://host:port or https://host:port"},
		{"http://127.0.0.1:7070", ClientOptions{CAFile: caFile}, "a CA file needs an https address"},
		{"https://127.0.0.1:7070", ClientOptions{CAFile: bad}, "no PEM certificate"},
		{"https://127.0.0.1:7070", ClientOptions{CAFile: filepath.Join(t.TempDir(), "none.pem")}, "no such file"},
		{"https://127.0.0.1:7070", ClientOptions{Token: "short"}, "token too short"},
		{"http://hub.example:7070", ClientOptions{Token: opToken}, `hub address "http://hub.example:7070": refusing to send the token over plain http to hub.example, which is not a loopback address: use https://`},
		{"http://10.0.0.5:7070", ClientOptions{Token: opToken}, "refusing to send the token over plain http to 10.0.0.5"},
		{"http://[::ffff:10.0.0.5]:7070", ClientOptions{Token: opToken}, "refusing to send the token over plain http to ::ffff:10.0.0.5"},
		{"http://localhost.example:7070", ClientOptions{Token: opToken}, "refusing to send the token over plain http"},
		{"http://0.0.0.0:7070", ClientOptions{Token: opToken}, "refusing to send the token over plain http"},
	} {
		if _, err := NewClientWithOptions(tt.base, tt.opts); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("NewClientWithOptions(%s, %+v) = %v, want %q", tt.base, tt.opts, err, tt.wantErr)
		}
	}
}

// TestClientTokenOverPlainHTTP: a token goes over plain http to loopback
// only (https anywhere); without a token any address is accepted.
func TestClientTokenOverPlainHTTP(t *testing.T) {
	for _, tt := range []struct {
		base  string
		token string
		ok    bool
	}{
		{"http://127.0.0.1:7070", opToken, true},
		{"http://127.8.9.10:7070", opToken, true},
		{"http://[::1]:7070", opToken, true},
		{"http://[::ffff:127.0.0.1]:7070", opToken, true},
		{"http://localhost:7070", opToken, true},
		{"http://LOCALHOST.:7070", opToken, true},
		{"https://hub.example:7070", opToken, true},
		{"http://hub.example:7070", "", true},
		{"http://hub.example:7070", opToken, false},
		{"http://192.168.1.10:7070", opToken, false},
		{"http://[fd00::1]:7070", opToken, false},
	} {
		_, err := NewClientWithOptions(tt.base, ClientOptions{Token: tt.token})
		if (err == nil) != tt.ok {
			t.Errorf("NewClientWithOptions(%s, token %v) = %v, want ok %v", tt.base, tt.token != "", err, tt.ok)
		}
	}
}

// TestClientFollowsNoRedirect: a hub answering with a redirect gets an
// error, and the redirect's target never sees the token.
func TestClientFollowsNoRedirect(t *testing.T) {
	var leaked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
	}))
	defer other.Close()
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		srv := httptest.NewServer(http.RedirectHandler(other.URL+"/api/v1/holds", code))
		c, err := NewClientWithOptions(srv.URL, ClientOptions{Token: opToken})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Holds(t.Context())
		var apiErr *Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != code {
			t.Errorf("%d: Holds = %v, want an error answer %d", code, err, code)
		}
		if err := c.PauseCluster("c1", true); err == nil {
			t.Errorf("%d: PauseCluster followed the redirect", code)
		}
		c.CloseIdleConnections()
		srv.Close()
	}
	if n := leaked.Load(); n > 0 {
		t.Errorf("the redirect target got the token %d times", n)
	}
}

// authLogBuffer is a goroutine-safe buffer for logs.
type authLogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *authLogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *authLogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestWatchOutlivesWriteTimeout: the watch stream, behind the
// authentication's response wrapper, still clears the server's write
// deadline: one connection keeps delivering events past WriteTimeout.
func TestWatchOutlivesWriteTimeout(t *testing.T) {
	h := startHub(t)
	toks, _ := ParseTokens("mem", []byte(viewerToken+" viewer\n"+opToken+" operator\n"))
	srv := httptest.NewUnstartedServer(Handler(h, Options{Tokens: toks}))
	const writeTimeout = 300 * time.Millisecond
	srv.Config.WriteTimeout = writeTimeout
	srv.Start()
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/watch", nil)
	req.Header.Set("Authorization", "Bearer "+viewerToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("watch = %v, %v", resp, err)
	}
	lines := make(chan string)
	var wg conc.WaitGroup
	defer wg.Wait()
	defer resp.Body.Close()
	defer cancel()
	wg.Go(func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	})
	// nextData waits for a data line holding want.
	nextData := func(what, want string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the stream ended before %s", what)
				}
				if strings.HasPrefix(l, "data:") && strings.Contains(l, want) {
					return
				}
			case <-deadline:
				t.Fatalf("no event for %s", what)
			}
		}
	}
	nextData("the first snapshot", "")
	time.Sleep(3 * writeTimeout)
	c, _ := NewClientWithOptions(srv.URL, ClientOptions{Token: opToken})
	if err := c.PauseCluster("c1", true); err != nil {
		t.Fatal(err)
	}
	nextData("the pause, past the write timeout", `"paused":true`)
}

// TestWhoami: each token learns its name and role; a read-only hub
// answers viewer for every token (it refuses every action); no token is
// 401. The client's Whoami reads it.
func TestWhoami(t *testing.T) {
	h := startHub(t)
	toks, err := ParseTokens("mem", []byte(opToken+" operator alice\n"+viewerToken+" viewer\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		readOnly    bool
		token, name string
		role        string
	}{
		{false, opToken, "alice", "operator"},
		{false, viewerToken, "line 2", "viewer"}, // a token without a name is named by its line
		{true, opToken, "alice", "viewer"},
	} {
		srv := httptest.NewServer(Handler(h, Options{Tokens: toks, ReadOnly: tc.readOnly}))
		c, err := NewClientWithOptions(srv.URL, ClientOptions{Token: tc.token})
		if err != nil {
			t.Fatal(err)
		}
		w, err := c.Whoami(t.Context())
		if err != nil || w.Name != tc.name || w.Role != tc.role || w.APIVersion != "driftwatch.io/v1" {
			t.Errorf("read-only %v, %s's token: %+v, %v; want %s", tc.readOnly, tc.name, w, err, tc.role)
		}
		anon, err := NewClientWithOptions(srv.URL, ClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var e *Error
		if _, err := anon.Whoami(t.Context()); !errors.As(err, &e) || e.StatusCode != http.StatusUnauthorized {
			t.Errorf("without a token: %v, want 401", err)
		}
		srv.Close()
	}
}

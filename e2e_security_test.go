package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/e2etest"

	"github.com/driftwatch/driftwatch/internal/api"
	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
	"github.com/driftwatch/driftwatch/tui"
)

// serveChildEnv, set to serve's arguments (JSON), makes TestSecurity run
// `driftwatch serve` with them instead of the test: each serve of the test
// is a process of its own. (In one process, a serve's klog setup would race
// with client-go goroutines a previous serve left finishing, since klog's
// logger is global.)
const serveChildEnv = "DRIFTWATCH_SERVE_CHILD"

// serveChild is the child mode: serve until SIGTERM, exit with serve's
// exit code.
func serveChild(t *testing.T, argsJSON string) {
	var args []string
	if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(t.Context(), syscall.SIGTERM)
	err := run(ctx, args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	if code := exitCode(err, os.Stderr); code != 0 {
		os.Exit(code)
	}
}

// serveRun is a `driftwatch serve` running in a child process.
type serveRun struct {
	api, probes string // base URLs
	out, errOut *syncBuffer
	cmd         *exec.Cmd
	done        chan struct{}
	err         error // Wait's, once done is closed
}

// startServe runs `driftwatch serve -f path` with XDG_STATE_HOME=stateHome
// on loopback ports chosen by the kernel, plus extra flags, and waits until
// it listens. It is stopped when the test ends (or by stop).
func startServe(t *testing.T, path, stateHome string, extra ...string) *serveRun {
	t.Helper()
	args, err := json.Marshal(append([]string{"serve", "-f", path, "--listen", "127.0.0.1:0", "--probe-listen", "127.0.0.1:0"}, extra...))
	if err != nil {
		t.Fatal(err)
	}
	s := &serveRun{out: &syncBuffer{}, errOut: &syncBuffer{}, done: make(chan struct{})}
	// Not CommandContext: the test's context ends before its cleanup, which
	// stops serve with SIGTERM and checks how it exits.
	s.cmd = exec.Command(os.Args[0], "-test.run=^TestSecurity$", "-test.timeout=5m")
	s.cmd.Env = append(os.Environ(), serveChildEnv+"="+string(args), "XDG_STATE_HOME="+stateHome)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.errOut
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() { s.stop(t) })
	deadline := time.After(60 * time.Second)
	for s.probes == "" {
		select {
		case <-s.done:
			t.Fatalf("serve %v ended: %v\n%s", extra, s.err, s.errOut)
		case <-deadline:
			t.Fatalf("serve %v did not start:\n%s", extra, s.errOut)
		case <-time.After(20 * time.Millisecond):
		}
		s.api, s.probes = serveAddrs(s.out.String())
	}
	return s
}

// stop ends serve with SIGTERM and fails the test unless it exits 0.
func (s *serveRun) stop(t *testing.T) {
	t.Helper()
	select {
	case <-s.done:
		return
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("SIGTERM: %v", err)
	}
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
		t.Errorf("serve did not stop on SIGTERM")
	}
	if s.err != nil {
		t.Errorf("serve exited with %v:\n%s", s.err, s.errOut)
	}
	http.DefaultClient.CloseIdleConnections()
}

// waitLog waits until serve's log holds want (its output arrives through
// a pipe, a little after serve wrote it).
func (s *serveRun) waitLog(t *testing.T, want string) {
	t.Helper()
	testwait.For(t, 10*time.Second, fmt.Sprintf("serve to log %q", want), func() error {
		out := s.errOut.String()
		return testwait.Check(strings.Contains(out, want), "serve's log:\n%s", out)
	})
}

// request is one raw HTTP request of the abuse tests.
type request struct {
	method, url string
	token       string
	contentType string
	body        string
	header      map[string]string
}

func (r request) do(t *testing.T, client *http.Client) (int, http.Header, string) {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequest(r.method, r.url, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// stateEnv returns a getenv whose XDG_STATE_HOME is a new folder.
func stateEnv(t *testing.T) (func(string) string, string) {
	home := t.TempDir()
	return func(k string) string {
		if k == "XDG_STATE_HOME" {
			return home
		}
		return ""
	}, home
}

// TestSecurity runs the abuse cases of the API against a real serve with
// one real cluster: authentication, roles, browser requests, body limits,
// unknown ids, the probe listener, the default token, TLS and its rotation,
// and the refused starts.
func TestSecurity(t *testing.T) {
	if args := os.Getenv(serveChildEnv); args != "" {
		serveChild(t, args)
		return
	}
	set := lctest.Start(t, localcluster.Options{Count: 1})
	path := e2eConfig(t, set, "sec", "", "api", "worker")

	t.Run("default token", func(t *testing.T) { testDefaultToken(t, path) })
	t.Run("abuse", func(t *testing.T) { testAbuse(t, path) })
	t.Run("tls", func(t *testing.T) { testTLS(t, path) })
	t.Run("viewer attach", func(t *testing.T) { testViewerAttach(t, path) })
	t.Run("hub commands", func(t *testing.T) { testHubCommands(t, path, set) })
	t.Run("refused starts", func(t *testing.T) { testRefusedStarts(t, path) })
}

// testDefaultToken: without --token-file the first start makes an operator
// token in a 0600 file in a 0700 folder, logs its path but never the
// token, and the next start reuses it; a client on the machine finds it.
func testDefaultToken(t *testing.T, path string) {
	getenv, home := stateEnv(t)
	s := startServe(t, path, home)
	file := filepath.Join(home, "driftwatch", "tokens")
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.Stat(filepath.Dir(file))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || dir.Mode().Perm() != 0o700 {
		t.Fatalf("token file %04o in a %04o folder, want 0600 in 0700", fi.Mode().Perm(), dir.Mode().Perm())
	}
	first, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	token, err := api.FirstToken(file, first)
	if err != nil || len(token) != 43 || !strings.Contains(string(first), token+" operator "+tui.LocalUser()+"\n") {
		t.Fatalf("token file:\n%s\n%v", first, err)
	}
	s.waitLog(t, `"msg":"created an operator token for the API; clients on this machine use it by default","file":"`+file+`"`)
	if strings.Contains(s.errOut.String(), token) {
		t.Fatal("the log holds the token")
	}
	if code, _, _ := (request{method: "GET", url: s.api + "/api/v1/holds", token: token}).do(t, nil); code != 200 {
		t.Fatalf("the default token is refused: %d", code)
	}
	// A client on this machine needs nothing; a wrong $DRIFTWATCH_TOKEN
	// is refused.
	var out, errOut strings.Builder
	if err := run(t.Context(), []string{"reload", "--server", s.api}, getenv, &out, &errOut); err != nil {
		t.Fatalf("reload with the default token: %v\n%s", err, &errOut)
	}
	wrong := func(k string) string {
		if k == app.TokenEnv {
			return strings.Repeat("w", 40)
		}
		return getenv(k)
	}
	errOut.Reset()
	err = run(t.Context(), []string{"reload", "--server", s.api}, wrong, &out, &errOut)
	if code := exitCode(err, &errOut); code != 1 || !strings.Contains(errOut.String(), "invalid bearer token") {
		t.Fatalf("reload with a wrong token: exit %d\n%s", code, &errOut)
	}
	s.stop(t)

	s = startServe(t, path, home)
	again, err := os.ReadFile(file)
	if err != nil || string(again) != string(first) {
		t.Fatalf("the second start changed the token file (%v)", err)
	}
	s.waitLog(t, `"msg":"API tokens loaded","file":"`+file+`"`)
	if strings.Contains(s.errOut.String(), "created an operator token") {
		t.Fatalf("the second start made a token:\n%s", s.errOut)
	}
	if code, _, _ := (request{method: "GET", url: s.api + "/api/v1/holds", token: token}).do(t, nil); code != 200 {
		t.Fatalf("the reused token is refused: %d", code)
	}
}

const (
	e2eOperator = "e2e-operator-token-0123456789abcdefgh"
	e2eViewer   = "e2e-viewer-token-0123456789abcdefghij"
)

// writeTokenFile writes a token file with an operator (alice) and a viewer
// (victor) and returns its path.
func writeTokenFile(t *testing.T, perm os.FileMode) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("# test tokens\n"+e2eOperator+" operator alice\n"+e2eViewer+" viewer victor\n"), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, perm); err != nil {
		t.Fatal(err)
	}
	return file
}

// testAbuse sends each abuse case to a real serve with a token file.
func testAbuse(t *testing.T, path string) {
	s := startServe(t, path, t.TempDir(), "--token-file", writeTokenFile(t, 0o600))
	// Wait until ready: c1 was attempted (it reported its health).
	testwait.For(t, 30*time.Second, "serve ready", func() error {
		code, _, body := (request{method: "GET", url: s.probes + "/readyz"}).do(t, nil)
		return testwait.Check(code == 200, "%d %s", code, body)
	})
	pause := s.api + "/api/v1/clusters/c1/pause"
	resume := s.api + "/api/v1/clusters/c1/resume"
	for _, tt := range []struct {
		name    string
		req     request
		want    int
		wantErr string
	}{
		{"no token", request{method: "GET", url: s.api + "/api/v1/snapshot"}, 401, "authentication required"},
		{"no token write", request{method: "POST", url: pause}, 401, ""},
		{"wrong token", request{method: "GET", url: s.api + "/api/v1/snapshot", token: strings.Repeat("x", 40)}, 401, "invalid bearer token"},
		{"viewer reads", request{method: "GET", url: s.api + "/api/v1/holds", token: e2eViewer}, 200, ""},
		{"viewer pause", request{method: "POST", url: pause, token: e2eViewer}, 403, "operator role is required"},
		{"viewer reload", request{method: "POST", url: s.api + "/api/v1/reload", token: e2eViewer}, 403, ""},
		{"operator pause", request{method: "POST", url: pause, token: e2eOperator}, 202, ""},
		{"operator resume", request{method: "POST", url: resume, token: e2eOperator}, 202, ""},
		{"cross-site", request{method: "POST", url: pause, token: e2eOperator,
			header: map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}}, 403, "cross-origin"},
		{"text/plain", request{method: "POST", url: s.api + "/api/v1/applications/web/policy", token: e2eOperator,
			contentType: "text/plain", body: `{"policy":"warn"}`}, 415, "want application/json"},
		{"oversized body", request{method: "POST", url: s.api + "/api/v1/holds", token: e2eOperator, contentType: "application/json",
			body: `{"scope":"cluster","name":"c1","ttl":"1m","reason":"` + strings.Repeat("x", 100<<10) + `"}`}, 413, ""},
		{"pause nope", request{method: "POST", url: s.api + "/api/v1/clusters/nope/pause", token: e2eOperator}, 404, "unknown cluster"},
		{"policy of nope", request{method: "POST", url: s.api + "/api/v1/applications/nope/policy", token: e2eOperator,
			contentType: "application/json", body: `{"policy":"warn"}`}, 404, "unknown application"},
		{"hold on nope", request{method: "POST", url: s.api + "/api/v1/holds", token: e2eOperator, contentType: "application/json",
			body: `{"scope":"cluster","name":"nope","ttl":"1m","reason":"x"}`}, 404, "unknown cluster"},
		{"repair of nope", request{method: "POST", url: s.api + "/api/v1/nodes/c1:sec%2Fnope:deployment/repair", token: e2eOperator}, 404, "unknown node"},
		// Probes live on their own listener only.
		{"healthz on the API", request{method: "GET", url: s.api + "/healthz", token: e2eViewer}, 404, ""},
		{"metrics on the API", request{method: "GET", url: s.api + "/metrics", token: e2eViewer}, 404, ""},
		{"metrics on the API without token", request{method: "GET", url: s.api + "/metrics"}, 401, ""},
		{"healthz", request{method: "GET", url: s.probes + "/healthz"}, 200, ""},
		{"readyz", request{method: "GET", url: s.probes + "/readyz"}, 200, ""},
		{"metrics", request{method: "GET", url: s.probes + "/metrics"}, 200, ""},
		{"API on the probes", request{method: "GET", url: s.probes + "/api/v1/snapshot", token: e2eViewer}, 404, ""},
		{"write on the probes", request{method: "POST", url: s.probes + "/api/v1/clusters/c1/pause", token: e2eOperator}, 404, ""},
	} {
		code, header, body := tt.req.do(t, nil)
		if code != tt.want || !strings.Contains(body, tt.wantErr) {
			t.Errorf("%s: %s %s = %d %.200s, want %d with %q", tt.name, tt.req.method, tt.req.url, code, body, tt.want, tt.wantErr)
		}
		if code == 401 && !strings.HasPrefix(header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: 401 without WWW-Authenticate: Bearer", tt.name)
		}
	}
	// Nothing was made for nope: not in the snapshot, not in the metrics.
	_, _, snap := (request{method: "GET", url: s.api + "/api/v1/snapshot", token: e2eOperator}).do(t, nil)
	_, _, metrics := (request{method: "GET", url: s.probes + "/metrics"}).do(t, nil)
	if strings.Contains(snap, "nope") || strings.Contains(metrics, "nope") {
		t.Fatalf("a phantom nope:\nsnapshot %.500s", snap)
	}
	// Every write is logged with the caller; no token is.
	for _, want := range []string{
		`"path":"/api/v1/clusters/c1/pause","status":202,"role":"operator","caller":"alice"`,
		`"path":"/api/v1/clusters/c1/pause","status":403,"role":"viewer","caller":"victor"`,
		`"path":"/api/v1/clusters/nope/pause","status":404,"role":"operator","caller":"alice"`,
		`"path":"/api/v1/clusters/c1/pause","status":403,"role":"operator","caller":"alice"`, // cross-site
	} {
		s.waitLog(t, want)
	}
	if logs := s.errOut.String(); strings.Contains(logs, e2eOperator) || strings.Contains(logs, e2eViewer) {
		t.Fatal("a token is in the log")
	}
}

// servedSerial is the serial number of the certificate a new TLS
// connection to base is served.
func servedSerial(t *testing.T, base string, roots *x509.CertPool) int64 {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: roots})
	if err != nil {
		t.Fatalf("TLS to %s: %v", u.Host, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// testTLS: serve over TLS with a generated certificate; clients with the
// CA file connect; a rotated certificate is picked up, a broken one is
// logged and the current one kept.
func testTLS(t *testing.T, path string) {
	ca := e2etest.NewCA(t)
	dir := t.TempDir()
	certFile, keyFile, caFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.pem")
	certPEM, keyPEM := ca.Issue(t, 100)
	e2etest.WriteAtomic(t, certFile, certPEM)
	e2etest.WriteAtomic(t, keyFile, keyPEM)
	e2etest.WriteAtomic(t, caFile, ca.PEM)
	tokens := writeTokenFile(t, 0o600)
	getenv, home := stateEnv(t)
	s := startServe(t, path, home, "--token-file", tokens, "--tls-cert-file", certFile, "--tls-key-file", keyFile)
	if !strings.HasPrefix(s.api, "https://") || !strings.HasPrefix(s.probes, "http://") {
		t.Fatalf("api %s, probes %s", s.api, s.probes)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)

	// The client with the CA file and a token works; without the CA file
	// the system roots refuse the certificate.
	c, err := api.NewClientWithOptions(s.api, api.ClientOptions{Token: e2eViewer, CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	if _, err := c.Holds(t.Context()); err != nil {
		t.Fatalf("Holds over TLS: %v", err)
	}
	var out, errOut strings.Builder
	if err := run(t.Context(), []string{"reload", "--server", s.api, "--ca-file", caFile, "--token-file", tokens}, getenv, &out, &errOut); err != nil {
		t.Fatalf("reload over TLS: %v\n%s", err, &errOut)
	}
	errOut.Reset()
	err = run(t.Context(), []string{"reload", "--server", s.api, "--token-file", tokens}, getenv, &out, &errOut)
	if code := exitCode(err, &errOut); code != 1 || !strings.Contains(errOut.String(), "certificate") {
		t.Fatalf("reload without the CA: exit %d\n%s", code, &errOut)
	}
	// Plain HTTP to the TLS port is not served.
	if code, _, _ := (request{method: "GET", url: "http" + strings.TrimPrefix(s.api, "https") + "/api/v1/holds", token: e2eViewer}).do(t, nil); code != http.StatusBadRequest {
		t.Fatalf("plain HTTP on the TLS port = %d", code)
	}

	if got := servedSerial(t, s.api, roots); got != 100 {
		t.Fatalf("serial %d, want 100", got)
	}
	waitSerial := func(want int64) {
		t.Helper()
		testwait.For(t, 15*time.Second, fmt.Sprintf("the certificate with serial %d served", want), func() error {
			got := servedSerial(t, s.api, roots)
			return testwait.Check(got == want, "serial %d served; logs:\n%s", got, s.errOut)
		})
	}
	// Rotation: key first, then the certificate (a handshake in between
	// sees a mismatched pair and keeps the old one).
	certPEM, keyPEM = ca.Issue(t, 200)
	e2etest.WriteAtomic(t, keyFile, keyPEM)
	e2etest.WriteAtomic(t, certFile, certPEM)
	waitSerial(200)
	s.waitLog(t, "TLS certificate reloaded")
	// A broken certificate is logged, the current pair kept.
	e2etest.WriteAtomic(t, certFile, []byte("-----BEGIN CERTIFICATE-----\nbroken\n-----END CERTIFICATE-----\n"))
	testwait.For(t, 15*time.Second, "the broken certificate reported", func() error {
		if got := servedSerial(t, s.api, roots); got != 200 {
			return testwait.Stop(fmt.Errorf("serial %d after a broken rotation, want 200", got))
		}
		out := s.errOut.String()
		return testwait.Check(strings.Contains(out, "TLS certificate reload failed; keeping the current pair"), "serve's log:\n%s", out)
	})
	if got := servedSerial(t, s.api, roots); got != 200 {
		t.Fatalf("serial %d after a broken rotation, want 200", got)
	}
	// And the next good pair is picked up again.
	certPEM, keyPEM = ca.Issue(t, 300)
	e2etest.WriteAtomic(t, keyFile, keyPEM)
	e2etest.WriteAtomic(t, certFile, certPEM)
	waitSerial(300)
}

// testRefusedStarts: serve refuses to start, before it touches a cluster,
// with a token file others can read and with a non-loopback API address
// without TLS.
func testRefusedStarts(t *testing.T, path string) {
	getenv, home := stateEnv(t)
	for _, tt := range []struct {
		name    string
		args    []string
		code    int
		wantErr string
		oneLine bool
	}{
		{name: "world-readable token file", args: []string{"--token-file", writeTokenFile(t, 0o644)}, code: 1, wantErr: "lets group or others access the tokens: run chmod 600"},
		{name: "group-readable token file", args: []string{"--token-file", writeTokenFile(t, 0o640)}, code: 1, wantErr: "mode 0640"},
		{name: "missing token file", args: []string{"--token-file", filepath.Join(home, "none")}, code: 1, wantErr: "no such file"},
		{name: "all interfaces without TLS", args: []string{"--listen", "0.0.0.0:0"}, code: 2, oneLine: true,
			wantErr: "--listen 0.0.0.0:0 is not a loopback address and would send tokens in clear text"},
		{name: "public IP without TLS", args: []string{"--listen", "192.0.2.10:7070"}, code: 2, oneLine: true, wantErr: "not a loopback address"},
		{name: "cert without key", args: []string{"--tls-cert-file", "x.crt"}, code: 2, wantErr: "go together"},
		{name: "missing certificate", args: []string{"--tls-cert-file", filepath.Join(home, "x.crt"), "--tls-key-file", filepath.Join(home, "x.key")}, code: 1, wantErr: "TLS"},
	} {
		args := append([]string{"serve", "-f", path, "--probe-listen", "127.0.0.1:0"}, tt.args...)
		if !slices.Contains(tt.args, "--listen") {
			args = append(args, "--listen", "127.0.0.1:0")
		}
		var out, errOut strings.Builder
		err := run(t.Context(), args, getenv, &out, &errOut)
		code := exitCode(err, &errOut)
		msg := strings.TrimSpace(errOut.String())
		if code != tt.code || !strings.Contains(msg, tt.wantErr) || out.Len() != 0 || (tt.oneLine && strings.Contains(msg, "\n")) {
			t.Errorf("%s: exit %d, stdout %q, stderr:\n%s\nwant exit %d with %q", tt.name, code, &out, msg, tt.code, tt.wantErr)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "driftwatch", "tokens")); err == nil {
		t.Error("a refused start made the default token file")
	}
}

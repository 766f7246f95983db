//go:build linux

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/driftwatch/driftwatch/internal/api"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// shutdownBound is how long `driftwatch serve` and the TUI may take to exit
// after SIGTERM, q or a terminal hangup, whatever their clusters do (the
// issue's bar). Measured here (two cores, other work running): serve 6-71ms,
// the TUI 6-227ms; a read still in flight on a cluster that does not answer
// adds at most the hub's ShutdownGrace (500ms). The rest of the bound is
// slack for a loaded machine.
const shutdownBound = 2 * time.Second

// envShutdownBinary names a driftwatch binary TestShutdownWithUnreachableClusters
// runs instead of building one (to measure another build).
const envShutdownBinary = "DRIFTWATCH_SHUTDOWN_BINARY"

// TestShutdownWithUnreachableClusters builds driftwatch and runs it with
// two live clusters, one whose credentials are refused and three that
// cannot be reached: a closed loopback port (connection refused), a
// listener that drops connection attempts (a dial hangs, as to a
// blackholed address) and one that accepts connections and never answers
// (the TLS handshake hangs). `driftwatch serve` shows the refused
// credentials as unauthorized (cluster_up 0, in the API too), and exits
// within two seconds of SIGTERM, at once and after its retries have backed
// off; the TUI exits within two seconds of q, SIGTERM and a hangup.
func TestShutdownWithUnreachableClusters(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 2})
	bin := driftwatchBinary(t)
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("hub:\n  id: shutdown\n  workers: 4\nclusters:\n")
	cluster := func(id, kubeconfig string) {
		fmt.Fprintf(&b, "  - id: %s\n    kubeconfig: %s\n    labels: {env: prod}\n", id, kubeconfig)
	}
	for _, lc := range set.Clusters {
		cluster(lc.Name, lc.Kubeconfig)
	}
	cluster("stale", wrongTokenKubeconfig(t, set.Clusters[0], filepath.Join(dir, "stale.kubeconfig")))
	for _, d := range deadServers(t) {
		cluster(d.name, serverKubeconfig(t, filepath.Join(dir, d.name+".kubeconfig"), d.addr))
	}
	b.WriteString(`applications:
  - id: web
    namespace: shutdown
    selector: env=prod
    image: registry.example/web:1
    replicas: 1
    port: 8080
    config: {LOG_LEVEL: info}
`)
	cfgPath := filepath.Join(dir, "driftwatch.yaml")
	if err := os.WriteFile(cfgPath, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	token, err := api.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(token+" viewer test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	live := []string{set.Clusters[0].Name, set.Clusters[1].Name}

	t.Run("serve", func(t *testing.T) {
		// At once (dials and first probes in flight), and once the
		// reflectors' retries have backed off for a while.
		for i, settle := range []time.Duration{0, 20 * time.Second} {
			p := startServeBinary(t, bin, cfgPath, tokens, filepath.Join(dir, fmt.Sprintf("serve%d", i)))
			p.waitMetrics(t, 60*time.Second, append(clustersUp(live...),
				`driftwatch_cluster_up{cluster="stale"} 0`,
				`driftwatch_cluster_state{cluster="stale",state="unauthorized"} 1`,
				`driftwatch_cluster_state{cluster="refused",state="unreachable"} 1`)...)
			if i == 0 {
				p.checkUnauthorizedInAPI(t, token, "stale")
			}
			time.Sleep(settle)
			took := p.terminate(t)
			t.Logf("serve exited %v after SIGTERM (%v after its clusters settled)", took.Round(time.Millisecond), settle)
			if took > shutdownBound {
				t.Errorf("serve exited %v after SIGTERM, want at most %v\nstderr:\n%s", took, shutdownBound, tail(p.stderr))
			}
			if !strings.Contains(p.stderrText(), `"msg":"stopped"`) {
				t.Errorf("serve did not log its stop:\n%s", tail(p.stderr))
			}
		}
	})

	t.Run("tui", func(t *testing.T) {
		for _, tc := range []struct {
			end    string
			settle time.Duration
		}{{"q", 0}, {"SIGTERM", 10 * time.Second}, {"hangup", 5 * time.Second}} {
			end := tc.end
			t.Run(end, func(t *testing.T) {
				took := runTUIUntil(t, bin, cfgPath, filepath.Join(dir, "tui-"+end), end, tc.settle)
				t.Logf("the TUI exited %v after %s (%v after its clusters settled)", took.Round(time.Millisecond), end, tc.settle)
				if took > shutdownBound {
					t.Errorf("the TUI exited %v after %s, want at most %v", took, end, shutdownBound)
				}
			})
		}
	})
}

// driftwatchBinary builds driftwatch (or returns $DRIFTWATCH_SHUTDOWN_BINARY).
func driftwatchBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(envShutdownBinary); p != "" {
		return p
	}
	bin := filepath.Join(t.TempDir(), "driftwatch")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// deadServer is an address where no apiserver answers.
type deadServer struct{ name, addr string }

// deadServers returns three addresses on loopback that never answer: a
// closed port (the dial is refused), a listener whose accept queue is full
// (the kernel drops the SYNs: the dial hangs until its timeout, as to a
// blackholed address) and a listener that accepts and never answers (the
// TLS handshake hangs). They stay so until the test ends.
func deadServers(t *testing.T) []deadServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	_ = ln.Close()
	return []deadServer{{"refused", closed}, {"dropped", synDropListener(t)}, {"silent", silentListener(t)}}
}

// synDropListener listens on loopback with a backlog of 0 and fills its
// accept queue without ever accepting: further connection attempts get no
// answer.
func synDropListener(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	for range 8 {
		c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
		if err != nil {
			return addr // the queue is full: this attempt got no answer
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	t.Fatalf("%s still accepts connections: cannot make a listener that drops them", addr)
	return ""
}

// silentListener accepts connections and never reads or writes them.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// serverKubeconfig writes a kubeconfig for an apiserver at addr.
func serverKubeconfig(t *testing.T, path, addr string) string {
	t.Helper()
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://%s", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: some-token}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, addr)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// wrongTokenKubeconfig writes lc's kubeconfig with a token its apiserver
// does not know (an expired or revoked one: it answers 401).
func wrongTokenKubeconfig(t *testing.T, lc *localcluster.Cluster, path string) string {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(lc.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range kc.AuthInfos {
		u.Token = "expired-" + u.Token
	}
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func clustersUp(ids ...string) []string {
	var out []string
	for _, id := range ids {
		out = append(out, fmt.Sprintf(`driftwatch_cluster_up{cluster=%q} 1`, id))
	}
	return out
}

// serveProc is a running `driftwatch serve`.
type serveProc struct {
	cmd            *exec.Cmd
	stdout, stderr string // file paths
	done           chan struct{}
	err            error // Wait's, once done is closed
}

// startServeBinary starts `driftwatch serve` with its output in files under dir;
// it is killed and waited for when the test ends.
func startServeBinary(t *testing.T, bin, cfgPath, tokens, dir string) *serveProc {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{stdout: filepath.Join(dir, "stdout"), stderr: filepath.Join(dir, "stderr"), done: make(chan struct{})}
	out, err := os.Create(p.stdout)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	errOut, err := os.Create(p.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer errOut.Close()
	p.cmd = exec.Command(bin, "serve", "-f", cfgPath, "--listen", "127.0.0.1:0", "--probe-listen", "127.0.0.1:0", "--token-file", tokens)
	p.cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+dir)
	p.cmd.Stdout, p.cmd.Stderr = out, errOut
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("serve (%v): stdout:\n%s\nstderr:\n%s", p.err, tail(p.stdout), tail(p.stderr))
		}
	})
	return p
}

func (p *serveProc) stderrText() string {
	b, _ := os.ReadFile(p.stderr)
	return string(b)
}

// address returns the URL serve printed after prefix ("listening on ",
// "probes and metrics on "), waiting for it.
func (p *serveProc) address(t *testing.T, prefix string) string {
	t.Helper()
	var addr string
	testwait.For(t, time.Minute, fmt.Sprintf("serve to print %q", prefix), func() error {
		f, err := os.Open(p.stdout)
		if err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if s, ok := strings.CutPrefix(sc.Text(), prefix); ok {
					_ = f.Close()
					addr = s
					return nil
				}
			}
			_ = f.Close()
		}
		select {
		case <-p.done:
			return testwait.Stop(fmt.Errorf("serve exited (%v)", p.err))
		default:
			return errors.New("not printed")
		}
	})
	return addr
}

// waitMetrics waits until /metrics has every line of want.
func (p *serveProc) waitMetrics(t *testing.T, timeout time.Duration, want ...string) {
	t.Helper()
	url := p.address(t, "probes and metrics on ") + "/metrics"
	testwait.For(t, timeout, "/metrics to have every line", func() error {
		resp, err := http.Get(url)
		var body []byte
		if err == nil {
			body, err = io.ReadAll(resp.Body)
			_ = resp.Body.Close()
		}
		lines := "\n" + string(body)
		var missing []string
		for _, w := range want {
			if err != nil || !strings.Contains(lines, "\n"+w+"\n") {
				missing = append(missing, w)
			}
		}
		return testwait.Check(len(missing) == 0, "missing %q (err %v)", missing, err)
	})
}

// checkUnauthorizedInAPI checks the API's snapshot shows cluster as
// unauthorized.
func (p *serveProc) checkUnauthorizedInAPI(t *testing.T, token, cluster string) {
	t.Helper()
	c, err := api.NewClientWithOptions(p.address(t, "listening on "), api.ClientOptions{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := c.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cs, ok := snap.Cluster(cluster)
	if !ok || cs.State != "unauthorized" || !strings.Contains(cs.LastError, "unauthorized") {
		t.Errorf("the API shows cluster %s as %+v, want unauthorized with its error", cluster, cs)
	}
}

// terminate sends SIGTERM and returns how long serve took to exit (status
// 0).
func (p *serveProc) terminate(t *testing.T) time.Duration {
	t.Helper()
	t0 := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("serve still runs 30s after SIGTERM\nstderr:\n%s", tail(p.stderr))
	}
	took := time.Since(t0)
	if p.err != nil {
		t.Errorf("serve exited with %v after SIGTERM, want status 0", p.err)
	}
	return took
}

// runTUIUntil runs the TUI mode (`driftwatch -f FILE`) on a
// pseudo-terminal that is its controlling terminal, waits until its
// clusters have their states (the refused one unreachable, the stale one
// unauthorized) and settle more, ends it (q, SIGTERM or a hangup: the
// terminal closes) and returns how long it took to exit (status 0).
func runTUIUntil(t *testing.T, bin, cfgPath, dir, end string, settle time.Duration) time.Duration {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "tui.log")
	cmd := exec.Command(bin, "-f", cfgPath, "--log-file", logPath)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+dir, "TERM=xterm-256color")
	ptmx, tty := openPTY(t)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = tty.Close()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(io.Discard, ptmx)
	}()
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = ptmx.Close()
		}
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		<-drained
		if t.Failed() {
			t.Logf("TUI log:\n%s", tail(logPath))
		}
	})
	waitLog(t, logPath, `"cluster":"refused","state":"unreachable"`, time.Minute)
	waitLog(t, logPath, `"cluster":"stale","state":"unauthorized"`, time.Minute)
	time.Sleep(settle)
	t0 := time.Now()
	switch end {
	case "q":
		if _, err := ptmx.Write([]byte("q")); err != nil {
			t.Fatal(err)
		}
	case "SIGTERM":
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	case "hangup":
		closed = true
		if err := ptmx.Close(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the TUI still runs 30s after %s", end)
	}
	took := time.Since(t0)
	if waitErr != nil {
		t.Errorf("the TUI exited with %v after %s, want status 0", waitErr, end)
	}
	return took
}

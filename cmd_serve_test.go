package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/sourcegraph/conc"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/api"
	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// syncBuffer is a goroutine-safe writer.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	return httpGetAuth(t, url, "")
}

// httpGetAuth is httpGet with a bearer token ("" sends none).
func httpGetAuth(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metricValue sums the samples of a metric whose line starts with prefix.
func metricValue(body, prefix string) float64 {
	var sum float64
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, prefix) {
			var v float64
			if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
				sum += v
			}
		}
	}
	return sum
}

// serveAddrs parses serve's first two stdout lines: the API's and the
// probes' base URLs ("" until printed).
func serveAddrs(out string) (api, probes string) {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "listening on "); ok {
			api = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "probes and metrics on "); ok {
			probes = strings.TrimSpace(v)
		}
	}
	return api, probes
}

// TestServe runs `driftwatch serve` against a real cluster: /healthz,
// /readyz and /metrics answer on the probe listener, the counters move
// after a repair, and a cancelled context (SIGTERM) ends it with exit 0 and
// no goroutine left.
func TestServe(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	path := e2eConfig(t, set, "srv", "", "api", "worker")
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	// The hub's state file goes to the default path under XDG_STATE_HOME.
	stateHome := t.TempDir()
	getenv := func(k string) string {
		if k == "XDG_STATE_HOME" {
			return stateHome
		}
		return ""
	}
	var wg conc.WaitGroup
	var runErr error
	wg.Go(func() {
		runErr = run(ctx, []string{"serve", "-f", path, "--listen", "127.0.0.1:0", "--probe-listen", "127.0.0.1:0"}, getenv, out, errOut)
	})
	defer func() {
		if t.Failed() { // stopped here when a wait below failed
			cancel()
			wg.Wait()
			t.Logf("serve returned %v", runErr)
		}
	}()
	var base, probes string
	testwait.For(t, 20*time.Second, "serve to start", func() error {
		base, probes = serveAddrs(out.String())
		return testwait.Check(probes != "", "no addresses printed; log:\n%s", errOut.String())
	})
	// The first start made an operator token in the default token file.
	token, err := api.ReadToken(filepath.Join(stateHome, "driftwatch", "tokens"))
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := httpGet(t, probes+"/healthz"); code != 200 {
		t.Fatalf("/healthz = %d", code)
	}
	waitHTTP := func(what string, cond func() bool) {
		t.Helper()
		testwait.For(t, 30*time.Second, what, func() error {
			return testwait.Check(cond(), "logs:\n%s", errOut.String())
		})
	}
	waitHTTP("/readyz", func() bool { code, _ := httpGet(t, probes+"/readyz"); return code == 200 })
	waitHTTP("objects created", func() bool {
		_, body := httpGet(t, probes+"/metrics")
		return metricValue(body, `driftwatch_managed_objects{cluster="c1",status="in-sync"}`) == 3
	})
	_, body := httpGet(t, probes+"/metrics")
	repairsBefore := metricValue(body, `driftwatch_repairs_total{cluster="c1",outcome="success"}`)
	c := kubernetes.NewForConfigOrDie(set.Clusters[0].RESTConfig())
	if err := c.AppsV1().Deployments("srv").Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "repair counted", func() error {
		_, body := httpGet(t, probes+"/metrics")
		repairs := metricValue(body, `driftwatch_repairs_total{cluster="c1",outcome="success"}`)
		missing := metricValue(body, `driftwatch_drift_detected_total{class="missing",cluster="c1",kind="deployment"}`)
		latencies := metricValue(body, `driftwatch_event_to_repaired_seconds_count`)
		events := metricValue(body, `driftwatch_watch_events_total{cluster="c1"`)
		echoes := metricValue(body, `driftwatch_self_echo_events_total{cluster="c1"}`)
		return testwait.Check(repairs > repairsBefore && missing >= 1 && latencies >= 1 && events >= 1 && echoes >= 1,
			"repairs %v (%v before), missing deployments %v, repair latencies %v, watch events %v, self echoes %v; logs:\n%s",
			repairs, repairsBefore, missing, latencies, events, echoes, errOut.String())
	})
	// SIGHUP reloads the config: an invalid file is rejected and counted,
	// the hub keeps its desired state.
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("hub: {workers: many}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitHTTP("rejected reload counted", func() bool {
		_, body := httpGet(t, probes+"/metrics")
		return metricValue(body, `driftwatch_config_reloads_total{outcome="rejected"}`) == 1 &&
			metricValue(body, `driftwatch_managed_objects{cluster="c1",status="in-sync"}`)+
				metricValue(body, `driftwatch_managed_objects{cluster="c1",status="repaired"}`) == 3
	})
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitHTTP("applied reload counted", func() bool {
		_, body := httpGet(t, probes+"/metrics")
		return metricValue(body, `driftwatch_config_reloads_total{outcome="applied"}`) == 1
	})
	if !strings.Contains(errOut.String(), "config reload rejected") || !strings.Contains(errOut.String(), "workers") {
		t.Fatalf("the rejected reload's errors were not logged:\n%s", errOut.String())
	}
	client, err := api.NewClientWithOptions(base, api.ClientOptions{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer client.CloseIdleConnections()
	snap, err := client.Snapshot(t.Context())
	if _, ok := snap.Node(hub.NewNodeID("c1", "srv", "web", hub.KindDeployment)); err != nil || !ok {
		t.Fatalf("snapshot = %v, %v", snap, err)
	}

	// A reload that would prune every object of c1 is refused, over the
	// API (`driftwatch reload`) and on SIGHUP alike, and changes nothing;
	// --allow-prune confirms it.
	head, _, _ := strings.Cut(string(good), "applications:\n")
	noApps := []byte(head + "applications: []\n")
	if err := os.WriteFile(path, noApps, 0o600); err != nil {
		t.Fatal(err)
	}
	var rOut, rErr strings.Builder
	err = run(t.Context(), []string{"reload", "--server", base}, getenv, &rOut, &rErr)
	if code := exitCode(err, &rErr); code != 1 || !strings.Contains(rErr.String(), "reload refused") ||
		!strings.Contains(rErr.String(), `cluster "c1": 3 of 3 managed objects (all of them)`) || !strings.Contains(rErr.String(), "--allow-prune") {
		t.Fatalf("refused reload: exit %d\nstdout: %s\nstderr: %s", code, &rOut, &rErr)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitHTTP("refused reloads counted", func() bool {
		_, body := httpGet(t, probes+"/metrics")
		return metricValue(body, `driftwatch_config_reloads_total{outcome="rejected"}`) == 3
	})
	if _, err := c.AppsV1().Deployments("srv").Get(t.Context(), "web", metav1.GetOptions{}); err != nil {
		t.Fatalf("a refused reload deleted the deployment: %v", err)
	}
	if snap, err := client.Snapshot(t.Context()); err != nil || slices.ContainsFunc(snap.Nodes, func(n hub.NodeStatus) bool { return n.Status == hub.StatusDecommissioning }) {
		t.Fatalf("after refused reloads the snapshot shows decommissions: %v", err)
	}
	rOut.Reset()
	rErr.Reset()
	if err := run(t.Context(), []string{"reload", "--allow-prune", "--server", base}, getenv, &rOut, &rErr); err != nil {
		t.Fatalf("reload --allow-prune: %v\n%s", err, &rErr)
	}
	if !strings.Contains(rOut.String(), "config reloaded") {
		t.Fatalf("reload --allow-prune printed %q", &rOut)
	}
	waitHTTP("web pruned after the confirmed reload", func() bool {
		_, err := c.AppsV1().Deployments("srv").Get(t.Context(), "web", metav1.GetOptions{})
		snap, snapErr := client.Snapshot(t.Context())
		return apierrors.IsNotFound(err) && snapErr == nil && len(snap.Nodes) == 0 // every decommission done
	})
	if entries, err := os.ReadDir(filepath.Join(stateHome, "driftwatch")); err != nil || len(entries) == 0 {
		t.Fatalf("no state file under XDG_STATE_HOME: %v %v", entries, err)
	}
	// Back to the good config: web is applied again (and recorded).
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(t.Context(), []string{"reload", "--server", base}, getenv, &rOut, &rErr); err != nil {
		t.Fatalf("reload: %v\n%s", err, &rErr)
	}
	waitHTTP("web applied again", func() bool {
		_, body := httpGet(t, probes+"/metrics")
		return metricValue(body, `driftwatch_managed_objects{cluster="c1",status="in-sync"}`)+
			metricValue(body, `driftwatch_managed_objects{cluster="c1",status="repaired"}`) == 3
	})

	// Structured logs: every stderr line is JSON.
	for _, line := range strings.Split(strings.TrimSpace(errOut.String()), "\n") {
		if line != "" && !strings.HasPrefix(line, "{") {
			t.Fatalf("non-JSON log line: %q", line)
		}
	}
	cancel() // what SIGTERM does through signal.NotifyContext
	wg.Wait()
	if runErr != nil {
		t.Fatalf("serve returned %v", runErr)
	}
	http.DefaultClient.CloseIdleConnections()
	testwait.For(t, 10*time.Second, "serve's goroutines to end", func() error {
		if n := runtime.NumGoroutine(); n > before+2 {
			buf := make([]byte, 1<<20)
			return fmt.Errorf("%d goroutines after serve returned, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
		return nil
	})

	// The state file remembers what the hub applied: a restart with a
	// config that no longer selects web would prune all of c1, so it is
	// refused (exit 1, saying how to confirm) and deletes nothing.
	if err := os.WriteFile(path, noApps, 0o600); err != nil {
		t.Fatal(err)
	}
	var sOut, sErr strings.Builder
	err = run(t.Context(), []string{"serve", "-f", path, "--listen", "127.0.0.1:0", "--probe-listen", "127.0.0.1:0"}, getenv, &sOut, &sErr)
	if code := exitCode(err, &sErr); code != 1 || !strings.Contains(sErr.String(), "refusing to prune 3 objects") ||
		!strings.Contains(sErr.String(), "run the command again with --allow-prune") || strings.Contains(sOut.String(), "listening") {
		t.Fatalf("refused start: exit %d\nstdout: %s\nstderr: %s", code, &sOut, &sErr)
	}
	if _, err := c.AppsV1().Deployments("srv").Get(t.Context(), "web", metav1.GetOptions{}); err != nil {
		t.Fatalf("a refused start deleted the deployment: %v", err)
	}
}

// TestParseServeListen: the API may listen beyond loopback only with TLS
// or --insecure-listen; --listen and --probe-listen may not name the same
// address (said so, not a bare "address already in use"); the TLS flags
// go together.
func TestParseServeListen(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{}, ""},
		{[]string{"--listen", "127.0.0.1:0"}, ""},
		{[]string{"--listen", "127.9.9.9:7070"}, ""},
		{[]string{"--listen", "[::1]:7070"}, ""},
		{[]string{"--listen", "localhost:7070"}, ""},
		{[]string{"--listen", ":7070"}, "--listen :7070 is not a loopback address"},
		{[]string{"--listen", "0.0.0.0:7070"}, "not a loopback address"},
		{[]string{"--listen", "[::]:7070"}, "not a loopback address"},
		{[]string{"--listen", "10.1.2.3:7070"}, "not a loopback address"},
		{[]string{"--listen", "hub.example:7070"}, "not a loopback address"},
		{[]string{"--listen", "0.0.0.0:7070", "--insecure-listen"}, ""},
		{[]string{"--listen", "0.0.0.0:7070", "--tls-cert-file", "c", "--tls-key-file", "k"}, ""},
		{[]string{"--tls-cert-file", "c"}, "--tls-cert-file and --tls-key-file go together"},
		{[]string{"--tls-key-file", "k"}, "go together"},
		{[]string{"--listen", "7070"}, "missing port"},
		{[]string{"--probe-listen", "127.0.0.1:7070"}, "--listen 127.0.0.1:7070 and --probe-listen 127.0.0.1:7070 name the same address: " +
			"the API and the probes each need their own port (the probes' default is 127.0.0.1:7071)"},
		{[]string{"--listen", "localhost:9000", "--probe-listen", "127.0.0.1:9000"}, "name the same address"},
		{[]string{"--listen", "0.0.0.0:9000", "--insecure-listen", "--probe-listen", "127.0.0.1:9000"}, "name the same address"},
		{[]string{"--listen", "127.0.0.1:9000", "--probe-listen", ":9000"}, "name the same address"},
		{[]string{"--listen", "[::1]:9000", "--probe-listen", "[0:0::1]:9000"}, "name the same address"},
		{[]string{"--listen", "127.0.0.1:0", "--probe-listen", "127.0.0.1:0"}, ""},
		{[]string{"--listen", "127.0.0.1:9000", "--probe-listen", "127.0.0.2:9000"}, ""},
		{[]string{"--listen", "127.0.0.1:9000", "--probe-listen", "127.0.0.1:9001"}, ""},
	} {
		var o serveOptions
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		o.addFlags(fs)
		if err := fs.Parse(append([]string{"-f", "x.yaml"}, tt.args...)); err != nil {
			t.Fatal(err)
		}
		err := o.validate()
		var ee *app.ExitError
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tt.args, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.As(err, &ee) || ee.Code != 2):
			t.Errorf("%v: %v, want exit 2 with %q", tt.args, err, tt.wantErr)
		}
	}
}

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sourcegraph/conc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/clusters/localcluster"
	"github.com/driftwatch/driftwatch/clusters/localcluster/lctest"
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
	resp, err := http.Get(url)
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

// TestServe runs `driftwatch serve` against a real cluster: /healthz,
// /readyz and /metrics answer, the counters move after a repair, and a
// cancelled context (SIGTERM) ends it with exit 0 and no goroutine left.
func TestServe(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	path := e2eConfig(t, set, "srv", "", "api", "worker")
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	var wg conc.WaitGroup
	var runErr error
	wg.Go(func() {
		runErr = run(ctx, []string{"serve", "-f", path, "--listen", "127.0.0.1:0"}, func(string) string { return "" }, out, errOut)
	})
	var base string
	deadline := time.Now().Add(20 * time.Second)
	for base == "" && time.Now().Before(deadline) {
		if s := out.String(); strings.HasPrefix(s, "listening on ") {
			base = strings.TrimSpace(strings.TrimPrefix(strings.SplitN(s, "\n", 2)[0], "listening on "))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if base == "" {
		cancel()
		wg.Wait()
		t.Fatalf("serve did not start: %v\n%s", runErr, errOut.String())
	}
	if code, _ := httpGet(t, base+"/healthz"); code != 200 {
		t.Fatalf("/healthz = %d", code)
	}
	waitHTTP := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; logs:\n%s", what, errOut.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitHTTP("/readyz", func() bool { code, _ := httpGet(t, base+"/readyz"); return code == 200 })
	waitHTTP("objects created", func() bool {
		_, body := httpGet(t, base+"/metrics")
		return metricValue(body, `driftwatch_managed_objects{cluster="c1",status="in-sync"}`) == 3
	})
	_, body := httpGet(t, base+"/metrics")
	repairsBefore := metricValue(body, `driftwatch_repairs_total{cluster="c1",outcome="success"}`)
	c := kubernetes.NewForConfigOrDie(set.Clusters[0].RESTConfig())
	if err := c.AppsV1().Deployments("srv").Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitHTTP("repair counted", func() bool {
		_, body := httpGet(t, base+"/metrics")
		return metricValue(body, `driftwatch_repairs_total{cluster="c1",outcome="success"}`) > repairsBefore &&
			metricValue(body, `driftwatch_drift_detected_total{class="missing",cluster="c1",kind="deployment"}`) >= 1 &&
			metricValue(body, `driftwatch_event_to_repaired_seconds_count`) >= 1 &&
			metricValue(body, `driftwatch_watch_events_total{cluster="c1"`) >= 1 &&
			metricValue(body, `driftwatch_self_echo_events_total{cluster="c1"}`) >= 1
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
		_, body := httpGet(t, base+"/metrics")
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
		_, body := httpGet(t, base+"/metrics")
		return metricValue(body, `driftwatch_config_reloads_total{outcome="applied"}`) == 1
	})
	if !strings.Contains(errOut.String(), "config reload rejected") || !strings.Contains(errOut.String(), "workers") {
		t.Fatalf("the rejected reload's errors were not logged:\n%s", errOut.String())
	}
	code, snap := httpGet(t, base+"/api/v1/snapshot")
	if code != 200 || !strings.Contains(snap, `"c1:srv/web:deployment"`) {
		t.Fatalf("snapshot = %d %.200s", code, snap)
	}
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
	deadline = time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+2 {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after serve returned, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

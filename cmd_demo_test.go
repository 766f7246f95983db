package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// TestDemoHeadless runs `driftwatch demo --headless` on three full local
// clusters: the hub must repair what the demo's drift generator breaks,
// and serve its API, which `driftwatch status` asks from outside with the
// token file the demo made.
func TestDemoHeadless(t *testing.T) {
	bins := lctest.BinDir(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	env := map[string]string{app.EnvBinDir: bins, "XDG_STATE_HOME": t.TempDir()}
	getenv := func(k string) string { return env[k] }
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"demo", "--headless", "--interval", "1s", "--until-repairs", "5", "--dir", t.TempDir(), "--listen", "127.0.0.1:0"}, getenv, out, errOut)
	}()
	api := regexp.MustCompile(`demo: API on (http://127\.0\.0\.1:\d+): `)
	var status cliRun
	testwait.For(t, 2*time.Minute, "the demo's API to answer status", func() error {
		select {
		case err := <-done:
			return testwait.Stop(fmt.Errorf("the demo ended first (%v):\n%s", err, errOut))
		default:
		}
		m := api.FindStringSubmatch(errOut.String())
		if m == nil {
			return errors.New("no API yet")
		}
		status = runCLIEnv(t, env, "status", "--server", m[1])
		return testwait.Check(status.code == 0 && strings.Contains(status.out, "prod-eu") && strings.Contains(status.out, "staging-eu"), "status: exit %d\n%s%s", status.code, status.out, status.errOut)
	})
	if err := <-done; err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	if n := strings.Count(out.String(), "repaired "); n < 5 {
		t.Fatalf("want 5 repaired lines, got %d:\n%s", n, out)
	}
	t.Logf("demo output:\n%s\nstatus:\n%s", out, status.out)
}

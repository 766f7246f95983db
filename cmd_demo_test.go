package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// TestDemoHeadless runs `driftwatch demo --headless` on three full local
// clusters: the hub must repair what the demo's drift generator breaks.
func TestDemoHeadless(t *testing.T) {
	bins := lctest.BinDir(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	getenv := func(k string) string {
		if k == app.EnvBinDir {
			return bins
		}
		return ""
	}
	err := run(ctx, []string{"demo", "--headless", "--interval", "1s", "--until-repairs", "3", "--dir", t.TempDir()}, getenv, out, errOut)
	if err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	if n := strings.Count(out.String(), "repaired "); n < 3 {
		t.Fatalf("want 3 repaired lines, got %d:\n%s", n, out)
	}
	t.Logf("demo output:\n%s", out)
}

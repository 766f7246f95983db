package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/internal/app"
)

func TestBenchChartCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "bench.svg")
	getenv := func(string) string { return "" }
	if err := run(t.Context(), []string{"bench", "chart", "internal/bench/chart/testdata/report.json", "-o", out}, getenv, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "<svg") || !strings.Contains(string(data), "watch (driftwatch)") {
		t.Errorf("%s is not the chart", out)
	}

	for _, tc := range []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{"bench", "chart", "internal/bench/chart/testdata/report.json"}, true, "-o FILE.svg is required"},
		{[]string{"bench", "chart", "-o", out}, true, "want one report"},
		{[]string{"bench", "chart", "a.json", "b.json", "-o", out}, true, "want one report"},
		{[]string{"bench", "--mode", "scale", "--chart", out}, true, "--chart"},
		{[]string{"bench", "chart", "internal/bench/testdata/compare-old.json", "-o", out}, false, "internal/bench/testdata/compare-old.json: no run with latency samples"},
	} {
		err := run(t.Context(), tc.args, getenv, io.Discard, io.Discard)
		var ee *app.ExitError
		if isUsage := errors.As(err, &ee) && ee.Code == 2; err == nil || isUsage != tc.usage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error with %q (usage error: %t)", tc.args, err, tc.want, tc.usage)
		}
	}
}

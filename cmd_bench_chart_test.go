package main

import (
	"bytes"
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
	if err := run(t.Context(), []string{"bench", "chart", "internal/bench/chart/testdata/report.json", "--output-file", out}, getenv, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "<svg") || !strings.Contains(string(data), "watch (driftwatch)") {
		t.Errorf("%s is not the chart", out)
	}

	// - reads the report from stdin and writes the SVG to stdout.
	report, err := os.ReadFile("internal/bench/chart/testdata/report.json")
	if err != nil {
		t.Fatal(err)
	}
	var svg bytes.Buffer
	if err := execute(t.Context(), []string{"bench", "chart", "-", "-O", "-"}, &cliEnv{getenv: getenv, stdin: bytes.NewReader(report), stdout: &svg, stderr: io.Discard}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(svg.Bytes(), data) {
		t.Errorf("bench chart - -O - wrote %d bytes, not the chart of the file (%d bytes)", svg.Len(), len(data))
	}

	for _, tc := range []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{"bench", "chart", "internal/bench/chart/testdata/report.json"}, true, "--output-file FILE.svg is required"},
		{[]string{"bench", "chart", "-O", out}, true, "want one report"},
		{[]string{"bench", "chart", "a.json", "b.json", "-O", out}, true, "want one report"},
		{[]string{"bench", "--mode", "scale", "--chart", out}, true, "--chart"},
		{[]string{"bench", "chart", "internal/bench/testdata/compare-old.json", "-O", out}, false, "internal/bench/testdata/compare-old.json: no run with latency samples"},
		{[]string{"bench", "chart", "internal/bench/chart/testdata/report.json", "-o", out}, true,
			`bench chart: -o "` + out + `": -o is the output format (svg); write to a file with --output-file ` + out},
		{[]string{"bench", "-o", "table", "--clusters", "0"}, true, "--clusters must be"}, // table is still text
		{[]string{"bench", "-o", "yaml"}, true, `bench: -o "yaml": want text or json`},
	} {
		err := run(t.Context(), tc.args, getenv, io.Discard, io.Discard)
		var ee *app.ExitError
		if isUsage := errors.As(err, &ee) && ee.Code == 2; err == nil || isUsage != tc.usage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error with %q (usage error: %t)", tc.args, err, tc.want, tc.usage)
		}
	}
}

// TestBenchCompareCommand: one report a side, several split by --, and
// the arguments it refuses.
func TestBenchCompareCommand(t *testing.T) {
	getenv := func(string) string { return "" }
	oldPath, newPath := "internal/bench/testdata/compare-old.json", "internal/bench/testdata/compare-new.json"
	var one bytes.Buffer
	if err := run(t.Context(), []string{"bench", "compare", oldPath, newPath}, getenv, &one, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(one.String(), "figures in both reports") {
		t.Errorf("bench compare OLD NEW:\n%s", &one)
	}
	var many bytes.Buffer
	if err := run(t.Context(), []string{"bench", "compare", oldPath, oldPath, "--", newPath, newPath}, getenv, &many, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"old: 2 report(s): " + oldPath + ", " + oldPath, "new: 2 report(s): " + newPath + ", " + newPath, "old median", "no change can reach"} {
		if !strings.Contains(many.String(), s) {
			t.Errorf("bench compare OLD OLD -- NEW NEW lacks %q:\n%s", s, &many)
		}
	}
	for _, args := range [][]string{
		{"bench", "compare", oldPath},
		{"bench", "compare", oldPath, oldPath, newPath},
		{"bench", "compare", "--", newPath},
		{"bench", "compare", oldPath, "--"},
	} {
		err := run(t.Context(), args, getenv, io.Discard, io.Discard)
		var ee *app.ExitError
		if !errors.As(err, &ee) || ee.Code != 2 || !strings.Contains(err.Error(), "bench compare: want") {
			t.Errorf("%v: got %v, want a usage error", args, err)
		}
	}
}

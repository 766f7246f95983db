package app

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/internal/api"
)

// TestNoTerminal: the modes that run the terminal UI refuse to start
// without a terminal, before they start anything, with a usage error that
// says what to run instead (not bubbletea's error about its input reader).
func TestNoTerminal(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	src := "clusters:\n  - id: a\n    kubeconfig: /dev/null\napplications:\n  - {id: web, namespace: web, clusters: [a], image: nginx}\n"
	if err := os.WriteFile(cfg, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	env := Env{Getenv: func(string) string { return "" }, Stdout: &stderr, Stderr: &stderr, Terminal: func() bool { return false }}
	logFile := filepath.Join(dir, "tui.log")
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"driftwatch -f FILE", func() error { return RunTUI(t.Context(), TUIOptions{File: cfg, LogFile: logFile}, env) },
			"the terminal UI needs a terminal, but standard input and output are not both one (a pipe, a file, a service or CI job?): " +
				"for a hub without a UI, run driftwatch serve -f " + cfg},
		{"demo", func() error { return Demo(t.Context(), DemoOptions{Dir: filepath.Join(dir, "demo")}, env) },
			"demo: the terminal UI needs a terminal, but standard input and output are not both one (a pipe, a file, a service or CI job?): " +
				"run driftwatch demo --headless"},
		{"attach", func() error {
			return Attach(t.Context(), "http://127.0.0.1:1", false, api.ClientOptions{Token: strings.Repeat("t", 40)}, env)
		},
			"attach: the terminal UI needs a terminal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			var ee *ExitError
			if !errors.As(err, &ee) || ee.Code != 2 || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want exit 2 with %q", err, tt.want)
			}
		})
	}
	for _, p := range []string{logFile, filepath.Join(dir, "demo")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was made: the mode started before it found no terminal", p)
		}
	}
}

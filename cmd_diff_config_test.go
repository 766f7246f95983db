package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffConfigErrors: diff checks the kubeconfigs of the clusters in
// scope as check does before it contacts any: a problem check finds is a
// config error (exit 2, positioned), never exit 3 "unreachable"; a
// clusterAPI source in scope is reported as not checked (exit 3), never
// as in sync. Golden: testdata/diff-config-errors.golden (stderr, then
// stdout).
func TestDiffConfigErrors(t *testing.T) {
	f := newKubeconfigFixture(t)
	apps := "applications:\n  - {id: web, namespace: web, selector: env=prod, image: nginx}\n"
	tests := []struct {
		name   string
		config string
		env    []string // $KUBECONFIG
		args   []string
		stdin  bool
		code   int
	}{
		{name: "missing kubeconfig", code: 2, config: "clusters:\n  - id: a\n    kubeconfig: missing.yaml\n    labels: {env: prod}\n"},
		{name: "a folder", code: 2, config: "clusters:\n  - id: a\n    kubeconfig: folder\n    labels: {env: prod}\n"},
		{name: "unknown context", code: 2, config: "clusters:\n  - id: a\n    kubeconfig: fleet.yaml\n    context: prod-eu\n    labels: {env: prod}\n"},
		{name: "context absent from $KUBECONFIG", env: []string{f.fleet, f.other}, code: 2,
			config: "clusters:\n  - id: a\n    context: qa\n    labels: {env: prod}\n"},
		{name: "the same cluster twice", code: 2,
			config: "clusters:\n  - id: a\n    kubeconfig: fleet.yaml\n    labels: {env: prod}\n  - id: b\n    kubeconfig: link.yaml\n"},
		{name: "only the clusters in scope: --cluster", args: []string{"--cluster", "b"}, code: 2,
			config: "clusters:\n  - id: a\n    kubeconfig: missing.yaml\n    labels: {env: prod}\n  - id: b\n    kubeconfig: fleet.yaml\n    context: nope\n    labels: {env: prod}\n"},
		{name: "-f - reads standard input", stdin: true, code: 2,
			config: "clusters:\n  - id: a\n    kubeconfig: " + f.fleet + "\n    context: nope\n    labels: {env: prod}\n"},
		{name: "--context reaching no cluster", args: []string{"--context", "staging"}, code: 2,
			config: "clusters:\n  - id: a\n    kubeconfig: fleet.yaml\n    labels: {env: prod}\n  - id: b\n    kubeconfig: fleet.yaml\n    context: dev\n"},
		{name: "--kubeconfig missing", args: []string{"--kubeconfig", "$DIR/missing.yaml"}, code: 2,
			config: "clusters:\n  - id: a\n    context: prod\n    labels: {env: prod}\n"},
		{name: "a clusterAPI source is not checked", code: 3,
			config: "clusterAPI:\n  - name: mgmt\n    kubeconfig: missing.yaml\n"},
		{name: "a clusterAPI source is not checked: json", args: []string{"-o", "json"}, code: 3,
			config: "clusterAPI:\n  - name: mgmt\n    kubeconfig: missing.yaml\n"},
	}
	var report bytes.Buffer
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfgPath := filepath.Join(f.dir, "c.yaml")
			src := tt.config + apps
			if err := os.WriteFile(cfgPath, []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"diff", "-f", cfgPath}
			var stdin io.Reader
			if tt.stdin {
				args[2], stdin = "-", strings.NewReader(src)
			}
			for _, a := range tt.args {
				args = append(args, strings.ReplaceAll(a, "$DIR", f.dir))
			}
			var out, errOut bytes.Buffer
			err := execute(t.Context(), args, &cliEnv{getenv: f.env(tt.env...), stdin: stdin, stdout: &out, stderr: &errOut})
			if code := exitCode(err, &errOut); code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, &out, &errOut)
			}
			stdout := out.String()
			if i := strings.Index(stdout, `"at": "`); i >= 0 { // the time of the pass
				stdout = stdout[:i+7] + "..." + stdout[i+7+strings.IndexByte(stdout[i+7:], '"'):]
			}
			fmt.Fprintf(&report, "== %s (exit %d)\n%s%s", tt.name, tt.code,
				strings.ReplaceAll(errOut.String(), f.dir, "$DIR"), strings.ReplaceAll(stdout, f.dir, "$DIR"))
		})
	}
	if !t.Failed() {
		golden(t, "diff-config-errors.golden", report.Bytes())
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/internal/cli"
	goldenfile "github.com/driftwatch/driftwatch/internal/golden"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// golden compares got with testdata/<name> (see internal/golden).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, name, got)
}

// commandPaths lists the argument paths of every command users can run
// ("" is the root), from the real tree.
func commandPaths(t *testing.T) [][]string {
	t.Helper()
	root := newRootCmd(&cliEnv{getenv: testEnv, stdout: io.Discard, stderr: io.Discard})
	var paths [][]string
	var walk func(cmd *cobra.Command, path []string)
	walk = func(cmd *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range cmd.Commands() {
			if !sub.Hidden {
				walk(sub, append(append([]string(nil), path...), sub.Name()))
			}
		}
	}
	walk(root, nil)
	return paths
}

// TestHelpGolden: every command's --help exits 0, prints on stdout only,
// has examples, matches its golden file (testdata/help/), and equals
// `driftwatch help COMMAND`.
func TestHelpGolden(t *testing.T) {
	paths := commandPaths(t)
	if len(paths) < 14 {
		t.Fatalf("only %d commands: %v", len(paths), paths)
	}
	for _, path := range paths {
		name := strings.Join(append([]string{"driftwatch"}, path...), "-")
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(t.Context(), append(append([]string(nil), path...), "--help"), testEnv, &out, &errOut)
			if code := exitCode(err, &errOut); code != 0 || errOut.Len() > 0 {
				t.Fatalf("exit %d, stderr %q", code, &errOut)
			}
			if !strings.Contains(out.String(), "\nExamples:\n") {
				t.Errorf("no examples:\n%s", &out)
			}
			golden(t, filepath.Join("help", name+".golden"), out.Bytes())

			var viaHelp bytes.Buffer
			if err := run(t.Context(), append([]string{"help"}, path...), testEnv, &viaHelp, io.Discard); err != nil {
				t.Fatalf("help %v: %v", path, err)
			}
			if viaHelp.String() != out.String() {
				t.Errorf("driftwatch help %s differs from --help:\n%s", strings.Join(path, " "), &viaHelp)
			}
		})
	}
}

// TestExitCodes: help exits 0, a wrong command line 2 with one line that
// says what is wrong and where the help is, a bad config 1.
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("clusters: []\napplications: nope\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string {
		return map[string]string{"HOME": dir, "XDG_STATE_HOME": filepath.Join(dir, "state"), "DRIFTWATCH_TOKEN": strings.Repeat("t", 40)}[k]
	}
	for _, tt := range []struct {
		name string
		args []string
		code int
		// errLine is a substring of stderr's only line (usage errors).
		errLine string
	}{
		{"help flag", []string{"--help"}, 0, ""},
		{"help short flag", []string{"-h"}, 0, ""},
		{"help command", []string{"help"}, 0, ""},
		{"help of a command", []string{"help", "serve"}, 0, ""},
		{"subcommand help", []string{"serve", "--help"}, 0, ""},
		{"version", []string{"version"}, 0, ""},
		{"version flag", []string{"--version"}, 0, ""},
		{"completion", []string{"completion", "bash"}, 0, ""},
		{"unknown command", []string{"serv"}, 2, `unknown command "serv" (did you mean serve?) (see driftwatch --help)`},
		{"unknown command far off", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"mistyped command: a letter left out", []string{"seve"}, 2, `unknown command "seve" (did you mean serve?)`},
		{"mistyped command: two letters swapped", []string{"chekc"}, 2, `unknown command "chekc" (did you mean check?)`},
		{"mistyped command: another letter", []string{"verzion"}, 2, `unknown command "verzion" (did you mean version?)`},
		{"mistyped subcommand", []string{"bench", "chrat"}, 2, `bench: unknown command "chrat" (did you mean chart?)`},
		{"help of a mistyped command", []string{"help", "seve"}, 2, `help: unknown command "seve" (did you mean serve?)`},
		{"help of an unknown command", []string{"help", "nope"}, 2, `help: unknown command "nope"`},
		{"unknown flag", []string{"serve", "-f", bad, "--nope"}, 2, "serve: unknown flag: --nope (see driftwatch serve --help)"},
		{"unknown root flag", []string{"--nope"}, 2, "unknown flag: --nope (see driftwatch --help)"},
		{"flag without value", []string{"check", "-f"}, 2, "check: flag needs an argument"},
		{"bad flag value", []string{"demo", "--interval", "soon"}, 2, `demo: invalid argument "soon" for "--interval"`},
		{"unknown shell", []string{"completion", "tcsh"}, 2, "completion: unknown shell \"tcsh\""},
		{"no shell", []string{"completion"}, 2, "completion: want a shell"},
		{"bad version output", []string{"version", "-o", "xml"}, 2, `version: -o "xml": want text, json or yaml`},
		{"missing -f", []string{}, 2, "-f FILE is required"},
		{"missing -f with flags", []string{"--readonly"}, 2, "-f FILE is required"},
		{"serve missing -f", []string{"serve"}, 2, "serve: -f FILE is required (see driftwatch serve --help)"},
		{"serve -f -", []string{"serve", "-f", "-"}, 2, "serve: -f -: serve reads its config file again on every reload: give a file"},
		{"TUI -f -", []string{"-f", "-"}, 2, "-f -: the terminal UI reads the terminal, and :reload the config file again: give a file"},
		{"serve --kubeconfig missing", []string{"serve", "-f", bad, "--kubeconfig", filepath.Join(dir, "none")}, 2, "serve: --kubeconfig " + filepath.Join(dir, "none") + " does not exist"},
		{"TUI --kubeconfig a folder", []string{"-f", bad, "--kubeconfig", dir}, 2, "--kubeconfig " + dir + " is a folder, not a file"},
		{"check missing -f", []string{"check"}, 2, "check: -f FILE is required"},
		{"attach without URL", []string{"attach"}, 2, "attach: want one hub address"},
		{"reload, a token over plain http", []string{"reload", "--server", "http://hub.example:7070"}, 2,
			`reload: hub address "http://hub.example:7070": refusing to send the token over plain http to hub.example, which is not a loopback address: use https://`},
		{"status, a token over plain http", []string{"status", "--server", "http://hub.example:7070"}, 2,
			`status: hub address "http://hub.example:7070": refusing to send the token over plain http`},
		{"status, bad output", []string{"status", "-o", "yaml"}, 2, `status: -o "yaml": want text or json`},
		{"pause nothing", []string{"pause"}, 2, "pause: name a cluster (or --all)"},
		{"log, bad output", []string{"log", "-o", "yaml"}, 2, `log: -o "yaml": want text or json`},
		{"describe nothing", []string{"describe"}, 2, "describe: name one NodeID (cluster:namespace/name:kind)"},
		{"describe a bad NodeID", []string{"describe", "prod-eu"}, 2, "describe: "},
		{"describe, bad output", []string{"describe", "-o", "yaml", "c:ns/n:configmap"}, 2, `describe: -o "yaml": want text or json`},
		{"log, negative since", []string{"log", "--since", "-1m"}, 2, "log: --since must be positive"},
		{"log, empty target", []string{"log", ""}, 2, "log: an empty cluster or NodeID"},
		{"resume a cluster and --all", []string{"resume", "--all", "c1"}, 2, "resume: --all acts on every cluster: name none with it"},
		{"hold without a name", []string{"hold", "cluster"}, 2, "hold: want SCOPE NAME: node NODEID, application NAME or cluster NAME"},
		{"hold an unknown scope", []string{"hold", "galaxy", "x", "--reason", "r"}, 2, `hold: `},
		{"hold without a reason", []string{"hold", "cluster", "c1"}, 2, "hold: --reason is required"},
		{"hold for no time", []string{"hold", "cluster", "c1", "--reason", "r", "--for", "0s"}, 2, "hold: --for 0s: want a positive duration"},
		{"release a bad NodeID", []string{"release", "node", "c1"}, 2, `release: `},
		{"repair nothing", []string{"repair"}, 2, "repair: name a NodeID (cluster:namespace/name:kind)"},
		{"repair a bad NodeID", []string{"repair", "c1:web"}, 2, `repair: `},
		{"policy of nothing", []string{"policy", "web"}, 2, "policy: want APPLICATION warn|repair|config"},
		{"policy unknown", []string{"policy", "web", "maybe"}, 2, `policy: policy "maybe": want warn, repair or config`},
		{"policy config with a reason", []string{"policy", "web", "config", "--reason", "x"}, 2, "policy: --reason goes with warn or repair"},
		{"attach, a token over plain http", []string{"attach", "http://10.1.2.3:7070"}, 2,
			`attach: hub address "http://10.1.2.3:7070": refusing to send the token over plain http to 10.1.2.3`},
		{"stray argument", []string{"demo", "now"}, 2, `demo: unexpected argument "now"`},
		{"bad config, check", []string{"check", "-f", bad}, 1, ""},
		{"bad config, serve", []string{"serve", "-f", bad}, 1, ""},
		{"bad config, TUI", []string{"-f", bad, "--log-file", filepath.Join(dir, "tui.log")}, 1, ""},
		{"missing config", []string{"serve", "-f", filepath.Join(dir, "none.yaml")}, 1, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(t.Context(), tt.args, env, &out, &errOut)
			code := exitCode(err, &errOut)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, &out, &errOut)
			}
			if tt.code == 2 {
				if lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "driftwatch: ") ||
					!strings.Contains(lines[0], tt.errLine) || !strings.Contains(lines[0], "--help)") {
					t.Errorf("stderr = %q, want one line with %q and where the help is", &errOut, tt.errLine)
				}
				if out.Len() > 0 {
					t.Errorf("stdout = %q, want empty", &out)
				}
			}
			if tt.code == 0 && (out.Len() == 0 || errOut.Len() > 0) {
				t.Errorf("stdout %d bytes, stderr %q: want the output on stdout only", out.Len(), &errOut)
			}
		})
	}
}

// TestVersionJSON: version -o json has the version, the Go version and the
// platform.
func TestVersionJSON(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), []string{"version", "-o", "json"}, testEnv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var v map[string]string
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("%v: %s", err, &out)
	}
	shown, _ := cli.BuildVersion(version, debug.ReadBuildInfo)
	want := map[string]string{"version": shown, "goVersion": runtime.Version(), "platform": runtime.GOOS + "/" + runtime.GOARCH}
	if rev := v["revision"]; rev != "" {
		want["revision"] = rev // recorded when the test binary was built in a VCS checkout
	}
	if len(v) != len(want) {
		t.Fatalf("got %v, want %v", v, want)
	}
	for k, w := range want {
		if v[k] != w {
			t.Errorf("%s = %q, want %q", k, v[k], w)
		}
	}

	// -o yaml: the same fields; -o text (the default): one line.
	out.Reset()
	if err := run(t.Context(), []string{"version", "-o", "yaml"}, testEnv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var y map[string]string
	if err := yaml.Unmarshal(out.Bytes(), &y); err != nil || !maps.Equal(y, v) {
		t.Errorf("-o yaml: %v %v, want %v", y, err, v)
	}
	out.Reset()
	if err := run(t.Context(), []string{"version", "-o", "text"}, testEnv, &out, io.Discard); err != nil || out.String() != "driftwatch "+shown+"\n" {
		t.Errorf("-o text: %q %v", &out, err)
	}
}

// TestCompletionScripts: cobra's generator writes a script for each shell.
func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{"bash": "__start_driftwatch", "zsh": "#compdef driftwatch", "fish": "complete -c driftwatch", "powershell": "Register-ArgumentCompleter"} {
		var out bytes.Buffer
		if err := run(t.Context(), []string{"completion", shell}, testEnv, &out, io.Discard); err != nil {
			t.Fatalf("%s: %v", shell, err)
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("%s: the script lacks %q", shell, want)
		}
	}
}

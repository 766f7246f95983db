package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes a kubeconfig with these contexts (each with its
// own cluster and user) and returns its path.
func writeKubeconfig(t *testing.T, dir, name string, contexts ...string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	for i, ctx := range contexts {
		kc.Clusters[ctx] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:" + string(rune('1'+i)) + "6443"}
		kc.AuthInfos[ctx] = &clientcmdapi.AuthInfo{Token: "token-" + ctx}
		kc.Contexts[ctx] = &clientcmdapi.Context{Cluster: ctx, AuthInfo: ctx}
	}
	if len(contexts) > 0 {
		kc.CurrentContext = contexts[0]
	}
	path := filepath.Join(dir, name)
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestInit: init prints a starter config for a kubeconfig with three
// contexts that check accepts (explicit --kubeconfig, and $KUBECONFIG
// with two files merged), --context picks some, --output-file (-O) writes
// it and refuses to overwrite without --force, - is stdout, and -o is a
// format: the old -o FILE says what to use.
func TestInit(t *testing.T) {
	dir := t.TempDir()
	three := writeKubeconfig(t, dir, "three.yaml", "prod-eu", "prod-us", "kind-staging")
	one := writeKubeconfig(t, dir, "one.yaml", "dev")
	env := map[string]string{"HOME": dir, "XDG_STATE_HOME": filepath.Join(dir, "state")}
	getenv := func(k string) string { return env[k] }
	drive := func(t *testing.T, wantCode int, args ...string) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		err := run(t.Context(), args, getenv, &out, &errOut)
		if code := exitCode(err, &errOut); code != wantCode {
			t.Fatalf("%v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, wantCode, &out, &errOut)
		}
		return out.String(), errOut.String()
	}
	check := func(t *testing.T, starter string, clusters ...string) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "driftwatch.yaml")
		if err := os.WriteFile(path, []byte(starter), 0o600); err != nil {
			t.Fatal(err)
		}
		plan, _ := drive(t, 0, "check", "-f", path)
		for _, c := range clusters {
			if !strings.Contains(plan, "\ncluster "+c+"\n") {
				t.Errorf("the plan lacks cluster %s:\n%s", c, plan)
			}
		}
		// The starter's commented workers are the plan's.
		commented := regexp.MustCompile(`\n  # workers: (\d+) `).FindStringSubmatch(starter)
		planned := regexp.MustCompile(`\n  workers: +(\d+) \(`).FindStringSubmatch(plan)
		if commented == nil || planned == nil || commented[1] != planned[1] {
			t.Errorf("the starter's workers %q are not the plan's %q:\n%s", commented, planned, plan)
		}
	}

	t.Run("explicit kubeconfig", func(t *testing.T) {
		starter, _ := drive(t, 0, "init", "--kubeconfig", three)
		if !strings.Contains(starter, three) || strings.Count(starter, "context: ") < 3 {
			t.Errorf("starter:\n%s", starter)
		}
		check(t, starter, "prod-eu", "prod-us", "kind-staging")
	})
	t.Run("KUBECONFIG merged", func(t *testing.T) {
		env["KUBECONFIG"] = three + string(filepath.ListSeparator) + one
		defer delete(env, "KUBECONFIG")
		starter, _ := drive(t, 0, "init")
		if strings.Contains(starter, "kubeconfig: /") {
			t.Errorf("a default-kubeconfig starter names a file:\n%s", starter)
		}
		check(t, starter, "prod-eu", "prod-us", "kind-staging", "dev")
	})
	t.Run("some contexts", func(t *testing.T) {
		starter, _ := drive(t, 0, "init", "--kubeconfig", three, "--context", "prod-us,kind-staging")
		if strings.Contains(starter, "prod-eu") {
			t.Errorf("prod-eu was not asked for:\n%s", starter)
		}
		check(t, starter, "prod-us", "kind-staging")
		_, errOut := drive(t, 1, "init", "--kubeconfig", three, "--context", "nope")
		if !strings.Contains(errOut, "nope") || !strings.Contains(errOut, "prod-eu") {
			t.Errorf("an unknown context: %s", errOut)
		}
	})
	t.Run("output file", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "driftwatch.yaml")
		if stdout, _ := drive(t, 0, "init", "--kubeconfig", three, "--output-file", out); stdout != "" {
			t.Errorf("stdout = %q, want nothing", stdout)
		}
		first, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		check(t, string(first), "prod-eu")
		_, errOut := drive(t, 1, "init", "--kubeconfig", one, "-O", out)
		if !strings.Contains(errOut, "exists: pass --force") {
			t.Errorf("overwrite without --force: %s", errOut)
		}
		if now, _ := os.ReadFile(out); !bytes.Equal(now, first) {
			t.Error("the file changed without --force")
		}
		drive(t, 0, "init", "--kubeconfig", one, "-O", out, "--force")
		if now, _ := os.ReadFile(out); !strings.Contains(string(now), "dev") {
			t.Errorf("--force did not overwrite:\n%s", now)
		}
	})
	t.Run("- is stdout, -o a format", func(t *testing.T) {
		printed, _ := drive(t, 0, "init", "--kubeconfig", three)
		if got, _ := drive(t, 0, "init", "--kubeconfig", three, "--output-file", "-", "-o", "yaml"); got != printed {
			t.Errorf("--output-file - printed\n%s\nwant\n%s", got, printed)
		}
		if _, err := os.Stat("-"); err == nil {
			t.Error("--output-file - wrote a file called -")
		}
		_, errOut := drive(t, 2, "init", "--kubeconfig", three, "-o", "driftwatch.yaml")
		if want := `init: -o "driftwatch.yaml": -o is the output format (yaml); write to a file with --output-file driftwatch.yaml`; !strings.Contains(errOut, want) {
			t.Errorf("-o FILE: %s, want %q", errOut, want)
		}
		if _, errOut := drive(t, 2, "init", "-o", "json"); !strings.Contains(errOut, `init: -o "json": want yaml`) {
			t.Errorf("-o json: %s", errOut)
		}
	})
	t.Run("no kubeconfig", func(t *testing.T) {
		drive(t, 1, "init", "--kubeconfig", filepath.Join(dir, "none.yaml"))
	})
	t.Run("--context elsewhere", func(t *testing.T) {
		drive(t, 2, "check", "--context", "prod-eu")
	})
	t.Run("--from", func(t *testing.T) {
		work := t.TempDir()
		if err := os.CopyFS(filepath.Join(work, "cache"), os.DirFS("config/examples/sources/charts/cache")); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(work, "driftwatch.yaml")
		_, errOut := drive(t, 0, "init", "--kubeconfig", three, "--context", "prod-eu", "--from", filepath.Join(work, "cache"), "--namespace", "cache", "-O", out)
		if want := "cache (helm): 2 objects: 1 Deployment, 1 Service"; !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
		written, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{"  - id: cache\n    helm:\n      chart: ", "    namespace: cache ", "    policy: warn\n"} {
			if !strings.Contains(string(written), w) {
				t.Errorf("the config lacks %q:\n%s", w, written)
			}
		}
		plan, _ := drive(t, 0, "check", "-f", out)
		if !strings.Contains(plan, "prod-eu:cache/cache:deployment ") {
			t.Errorf("the plan lacks the chart's Deployment:\n%s", plan)
		}
		if _, errOut := drive(t, 1, "init", "--kubeconfig", three, "--from", filepath.Join(work, "nope")); !strings.Contains(errOut, "init: --from "+filepath.Join(work, "nope")+": no such file or directory") {
			t.Errorf("a missing --from folder: %s", errOut)
		}
		if _, errOut := drive(t, 2, "init", "--kubeconfig", three, "--namespace", "web"); !strings.Contains(errOut, "pass --from too") {
			t.Errorf("--namespace without --from: %s", errOut)
		}
		if _, errOut := drive(t, 2, "init", "--from"); !strings.Contains(errOut, "flag needs an argument: --from") {
			t.Errorf("--from without a folder: %s", errOut)
		}
	})
}

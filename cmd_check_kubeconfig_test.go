package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigFixture is a folder of kubeconfigs for the tests of check and
// diff against them:
//   - fleet.yaml: contexts prod (current) and dev, and ghost-user and
//     ghost-cluster, whose user and cluster it does not define;
//   - other.yaml: context staging, and prod-again, which reaches prod's
//     server with prod's token;
//   - link.yaml, a symbolic link to fleet.yaml; folder/, a folder;
//     broken.yaml, not a kubeconfig.
type kubeconfigFixture struct {
	dir, fleet, other string
}

func newKubeconfigFixture(t *testing.T) kubeconfigFixture {
	t.Helper()
	dir := t.TempDir()
	write := func(name, current string, contexts map[string][3]string) string {
		kc := clientcmdapi.NewConfig()
		for ctx, v := range contexts { // cluster, server, token
			if v[1] != "" {
				kc.Clusters[v[0]] = &clientcmdapi.Cluster{Server: v[1]}
			}
			user := ctx + "-user"
			if v[2] != "" {
				kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: v[2]}
			} else {
				user = "ghost"
			}
			kc.Contexts[ctx] = &clientcmdapi.Context{Cluster: v[0], AuthInfo: user}
		}
		kc.CurrentContext = current
		path := filepath.Join(dir, name)
		if err := clientcmd.WriteToFile(*kc, path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	f := kubeconfigFixture{dir: dir}
	f.fleet = write("fleet.yaml", "prod", map[string][3]string{
		"prod":          {"prod", "https://prod.example:6443", "prod-token"},
		"dev":           {"dev", "https://dev.example:6443", "dev-token"},
		"ghost-user":    {"prod", "https://prod.example:6443", ""},
		"ghost-cluster": {"ghost", "", "g-token"},
	})
	f.other = write("other.yaml", "", map[string][3]string{
		"staging":    {"staging", "https://staging.example:6443", "staging-token"},
		"prod-again": {"p", "https://prod.example:6443", "prod-token"},
	})
	if err := os.Symlink(f.fleet, filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "folder"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("clusters: {not: a list}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// env returns a Getenv with HOME in the fixture and $KUBECONFIG set to
// files (none: unset).
func (f kubeconfigFixture) env(files ...string) func(string) string {
	env := map[string]string{"HOME": f.dir, "XDG_STATE_HOME": filepath.Join(f.dir, "state")}
	if len(files) > 0 {
		env["KUBECONFIG"] = strings.Join(files, string(filepath.ListSeparator))
	}
	return func(k string) string { return env[k] }
}

// TestCheckKubeconfigs: check reads every kubeconfig and context a config
// names, without contacting any cluster; each problem is a positioned
// config error and exit 1, and the same cluster twice is refused however
// it is named. Golden: testdata/check-kubeconfigs.golden.
func TestCheckKubeconfigs(t *testing.T) {
	f := newKubeconfigFixture(t)
	apps := "applications:\n  - {id: web, namespace: web, clusters: [a], image: nginx}\n"
	tests := []struct {
		name   string
		config string
		env    []string // $KUBECONFIG
		args   []string // more flags
		stdin  bool     // -f -
		code   int
	}{
		{name: "valid: a file, a file's current context, $KUBECONFIG merged, in-cluster", env: []string{f.fleet, f.other},
			config: "clusters:\n  - id: a\n    kubeconfig: fleet.yaml\n    context: dev\n  - id: b\n    kubeconfig: fleet.yaml\n" +
				"  - id: c\n    context: staging\n  - id: d\n    inCluster: true\n"},
		{name: "missing file", code: 1, config: "clusters:\n  - id: a\n    kubeconfig: missing.yaml\n"},
		{name: "a folder", code: 1, config: "clusters:\n  - id: a\n    kubeconfig: folder\n"},
		{name: "does not parse", code: 1, config: "clusters:\n  - id: a\n    kubeconfig: broken.yaml\n"},
		{name: "unknown context", code: 1, config: "clusters:\n  - id: a\n    kubeconfig: fleet.yaml\n    context: prod-eu\n"},
		{name: "context absent from $KUBECONFIG, two files merged", env: []string{f.fleet, f.other}, code: 1,
			config: "clusters:\n  - id: a\n    context: qa\n"},
		{name: "no $KUBECONFIG, no ~/.kube/config", code: 1, config: "clusters:\n  - id: a\n    context: prod\n"},
		{name: "$KUBECONFIG lists a folder", env: []string{f.fleet, filepath.Join(f.dir, "folder")}, code: 1,
			config: "clusters:\n  - id: a\n    context: prod\n"},
		{name: "context names a user the kubeconfig lacks", code: 1, config: "clusters:\n  - id: a\n    kubeconfig: fleet.yaml\n    context: ghost-user\n"},
		{name: "context names a cluster the kubeconfig lacks", code: 1, config: "clusters:\n  - id: a\n    kubeconfig: fleet.yaml\n    context: ghost-cluster\n"},
		{name: "no context and no current-context", code: 1, config: "clusters:\n  - id: a\n    kubeconfig: other.yaml\n"},
		{name: "clusterAPI source and coordination cluster", code: 1,
			config: "hub:\n  coordination: {namespace: dw, kubeconfig: missing.yaml}\nclusters:\n  - id: a\n    kubeconfig: fleet.yaml\n" +
				"clusterAPI:\n  - name: mgmt\n    kubeconfig: fleet.yaml\n    context: mgmt\n"},
		{name: "every problem at once, in file order", code: 1,
			config: "clusters:\n  - id: a\n    kubeconfig: missing.yaml\n  - id: b\n    kubeconfig: fleet.yaml\n    context: nope\n"},
		{name: "same cluster: one file and context twice", code: 1,
			config: "clusters:\n  - id: a\n    kubeconfig: fleet.yaml\n    context: prod\n  - id: b\n    kubeconfig: fleet.yaml\n    context: prod\n"},
		{name: "same cluster: its current context", code: 1,
			config: "clusters:\n  - id: a\n    kubeconfig: fleet.yaml\n    context: prod\n  - id: b\n    kubeconfig: fleet.yaml\n"},
		{name: "same cluster: two paths to one file", code: 1,
			config: "clusters:\n  - id: a\n    kubeconfig: fleet.yaml\n  - id: b\n    kubeconfig: ./sub/../fleet.yaml\n"},
		{name: "same cluster: a symbolic link", code: 1,
			config: "clusters:\n  - id: a\n    kubeconfig: fleet.yaml\n  - id: b\n    kubeconfig: link.yaml\n"},
		{name: "same cluster: $KUBECONFIG and the file", env: []string{f.fleet}, code: 1,
			config: "clusters:\n  - id: a\n    context: prod\n  - id: b\n    kubeconfig: fleet.yaml\n"},
		{name: "same cluster: another file, context and user", code: 1,
			config: "clusters:\n  - id: a\n    kubeconfig: fleet.yaml\n  - id: b\n    kubeconfig: other.yaml\n    context: prod-again\n"},
		{name: "same server, another user: two clusters",
			config: "clusters:\n  - id: a\n    kubeconfig: fleet.yaml\n  - id: b\n    kubeconfig: fleet.yaml\n    context: dev\n"},
		{name: "sources may share their management cluster",
			config: "clusters:\n  - id: a\n    kubeconfig: fleet.yaml\nclusterAPI:\n  - name: m1\n    kubeconfig: fleet.yaml\n  - name: m2\n    kubeconfig: link.yaml\n"},
		{name: "--skip-kubeconfigs", args: []string{"--skip-kubeconfigs"},
			config: "clusters:\n  - id: a\n    kubeconfig: missing.yaml\n    context: nope\n"},
		{name: "--kubeconfig for the clusters that name none", args: []string{"--kubeconfig", filepath.Join("$DIR", "other.yaml")},
			env: []string{f.fleet}, config: "clusters:\n  - id: a\n    context: staging\n  - id: b\n    kubeconfig: fleet.yaml\n    context: dev\n"},
		{name: "--kubeconfig: a context it lacks", args: []string{"--kubeconfig", filepath.Join("$DIR", "other.yaml")}, code: 1,
			config: "clusters:\n  - id: a\n    context: prod\n"},
		{name: "--kubeconfig: not a kubeconfig", args: []string{"--kubeconfig", filepath.Join("$DIR", "broken.yaml")}, code: 1,
			config: "clusters:\n  - id: a\n    context: prod\n"},
		{name: "--kubeconfig missing", args: []string{"--kubeconfig", filepath.Join("$DIR", "missing.yaml")}, code: 2,
			config: "clusters:\n  - id: a\n    context: prod\n"},
		{name: "-f - reads standard input", stdin: true, code: 1, config: "clusters:\n  - id: a\n    kubeconfig: " + f.fleet + "\n    context: nope\n"},
	}
	var report bytes.Buffer
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfgPath := filepath.Join(f.dir, "c.yaml")
			src := tt.config + apps
			if err := os.WriteFile(cfgPath, []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"check", "-f", cfgPath}
			var stdin io.Reader
			if tt.stdin {
				args[2], stdin = "-", strings.NewReader(src)
			}
			for _, a := range tt.args {
				args = append(args, strings.ReplaceAll(a, "$DIR", f.dir))
			}
			var out, errOut bytes.Buffer
			err := execute(t.Context(), args, &cliEnv{getenv: f.env(tt.env...), stdin: stdin, stdout: &out, stderr: &errOut})
			code := exitCode(err, &errOut)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, &out, &errOut)
			}
			if code == 0 && !strings.Contains(out.String(), "\ncluster a\n") {
				t.Errorf("no plan:\n%s", &out)
			}
			fmt.Fprintf(&report, "== %s (exit %d)\n", tt.name, code)
			for line := range strings.Lines(strings.ReplaceAll(errOut.String(), f.dir, "$DIR")) {
				if !strings.HasPrefix(line, "driftwatch: WARNING: ") { // the clusters no application targets
					report.WriteString(line)
				}
			}
		})
	}
	if !t.Failed() {
		golden(t, "check-kubeconfigs.golden", report.Bytes())
	}
}

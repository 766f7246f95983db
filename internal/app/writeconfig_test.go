package app

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
)

// TestWriteIgnoreRule: the rule lands in the file (comments kept) through
// a symbolic link that stays a link, and the hub reloads it; a rule the
// config would reject leaves the file as it was.
func TestWriteIgnoreRule(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := unreachableKubeconfig(t, dir)
	target := filepath.Join(dir, "target.yaml")
	original := `# the fleet
clusters:
  - id: c1
    kubeconfig: ` + kubeconfig + `
applications:
  - id: web   # the shop
    namespace: shop
    clusters: [c1]
    image: registry.example/web:1
`
	if err := os.WriteFile(target, []byte(original), 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "driftwatch.yaml")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(link, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(tWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })

	const bad = "ignore:\n  - paths: [\"spec.containers[\"]\n"
	if _, err := a.WriteIgnoreRule("web", bad); err == nil || !strings.Contains(err.Error(), "left as it was") {
		t.Fatalf("invalid rule: error %v, want a rejection", err)
	}
	if got, _ := os.ReadFile(target); string(got) != original {
		t.Fatalf("a rejected rule changed the file:\n%s", got)
	}

	rule := "ignore:\n  - name: \"hpa\"\n    managers: [\"hpa\"]\n    paths: [\"spec.replicas\"]\n    kinds: [Deployment]\n"
	msg, err := a.WriteIgnoreRule("web", rule)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "reloaded") {
		t.Fatalf("message %q", msg)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the config link was replaced by a file (%v)", err)
	}
	got, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	want := original + "    ignore:\n      - name: \"hpa\"\n        managers: [\"hpa\"]\n        paths: [\"spec.replicas\"]\n        kinds: [Deployment]\n"
	if string(got) != want {
		t.Fatalf("file after the write:\n%s\nwant:\n%s", got, want)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, want 0640 kept", fi.Mode().Perm())
	}
	spec, ok := a.Hub().Desired(hub.NewNodeID("c1", "shop", "web", hub.KindDeployment))
	if !ok {
		t.Fatal("after the reload the hub does not want web's Deployment")
	}
	if rules := spec.Ignore.For(hub.KindDeployment); len(rules) != 1 {
		t.Fatalf("after the reload web's Deployment has %d ignore rules, want 1", len(rules))
	}
}

// unreachableKubeconfig writes a kubeconfig into dir whose one cluster
// listens nowhere (https://127.0.0.1:1), for tests that need a valid config
// but no cluster, and returns its path.
func unreachableKubeconfig(t *testing.T, dir string) string {
	t.Helper()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

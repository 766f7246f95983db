package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gitConfig is a config with one Git source; extra is added to its git
// section and path is its path field.
func gitConfig(extra, path string) string {
	return `clusters:
  - {id: c1, kubeconfig: /k}
sources:
  - id: web
    git:
      url: https://git.example.com/team/app.git
      ref: main
` + extra + `    path: ` + path + `
    clusters: [c1]
`
}

// fakeCheckout writes a checkout with deploy/web.yaml and returns a hook
// that serves it and records what it was asked.
func fakeCheckout(t *testing.T, asked *[]GitSource) func(Hub, string, GitSource) (GitCheckout, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "deploy"), 0o755); err != nil {
		t.Fatal(err)
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: \"1\"\n"
	if err := os.WriteFile(filepath.Join(dir, "deploy", "web.yaml"), []byte(cm), 0o644); err != nil {
		t.Fatal(err)
	}
	return func(_ Hub, id string, g GitSource) (GitCheckout, error) {
		*asked = append(*asked, g)
		return GitCheckout{Dir: dir, Commit: strings.Repeat("ab", 20), Ref: "refs/heads/main", Time: time.Unix(1, 0), Message: "add web"}, nil
	}
}

func TestGitSourceRendersFromTheCheckout(t *testing.T) {
	var asked []GitSource
	opts := testOptions()
	opts.GitCheckout = fakeCheckout(t, &asked)
	cfg, err := Parse("/etc/dw/config.yaml", []byte(gitConfig("      interval: 30s\n      auth: {tokenFile: token}\n      webhookSecretFile: hook\n", "deploy")), opts)
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	if len(asked) != 1 {
		t.Fatalf("checkouts asked: %d, want 1", len(asked))
	}
	g := asked[0]
	if g.URL != "https://git.example.com/team/app.git" || g.Ref != "main" || g.Interval != 30*time.Second ||
		g.Auth.TokenFile != "/etc/dw/token" || g.WebhookSecretFile != "/etc/dw/hook" {
		t.Errorf("git section: %+v", g)
	}
	if cfg.Sources[0].Path != "deploy" {
		t.Errorf("path %q: want it relative to the repository", cfg.Sources[0].Path)
	}
	specs := Compile(cfg)
	if len(specs) != 1 || specs[0].Name != "web" {
		t.Fatalf("specs: %+v", specs)
	}
	if want := strings.Repeat("ab", 20) + " add web"; specs[0].Revision != want {
		t.Errorf("revision %q, want %q", specs[0].Revision, want)
	}
}

func TestGitSourceDefaultInterval(t *testing.T) {
	var asked []GitSource
	opts := testOptions()
	opts.GitCheckout = fakeCheckout(t, &asked)
	if _, err := Parse("config.yaml", []byte(gitConfig("", ".")), opts); err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	if len(asked) != 1 || asked[0].Interval != DefaultGitInterval {
		t.Errorf("asked %+v: want the default interval %s", asked, DefaultGitInterval)
	}
}

func TestGitSourceErrors(t *testing.T) {
	for _, tc := range []struct {
		name, extra, path, want string
	}{
		{"interval", "      interval: 5s\n", "deploy", "config.yaml:8:17: sources[0].git.interval: interval 5s is too short"},
		{"ref", "      timeout: 1m\n      auth: {tokenFile: t, passwordFile: p}\n", "deploy", "sources[0].git.auth: set tokenFile or passwordFile, not both"},
		{"absolute", "", "/srv/deploy", `config.yaml:8:11: sources[0].path: "/srv/deploy" is not a relative path inside the repository`},
		{"outside", "", "../deploy", `sources[0].path: "../deploy" is not a relative path inside the repository`},
		{"verify", "      verify: {}\n", "deploy", "sources[0].git.verify.keysFile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []GitSource
			opts := testOptions()
			opts.GitCheckout = fakeCheckout(t, &asked)
			_, err := Parse("config.yaml", []byte(gitConfig(tc.extra, tc.path)), opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error:\n%v\nwant it to contain %q", err, tc.want)
			}
		})
	}
	src := strings.Replace(gitConfig("", "deploy"), "https://git.example.com/team/app.git", "git://example.com/app", 1)
	if _, err := Parse("config.yaml", []byte(src), testOptions()); err == nil || !strings.Contains(err.Error(), "config.yaml:6:12: sources[0].git.url:") {
		t.Errorf("bad scheme: %v", err)
	}
}

func TestGitSourceWithoutFetcher(t *testing.T) {
	_, err := Parse("config.yaml", []byte(gitConfig("", "deploy")), testOptions())
	if err == nil || !strings.Contains(err.Error(), "config.yaml:6:7: sources[0].git: git sources need a hub or check/diff to fetch them") {
		t.Fatalf("error: %v", err)
	}
}

func TestGitSourceCheckoutFails(t *testing.T) {
	opts := testOptions()
	opts.GitCheckout = func(Hub, string, GitSource) (GitCheckout, error) {
		return GitCheckout{}, errors.New("remote unreachable")
	}
	if _, err := Parse("config.yaml", []byte(gitConfig("", "deploy")), opts); err == nil || !strings.Contains(err.Error(), "sources[0].git: remote unreachable") {
		t.Fatalf("without isolation: %v", err)
	}
	opts.IsolateSources = true
	cfg, err := Parse("config.yaml", []byte(gitConfig("", "deploy")), opts)
	if err != nil {
		t.Fatalf("isolated: %v", err)
	}
	if f := cfg.SourceFaults()["web"]; len(f) != 1 || !strings.Contains(f[0].Error(), "remote unreachable") {
		t.Errorf("faults: %v", cfg.SourceFaults())
	}
	if specs := Compile(cfg); len(specs) != 0 {
		t.Errorf("specs of a source without checkout: %d", len(specs))
	}
}

// TestGitSourceKustomizeStaysInTheCheckout loads a Git source whose
// kustomization reaches a folder beside the checkout: the source is
// refused, naming the reference and the checkout; an overlay of a base
// inside the checkout renders.
func TestGitSourceKustomizeStaysInTheCheckout(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"checkout/deploy/kustomization.yaml": "resources: [../../elsewhere]\n",
		"checkout/base/kustomization.yaml":   "resources: [cm.yaml]\n",
		"checkout/base/cm.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n",
		"checkout/prod/kustomization.yaml":   "resources: [../base]\n",
		"elsewhere/kustomization.yaml":       "resources: [cm.yaml]\n",
		"elsewhere/cm.yaml":                  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: not-yours}\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checkout := filepath.Join(dir, "checkout")
	opts := testOptions()
	opts.GitCheckout = func(Hub, string, GitSource) (GitCheckout, error) {
		return GitCheckout{Dir: checkout, Commit: strings.Repeat("ab", 20)}, nil
	}
	config := func(kustomize string) []byte {
		return []byte(strings.Replace(gitConfig("", "x"), "path: x", "kustomize: "+kustomize, 1))
	}
	_, err := Parse(filepath.Join(dir, "config.yaml"), config("deploy"), opts)
	if err == nil || !strings.Contains(err.Error(), `'../../elsewhere'`) || !strings.Contains(err.Error(), "does not exist in the source's root "+checkout) {
		t.Errorf("a base outside the checkout: error = %v, want the reference and the checkout named", err)
	}
	cfg, err := Parse(filepath.Join(dir, "config.yaml"), config("prod"), opts)
	if err != nil {
		t.Fatalf("a base inside the checkout: %v", err)
	}
	if specs := Compile(cfg); len(specs) != 1 || specs[0].Name != "web" {
		t.Errorf("specs: %+v", specs)
	}
}

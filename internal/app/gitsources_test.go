package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/internal/e2etest"
)

// A Git source's first fetch fills a cache under the state folder; a hub
// that starts while the remote cannot be reached starts from the commit
// that cache holds, and one without a cache fails the source.
func TestGitSourcesStartFromTheCache(t *testing.T) {
	repo := e2etest.NewGitRepo(t)
	c1 := repo.Commit("first", map[string]string{"deploy/web.yaml": configMapYAML("web", "1")})
	state := t.TempDir()
	h := config.Hub{ID: "h", StateFile: filepath.Join(state, "state.db")}
	spec := config.GitSource{URL: repo.FileURL(), Ref: "main", Interval: time.Minute}

	g := NewGitSources(nil, nil)
	co, err := g.Checkout(h, "web", spec)
	if err != nil {
		t.Fatal(err)
	}
	if co.Commit != c1 || co.Message != "first" || !strings.HasPrefix(co.Dir, filepath.Join(state, "git")+string(filepath.Separator)) {
		t.Fatalf("checkout: %+v (want %s under %s/git)", co, c1, state)
	}
	if b, err := os.ReadFile(filepath.Join(co.Dir, "deploy", "web.yaml")); err != nil || !strings.Contains(string(b), "web") {
		t.Fatalf("checked-out file: %q, %v", b, err)
	}

	bare := strings.TrimPrefix(repo.FileURL(), "file://")
	if err := os.Rename(bare, bare+".away"); err != nil {
		t.Fatal(err)
	}
	restarted := NewGitSources(nil, nil)
	co2, err := restarted.Checkout(h, "web", spec)
	if err != nil {
		t.Fatalf("start without the remote, with a cache: %v", err)
	}
	if co2.Commit != c1 || co2.Dir != co.Dir {
		t.Errorf("start from the cache: %+v, want commit %s in %s", co2, c1, co.Dir)
	}
	restarted.mu.Lock()
	fetchErr := restarted.repos["web"].fetchErr
	restarted.mu.Unlock()
	if fetchErr == "" {
		t.Error("a source started from its cache is not stale")
	}

	fresh := NewGitSources(nil, nil)
	other := config.Hub{ID: "h", StateFile: filepath.Join(t.TempDir(), "state.db")}
	if _, err := fresh.Checkout(other, "web", spec); err == nil {
		t.Error("start without the remote and without a cache: no error")
	}
}

// driftwatch check fetches Git sources into a temporary cache and renders
// them; a path that is not in the repository is an error at the source's
// field.
func TestCheckGitSource(t *testing.T) {
	repo := e2etest.NewGitRepo(t)
	c1 := repo.Commit("first", map[string]string{"deploy/web.yaml": configMapYAML("web", "1")})
	dir := t.TempDir()
	write := func(path string) string {
		p := filepath.Join(dir, "driftwatch.yaml")
		cfg := "clusters:\n  - {id: c1, kubeconfig: /k}\nsources:\n  - id: web\n    git: {url: '" + repo.FileURL() + "'}\n    path: " + path + "\n    clusters: [c1]\n"
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := func(out, errOut *bytes.Buffer) Env {
		return Env{Getenv: func(string) string { return "" }, Stdout: out, Stderr: errOut}
	}
	var out, errOut bytes.Buffer
	if err := Check(CheckOptions{File: write("deploy"), Output: FormatYAML, SkipKubeconfigs: true}, env(&out, &errOut)); err != nil {
		t.Fatalf("check: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "# c1:default/web:configmap\n") {
		t.Errorf("check -o yaml:\n%s", out.String())
	}
	out.Reset()
	if err := Check(CheckOptions{File: write("deploy"), Output: FormatText, SkipKubeconfigs: true}, env(&out, &errOut)); err != nil {
		t.Fatalf("check: %v\n%s", err, errOut.String())
	}
	if want := "  git:      " + repo.FileURL() + " HEAD @ " + c1[:7] + " first\n"; !strings.Contains(out.String(), want) {
		t.Errorf("plan lacks %q:\n%s", want, out.String())
	}
	out.Reset()
	errOut.Reset()
	err := Check(CheckOptions{File: write("missing"), Output: FormatText, SkipKubeconfigs: true}, env(&out, &errOut))
	if err == nil || !strings.Contains(errOut.String(), "driftwatch.yaml:6:11: sources[0].path:") {
		t.Errorf("missing path: %v\n%s", err, errOut.String())
	}
}

// TestTriggerAll: another replica's other desired state kicks every Git
// source's poller once (kicks coalesce: a poller never has two queued).
func TestTriggerAll(t *testing.T) {
	g := NewGitSources(nil, nil)
	g.TriggerAll() // no source: nothing to do, no panic
	for _, id := range []string{"web", "shop"} {
		g.repos[id] = &gitRepo{id: id, kick: make(chan struct{}, 1)}
	}
	g.TriggerAll()
	g.TriggerAll()
	for id, r := range g.repos {
		if n := len(r.kick); n != 1 {
			t.Errorf("%s: %d fetches asked, want 1", id, n)
		}
	}
}

// driftwatch check pulls a chart from a repository into a temporary cache
// and renders it; a version no chart of the repository has is an error at
// the source's helm.repo field, naming the versions there.
func TestCheckChartFromARepository(t *testing.T) {
	repo := e2etest.NewChartRepo(t)
	repo.Publish("web", "1.0.0", "1.0", webChart("one"))
	repo.Publish("web", "1.1.0", "1.1", webChart("two"))
	dir := t.TempDir()
	write := func(version string) string {
		p := filepath.Join(dir, "driftwatch.yaml")
		cfg := "clusters:\n  - {id: c1, kubeconfig: /k}\nsources:\n  - id: web\n    helm: {repo: '" + repo.URL() + "', chart: web, version: '" + version + "'}\n    clusters: [c1]\n"
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := func(out, errOut *bytes.Buffer) Env {
		return Env{Getenv: func(string) string { return "" }, Stdout: out, Stderr: errOut}
	}
	var out, errOut bytes.Buffer
	if err := Check(CheckOptions{File: write("1.0.x"), Output: FormatYAML, SkipKubeconfigs: true}, env(&out, &errOut)); err != nil {
		t.Fatalf("check: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "# c1:default/web-web:configmap\n") || !strings.Contains(out.String(), `chart: 1.0.0`) {
		t.Errorf("check -o yaml:\n%s", out.String())
	}
	out.Reset()
	if err := Check(CheckOptions{File: write(""), Output: FormatText, SkipKubeconfigs: true}, env(&out, &errOut)); err != nil {
		t.Fatalf("check: %v\n%s", err, errOut.String())
	}
	if want := "  repo:     " + repo.URL() + " (latest) @ 1.1.0 chart web (app 1.1)\n"; !strings.Contains(out.String(), want) {
		t.Errorf("plan lacks %q:\n%s", want, out.String())
	}
	out.Reset()
	errOut.Reset()
	err := Check(CheckOptions{File: write("~3"), Output: FormatText, SkipKubeconfigs: true}, env(&out, &errOut))
	if err == nil || !strings.Contains(errOut.String(), "driftwatch.yaml:5:11: sources[0].helm.repo:") || !strings.Contains(errOut.String(), "1.1.0") {
		t.Errorf("a version not in the repository: %v\n%s", err, errOut.String())
	}
}

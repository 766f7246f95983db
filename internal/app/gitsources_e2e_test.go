package app

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/api"
	"github.com/driftwatch/driftwatch/internal/e2etest"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// configMapYAML is a ConfigMap manifest with one data key.
func configMapYAML(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", name, value)
}

// startGitApp starts a hub on the config at path with its Git sources
// fetched by a GitSources whose cache is under dir.
func startGitApp(t *testing.T, path, dir string) *testApp {
	t.Helper()
	log := slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	git := NewGitSources(log, func(string) string { return "" })
	return startApp(t, path, func(o *Options) {
		o.Logger, o.Git, o.StateFile = log, git, filepath.Join(dir, "state.db")
		o.LoadOptions = git.LoadOptions(o.LoadOptions)
	})
}

// revisionOf returns the snapshot's revision of a Git source.
func revisionOf(s *hub.Snapshot, id string) (hub.SourceRevision, bool) {
	for _, r := range s.Revisions {
		if r.ID == id {
			return r, true
		}
	}
	return hub.SourceRevision{}, false
}

// TestGitSourceEndToEnd: a manifest source in a Git repository served over
// smart HTTP, applied to a real cluster. The commit is applied with its
// revision in the snapshot and on each object; a new commit reaches the
// cluster through a push webhook long before the poll interval (10
// minutes), and only the object it changed moves to the new revision; a
// webhook with a wrong secret is refused; a commit that does not render
// keeps the last good revision in force and the source stale; the fix is
// applied.
func TestGitSourceEndToEnd(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	repo := e2etest.NewGitRepo(t)
	c1 := repo.Commit("first", map[string]string{
		"deploy/web.yaml":    configMapYAML("web", "1"),
		"deploy/static.yaml": configMapYAML("static", "s"),
	})
	dir := t.TempDir()
	secret := "s3cret"
	if err := os.WriteFile(filepath.Join(dir, "hook"), []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cl := set.Clusters[0]
	cfgText := fmt.Sprintf(`hub:
  id: e2e
clusters:
  - {id: %s, kubeconfig: %s}
sources:
  - id: web
    git:
      url: %s
      ref: main
      interval: 10m
      webhookSecretFile: hook
    path: deploy
    clusters: [%s]
    namespace: default
`, cl.Name, cl.Kubeconfig, repo.HTTPURL(), cl.Name)
	path := filepath.Join(dir, "driftwatch.yaml")
	if err := os.WriteFile(path, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startGitApp(t, path, dir)
	web := hub.NewNodeID(cl.Name, "default", "web", hub.KindConfigMap)
	static := hub.NewNodeID(cl.Name, "default", "static", hub.KindConfigMap)
	applied := func(n hub.NodeStatus) bool { return n.Status == hub.StatusInSync || n.Status == hub.StatusRepaired }
	revIs := func(commit string) func(*hub.Snapshot) bool {
		return func(s *hub.Snapshot) bool {
			r, ok := revisionOf(s, "web")
			return ok && r.Commit == commit
		}
	}
	s := a.waitSnap(t, 90*time.Second, "the first commit applied", func(s *hub.Snapshot) bool {
		return revIs(c1)(s) && statusIs(web, hub.StatusInSync)(s) && statusIs(static, hub.StatusInSync)(s)
	})
	if r, _ := revisionOf(s, "web"); r.Subject != "first" || r.Ref != "refs/heads/main" || r.Error != "" || r.LastFetch.IsZero() {
		t.Errorf("revision: %+v", r)
	}
	if n, _ := s.Node(web); n.Spec == nil || !strings.HasPrefix(n.Spec.Revision, c1) {
		t.Errorf("web's revision: %+v", n.Spec)
	}
	rec := httptest.NewRecorder()
	a.hub.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{
		`driftwatch_source_revision_info{commit="` + c1 + `",source="web"} 1`,
		`driftwatch_source_last_fetch_success_timestamp_seconds{source="web"}`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	k := kubernetes.NewForConfigOrDie(cl.RESTConfig())
	value := func() string {
		cm, err := k.CoreV1().ConfigMaps("default").Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data["value"]
	}
	if v := value(); v != "1" {
		t.Fatalf("web: value %q, want 1", v)
	}
	// waitValue waits until the cluster's web holds want (the snapshot
	// can show the new spec before its apply).
	waitValue := func(want string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for v := value(); v != want; v = value() {
			if time.Now().After(deadline) {
				t.Fatalf("web: value %q, want %s", v, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// The webhook, through the API handler (it needs no bearer token).
	srv := httptest.NewServer(api.Handler(a.hub, api.Options{Tokens: &api.Tokens{}, GitWebhook: a.git.WebhookHandler()}))
	defer srv.Close()
	hook := func(key, after string) int {
		t.Helper()
		body := fmt.Sprintf(`{"ref":"refs/heads/main","after":%q,"repository":{"clone_url":%q}}`, after, repo.HTTPURL())
		m := hmac.New(sha256.New, []byte(key))
		m.Write([]byte(body))
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/webhooks/git", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Gitea-Event", "push")
		req.Header.Set("X-Gitea-Signature", hex.EncodeToString(m.Sum(nil)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}

	// An edit of the file nobody reloaded: a commit must not take it live.
	edited := cfgText + fmt.Sprintf(`applications:
  - id: edited
    namespace: default
    clusters: [%s]
    image: registry.example/edited:1
`, cl.Name)
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	c2 := repo.Commit("second", map[string]string{"deploy/web.yaml": configMapYAML("web", "2")})
	if code := hook("wrong", c2); code != http.StatusUnauthorized {
		t.Errorf("webhook with a wrong secret: %d, want 401", code)
	}
	if code := hook(secret, c2); code != http.StatusAccepted {
		t.Fatalf("webhook: %d, want 202", code)
	}
	a.waitSnap(t, 60*time.Second, "the second commit applied", func(s *hub.Snapshot) bool {
		n, _ := s.Node(web)
		return revIs(c2)(s) && applied(n) && n.Spec != nil && strings.HasPrefix(n.Spec.Revision, c2)
	})
	waitValue("2")
	s = a.waitSnap(t, 30*time.Second, "the feed saying the desired state changed", func(s *hub.Snapshot) bool {
		for _, e := range s.Feed {
			if e.ID == web && e.Who == "desired changed (web@"+c2[:7]+")" {
				return true
			}
		}
		return false
	})
	if n, _ := s.Node(static); n.Spec == nil || !strings.HasPrefix(n.Spec.Revision, c1) {
		t.Errorf("static did not change: its revision should stay the first commit's, got %+v", n.Spec)
	}
	if _, ok := s.Node(hub.NewNodeID(cl.Name, "default", "edited", hub.KindDeployment)); ok {
		t.Errorf("the commit took the unreloaded edit of the config file live")
	}
	if err := os.WriteFile(path, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}

	// A commit that does not render: the second stays in force, stale.
	bad := repo.Commit("broken", map[string]string{"deploy/web.yaml": "kind: [unclosed\n"})
	if code := hook(secret, bad); code != http.StatusAccepted {
		t.Fatalf("webhook: %d, want 202", code)
	}
	s = a.waitSnap(t, 60*time.Second, "the broken commit refused", func(s *hub.Snapshot) bool {
		r, _ := revisionOf(s, "web")
		return r.Commit == c2 && r.Error != "" && len(s.Sources) == 1
	})
	if r, _ := revisionOf(s, "web"); r.Since.IsZero() || !strings.Contains(r.Error, "web.yaml") {
		t.Errorf("stale source: %+v (the broken commit was %s)", r, bad)
	}
	if v := value(); v != "2" {
		t.Errorf("web: value %q while the source is broken, want the last good 2", v)
	}

	// The fix is applied and the source is current again.
	c4 := repo.Commit("fixed", map[string]string{"deploy/web.yaml": configMapYAML("web", "4")})
	if code := hook(secret, c4); code != http.StatusAccepted {
		t.Fatalf("webhook: %d, want 202", code)
	}
	a.waitSnap(t, 60*time.Second, "the fix applied", func(s *hub.Snapshot) bool {
		r, _ := revisionOf(s, "web")
		n, _ := s.Node(web)
		return r.Commit == c4 && r.Error == "" && len(s.Sources) == 0 && applied(n) && n.Spec != nil && strings.HasPrefix(n.Spec.Revision, c4)
	})
	waitValue("4")

	// A commit that would prune every object of the cluster is refused
	// like a reload: the last good revision stays, the source is stale.
	gone := repo.Commit("remove everything", map[string]string{"deploy/web.yaml": "", "deploy/static.yaml": "", "deploy/notes.txt": "nothing here\n"})
	if code := hook(secret, gone); code != http.StatusAccepted {
		t.Fatalf("webhook: %d, want 202", code)
	}
	s = a.waitSnap(t, 60*time.Second, "the pruning commit refused", func(s *hub.Snapshot) bool {
		r, _ := revisionOf(s, "web")
		return r.Commit == c4 && strings.Contains(r.Error, "refused")
	})
	if _, ok := s.Node(static); !ok {
		t.Error("static left the desired state with the refused commit")
	}
	waitValue("4")

	// diff --revision compares the cluster with another ref: in sync at
	// the commit in force, a change on a branch that main does not have. The hub stops
	// first: diff sets client-go's process-wide logger, as the one-shot
	// command it is.
	a.stop()
	repo.CommitBranch("feature", "five", map[string]string{"deploy/web.yaml": configMapYAML("web", "5")})
	diffEnv := func(out *strings.Builder) Env {
		return Env{Getenv: func(string) string { return "" }, Stdout: out, Stderr: tWriter{t}}
	}
	var out strings.Builder
	if err := Diff(t.Context(), DiffOptions{File: path, Output: FormatText, Revision: c4}, diffEnv(&out)); err != nil {
		t.Errorf("diff at the commit in force: %v\n%s", err, out.String())
	}
	out.Reset()
	err := Diff(t.Context(), DiffOptions{File: path, Output: FormatText, Revision: "feature"}, diffEnv(&out))
	if ee := (*ExitError)(nil); !errors.As(err, &ee) || ee.Code != 1 || !strings.Contains(out.String(), "web") {
		t.Errorf("diff --revision feature: %v, want exit 1 naming web:\n%s", err, out.String())
	}
}

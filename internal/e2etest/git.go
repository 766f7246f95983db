package e2etest

import (
	"bytes"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// GitRepo is a bare Git repository served over smart HTTP (git
// http-backend behind net/http/cgi, on loopback) and by file URL, with a
// work clone to commit and push from. It needs the git binary (the test
// scripts install it); without it the test fails.
type GitRepo struct {
	t    testing.TB
	git  string
	home string
	bare string
	work string
	srv  *httptest.Server
}

// NewGitRepo creates an empty repository whose HEAD is main and serves it
// until the test ends.
func NewGitRepo(t testing.TB) *GitRepo {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("this test needs the git binary (scripts/test.sh installs it with apt-get): %v", err)
	}
	dir := t.TempDir()
	r := &GitRepo{t: t, git: git, home: filepath.Join(dir, "home"), work: filepath.Join(dir, "work")}
	root := filepath.Join(dir, "srv")
	r.bare = filepath.Join(root, "repo.git")
	for _, d := range []string{r.home, root, r.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r.run(root, "init", "-q", "--bare", "-b", "main", r.bare)
	r.run(r.work, "init", "-q", "-b", "main")
	r.run(r.work, "remote", "add", "origin", r.bare)
	r.srv = httptest.NewServer(&cgi.Handler{Path: git, Args: []string{"http-backend"},
		Env: append(r.env(), "GIT_PROJECT_ROOT="+root, "GIT_HTTP_EXPORT_ALL=1")})
	t.Cleanup(r.srv.Close)
	return r
}

// env is a hermetic environment for git: no user or system
// configuration, a fixed identity.
func (r *GitRepo) env() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.home, "XDG_CONFIG_HOME=" + filepath.Join(r.home, ".config"),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "GIT_AUTHOR_NAME=Ada Author", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada Author", "GIT_COMMITTER_EMAIL=ada@example.com", "LANG=C"}
}

// run runs git in dir and returns its trimmed output; it fails the test
// when git does.
func (r *GitRepo) run(dir string, args ...string) string {
	r.t.Helper()
	cmd := exec.Command(r.git, args...)
	cmd.Dir, cmd.Env = dir, r.env()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return strings.TrimSpace(out.String())
}

// Commit writes files (path -> content; "" deletes), commits everything
// with msg, pushes main and returns the commit's SHA.
func (r *GitRepo) Commit(msg string, files map[string]string) string {
	r.t.Helper()
	r.write(files)
	r.run(r.work, "add", "-A")
	r.run(r.work, "commit", "-q", "--allow-empty", "-m", msg)
	r.run(r.work, "push", "-q", "origin", "main")
	return r.run(r.work, "rev-parse", "HEAD")
}

// write writes files (path -> content; "" deletes) into the work clone.
func (r *GitRepo) write(files map[string]string) {
	r.t.Helper()
	for name, content := range files {
		p := filepath.Join(r.work, filepath.FromSlash(name))
		if content == "" {
			if err := os.Remove(p); err != nil {
				r.t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
}

// CommitBranch commits files on top of the work clone's HEAD, pushes the
// commit as branch (forced), returns its SHA and moves the work clone back
// to where it was: main does not get it.
func (r *GitRepo) CommitBranch(branch, msg string, files map[string]string) string {
	r.t.Helper()
	r.write(files)
	r.run(r.work, "add", "-A")
	r.run(r.work, "commit", "-q", "--allow-empty", "-m", msg)
	r.run(r.work, "push", "-q", "-f", "origin", "HEAD:refs/heads/"+branch)
	sha := r.run(r.work, "rev-parse", "HEAD")
	r.run(r.work, "reset", "-q", "--hard", "HEAD~1")
	return sha
}

// HTTPURL is the repository's smart-HTTP URL; FileURL its file URL.
func (r *GitRepo) HTTPURL() string { return r.srv.URL + "/repo.git" }

// FileURL is the repository's file:// URL.
func (r *GitRepo) FileURL() string { return "file://" + r.bare }

// ForcePush moves main back to commit (one of its ancestors) with a forced
// push, as when a bad merge is taken back by rewriting the branch.
func (r *GitRepo) ForcePush(commit string) {
	r.t.Helper()
	r.run(r.work, "reset", "-q", "--hard", commit)
	r.run(r.work, "push", "-q", "-f", "origin", "main")
}

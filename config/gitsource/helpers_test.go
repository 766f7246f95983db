package gitsource

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/testwait"
)

// gitBinary returns the path of the git binary the tests build and serve
// repositories with. The tests fail without it: scripts/test.sh installs
// it.
func gitBinary(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("these tests need the git binary (scripts/test.sh installs it with apt-get): %v", err)
	}
	return p
}

// gitEnv is a hermetic environment for the git binary: no user or system
// configuration, a fixed identity.
func gitEnv(home string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Ada Author",
		"GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada Author",
		"GIT_COMMITTER_EMAIL=ada@example.com",
		"LANG=C",
	}
}

// fixture is a bare repository (served over HTTP and file://) and a work
// clone to commit and push from.
type fixture struct {
	t    testing.TB
	git  string
	home string
	root string // the folder of bare repositories (GIT_PROJECT_ROOT)
	bare string // root/repo.git
	work string
}

// newFixture creates an empty bare repository whose HEAD is main, and a
// work repository whose origin it is.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{
		t:    t,
		git:  gitBinary(t),
		home: filepath.Join(dir, "home"),
		root: filepath.Join(dir, "srv"),
		work: filepath.Join(dir, "work"),
	}
	f.bare = filepath.Join(f.root, "repo.git")
	for _, d := range []string{f.home, f.root, f.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.run(f.root, "init", "-q", "--bare", "-b", "main", f.bare)
	f.run(f.work, "init", "-q", "-b", "main")
	f.run(f.work, "remote", "add", "origin", f.bare)
	return f
}

// run runs git in dir and returns its trimmed output; it fails the test
// when git does.
func (f *fixture) run(dir string, args ...string) string {
	f.t.Helper()
	out, err := f.try(dir, args...)
	if err != nil {
		f.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// try runs git in dir and returns its output and error.
func (f *fixture) try(dir string, args ...string) (string, error) {
	cmd := exec.Command(f.git, args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(f.home)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

// write writes files (path -> content; "" deletes) into the work tree.
func (f *fixture) write(files map[string]string) {
	f.t.Helper()
	for name, content := range files {
		p := filepath.Join(f.work, filepath.FromSlash(name))
		if content == "" {
			if err := os.Remove(p); err != nil {
				f.t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
}

// commit writes files, commits everything and returns the commit's SHA.
func (f *fixture) commit(msg string, files map[string]string) string {
	f.t.Helper()
	f.write(files)
	f.run(f.work, "add", "-A")
	f.run(f.work, "commit", "-q", "--allow-empty", "-m", msg)
	return f.run(f.work, "rev-parse", "HEAD")
}

// push pushes the work repository's main (or the given refspecs) to the
// bare repository.
func (f *fixture) push(refspecs ...string) {
	f.t.Helper()
	if len(refspecs) == 0 {
		refspecs = []string{"main"}
	}
	f.run(f.work, append([]string{"push", "-q", "origin"}, refspecs...)...)
}

// fileURL is the bare repository's file:// URL.
func (f *fixture) fileURL() string { return "file://" + f.bare }

// gitServer serves a folder of bare repositories over smart HTTP with
// git http-backend, on loopback, optionally behind HTTP basic
// authentication. It counts the upload-pack requests (pack downloads) and
// their response bytes. It can be stopped and started again on the same
// address.
type gitServer struct {
	t       testing.TB
	handler http.Handler
	addr    string

	mu  sync.Mutex
	srv *http.Server
	wg  sync.WaitGroup

	uploadPacks atomic.Int64
	packBytes   atomic.Int64
}

// startGitServer serves f's repositories; user and pass, when set, are
// required with basic authentication.
func startGitServer(t testing.TB, f *fixture, user, pass string) *gitServer {
	t.Helper()
	s := &gitServer{t: t}
	backend := &cgi.Handler{
		Path: f.git,
		Args: []string{"http-backend"},
		Env: append(gitEnv(f.home),
			"GIT_PROJECT_ROOT="+f.root,
			"GIT_HTTP_EXPORT_ALL=1",
		),
	}
	s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user != "" {
			u, p, ok := r.BasicAuth()
			if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(pass)) != 1 {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			s.uploadPacks.Add(1)
			cw := &countingWriter{ResponseWriter: w}
			backend.ServeHTTP(cw, r)
			s.packBytes.Add(cw.n)
			return
		}
		backend.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	s.serve(ln)
	t.Cleanup(s.stop)
	return s
}

// serve serves on ln in a goroutine that stop waits for.
func (s *gitServer) serve(ln net.Listener) {
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.t.Errorf("git server: %v", err)
		}
	}()
}

// stop closes the server and its connections.
func (s *gitServer) stop() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
	s.wg.Wait()
}

// restart serves again on the same address.
func (s *gitServer) restart() {
	s.t.Helper()
	var ln net.Listener
	testwait.For(s.t, time.Second, "listening again on "+s.addr, func() (err error) {
		ln, err = net.Listen("tcp", s.addr)
		return err
	})
	s.serve(ln)
}

// url is the HTTP URL of the bare repository name.
func (s *gitServer) url(name string) string { return "http://" + s.addr + "/" + name }

// countingWriter counts the bytes of a response.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

// fetchOK fetches and fails the test on error.
func fetchOK(t testing.TB, r *Repo) Revision {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rev, err := r.Fetch(ctx)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	return rev
}

// openOK opens a Repo and fails the test on error.
func openOK(t testing.TB, opts Options) *Repo {
	t.Helper()
	r, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return r
}

// readTree reads a file of a checked-out tree through SafePath.
func readTree(t testing.TB, dir, rel string) string {
	t.Helper()
	p, err := SafePath(dir, rel)
	if err != nil {
		t.Fatalf("SafePath(%s): %v", rel, err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	return string(b)
}

// writeFile writes a file for a test (credentials, keys) with mode 0600.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// trees lists the checked-out trees of a cache.
func trees(t testing.TB, cacheDir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(cacheDir, treesDir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// startSilentServer accepts connections on loopback and never answers;
// it returns its address. Its goroutines end when the test does.
func startSilentServer(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

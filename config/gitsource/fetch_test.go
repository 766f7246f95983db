package gitsource

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFetchRefs fetches a branch (short and full), the remote's HEAD, an
// annotated and a lightweight tag (short and full), and a commit SHA, over
// smart HTTP and file://, and checks each tree holds that commit's files.
func TestFetchRefs(t *testing.T) {
	f := newFixture(t)
	c1 := f.commit("first", map[string]string{"app/deploy.yaml": "v: 1\n", "README": "one\n"})
	f.run(f.work, "tag", "-a", "-m", "release one", "v1", c1)
	f.run(f.work, "tag", "light", c1)
	c2 := f.commit("second\n\nbody", map[string]string{"app/deploy.yaml": "v: 2\n"})
	f.run(f.work, "branch", "other", c1)
	f.push("main", "other", "v1", "light")
	srv := startGitServer(t, f, "", "")

	cases := []struct {
		ref, commit, wantRef, deploy string
	}{
		{"main", c2, "refs/heads/main", "v: 2\n"},
		{"refs/heads/main", c2, "refs/heads/main", "v: 2\n"},
		{"", c2, "refs/heads/main", "v: 2\n"},
		{"other", c1, "refs/heads/other", "v: 1\n"},
		{"v1", c1, "refs/tags/v1", "v: 1\n"},
		{"refs/tags/v1", c1, "refs/tags/v1", "v: 1\n"},
		{"light", c1, "refs/tags/light", "v: 1\n"},
		{c1, c1, c1, "v: 1\n"},
		{strings.ToUpper(c2), c2, c2, "v: 2\n"},
	}
	for _, transport := range []string{"http", "file"} {
		for _, tc := range cases {
			t.Run(transport+"/"+tc.ref, func(t *testing.T) {
				u := srv.url("repo.git")
				if transport == "file" {
					u = f.fileURL()
				}
				r := openOK(t, Options{URL: u, Ref: tc.ref, CacheDir: t.TempDir()})
				rev := fetchOK(t, r)
				if rev.Commit != tc.commit || rev.Ref != tc.wantRef {
					t.Fatalf("got commit %s ref %s, want %s %s", rev.Commit, rev.Ref, tc.commit, tc.wantRef)
				}
				if got := readTree(t, rev.Dir, "app/deploy.yaml"); got != tc.deploy {
					t.Errorf("app/deploy.yaml = %q, want %q", got, tc.deploy)
				}
				if got := readTree(t, rev.Dir, "README"); got != "one\n" {
					t.Errorf("README = %q", got)
				}
				if filepath.Base(rev.Dir) != tc.commit {
					t.Errorf("Dir %s is not named after the commit", rev.Dir)
				}
				if rev.Author != "Ada Author <ada@example.com>" || rev.Time.IsZero() {
					t.Errorf("author %q time %v", rev.Author, rev.Time)
				}
				wantMsg := map[string]string{c1: "first", c2: "second"}[tc.commit]
				if rev.Message != wantMsg {
					t.Errorf("message %q, want %q", rev.Message, wantMsg)
				}
				if transport == "file" && rev.Downloaded != 0 {
					t.Errorf("a file URL downloaded %d bytes", rev.Downloaded)
				}
				if transport == "http" && rev.Downloaded == 0 {
					t.Errorf("the first fetch over http downloaded nothing")
				}
			})
		}
	}
}

// TestFetchShallowAndCached checks that a fetch is shallow (the cache holds
// the fetched commit but not its parent), that a second Fetch with nothing
// new, and a Fetch by a new Repo on the same cache (a restart), download no
// pack, that a pushed commit is fetched, and that only the current and the
// previous trees are kept.
func TestFetchShallowAndCached(t *testing.T) {
	f := newFixture(t)
	var commits []string
	for i := range 3 {
		commits = append(commits, f.commit("c"+string(rune('0'+i)), map[string]string{"n": strings.Repeat("x", i+1)}))
	}
	f.push()
	srv := startGitServer(t, f, "", "")
	cache := t.TempDir()
	opts := Options{URL: srv.url("repo.git"), Ref: "main", CacheDir: cache}
	r := openOK(t, opts)

	rev1 := fetchOK(t, r)
	if rev1.Commit != commits[2] {
		t.Fatalf("commit %s, want %s", rev1.Commit, commits[2])
	}
	if n := srv.uploadPacks.Load(); n != 1 {
		t.Fatalf("%d pack requests, want 1", n)
	}
	shallow, err := os.ReadFile(filepath.Join(cache, repoDir, "shallow"))
	if err != nil || strings.TrimSpace(string(shallow)) != commits[2] {
		t.Fatalf("shallow file = %q (%v), want the fetched commit only", shallow, err)
	}
	if out, err := f.try(filepath.Join(cache, repoDir), "cat-file", "-e", commits[1]); err == nil {
		t.Fatalf("the cache holds the parent commit: not a shallow fetch (%s)", out)
	}

	rev2 := fetchOK(t, r)
	if rev2.Commit != rev1.Commit || rev2.Dir != rev1.Dir || rev2.Downloaded != 0 {
		t.Fatalf("second fetch: %+v", rev2)
	}
	if n := srv.uploadPacks.Load(); n != 1 {
		t.Fatalf("a fetch with nothing new asked for a pack (%d pack requests)", n)
	}
	r2 := openOK(t, opts)
	rev3 := fetchOK(t, r2)
	if rev3.Commit != rev1.Commit || rev3.Downloaded != 0 || srv.uploadPacks.Load() != 1 {
		t.Fatalf("after a restart: %+v, %d pack requests", rev3, srv.uploadPacks.Load())
	}

	before := srv.packBytes.Load()
	c4 := f.commit("c4", map[string]string{"new.yaml": "a: b\n"})
	f.push()
	rev4 := fetchOK(t, r2)
	if rev4.Commit != c4 || rev4.Downloaded == 0 {
		t.Fatalf("after a push: %+v", rev4)
	}
	if got := readTree(t, rev4.Dir, "new.yaml"); got != "a: b\n" {
		t.Fatalf("new.yaml = %q", got)
	}
	if sent := srv.packBytes.Load() - before; sent > 4096 {
		t.Errorf("an incremental fetch of one small commit took %d bytes", sent)
	}
	if got := trees(t, cache); !slices.Equal(got, sorted(commits[2], c4)) {
		t.Fatalf("trees %v, want the previous and current", got)
	}
	c5 := f.commit("c5", map[string]string{"n": "5"})
	f.push()
	rev5 := fetchOK(t, r2)
	if rev5.Commit != c5 {
		t.Fatalf("commit %s, want %s", rev5.Commit, c5)
	}
	if got := trees(t, cache); !slices.Equal(got, sorted(c4, c5)) {
		t.Fatalf("trees %v, want %s and %s only", got, c4, c5)
	}
	if _, err := os.Stat(rev1.Dir); !os.IsNotExist(err) {
		t.Fatalf("the oldest tree is still there: %v", err)
	}
}

// sorted returns its arguments sorted.
func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}

// TestFetchForcePush moves the branch to a commit that does not descend
// from the fetched one: the new commit is taken.
func TestFetchForcePush(t *testing.T) {
	f := newFixture(t)
	base := f.commit("base", map[string]string{"f": "base"})
	old := f.commit("old", map[string]string{"f": "old"})
	f.push()
	srv := startGitServer(t, f, "", "")
	for _, u := range []string{srv.url("repo.git"), f.fileURL()} {
		r := openOK(t, Options{URL: u, Ref: "main", CacheDir: t.TempDir()})
		if rev := fetchOK(t, r); rev.Commit != old {
			t.Fatalf("%s: commit %s, want %s", u, rev.Commit, old)
		}
		f.run(f.work, "reset", "-q", "--hard", base)
		rewritten := f.commit("rewritten "+u, map[string]string{"f": "rewritten"})
		f.push("--force", "main")
		rev := fetchOK(t, r)
		if rev.Commit != rewritten {
			t.Fatalf("%s: after a force-push: commit %s, want %s", u, rev.Commit, rewritten)
		}
		if got := readTree(t, rev.Dir, "f"); got != "rewritten" {
			t.Fatalf("%s: f = %q", u, got)
		}
		f.run(f.work, "reset", "-q", "--hard", old)
		f.push("--force", "main")
	}
}

// TestFetchDeletedBranch deletes the fetched branch: Fetch fails with
// ErrRefNotFound naming the URL and the ref, and the last good tree stays.
func TestFetchDeletedBranch(t *testing.T) {
	f := newFixture(t)
	f.commit("main", map[string]string{"f": "main"})
	f.push()
	f.run(f.work, "checkout", "-q", "-b", "feature")
	c := f.commit("feature", map[string]string{"f": "feature"})
	f.push("feature")
	srv := startGitServer(t, f, "", "")
	for _, u := range []string{srv.url("repo.git"), f.fileURL()} {
		f.push("feature")
		r := openOK(t, Options{URL: u, Ref: "feature", CacheDir: t.TempDir()})
		rev := fetchOK(t, r)
		if rev.Commit != c {
			t.Fatalf("commit %s, want %s", rev.Commit, c)
		}
		f.push("--delete", "feature")
		_, err := r.Fetch(t.Context())
		if !errors.Is(err, ErrRefNotFound) {
			t.Fatalf("%s: Fetch of a deleted branch: %v, want ErrRefNotFound", u, err)
		}
		for _, want := range []string{u, "ref feature", "neither a branch nor a tag"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		if got := readTree(t, rev.Dir, "f"); got != "feature" {
			t.Fatalf("the last good tree is gone or changed: %q", got)
		}
	}
	r := openOK(t, Options{URL: srv.url("repo.git"), Ref: "refs/heads/nope", CacheDir: t.TempDir()})
	if _, err := r.Fetch(t.Context()); !errors.Is(err, ErrRefNotFound) || !strings.Contains(err.Error(), "refs/heads/nope is not on the server") {
		t.Fatalf("missing full ref: %v", err)
	}
	r = openOK(t, Options{URL: srv.url("missing.git"), CacheDir: t.TempDir()})
	if _, err := r.Fetch(t.Context()); err == nil || !strings.Contains(err.Error(), "missing.git") {
		t.Fatalf("missing repository: %v", err)
	}
}

// TestFetchCommitSHA fetches commits that no ref names, from a server that
// allows it (a depth-1 fetch by SHA) and from one that does not (every
// branch and tag, whole); a cached pinned commit needs no server.
func TestFetchCommitSHA(t *testing.T) {
	f := newFixture(t)
	old := f.commit("old", map[string]string{"f": "old"})
	f.commit("new", map[string]string{"f": "new"})
	f.push()
	srv := startGitServer(t, f, "", "")
	for _, allow := range []bool{true, false} {
		f.run(f.bare, "config", "uploadpack.allowReachableSHA1InWant", map[bool]string{true: "true", false: "false"}[allow])
		cache := t.TempDir()
		r := openOK(t, Options{URL: srv.url("repo.git"), Ref: old, CacheDir: cache})
		rev := fetchOK(t, r)
		if rev.Commit != old || readTree(t, rev.Dir, "f") != "old" {
			t.Fatalf("allow=%v: %+v", allow, rev)
		}
		_, err := os.Stat(filepath.Join(cache, repoDir, "shallow"))
		if allow && err != nil {
			t.Errorf("a server that allows any reachable SHA should give a shallow fetch: %v", err)
		}
	}
	srv.stop()
	r := openOK(t, Options{URL: srv.url("repo.git"), Ref: old, CacheDir: t.TempDir()})
	if _, err := r.Fetch(t.Context()); err == nil {
		t.Fatal("a fetch from a stopped server succeeded")
	}
	srv.restart()
	fetchOK(t, r)
	srv.stop()
	if rev := fetchOK(t, r); rev.Commit != old {
		t.Fatalf("cached pinned commit: %+v", rev)
	}
	srv.restart()

	missing := strings.Repeat("ab", 20)
	r = openOK(t, Options{URL: srv.url("repo.git"), Ref: missing, CacheDir: t.TempDir()})
	if _, err := r.Fetch(t.Context()); !errors.Is(err, ErrRefNotFound) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("unknown commit: %v", err)
	}
}

// TestFetchServerDownThenBack stops the server: Fetch fails, naming the
// URL, and the last good tree stays; once it is back, Fetch takes the
// commit pushed meanwhile.
func TestFetchServerDownThenBack(t *testing.T) {
	f := newFixture(t)
	f.commit("one", map[string]string{"f": "one"})
	f.push()
	srv := startGitServer(t, f, "", "")
	r := openOK(t, Options{URL: srv.url("repo.git"), Ref: "main", CacheDir: t.TempDir(), Timeout: 10 * time.Second})
	rev := fetchOK(t, r)
	srv.stop()
	c2 := f.commit("two", map[string]string{"f": "two"})
	f.push()
	_, err := r.Fetch(t.Context())
	if err == nil || !strings.Contains(err.Error(), srv.url("repo.git")) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Fetch from a stopped server: %v", err)
	}
	if readTree(t, rev.Dir, "f") != "one" {
		t.Fatal("the last good tree changed")
	}
	srv.restart()
	if rev := fetchOK(t, r); rev.Commit != c2 {
		t.Fatalf("after the restart: commit %s, want %s", rev.Commit, c2)
	}
}

// TestFetchTimeout points a Repo at a server that accepts connections and
// never answers: Fetch gives up after Options.Timeout and says so.
func TestFetchTimeout(t *testing.T) {
	srv := startSilentServer(t)
	r := openOK(t, Options{URL: "http://" + srv + "/repo.git", CacheDir: t.TempDir(), Timeout: 300 * time.Millisecond})
	start := time.Now()
	_, err := r.Fetch(t.Context())
	if err == nil || !strings.Contains(err.Error(), "timed out after 300ms") || !strings.Contains(err.Error(), srv) {
		t.Fatalf("Fetch from a silent server: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the timeout took %v", d)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := r.Fetch(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Fetch with a cancelled context: %v", err)
	}
}

// TestFetchCacheDirOfAnotherURL opens a cache that another URL filled: it
// is emptied, not mixed with the new repository's.
func TestFetchCacheDirOfAnotherURL(t *testing.T) {
	a, b := newFixture(t), newFixture(t)
	ca := a.commit("a", map[string]string{"f": "a"})
	a.push()
	cb := b.commit("b", map[string]string{"f": "b"})
	b.push()
	cache := t.TempDir()
	if rev := fetchOK(t, openOK(t, Options{URL: a.fileURL(), CacheDir: cache})); rev.Commit != ca {
		t.Fatalf("a: %+v", rev)
	}
	rev := fetchOK(t, openOK(t, Options{URL: b.fileURL(), CacheDir: cache}))
	if rev.Commit != cb || readTree(t, rev.Dir, "f") != "b" {
		t.Fatalf("b: %+v", rev)
	}
	if got := trees(t, cache); !slices.Equal(got, []string{cb}) {
		t.Fatalf("trees %v, want b's only", got)
	}
	if err := os.WriteFile(filepath.Join(cache, stateFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if rev := fetchOK(t, openOK(t, Options{URL: b.fileURL(), CacheDir: cache})); rev.Commit != cb {
		t.Fatalf("after a damaged state file: %+v", rev)
	}
}

// TestFetchBoundsPacks pushes and fetches more commits than the cache
// keeps packs for: the cache is emptied and refilled, fetching goes on.
func TestFetchBoundsPacks(t *testing.T) {
	f := newFixture(t)
	f.commit("0", map[string]string{"f": "0"})
	f.push()
	srv := startGitServer(t, f, "", "")
	cache := t.TempDir()
	r := openOK(t, Options{URL: srv.url("repo.git"), Ref: "main", CacheDir: cache})
	r.maxPacks = 3
	fetchOK(t, r)
	for i := range 6 {
		c := f.commit("n", map[string]string{"f": strings.Repeat("n", i+1)})
		f.push()
		rev := fetchOK(t, r)
		if rev.Commit != c || readTree(t, rev.Dir, "f") != strings.Repeat("n", i+1) {
			t.Fatalf("fetch %d: %+v", i, rev)
		}
		packs, err := filepath.Glob(filepath.Join(cache, repoDir, "objects", "pack", "*.pack"))
		if err != nil || len(packs) == 0 || len(packs) > 3 {
			t.Fatalf("fetch %d: %d packs (%v), want 1 to 3", i, len(packs), err)
		}
	}
}

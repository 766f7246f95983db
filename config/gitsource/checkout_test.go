package gitsource

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// rawEntry is one entry of a tree built object by object, so that tests
// can make trees git itself would not: names like ".." or ".git", links
// leading out, duplicates.
type rawEntry struct {
	name    string
	mode    filemode.FileMode
	content string     // a blob's content, or a link's target
	sub     []rawEntry // a folder's entries
}

// rawCommit writes the tree of entries and a commit of it into f's bare
// repository, points main at it, and returns the commit.
func rawCommit(t testing.TB, f *fixture, entries []rawEntry) string {
	t.Helper()
	repo, err := git.PlainOpen(f.bare)
	if err != nil {
		t.Fatal(err)
	}
	st := repo.Storer
	tree := rawTree(t, st, entries)
	sig := object.Signature{Name: "Mallory", Email: "mallory@example.com", When: time.Now()}
	c := &object.Commit{Author: sig, Committer: sig, Message: "hostile\n", TreeHash: tree}
	obj := st.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		t.Fatal(err)
	}
	h, err := st.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetReference(plumbing.NewHashReference("refs/heads/main", h)); err != nil {
		t.Fatal(err)
	}
	return h.String()
}

// rawTree writes entries as a tree object and returns its hash.
func rawTree(t testing.TB, st storer.EncodedObjectStorer, entries []rawEntry) plumbing.Hash {
	t.Helper()
	var tree object.Tree
	for _, e := range entries {
		var h plumbing.Hash
		if e.mode == filemode.Dir {
			h = rawTree(t, st, e.sub)
		} else {
			obj := st.NewEncodedObject()
			obj.SetType(plumbing.BlobObject)
			w, err := obj.Writer()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write([]byte(e.content)); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if h, err = st.SetEncodedObject(obj); err != nil {
				t.Fatal(err)
			}
		}
		tree.Entries = append(tree.Entries, object.TreeEntry{Name: e.name, Mode: e.mode, Hash: h})
	}
	sort.Stable(object.TreeEntrySorter(tree.Entries))
	obj := st.NewEncodedObject()
	if err := tree.Encode(obj); err != nil {
		t.Fatal(err)
	}
	h, err := st.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestFetchRefusesHostileTrees serves trees with entries that must not be
// written, over file:// (and some over HTTP): each Fetch fails naming the commit and
// the entry, no half-written tree is left, and the last good tree stays.
func TestFetchRefusesHostileTrees(t *testing.T) {
	f := newFixture(t)
	good := f.commit("good", map[string]string{"app/deploy.yaml": "ok\n"})
	f.push()
	srv := startGitServer(t, f, "", "")
	file := func(name, content string) rawEntry {
		return rawEntry{name: name, mode: filemode.Regular, content: content}
	}
	link := func(name, target string) rawEntry {
		return rawEntry{name: name, mode: filemode.Symlink, content: target}
	}
	dir := func(name string, sub ...rawEntry) rawEntry { return rawEntry{name: name, mode: filemode.Dir, sub: sub} }

	cases := []struct {
		name    string
		entries []rawEntry
		want    string
		is      error
		http    bool // also over HTTP (the checkout is the same code)
	}{
		{"dot dot", []rawEntry{file("..", "x")}, `entry "..": not a file name`, nil, false},
		{"dot git", []rawEntry{dir(".git", file("config", "[core]"))}, `entry ".git": a .git entry`, nil, true},
		{"dot GIT", []rawEntry{dir("sub", dir(".GIT.", file("hooks", "x")))}, `sub: entry ".GIT.": a .git entry`, nil, false},
		{"slash", []rawEntry{file("a/b", "x")}, "a slash", nil, false},
		{"backslash", []rawEntry{file(`..\x`, "x")}, "backslash", nil, false},
		{"link up", []rawEntry{link("escape", "../../../../etc/passwd")}, `escape is a symbolic link to "../../../../etc/passwd", which leads out of the tree`, ErrUnsafePath, true},
		{"absolute link", []rawEntry{link("abs", "/etc/passwd")}, `abs is a symbolic link to the absolute path "/etc/passwd"`, ErrUnsafePath, false},
		{"link chain", []rawEntry{dir("d", link("s", "..")), link("e", "d/s/..")}, "e is a symbolic link", ErrUnsafePath, false},
		{"link loop", []rawEntry{link("l1", "l2"), link("l2", "l1")}, "leads out of the tree", ErrUnsafePath, false},
		{"duplicate", []rawEntry{file("a", "1"), file("a", "2")}, "file exists", nil, false},
		{"write through a link", []rawEntry{link("x", "../.."), dir("x", file("pwned", "x"))}, "file exists", nil, false},
	}
	for _, tc := range cases {
		urls := []string{f.fileURL()}
		if tc.http {
			urls = append(urls, srv.url("repo.git"))
		}
		for _, u := range urls {
			t.Run(tc.name+"/"+u[:4], func(t *testing.T) {
				f.run(f.bare, "update-ref", "refs/heads/main", good)
				cache := t.TempDir()
				r := openOK(t, Options{URL: u, Ref: "main", CacheDir: cache})
				last := fetchOK(t, r)
				c := rawCommit(t, f, tc.entries)
				_, err := r.Fetch(t.Context())
				if err == nil || !strings.Contains(err.Error(), "commit "+c) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one naming commit %s and saying %q", err, c, tc.want)
				}
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Fatalf("error %v is not %v", err, tc.is)
				}
				if got := trees(t, cache); len(got) != 1 || got[0] != good {
					t.Fatalf("trees %v, want the last good one only", got)
				}
				if readTree(t, last.Dir, "app/deploy.yaml") != "ok\n" {
					t.Fatal("the last good tree changed")
				}
				if _, err := os.Lstat(filepath.Join(filepath.Dir(cache), "pwned")); err == nil {
					t.Fatal("a file was written outside the tree")
				}
			})
		}
	}
}

// TestFetchWritesLinksInsideTheTree checks that links that stay inside the
// tree are written as links, that SafePath follows them, and that files
// are read-only with their executable bit.
func TestFetchWritesLinksInsideTheTree(t *testing.T) {
	f := newFixture(t)
	rawCommit(t, f, []rawEntry{
		{name: "app", mode: filemode.Dir, sub: []rawEntry{
			{name: "deploy.yaml", mode: filemode.Regular, content: "kind: Deployment\n"},
			{name: "up", mode: filemode.Symlink, content: ".."},
		}},
		{name: "current", mode: filemode.Symlink, content: "app/deploy.yaml"},
		{name: "run.sh", mode: filemode.Executable, content: "#!/bin/sh\n"},
		{name: "vendor", mode: filemode.Submodule, content: ""},
	})
	r := openOK(t, Options{URL: f.fileURL(), CacheDir: t.TempDir()})
	rev := fetchOK(t, r)
	target, err := os.Readlink(filepath.Join(rev.Dir, "current"))
	if err != nil || target != "app/deploy.yaml" {
		t.Fatalf("current: %q, %v", target, err)
	}
	if got := readTree(t, rev.Dir, "current"); got != "kind: Deployment\n" {
		t.Fatalf("through the link: %q", got)
	}
	if got := readTree(t, rev.Dir, "app/up/app/up/current"); got != "kind: Deployment\n" {
		t.Fatalf("through links up and down: %q", got)
	}
	for name, want := range map[string]os.FileMode{"app/deploy.yaml": 0o444, "run.sh": 0o555} {
		fi, err := os.Stat(filepath.Join(rev.Dir, name))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", name, fi.Mode().Perm(), err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(rev.Dir, "vendor")); err != nil || !fi.IsDir() {
		t.Errorf("the submodule is not an empty folder: %v", err)
	}
}

// TestFetchSizeLimits checks MaxFiles, MaxBytes on the checkout (a small
// pack of compressible content), MaxObjectBytes (from MaxBytes) on the
// pack's objects and MaxBytes on the pack (incompressible content), and
// that a commit within the limits is fetched afterwards.
func TestFetchSizeLimits(t *testing.T) {
	f := newFixture(t)
	good := f.commit("small", map[string]string{"f": "small"})
	f.push()
	srv := startGitServer(t, f, "", "")
	files := map[string]string{}
	for i := range 20 {
		files["many/"+string(rune('a'+i))] = "x"
	}
	zeros := map[string]string{} // one 64 KiB blob, checked out eight times
	for i := range 8 {
		zeros[fmt.Sprintf("z%d", i)] = strings.Repeat("\x00", 64<<10)
	}
	random := make([]byte, 96<<10)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		files map[string]string
		opts  Options
		want  string
	}{
		{"files", files, Options{MaxFiles: 12}, "more than 12 files (maxFiles)"},
		{"checkout bytes", zeros, Options{MaxBytes: 128 << 10}, "the files are larger than 131072 bytes (maxBytes; z1 alone has 65536)"},
		{"object bytes", map[string]string{"zeros": strings.Repeat("\x00", 512<<10)}, Options{MaxBytes: 128 << 10}, "a blob object of 524288 bytes, more than 131072 (maxObjectBytes)"},
		{"pack bytes", map[string]string{"random": string(random)}, Options{MaxBytes: 64 << 10}, "the pack is larger than 65536 bytes (maxBytes)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.run(f.work, "reset", "-q", "--hard", good)
			f.push("--force", "main")
			opts := tc.opts
			opts.URL, opts.CacheDir = srv.url("repo.git"), t.TempDir()
			r := openOK(t, opts)
			fetchOK(t, r)
			c := f.commit("big", tc.files)
			f.push()
			_, err := r.Fetch(t.Context())
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrTooLarge saying %q", err, tc.want)
			}
			if tc.name != "pack bytes" && tc.name != "object bytes" && !strings.Contains(err.Error(), "commit "+c) {
				t.Fatalf("error %v does not name commit %s", err, c)
			}
			if got := trees(t, opts.CacheDir); len(got) != 1 || got[0] != good {
				t.Fatalf("trees %v, want the last good one only", got)
			}
			leftovers, _ := filepath.Glob(filepath.Join(opts.CacheDir, tmpPrefix+"*"))
			if len(leftovers) != 0 {
				t.Fatalf("temporary files left: %v", leftovers)
			}
			f.run(f.work, "reset", "-q", "--hard", good)
			ok := f.commit("small again", map[string]string{"f": "small again"})
			f.push("--force", "main")
			if rev := fetchOK(t, r); rev.Commit != ok {
				t.Fatalf("after the refusal: commit %s, want %s", rev.Commit, ok)
			}
		})
	}
}

// TestSafePath checks SafePath on a folder with links inside and out.
func TestSafePath(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "tree")
	for _, d := range []string{"tree/sub", "tree/d", "outside"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, dir, "sub/file", "in")
	writeFile(t, root, "outside/secret", "out")
	links := map[string]string{
		"out":     "../outside/secret",
		"outdir":  "../outside",
		"abs":     filepath.Join(root, "outside/secret"),
		"in":      "sub/file",
		"d/s":     "..",
		"e":       "d/s/..",
		"l1":      "l2",
		"l2":      "l1",
		"sub/up":  "../sub/./file",
		"rel2abs": "sub/../abs",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	ok := map[string]string{
		"sub/file":          "sub/file",
		"./sub//file":       "sub/file",
		"sub/../sub/file":   "sub/file",
		"in":                "sub/file",
		"d/s/sub/file":      "sub/file",
		"d/s/in":            "sub/file",
		"sub/up":            "sub/file",
		"new/file":          "new/file",
		"new/../sub/file":   "sub/file",
		`sub\file`:          "sub/file",
		"sub/file/../file2": "sub/file2",
	}
	if filepath.Separator != '\\' {
		delete(ok, `sub\file`)
	}
	for rel, want := range ok {
		got, err := SafePath(dir, rel)
		if err != nil || got != filepath.Join(dir, filepath.FromSlash(want)) {
			t.Errorf("SafePath(%q) = %q, %v; want %s", rel, got, err, want)
		}
	}
	for _, rel := range []string{
		"../x", "sub/../../x", "..", "/etc/passwd", "", "out", "outdir/secret", "abs", "e", "e/tree/sub/file",
		"d/s/..", "l1", "rel2abs", "x\x00y",
	} {
		if got, err := SafePath(dir, rel); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("SafePath(%q) = %q, %v; want ErrUnsafePath", rel, got, err)
		}
	}
}

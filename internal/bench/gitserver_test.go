package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/config/gitsource"
)

// TestGitServerServesClone: the in-process server serves a first fetch
// (clone) of a repository to driftwatch's own fetcher (go-git's client
// over smart HTTP), counts its traffic, answers a fetch with nothing new
// with the advertisement alone, and after a push sends only the new
// objects (it takes the client's haves).
func TestGitServerServesClone(t *testing.T) {
	s, err := startGitServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	}()
	r, err := s.create("repo.git")
	if err != nil {
		t.Fatal(err)
	}
	files := gitFiles(30, "1")
	h1, err := r.commit(files, "first")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := gitsource.Open(gitsource.Options{URL: s.URL("repo.git"), Ref: "main", CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := repo.Fetch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	clone := r.traffic()
	if rev.Commit != h1.String() || rev.Downloaded <= 0 || clone.Adverts != 1 || clone.Packs != 1 || clone.Sent <= rev.Downloaded || clone.Received <= 0 {
		t.Fatalf("clone: revision %+v, traffic %+v, want commit %s", rev, clone, h1)
	}
	for p, want := range files {
		got, err := os.ReadFile(filepath.Join(rev.Dir, p))
		if err != nil || string(got) != want {
			t.Errorf("%s: %q (%v), want %q", p, got, err, want)
		}
	}

	rev, err = repo.Fetch(t.Context())
	noop := r.traffic().sub(clone)
	if err != nil || rev.Commit != h1.String() || noop.Adverts != 1 || noop.Packs != 0 || noop.Sent <= 0 {
		t.Fatalf("fetch with nothing new: %+v (%v), traffic %+v", rev, err, noop)
	}

	h2, err := r.commit(gitFiles(30, "2"), "second")
	if err != nil {
		t.Fatal(err)
	}
	before := r.traffic()
	rev, err = repo.Fetch(t.Context())
	push := r.traffic().sub(before)
	if err != nil || rev.Commit != h2.String() || push.Packs != 1 || rev.Downloaded <= 0 || rev.Downloaded >= clone.Sent {
		t.Fatalf("fetch after a push: %+v (%v), traffic %+v, clone sent %d", rev, err, push, clone.Sent)
	}
	got, err := os.ReadFile(filepath.Join(rev.Dir, "manifests", "cm-0001.yaml"))
	if err != nil || !strings.Contains(string(got), `rev: "2"`) {
		t.Errorf("after the push: %s (%v)", got, err)
	}
}

func TestDecodeUploadPackHaves(t *testing.T) {
	body := "0032want 1111111111111111111111111111111111111111\n0000" +
		"0032have 2222222222222222222222222222222222222222\n0000" +
		"0032have 3333333333333333333333333333333333333333\n0009done\n"
	upr, err := decodeUploadPack(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(upr.Wants) != 1 || len(upr.Haves) != 2 || upr.Haves[1].String() != strings.Repeat("3", 40) {
		t.Fatalf("wants %v haves %v", upr.Wants, upr.Haves)
	}
	if _, err := decodeUploadPack(strings.NewReader("0032want 1111111111111111111111111111111111111111\n00000009nope\n")); err == nil {
		t.Error("an unexpected line was taken")
	}
}

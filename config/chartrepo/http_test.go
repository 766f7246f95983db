package chartrepo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2024, 3, 4, 5, 6, 7, 0, time.UTC)

// demoRepo serves chart demo in versions 1.0.0, 1.2.0, 1.2.5, 2.0.0 and
// the prerelease 2.1.0-rc.1, plus another chart.
func demoRepo(t *testing.T) (*testRepo, map[string][]byte) {
	r := newTestRepo(t, false)
	archives := map[string][]byte{}
	for i, v := range []string{"1.0.0", "1.2.0", "1.2.5", "2.0.0", "2.1.0-rc.1"} {
		archives[v] = r.add("demo", v, t0.Add(time.Duration(i)*time.Hour))
	}
	r.add("other", "0.1.0", t0)
	return r, archives
}

func TestFetchExactVersion(t *testing.T) {
	repo, archives := demoRepo(t)
	r := open(t, Options{URL: repo.url(), Chart: "demo", Version: "1.2.0"})
	rev, err := r.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	data := archives["1.2.0"]
	if rev.Version != "1.2.0" || rev.Digest != sha(data) || rev.AppVersion != "app-1.2.0" {
		t.Errorf("revision %+v, want 1.2.0 %s app-1.2.0", rev, sha(data))
	}
	if !rev.Created.Equal(t0.Add(time.Hour)) {
		t.Errorf("Created %v, want %v", rev.Created, t0.Add(time.Hour))
	}
	if rev.URL != repo.url()+"/charts/demo-1.2.0.tgz" {
		t.Errorf("URL %q", rev.URL)
	}
	if rev.Downloaded != int64(len(data)) {
		t.Errorf("Downloaded %d, want %d", rev.Downloaded, len(data))
	}
	if rev.ID() != "1.2.0@"+sha(data) {
		t.Errorf("ID %q", rev.ID())
	}
	if !filepath.IsAbs(rev.Path) || filepath.Dir(rev.Path) != rev.Dir {
		t.Errorf("Path %q, Dir %q", rev.Path, rev.Dir)
	}
	got, err := os.ReadFile(rev.Path)
	if err != nil || string(got) != string(data) {
		t.Fatalf("archive in the cache differs (%v)", err)
	}
	fi, err := os.Stat(rev.Path)
	if err != nil || fi.Mode().Perm() != 0o444 {
		t.Errorf("archive mode %v (%v), want 0444", fi.Mode(), err)
	}
	ents, _ := os.ReadDir(rev.Dir)
	if len(ents) != 1 {
		t.Errorf("Dir holds %d entries, want 1", len(ents))
	}
}

func TestFetchConstraints(t *testing.T) {
	repo, _ := demoRepo(t)
	for _, tc := range []struct{ version, want string }{
		{"~1.2", "1.2.5"},
		{">=1.0 <2", "1.2.5"},
		{"^1", "1.2.5"},
		{"1.0.0", "1.0.0"},
		{"", "2.0.0"}, // the prerelease 2.1.0-rc.1 is skipped
		{">=2.1.0-0", "2.1.0-rc.1"},
	} {
		r := open(t, Options{URL: repo.url(), Chart: "demo", Version: tc.version})
		rev, err := r.Fetch(context.Background())
		if err != nil {
			t.Errorf("version %q: %v", tc.version, err)
			continue
		}
		if rev.Version != tc.want {
			t.Errorf("version %q: got %s, want %s", tc.version, rev.Version, tc.want)
		}
	}
}

func TestFetchNotFound(t *testing.T) {
	repo, _ := demoRepo(t)
	repo.add("demo", "0.9.0", t0)
	r := open(t, Options{URL: repo.url(), Chart: "demo", Version: "~3.1"})
	_, err := r.Fetch(context.Background())
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err %v, want ErrNotFound", err)
	}
	want := fmt.Sprintf(`chart demo version "~3.1" not found in %s (versions: 2.1.0-rc.1, 2.0.0, 1.2.5, 1.2.0, 1.0.0, ...; at most 5 listed)`, repo.url())
	if err.Error() != want {
		t.Errorf("err\n%s\nwant\n%s", err, want)
	}

	only := newTestRepo(t, false)
	only.add("demo", "1.0.0-rc.1", t0)
	r = open(t, Options{URL: only.url(), Chart: "demo"})
	_, err = r.Fetch(context.Background())
	if want := "chart demo has no stable version in " + only.url() + " (versions: 1.0.0-rc.1)"; !errors.Is(err, ErrNotFound) || err.Error() != want {
		t.Errorf("err %v, want %q", err, want)
	}

	r = open(t, Options{URL: repo.url(), Chart: "nosuch"})
	_, err = r.Fetch(context.Background())
	if want := "chart nosuch not found in " + repo.url() + " (the index lists demo, other)"; !errors.Is(err, ErrNotFound) || err.Error() != want {
		t.Errorf("missing chart: %v, want %q", err, want)
	}
	r = open(t, Options{URL: repo.url(), Chart: "dmeo"})
	if _, err = r.Fetch(context.Background()); err == nil || !strings.HasSuffix(err.Error(), "(did you mean demo?)") {
		t.Errorf("a typo: %v", err)
	}
}

// TestChartsHint: a chart the index lacks is answered with the closest
// names, all names when there are few, or their number.
func TestChartsHint(t *testing.T) {
	many := []string{"alpha", "beta", "gamma", "delta", "epsilon", "ingress-nginx", "zeta"}
	for _, tc := range []struct {
		name   string
		charts []string
		want   string
	}{
		{"ingress-ngnix", many, "did you mean ingress-nginx?"},
		{"nothing-like-it", many, "the index lists 7 charts"},
		{"x", nil, "the index lists no chart"},
		{"something", []string{"a", "b"}, "the index lists a, b"},
		{"beta", []string{"beta1", "beta2", "zeta"}, "did you mean beta1 or beta2 or zeta?"},
	} {
		if got := chartsHint(tc.name, tc.charts); got != tc.want {
			t.Errorf("chartsHint(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"kitten", "sitting", 3}, {"dmeo", "demo", 1}, {"", "abc", 3}, {"same", "same", 0}, {"ab", "ba", 1}} {
		if d := editDistance(tc.a, tc.b); d != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}

func TestFetchDigestMismatch(t *testing.T) {
	repo := newTestRepo(t, false)
	data := makeChart(t, "demo", "1.0.0", "", 0)
	bad := strings.Repeat("ab", 32)
	repo.addArchive(entry{name: "demo", version: "1.0.0", digest: bad}, data)
	r := open(t, Options{URL: repo.url(), Chart: "demo"})
	_, err := r.Fetch(context.Background())
	if !errors.Is(err, ErrDigest) {
		t.Fatalf("err %v, want ErrDigest", err)
	}
	for _, s := range []string{"digest mismatch: index.yaml says sha256:" + bad, "the archive is " + sha(data), repo.url() + "/charts/demo-1.0.0.tgz"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("err %q does not say %q", err, s)
		}
	}
	if _, ok := r.Cached(); ok {
		t.Error("Cached after a refused archive")
	}
}

func TestFetchNoDigestInIndex(t *testing.T) {
	repo := newTestRepo(t, false)
	data := makeChart(t, "demo", "1.0.0", "", 0)
	repo.addArchive(entry{name: "demo", version: "1.0.0", digest: "-"}, data)
	r := open(t, Options{URL: repo.url(), Chart: "demo"})
	rev, err := r.Fetch(context.Background())
	if err != nil || rev.Digest != sha(data) || !rev.Created.IsZero() {
		t.Fatalf("rev %+v, err %v", rev, err)
	}
}

func TestIndexTooLarge(t *testing.T) {
	for _, noLength := range []bool{false, true} {
		repo, _ := demoRepo(t)
		repo.noLength = noLength
		repo.extra = "annotations:\n  pad: " + strings.Repeat("x", 8<<10) + "\n"
		r := open(t, Options{URL: repo.url(), Chart: "demo", MaxIndexBytes: 4 << 10})
		_, err := r.Fetch(context.Background())
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("noLength %v: err %v, want ErrTooLarge", noLength, err)
		}
		if want := repo.url() + "/index.yaml is over 4 KiB"; !strings.Contains(err.Error(), want) {
			t.Errorf("err %q does not say %q", err, want)
		}
		// With a larger limit the same index is fine.
		r = open(t, Options{URL: repo.url(), Chart: "demo", MaxIndexBytes: 64 << 10})
		if _, err := r.Fetch(context.Background()); err != nil {
			t.Errorf("noLength %v: larger limit: %v", noLength, err)
		}
	}
}

func TestArchiveTooLarge(t *testing.T) {
	for _, noLength := range []bool{false, true} {
		repo := newTestRepo(t, false)
		repo.noLength = noLength
		data := makeChart(t, "demo", "1.0.0", "", 20<<10)
		repo.addArchive(entry{name: "demo", version: "1.0.0"}, data)
		r := open(t, Options{URL: repo.url(), Chart: "demo", MaxChartBytes: 8 << 10})
		_, err := r.Fetch(context.Background())
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("noLength %v: err %v, want ErrTooLarge", noLength, err)
		}
		if want := "chart archive " + repo.url() + "/charts/demo-1.0.0.tgz is over 8 KiB"; !strings.Contains(err.Error(), want) {
			t.Errorf("err %q does not say %q", err, want)
		}
	}
}

func TestArchiveNotTheChart(t *testing.T) {
	for _, tc := range []struct {
		name string
		data func(t *testing.T) []byte
		want string
	}{
		{"not a chart", func(*testing.T) []byte { return []byte("<html>not a chart</html>") }, "not the chart asked for"},
		{"another chart", func(t *testing.T) []byte { return makeChart(t, "evil", "1.0.0", "", 0) }, `holds chart "evil" version "1.0.0", not "demo" version "1.0.0"`},
		{"another version", func(t *testing.T) []byte { return makeChart(t, "demo", "6.6.6", "", 0) }, `holds chart "demo" version "6.6.6"`},
	} {
		repo := newTestRepo(t, false)
		repo.addArchive(entry{name: "demo", version: "1.0.0"}, tc.data(t))
		r := open(t, Options{URL: repo.url(), Chart: "demo"})
		_, err := r.Fetch(context.Background())
		if !errors.Is(err, ErrNotChart) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want ErrNotChart saying %q", tc.name, err, tc.want)
		}
	}
}

func TestBasicAuthOverTLS(t *testing.T) {
	repo, _ := demoRepo(t)
	repo.srv.Close()
	repo = newTestRepo(t, true)
	repo.add("demo", "1.0.0", t0)
	repo.user, repo.pass = "alice", "s3cret:pw"
	ca := caFile(t, repo.srv)
	auth := authFiles(t, "alice", "s3cret:pw")

	r := open(t, Options{URL: repo.url(), Chart: "demo", CAFile: ca, Auth: auth})
	rev, err := r.Fetch(context.Background())
	if err != nil || rev.Version != "1.0.0" {
		t.Fatalf("with credentials: %+v %v", rev, err)
	}

	// Without credentials: the 401 is named, not the server's text.
	r = open(t, Options{URL: repo.url(), Chart: "demo", CAFile: ca})
	_, err = r.Fetch(context.Background())
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), repo.url()+"/index.yaml: 401 Unauthorized") {
		t.Errorf("without credentials: %v", err)
	}
	if strings.Contains(fmt.Sprint(err), "go away") {
		t.Errorf("err repeats the server's text: %v", err)
	}

	// Wrong password.
	r = open(t, Options{URL: repo.url(), Chart: "demo", CAFile: ca, Auth: authFiles(t, "alice", "nope")})
	if _, err = r.Fetch(context.Background()); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("wrong password: %v", err)
	}
	if strings.Contains(fmt.Sprint(err), "nope") {
		t.Errorf("err shows the password: %v", err)
	}

	// Without the CA, the server's certificate is not trusted.
	r = open(t, Options{URL: repo.url(), Chart: "demo", Auth: auth})
	if _, err = r.Fetch(context.Background()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without CA file: %v", err)
	}

	// Credentials are read at every Fetch: a rotated password is used.
	repo.mu.Lock()
	repo.pass = "rotated"
	repo.mu.Unlock()
	r = open(t, Options{URL: repo.url(), Chart: "demo", CAFile: ca, Auth: auth})
	if _, err = r.Fetch(context.Background()); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("old password after rotation: %v", err)
	}
	writeFile(t, filepath.Dir(auth.PasswordFile), "pass", "rotated")
	if _, err = r.Fetch(context.Background()); err != nil {
		t.Errorf("rotated password: %v", err)
	}
}

// TestNoCredentialsToOtherHost: an archive on another host (an absolute
// URL in the index, or a redirect) gets no credentials.
func TestNoCredentialsToOtherHost(t *testing.T) {
	repo := newTestRepo(t, true)
	repo.user, repo.pass = "alice", "pw"
	other := newTestRepo(t, true) // same certificate, another port
	ca := caFile(t, repo.srv)
	auth := authFiles(t, "alice", "pw")

	a := makeChart(t, "demo", "1.0.0", "", 0)
	other.files["/elsewhere/demo-1.0.0.tgz"] = a
	repo.addArchive(entry{name: "demo", version: "1.0.0", url: other.srv.URL + "/elsewhere/demo-1.0.0.tgz"}, a)
	r := open(t, Options{URL: repo.url(), Chart: "demo", Version: "1.0.0", CAFile: ca, Auth: auth})
	if _, err := r.Fetch(context.Background()); err != nil {
		t.Fatal(err)
	}

	b := makeChart(t, "demo", "2.0.0", "", 0)
	other.files["/moved/demo-2.0.0.tgz"] = b
	repo.addArchive(entry{name: "demo", version: "2.0.0"}, b)
	repo.redirect["/repo/charts/demo-2.0.0.tgz"] = other.srv.URL + "/moved/demo-2.0.0.tgz"
	r = open(t, Options{URL: repo.url(), Chart: "demo", Version: "2.0.0", CAFile: ca, Auth: auth})
	if _, err := r.Fetch(context.Background()); err != nil {
		t.Fatal(err)
	}

	if other.hitCount("/elsewhere/demo-1.0.0.tgz") != 1 || other.hitCount("/moved/demo-2.0.0.tgz") != 1 {
		t.Fatalf("the other host was not asked: %v", other.hits)
	}
	for _, h := range other.auths {
		if h != "" {
			t.Errorf("the other host received Authorization %q", h)
		}
	}
	// The repository's own host got them, for the index and the redirect.
	for _, h := range repo.auths {
		if h == "" {
			t.Errorf("the repository's host got a request without credentials")
		}
	}
}

func TestRedirectToHTTPRefused(t *testing.T) {
	repo := newTestRepo(t, true)
	plain := newTestRepo(t, false)
	a := makeChart(t, "demo", "1.0.0", "", 0)
	plain.files["/x/demo-1.0.0.tgz"] = a
	repo.addArchive(entry{name: "demo", version: "1.0.0"}, a)
	repo.redirect["/repo/charts/demo-1.0.0.tgz"] = plain.srv.URL + "/x/demo-1.0.0.tgz"
	r := open(t, Options{URL: repo.url(), Chart: "demo", CAFile: caFile(t, repo.srv)})
	_, err := r.Fetch(context.Background())
	if err == nil || !strings.Contains(err.Error(), "from https to http") {
		t.Errorf("err %v, want the downgrade refused", err)
	}
	if plain.hitCount("/x/demo-1.0.0.tgz") != 0 {
		t.Error("the http server was asked")
	}
}

func TestFetchTimeout(t *testing.T) {
	repo, _ := demoRepo(t)
	repo.hang = make(chan struct{})
	r := open(t, Options{URL: repo.url(), Chart: "demo", Timeout: 300 * time.Millisecond})
	start := time.Now()
	_, err := r.Fetch(context.Background())
	if err == nil || !strings.Contains(err.Error(), "timed out after 300ms") {
		t.Errorf("err %v, want a timeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Fetch took %v", d)
	}
}

func TestCacheAcrossFetchesAndRepos(t *testing.T) {
	repo, archives := demoRepo(t)
	dir := t.TempDir()
	o := Options{URL: repo.url(), Chart: "demo", Version: "~1.2", CacheDir: dir}
	r := open(t, o)
	if _, ok := r.Cached(); ok {
		t.Fatal("Cached on an empty cache")
	}
	first, err := r.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if second.Downloaded != 0 || second.ID() != first.ID() || second.Path != first.Path {
		t.Errorf("second Fetch %+v, want the first's revision, nothing downloaded", second)
	}
	if n := repo.hitCount("/repo/charts/demo-1.2.5.tgz"); n != 1 {
		t.Errorf("archive downloaded %d times", n)
	}

	// A new Repo on the same cache.
	r2 := open(t, o)
	cached, ok := r2.Cached()
	if !ok || cached.ID() != first.ID() || cached.Path != first.Path || cached.AppVersion != "app-1.2.5" || !cached.Created.Equal(first.Created) {
		t.Fatalf("Cached %+v %v, want %+v", cached, ok, first)
	}
	third, err := r2.Fetch(context.Background())
	if err != nil || third.Downloaded != 0 || third.ID() != first.ID() {
		t.Fatalf("Fetch of a new Repo: %+v %v", third, err)
	}
	if sha(archives["1.2.5"]) != third.Digest {
		t.Error("digest")
	}

	// A damaged archive is not Cached, and is downloaded again.
	if err := os.Chmod(first.Path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(first.Path, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := r2.Cached(); ok {
		t.Error("Cached returns a damaged archive")
	}
	again, err := r2.Fetch(context.Background())
	if err != nil || again.Downloaded == 0 {
		t.Fatalf("Fetch after damage: %+v %v", again, err)
	}
	if got, _ := os.ReadFile(again.Path); string(got) != string(archives["1.2.5"]) {
		t.Error("the damaged archive was not replaced")
	}

	// Another chart on the same cache folder starts afresh.
	r3 := open(t, Options{URL: repo.url(), Chart: "other", CacheDir: dir})
	if _, ok := r3.Cached(); ok {
		t.Error("Cached returns another chart's revision")
	}
}

func TestKeepCurrentAndPrevious(t *testing.T) {
	repo := newTestRepo(t, false)
	r := open(t, Options{URL: repo.url(), Chart: "demo"})
	var revs []Revision
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
		repo.add("demo", v, t0)
		rev, err := r.Fetch(context.Background())
		if err != nil || rev.Version != v {
			t.Fatalf("Fetch: %+v %v, want %s", rev, err, v)
		}
		revs = append(revs, rev)
	}
	if _, err := os.Stat(revs[0].Dir); !os.IsNotExist(err) {
		t.Errorf("the oldest revision is still there (%v)", err)
	}
	for _, rev := range revs[1:] {
		if _, err := os.Stat(rev.Path); err != nil {
			t.Errorf("revision %s: %v", rev.Version, err)
		}
	}
	ents, _ := os.ReadDir(filepath.Dir(revs[2].Dir))
	if len(ents) != 2 {
		t.Errorf("charts/ holds %d entries, want 2", len(ents))
	}
	// A republished version (other bytes, same version) is another
	// revision.
	repo.mu.Lock()
	repo.entries = nil
	repo.mu.Unlock()
	repub := makeChart(t, "demo", "1.2.0", "republished", 0)
	repo.addArchive(entry{name: "demo", version: "1.2.0"}, repub)
	rev, err := r.Fetch(context.Background())
	if err != nil || rev.Digest != sha(repub) || rev.ID() == revs[2].ID() || rev.Dir == revs[2].Dir || rev.AppVersion != "republished" {
		t.Fatalf("republished: %+v %v", rev, err)
	}
	if _, err := os.Stat(revs[2].Path); err != nil {
		t.Errorf("the previous revision is gone: %v", err)
	}
}

func TestConcurrentFetches(t *testing.T) {
	repo, _ := demoRepo(t)
	r := open(t, Options{URL: repo.url(), Chart: "demo"})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			_, err := r.Fetch(context.Background())
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := repo.hitCount("/repo/charts/demo-2.0.0.tgz"); n != 1 {
		t.Errorf("archive downloaded %d times", n)
	}
}

func TestHostileIndexEntries(t *testing.T) {
	for _, tc := range []struct{ name, url, want string }{
		{"file URL", "file:///etc/passwd", `scheme "file" is not allowed`},
		{"credentials", "https://u:p@example.com/x.tgz", "carries credentials"},
	} {
		repo := newTestRepo(t, false)
		repo.addArchive(entry{name: "demo", version: "1.0.0", url: tc.url}, []byte("x"))
		r := open(t, Options{URL: repo.url(), Chart: "demo"})
		_, err := r.Fetch(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
		if strings.Contains(fmt.Sprint(err), "u:p@") {
			t.Errorf("%s: err shows the password: %v", tc.name, err)
		}
	}
	// A version that is not a semantic version is dropped by validation,
	// as Helm does: the chart has no version.
	repo := newTestRepo(t, false)
	repo.addArchive(entry{name: "demo", version: "../../etc"}, []byte("x"))
	r := open(t, Options{URL: repo.url(), Chart: "demo"})
	if _, err := r.Fetch(context.Background()); !errors.Is(err, ErrNotFound) {
		t.Errorf("bad version: %v", err)
	}
	// An index that is not one.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("entries: [unclosed"))
	}))
	defer srv.Close()
	r = open(t, Options{URL: srv.URL, Chart: "demo"})
	if _, err := r.Fetch(context.Background()); err == nil || !strings.Contains(err.Error(), srv.URL+"/index.yaml is not a valid chart repository index") {
		t.Errorf("bad index: %v", err)
	}
}

// TestUnchangedIndexNotParsedAgain: a poll whose index did not change
// (a 304 to the conditional request, or the same bytes from a server
// without ETags) returns the revision in force without picking again; a
// changed index is read and picked anew.
func TestUnchangedIndexNotParsedAgain(t *testing.T) {
	for _, etag := range []bool{true, false} {
		t.Run(fmt.Sprintf("etag=%v", etag), func(t *testing.T) {
			repo := newTestRepo(t, false)
			repo.etag = etag
			repo.add("web", "1.0.0", time.Time{})
			r := open(t, Options{URL: repo.url(), Chart: "web", Version: "~1"})
			first, err := r.Fetch(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			memo := r.index
			if memo == nil || (memo.etag != "") != etag {
				t.Fatalf("memo after the first read: %+v", memo)
			}
			again, err := r.Fetch(t.Context())
			if err != nil || again.ID() != first.ID() || again.Downloaded != 0 {
				t.Fatalf("second fetch: %+v, %v", again, err)
			}
			if etag && repo.notMod != 1 {
				t.Errorf("304s served: %d, want 1", repo.notMod)
			}
			if r.index == nil || r.index.cand.version != "1.0.0" {
				t.Errorf("memo after an unchanged index: %+v", r.index)
			}
			repo.add("web", "1.1.0", time.Time{})
			next, err := r.Fetch(t.Context())
			if err != nil || next.Version != "1.1.0" || next.Downloaded == 0 {
				t.Fatalf("after a new version: %+v, %v", next, err)
			}
		})
	}
}

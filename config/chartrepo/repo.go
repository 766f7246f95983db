package chartrepo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/driftwatch/driftwatch/internal/remoteurl"
	"github.com/driftwatch/driftwatch/internal/safefile"
)

// Errors that callers may test for with errors.Is. Every error Fetch
// returns names the chart and the URL, and many wrap one of these.
var (
	// ErrNotFound: the chart, or a version of it that satisfies
	// Options.Version, is not in the repository.
	ErrNotFound = errors.New("chart not found")
	// ErrTooLarge: index.yaml, an OCI manifest or tag list, or the chart
	// archive is over its limit.
	ErrTooLarge = errors.New("over the size limit")
	// ErrDigest: the archive's bytes do not match the digest that the
	// index or the OCI manifest gives for them.
	ErrDigest = errors.New("digest mismatch")
	// ErrNotChart: what was downloaded is not a chart archive, or is
	// another chart or another version than the one asked for.
	ErrNotChart = errors.New("not the chart asked for")
	// ErrUnauthorized: the server answered 401 Unauthorized or
	// 403 Forbidden.
	ErrUnauthorized = errors.New("unauthorized")
)

// Revision is one chart archive in the cache.
type Revision struct {
	// Version is the chart version pulled ("4.11.2").
	Version string
	// Digest is "sha256:<64 hex>" of the archive's bytes.
	Digest string
	// AppVersion is the chart's appVersion (from its Chart.yaml), "" if
	// it has none.
	AppVersion string
	// Created is when the version was published: index.yaml's created, or
	// the OCI manifest's org.opencontainers.image.created annotation; zero
	// when unknown.
	Created time.Time
	// Path is the absolute path of the archive in the cache: a read-only
	// file (0444), never rewritten, that stays until two later Fetches
	// have returned other revisions.
	Path string
	// Dir is the folder that holds Path and nothing else, so a caller may
	// treat it like a checked-out folder.
	Dir string
	// URL is where the archive was downloaded from (for OCI,
	// oci://host/path/chart:tag), without credentials or query.
	URL string
	// Downloaded is the number of archive bytes the Fetch that returned
	// this Revision received: 0 when the archive was already cached.
	Downloaded int64
}

// ID identifies a revision: Version + "@" + Digest (a version republished
// with other bytes is another revision).
func (r Revision) ID() string { return r.Version + "@" + r.Digest }

// Repo is the local cache of one chart of one repository. Its methods are
// safe for concurrent use; Fetch calls run one at a time.
type Repo struct {
	opts       Options
	url        repoURL
	constraint *semver.Constraints // nil: the latest stable version

	mu    sync.Mutex
	state state
	// index is what the last read of an HTTP repository's index resolved
	// (nil before one, or after a read that failed); memory only.
	index *indexMemo
}

// state is what a Repo keeps in CacheDir/state.json across restarts.
type state struct {
	URL      string  `json:"url"`
	Chart    string  `json:"chart"`
	Current  *record `json:"current,omitempty"`
	Previous *record `json:"previous,omitempty"`
}

// record is one revision in state.json.
type record struct {
	Version    string    `json:"version"`
	Digest     string    `json:"digest"`
	AppVersion string    `json:"appVersion,omitempty"`
	Created    time.Time `json:"created,omitzero"`
	URL        string    `json:"url,omitempty"`
}

// Names inside CacheDir.
const (
	stateFile = "state.json"
	chartsDir = "charts"
	tmpPrefix = ".tmp-"
)

// maxConnectTimeout bounds dialling a server.
const maxConnectTimeout = 30 * time.Second

// Open validates opts and prepares CacheDir (created with mode 0700 when
// missing). It touches no network: the first Fetch does.
func Open(opts Options) (*Repo, error) {
	u, err := parseURL(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("chart source: %w", err)
	}
	if err := CheckChart(opts.Chart); err != nil {
		return nil, fmt.Errorf("chart source %s: %w", opts.URL, err)
	}
	label := fmt.Sprintf("chart %s from %s", opts.Chart, opts.URL)
	c, err := parseVersion(opts.Version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	if (opts.Auth.UsernameFile == "") != (opts.Auth.PasswordFile == "") {
		return nil, fmt.Errorf("%s: auth.usernameFile and auth.passwordFile go together", label)
	}
	if opts.Auth.UsernameFile != "" && u.scheme == schemeHTTP && !remoteurl.IsLoopback(u.host) {
		return nil, fmt.Errorf("%s: refusing to send credentials over plain http to %s; use https", label, u.host)
	}
	if u.scheme == schemeOCI {
		ref := ociReference(u, opts.Chart)
		if err := ref.ValidateRegistry(); err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		if err := ref.ValidateRepository(); err != nil {
			return nil, fmt.Errorf("%s: %s is not a valid OCI repository name (lowercase letters, digits and separators)", label, ref.Repository)
		}
	}
	if opts.PlainHTTP {
		if u.scheme != schemeOCI {
			return nil, fmt.Errorf("%s: plainHTTP is for oci:// URLs (write http:// for a chart repository)", label)
		}
		if !remoteurl.IsLoopback(u.host) {
			return nil, fmt.Errorf("%s: plainHTTP is only allowed for a registry on a loopback address, not %s", label, u.host)
		}
	}
	if opts.CacheDir == "" {
		return nil, fmt.Errorf("%s: cacheDir is empty", label)
	}
	if opts.Timeout < 0 || opts.MaxIndexBytes < 0 || opts.MaxChartBytes < 0 {
		return nil, fmt.Errorf("%s: timeout, maxIndexBytes and maxChartBytes must not be negative", label)
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxIndexBytes == 0 {
		opts.MaxIndexBytes = DefaultMaxIndexBytes
	}
	if opts.MaxChartBytes == 0 {
		opts.MaxChartBytes = DefaultMaxChartBytes
	}
	dir, err := filepath.Abs(opts.CacheDir)
	if err != nil {
		return nil, fmt.Errorf("%s: cacheDir %s: %w", label, opts.CacheDir, err)
	}
	opts.CacheDir = dir
	if err := os.MkdirAll(filepath.Join(dir, chartsDir), 0o700); err != nil {
		return nil, fmt.Errorf("%s: cacheDir: %w", label, err)
	}
	r := &Repo{opts: opts, url: u, constraint: c}
	r.state = r.loadState()
	return r, nil
}

// URL returns the repository's URL as given.
func (r *Repo) URL() string { return r.opts.URL }

// label names the chart and repository in errors.
func (r *Repo) label() string {
	return fmt.Sprintf("chart %s from %s", r.opts.Chart, r.opts.URL)
}

// kindError is an error of one of the sentinel kinds whose text is its
// own (errors.Is finds the kind; the text does not repeat it).
type kindError struct {
	msg  string
	kind error
	// named: the text already names the chart and the repository, so
	// Fetch does not prefix it.
	named bool
}

// Error implements error.
func (e *kindError) Error() string { return e.msg }

// Unwrap returns the sentinel error.
func (e *kindError) Unwrap() error { return e.kind }

// kindErr returns a kindError of kind.
func kindErr(kind error, format string, args ...any) error {
	return &kindError{msg: fmt.Sprintf(format, args...), kind: kind}
}

// namedErr returns a kindError of kind that names the chart and the
// repository itself.
func namedErr(kind error, format string, args ...any) error {
	return &kindError{msg: fmt.Sprintf(format, args...), kind: kind, named: true}
}

// candidate is the version a source resolved, before its archive is
// downloaded.
type candidate struct {
	version string
	// digest is the archive's expected digest ("algo:hex"), "" when the
	// server gives none.
	digest string
	// sha256 is the expected sha256 hex of the archive when digest is a
	// sha256 one, else "".
	sha256  string
	created time.Time
	url     string // as Revision.URL shows it
	// digestFrom names what gave digest, for errors ("index.yaml").
	digestFrom string
	// size is the declared size of the archive, -1 when unknown.
	size int64
	// rawURL is the archive's URL (http), with its query.
	rawURL *url.URL
	// layer is the archive's layer (oci).
	layer ocispec.Descriptor
	// tag is the tag the version was resolved from (oci).
	tag string
}

// source is a chart repository of one kind.
type source interface {
	// resolve picks the version to pull.
	resolve(ctx context.Context) (candidate, error)
	// download returns the archive's bytes, at most max of them, verifying
	// c.digest when set.
	download(ctx context.Context, c candidate, max int64) ([]byte, error)
	// close releases idle connections.
	close()
}

// Fetch resolves Options.Version in the repository, downloads the chart's
// archive unless the cache holds it already, verifies it, and returns it.
// On error the previous revisions are left in place, so a caller can keep
// serving them.
func (r *Repo) Fetch(ctx context.Context) (rev Revision, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// A panic in a parser on hostile input must not take the process
	// down: it is this Fetch's error, with its stack.
	defer func() {
		if p := recover(); p != nil {
			rev = Revision{}
			err = fmt.Errorf("%s: panic while fetching: %v\n%s", r.label(), p, debug.Stack())
		}
	}()
	deadline := time.Now().Add(r.opts.Timeout)
	fctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	rev, err = r.fetch(fctx)
	if err != nil {
		// The HTTP client's own timeout may fire first: the deadline
		// having passed is what says the Fetch timed out.
		if ctx.Err() == nil && !time.Now().Before(deadline) {
			err = fmt.Errorf("timed out after %s: %w", r.opts.Timeout, err)
		}
		var ke *kindError
		if errors.As(err, &ke) && ke.named {
			return Revision{}, err
		}
		return Revision{}, fmt.Errorf("%s: %w", r.label(), err)
	}
	return rev, nil
}

// fetch is Fetch under the lock and its deadline.
func (r *Repo) fetch(ctx context.Context) (Revision, error) {
	charts := filepath.Join(r.opts.CacheDir, chartsDir)
	if err := os.MkdirAll(charts, 0o700); err != nil {
		return Revision{}, fmt.Errorf("cache: %w", err)
	}
	removeTemporary(charts)
	removeTemporary(r.opts.CacheDir)

	creds, err := readAuth(r.opts.Auth)
	if err != nil {
		return Revision{}, err
	}
	tr, err := newTransport(r.opts.Timeout, r.opts.CAFile)
	if err != nil {
		return Revision{}, err
	}
	var src source
	if r.url.scheme == schemeOCI {
		src = newOCISource(r, tr, creds)
	} else {
		src = newHTTPSource(r, tr, creds)
	}
	defer src.close()

	cand, err := src.resolve(ctx)
	if err != nil {
		return Revision{}, err
	}
	if !safeVersion(cand.version) {
		return Revision{}, fmt.Errorf("the repository names version %q, which is not a semantic version", cand.version)
	}
	rec := &record{Version: cand.version, Created: cand.created, URL: cand.url}

	// Already cached: the version and digest of the current or the
	// previous revision, with its archive intact.
	if cand.sha256 != "" {
		for _, old := range []*record{r.state.Current, r.state.Previous} {
			if old == nil || old.Version != cand.version || old.Digest != "sha256:"+cand.sha256 {
				continue
			}
			if r.intact(old) {
				rec.Digest, rec.AppVersion = old.Digest, old.AppVersion
				return r.commit(rec, 0)
			}
		}
	}

	data, err := src.download(ctx, cand, r.opts.MaxChartBytes)
	if err != nil {
		return Revision{}, err
	}
	sum := sha256.Sum256(data)
	got := hex.EncodeToString(sum[:])
	if cand.sha256 != "" && got != cand.sha256 {
		return Revision{}, fmt.Errorf("chart archive %s: %w: %s says sha256:%s, the archive is sha256:%s", cand.url, ErrDigest, cand.digestFrom, cand.sha256, got)
	}
	rec.Digest = "sha256:" + got
	app, err := r.checkChart(data, cand)
	if err != nil {
		return Revision{}, err
	}
	rec.AppVersion = app
	if err := r.store(rec, data); err != nil {
		return Revision{}, err
	}
	return r.commit(rec, int64(len(data)))
}

// checkChart verifies that data is a chart archive of Options.Chart at
// the candidate's version, with Helm's own loader (which bounds what the
// archive inflates to), and returns its appVersion.
func (r *Repo) checkChart(data []byte, c candidate) (string, error) {
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("chart archive %s: %w: %v", c.url, ErrNotChart, err)
	}
	if ch.Metadata == nil {
		return "", fmt.Errorf("chart archive %s: %w: it has no Chart.yaml", c.url, ErrNotChart)
	}
	if ch.Metadata.Name != r.opts.Chart || ch.Metadata.Version != c.version {
		return "", fmt.Errorf("chart archive %s: %w: it holds chart %q version %q, not %q version %q",
			c.url, ErrNotChart, ch.Metadata.Name, ch.Metadata.Version, r.opts.Chart, c.version)
	}
	return ch.Metadata.AppVersion, nil
}

// folderName is the name of a revision's folder under charts/.
func (r *Repo) folderName(rec *record) string {
	return fmt.Sprintf("%s-%s-%s", r.opts.Chart, rec.Version, strings.TrimPrefix(rec.Digest, "sha256:")[:12])
}

// archiveName is the name of the archive inside its folder: the name
// `helm pull` gives it.
func (r *Repo) archiveName(rec *record) string {
	return fmt.Sprintf("%s-%s.tgz", r.opts.Chart, rec.Version)
}

// paths returns a revision's folder and archive paths.
func (r *Repo) paths(rec *record) (dir, path string) {
	dir = filepath.Join(r.opts.CacheDir, chartsDir, r.folderName(rec))
	return dir, filepath.Join(dir, r.archiveName(rec))
}

// intact reports whether rec's archive is in the cache with its digest.
func (r *Repo) intact(rec *record) bool {
	_, path := r.paths(rec)
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > max(r.opts.MaxChartBytes, DefaultMaxChartBytes) {
		return false
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false
	}
	return "sha256:"+hex.EncodeToString(h.Sum(nil)) == rec.Digest
}

// store writes data as rec's archive: into a temporary folder, renamed
// into place, so a revision's folder is always complete. An intact folder
// of the same revision is kept as it is.
func (r *Repo) store(rec *record, data []byte) error {
	dir, _ := r.paths(rec)
	if r.intact(rec) {
		return nil
	}
	charts := filepath.Join(r.opts.CacheDir, chartsDir)
	tmp, err := os.MkdirTemp(charts, tmpPrefix+r.folderName(rec)+"-")
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	file := filepath.Join(tmp, r.archiveName(rec))
	err = os.WriteFile(file, data, 0o600)
	if err == nil {
		err = os.Chmod(file, 0o444)
	}
	if err == nil {
		err = os.Chmod(tmp, 0o755)
	}
	if err == nil {
		// A damaged folder of that name is replaced.
		if _, serr := os.Lstat(dir); serr == nil {
			err = os.RemoveAll(dir)
		}
	}
	if err == nil {
		err = os.Rename(tmp, dir)
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// commit makes rec the current revision, saves the state, prunes the
// cache, and returns rec as a Revision.
func (r *Repo) commit(rec *record, downloaded int64) (Revision, error) {
	cur := r.state.Current
	if cur == nil || cur.Version != rec.Version || cur.Digest != rec.Digest {
		r.state.Previous = cur
	}
	r.state.Current = rec
	r.state.URL, r.state.Chart = r.opts.URL, r.opts.Chart
	if err := r.saveState(); err != nil {
		return Revision{}, err
	}
	r.prune()
	rev := r.revision(rec)
	rev.Downloaded = downloaded
	return rev, nil
}

// revision returns rec as a Revision.
func (r *Repo) revision(rec *record) Revision {
	dir, path := r.paths(rec)
	return Revision{
		Version:    rec.Version,
		Digest:     rec.Digest,
		AppVersion: rec.AppVersion,
		Created:    rec.Created,
		Path:       path,
		Dir:        dir,
		URL:        rec.URL,
	}
}

// removeTemporary removes the half-written folders and files that a crash
// left in dir.
func removeTemporary(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// prune removes every archive but the current and the previous one.
// Failures are left for the next Fetch.
func (r *Repo) prune() {
	keep := map[string]bool{}
	for _, rec := range []*record{r.state.Current, r.state.Previous} {
		if rec != nil {
			keep[r.folderName(rec)] = true
		}
	}
	charts := filepath.Join(r.opts.CacheDir, chartsDir)
	entries, _ := os.ReadDir(charts)
	for _, e := range entries {
		if keep[e.Name()] || strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		_ = os.RemoveAll(filepath.Join(charts, e.Name()))
	}
}

// validRecord reports whether a record read from state.json is usable.
func validRecord(rec *record) bool {
	if rec == nil || !safeVersion(rec.Version) {
		return false
	}
	d, ok := strings.CutPrefix(rec.Digest, "sha256:")
	return ok && len(d) == 64 && isLowerHex(d)
}

// isLowerHex reports whether s is lowercase hexadecimal.
func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// loadState reads CacheDir/state.json. A missing or unreadable state, or
// one of another URL or chart, starts an empty cache.
func (r *Repo) loadState() state {
	fresh := state{URL: r.opts.URL, Chart: r.opts.Chart}
	var s state
	b, err := safefile.ReadLimited(filepath.Join(r.opts.CacheDir, stateFile), 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return fresh
	}
	if err == nil && json.Unmarshal(b, &s) == nil && s.URL == r.opts.URL && s.Chart == r.opts.Chart {
		if !validRecord(s.Current) {
			s.Current = nil
		}
		if !validRecord(s.Previous) {
			s.Previous = nil
		}
		return s
	}
	// Another source's cache, or a damaged one: start afresh.
	_ = os.RemoveAll(filepath.Join(r.opts.CacheDir, chartsDir))
	_ = os.MkdirAll(filepath.Join(r.opts.CacheDir, chartsDir), 0o700)
	return fresh
}

// saveState writes CacheDir/state.json atomically.
func (r *Repo) saveState() error {
	b, err := json.Marshal(r.state)
	if err != nil {
		return err
	}
	path := filepath.Join(r.opts.CacheDir, stateFile)
	f, err := os.CreateTemp(r.opts.CacheDir, tmpPrefix+stateFile+".*")
	if err != nil {
		return fmt.Errorf("cache state: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("cache state %s: %w", path, err)
	}
	return nil
}

// Cached returns the revision the cache holds from the last successful
// Fetch (of this run or an earlier one, through CacheDir/state.json),
// without touching the network, if its archive is still there and its
// digest matches. Downloaded is 0. A hub uses it at start when the
// repository cannot be reached.
func (r *Repo) Cached() (Revision, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state.Current == nil || !r.intact(r.state.Current) {
		return Revision{}, false
	}
	return r.revision(r.state.Current), true
}

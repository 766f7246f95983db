package gitsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/driftwatch/driftwatch/internal/remoteurl"
	"github.com/driftwatch/driftwatch/internal/safefile"
)

// Errors that callers may test for with errors.Is. Every error Fetch
// returns names the URL and the ref, and most wrap one of these.
var (
	// ErrRefNotFound: the ref (branch, tag or commit) is not on the server,
	// for example because the branch was deleted.
	ErrRefNotFound = errors.New("ref not found")
	// ErrSignature: Options.Verify is set and the commit is unsigned, signed
	// by a key that is not trusted, or carries a signature that does not
	// verify.
	ErrSignature = errors.New("signature refused")
	// ErrTooLarge: the pack or the checkout is over Options.MaxBytes or
	// Options.MaxFiles.
	ErrTooLarge = errors.New("over the size limit")
	// ErrUnsafePath: a path, or a symbolic link of the tree, leads out of
	// its folder.
	ErrUnsafePath = errors.New("path leads out of the tree")
)

// Revision is one checked-out commit.
type Revision struct {
	// Commit is the commit's full SHA.
	Commit string
	// Ref is the full name of the ref it was resolved from
	// ("refs/heads/main", "refs/tags/v1"; "HEAD" when the remote did not say
	// which branch its HEAD is), or the commit SHA when Options.Ref was one.
	Ref string
	// Time is the commit's committer time.
	Time time.Time
	// Author is "Name <email>" of the commit's author.
	Author string
	// Message is the first line of the commit message.
	Message string
	// Signer names the key that signed the commit when Options.Verify is
	// set ("openpgp <fingerprint> <identity>", "ssh SHA256:... <principals>").
	Signer string
	// Dir is the checked-out tree of exactly this commit. It is read-only
	// for callers (its files are created 0444 or 0555) and stays until two
	// later Fetches have returned other commits. Open its files through
	// SafePath.
	Dir string
	// Downloaded is the number of pack bytes the Fetch that returned this
	// Revision received: 0 when the commit was already in the cache.
	Downloaded int64
}

// Repo is the local cache of one ref of one repository. Its methods are
// safe for concurrent use; Fetch calls run one at a time.
type Repo struct {
	opts Options
	url  remoteURL
	kind refKind
	// client is the HTTP client of http(s) URLs (nil otherwise); its idle
	// connections are closed at the end of each Fetch.
	client *http.Client
	// maxPacks is defaultMaxPacks; tests lower it.
	maxPacks int

	mu    sync.Mutex
	state state
}

// state is what a Repo keeps in CacheDir/state.json across restarts.
type state struct {
	URL      string `json:"url"`
	Current  string `json:"current,omitempty"`
	Previous string `json:"previous,omitempty"`
}

// Names inside CacheDir.
const (
	stateFile = "state.json"
	repoDir   = "repo.git"
	treesDir  = "trees"
	tmpPrefix = ".tmp-"
)

// maxConnectTimeout bounds dialling a server.
const maxConnectTimeout = 30 * time.Second

// Open validates opts and prepares CacheDir (created with mode 0700 when
// missing). It touches no network: the first Fetch does.
func Open(opts Options) (*Repo, error) {
	u, err := parseURL(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("git source: %w", err)
	}
	kind, err := parseRef(opts.Ref)
	if err != nil {
		return nil, fmt.Errorf("git %s: %w", opts.URL, err)
	}
	if err := checkAuth(u, opts.Auth); err != nil {
		return nil, fmt.Errorf("git %s: %w", opts.URL, err)
	}
	if opts.Verify != nil && opts.Verify.KeysFile == "" {
		return nil, fmt.Errorf("git %s: verify.keysFile is empty", opts.URL)
	}
	if opts.CacheDir == "" {
		return nil, fmt.Errorf("git %s: cacheDir is empty", opts.URL)
	}
	if opts.Timeout < 0 || opts.MaxBytes < 0 || opts.MaxFiles < 0 || opts.MaxObjectBytes < 0 {
		return nil, fmt.Errorf("git %s: timeout, maxBytes, maxFiles and maxObjectBytes must not be negative", opts.URL)
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxFiles == 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	if opts.MaxObjectBytes == 0 {
		opts.MaxObjectBytes = min(DefaultMaxObjectBytes, opts.MaxBytes)
	}
	dir, err := filepath.Abs(opts.CacheDir)
	if err != nil {
		return nil, fmt.Errorf("git %s: cacheDir %s: %w", opts.URL, opts.CacheDir, err)
	}
	opts.CacheDir = dir
	if err := os.MkdirAll(filepath.Join(dir, treesDir), 0o700); err != nil {
		return nil, fmt.Errorf("git %s: cacheDir: %w", opts.URL, err)
	}
	r := &Repo{opts: opts, url: u, kind: kind, maxPacks: defaultMaxPacks}
	if u.scheme == "http" || u.scheme == "https" {
		r.client = newHTTPClient(opts.Timeout)
	}
	r.state = r.loadState()
	return r, nil
}

// checkAuth refuses credentials that do not fit the URL's scheme.
func checkAuth(u remoteURL, a Auth) error {
	httpAuth := a.TokenFile != "" || a.UsernameFile != "" || (a.PasswordFile != "" && a.SSHKeyFile == "")
	sshAuth := a.SSHKeyFile != "" || a.KnownHostsFile != ""
	switch u.scheme {
	case "file":
		if httpAuth || sshAuth {
			return errors.New("a file URL takes no credentials")
		}
	case "ssh":
		if a.TokenFile != "" || a.UsernameFile != "" {
			return errors.New("auth.tokenFile and auth.usernameFile are for https URLs; ssh needs auth.sshKeyFile and auth.knownHostsFile")
		}
		if a.SSHKeyFile == "" || a.KnownHostsFile == "" {
			return errors.New("an ssh URL needs auth.sshKeyFile and auth.knownHostsFile (host keys are always checked)")
		}
	default:
		if sshAuth {
			return fmt.Errorf("auth.sshKeyFile and auth.knownHostsFile are for ssh URLs, not %s", u.scheme)
		}
		if a.TokenFile != "" && a.PasswordFile != "" {
			return errors.New("auth.tokenFile and auth.passwordFile are exclusive")
		}
		if a.UsernameFile != "" && a.TokenFile == "" && a.PasswordFile == "" {
			return errors.New("auth.usernameFile needs auth.passwordFile or auth.tokenFile")
		}
		if httpAuth && u.scheme == "http" && !remoteurl.IsLoopback(u.host) {
			return fmt.Errorf("refusing to send credentials over plain http to %s; use https", u.host)
		}
	}
	return nil
}

// newHTTPClient returns the HTTP client of one Repo: proxies from the
// environment, bounded connect and TLS handshake; the Fetch context bounds
// the rest.
func newHTTPClient(timeout time.Duration) *http.Client {
	connect := min(timeout, maxConnectTimeout)
	d := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         d.DialContext,
		TLSHandshakeTimeout: connect,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     30 * time.Second,
	}}
}

// URL returns the repository's URL as given.
func (r *Repo) URL() string { return r.opts.URL }

// refLabel is the ref as errors name it.
func (r *Repo) refLabel() string {
	if r.opts.Ref == "" {
		return "HEAD"
	}
	return r.opts.Ref
}

// Fetch brings the cache up to date with the remote's ref, verifies and
// checks out its commit, and returns it. On error the previous revision's
// tree is left in place, so a caller can keep serving it.
func (r *Repo) Fetch(ctx context.Context) (rev Revision, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// A panic inside go-git on a malformed repository or pack must not
	// take the process down: it is this Fetch's error, with its stack.
	defer func() {
		if p := recover(); p != nil {
			rev = Revision{}
			err = fmt.Errorf("git %s ref %s: panic while fetching: %v\n%s", r.opts.URL, r.refLabel(), p, debug.Stack())
		}
	}()
	if r.client != nil {
		defer r.client.CloseIdleConnections()
	}
	fctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	rev, err = r.fetch(fctx)
	if err != nil {
		if ctx.Err() == nil && errors.Is(fctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("timed out after %s: %w", r.opts.Timeout, err)
		}
		return Revision{}, fmt.Errorf("git %s ref %s: %w", r.opts.URL, r.refLabel(), err)
	}
	return rev, nil
}

// fetch is Fetch under the lock and its deadline.
func (r *Repo) fetch(ctx context.Context) (Revision, error) {
	var keys *keyring
	if r.opts.Verify != nil {
		var err error
		if keys, err = loadKeyring(r.opts.Verify.KeysFile); err != nil {
			return Revision{}, err
		}
	}
	trees := filepath.Join(r.opts.CacheDir, treesDir)
	if err := os.MkdirAll(trees, 0o700); err != nil {
		return Revision{}, fmt.Errorf("cache: %w", err)
	}
	removeTemporary(trees)
	removeTemporary(r.opts.CacheDir)

	var src source
	if r.url.scheme == "file" {
		src = &localSource{path: r.url.path}
	} else {
		src = &netSource{r: r}
	}
	defer src.close()

	got, err := src.get(ctx, r.kind, r.opts.Ref)
	if err != nil {
		return Revision{}, err
	}
	commit, err := peelCommit(got.objects, got.target, got.ref)
	if err != nil {
		return Revision{}, err
	}
	var signer string
	if keys != nil {
		if signer, err = keys.verify(commit); err != nil {
			return Revision{}, err
		}
	}
	dir, err := r.ensureTree(ctx, got.objects, commit)
	if err != nil {
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			src.damaged()
		}
		return Revision{}, err
	}

	sha := commit.Hash.String()
	if sha != r.state.Current {
		r.state.Previous, r.state.Current = r.state.Current, sha
	}
	r.state.URL = r.opts.URL
	if err := r.saveState(); err != nil {
		return Revision{}, err
	}
	r.pruneTrees()

	msg, _, _ := strings.Cut(strings.TrimSpace(commit.Message), "\n")
	return Revision{
		Commit:     sha,
		Ref:        got.ref,
		Time:       commit.Committer.When,
		Author:     fmt.Sprintf("%s <%s>", commit.Author.Name, commit.Author.Email),
		Message:    strings.TrimSpace(msg),
		Signer:     signer,
		Dir:        dir,
		Downloaded: got.downloaded,
	}, nil
}

// peelCommit follows annotated tags from h to the commit they name.
func peelCommit(st storer.EncodedObjectStorer, h plumbing.Hash, ref string) (*object.Commit, error) {
	for range 10 {
		o, err := st.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return nil, fmt.Errorf("object %s of %s: %w", h, ref, err)
		}
		switch o.Type() {
		case plumbing.CommitObject:
			return object.DecodeCommit(st, o)
		case plumbing.TagObject:
			t, err := object.DecodeTag(st, o)
			if err != nil {
				return nil, fmt.Errorf("tag %s of %s: %w", h, ref, err)
			}
			h = t.Target
		default:
			return nil, fmt.Errorf("%s names a %s (%s), not a commit", ref, o.Type(), h)
		}
	}
	return nil, fmt.Errorf("%s: more than 10 nested tags", ref)
}

// ensureTree returns CacheDir/trees/<commit>, checking the commit out there
// first unless a previous Fetch did. The tree is written under a temporary
// name and renamed into place, so the folder exists only when complete.
func (r *Repo) ensureTree(ctx context.Context, st storer.EncodedObjectStorer, c *object.Commit) (string, error) {
	trees := filepath.Join(r.opts.CacheDir, treesDir)
	final := filepath.Join(trees, c.Hash.String())
	if fi, err := os.Lstat(final); err == nil && fi.IsDir() {
		return final, nil
	}
	tmp, err := os.MkdirTemp(trees, tmpPrefix+c.Hash.String()+"-")
	if err != nil {
		return "", fmt.Errorf("cache: %w", err)
	}
	co := &checkout{
		ctx:      ctx,
		st:       st,
		root:     tmp,
		commit:   c.Hash.String(),
		maxBytes: r.opts.MaxBytes,
		maxFiles: r.opts.MaxFiles,
	}
	err = co.run(c)
	if err == nil {
		err = os.Chmod(tmp, 0o755)
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		return "", err
	}
	return final, nil
}

// removeTemporary removes the half-written trees and packs that a crash
// left in dir.
func removeTemporary(trees string) {
	entries, _ := os.ReadDir(trees)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			_ = os.RemoveAll(filepath.Join(trees, e.Name()))
		}
	}
}

// pruneTrees removes every tree but the current and the previous one.
// Failures are left for the next Fetch: a tree someone still has open is
// harmless.
func (r *Repo) pruneTrees() {
	trees := filepath.Join(r.opts.CacheDir, treesDir)
	entries, _ := os.ReadDir(trees)
	for _, e := range entries {
		n := e.Name()
		if n == r.state.Current || n == r.state.Previous || strings.HasPrefix(n, tmpPrefix) {
			continue
		}
		_ = os.RemoveAll(filepath.Join(trees, n))
	}
}

// loadState reads CacheDir/state.json. A missing or unreadable state, or
// one of another URL, starts an empty cache.
func (r *Repo) loadState() state {
	var s state
	b, err := safefile.ReadLimited(filepath.Join(r.opts.CacheDir, stateFile), 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return state{URL: r.opts.URL}
	}
	if err == nil && json.Unmarshal(b, &s) == nil && s.URL == r.opts.URL {
		if !validSHA(s.Current) {
			s.Current = ""
		}
		if !validSHA(s.Previous) {
			s.Previous = ""
		}
		return s
	}
	// Another URL's cache, or a damaged one: start afresh.
	_ = os.RemoveAll(filepath.Join(r.opts.CacheDir, repoDir))
	_ = os.RemoveAll(filepath.Join(r.opts.CacheDir, treesDir))
	_ = os.MkdirAll(filepath.Join(r.opts.CacheDir, treesDir), 0o700)
	return state{URL: r.opts.URL}
}

// validSHA reports whether s is a full lowercase commit SHA.
func validSHA(s string) bool {
	return len(s) == 40 && isHex(s) && strings.ToLower(s) == s
}

// saveState writes CacheDir/state.json atomically.
func (r *Repo) saveState() error {
	b, err := json.Marshal(r.state)
	if err != nil {
		return err
	}
	path := filepath.Join(r.opts.CacheDir, stateFile)
	f, err := os.CreateTemp(r.opts.CacheDir, stateFile+".*")
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
// Fetch (of this run or an earlier one), without touching the network:
// its Commit and Dir only (Ref is the configured ref; the other fields are
// empty). ok is false when the cache holds none. A hub uses it at start
// when the remote cannot be reached. The signature is not checked again.
func (r *Repo) Cached() (rev Revision, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state.Current == "" {
		return Revision{}, false
	}
	dir := filepath.Join(r.opts.CacheDir, treesDir, r.state.Current)
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return Revision{}, false
	}
	return Revision{Commit: r.state.Current, Ref: r.refLabel(), Dir: dir}, true
}

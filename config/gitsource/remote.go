package gitsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/driftwatch/driftwatch/internal/safefile"
)

// defaultMaxPacks is the number of packs in repo.git from which the cache
// is emptied before the next download (see the package documentation).
const defaultMaxPacks = 16

// source gives a Fetch the objects of the commit it resolves.
type source interface {
	// get resolves the ref (kind, ref) and makes sure its object is in the
	// returned store, downloading it if need be.
	get(ctx context.Context, kind refKind, ref string) (fetched, error)
	// damaged says the store lacked an object the commit needs: a remote
	// cache is emptied so that the next Fetch downloads afresh.
	damaged()
	// close releases the store and the connection.
	close()
}

// fetched is what a source's get returns.
type fetched struct {
	objects    storer.EncodedObjectStorer
	target     plumbing.Hash // the ref's object: a commit or an annotated tag
	ref        string        // the full ref name, or the commit SHA
	downloaded int64         // pack bytes received
}

// refTable is a remote's references.
type refTable struct {
	refs     map[string]plumbing.Hash // full name -> object
	head     string                   // the ref HEAD points to; "" if unknown
	headHash plumbing.Hash            // HEAD's object; zero if none
}

// resolve finds ref (of kind) in t and returns its object and full name.
func (t refTable) resolve(kind refKind, ref string) (plumbing.Hash, string, error) {
	switch kind {
	case refCommit:
		h := strings.ToLower(ref)
		return plumbing.NewHash(h), h, nil
	case refHead:
		if h, ok := t.refs[t.head]; ok && t.head != "" {
			return h, t.head, nil
		}
		if !t.headHash.IsZero() {
			return t.headHash, "HEAD", nil
		}
		return plumbing.ZeroHash, "", fmt.Errorf("the server has no HEAD (an empty repository, or HEAD names a missing branch): %w", ErrRefNotFound)
	case refFull:
		if h, ok := t.refs[ref]; ok {
			return h, ref, nil
		}
		return plumbing.ZeroHash, "", fmt.Errorf("%s is not on the server (deleted, or never pushed): %w", ref, ErrRefNotFound)
	default:
		branch, tag := "refs/heads/"+ref, "refs/tags/"+ref
		hb, isBranch := t.refs[branch]
		ht, isTag := t.refs[tag]
		switch {
		case isBranch && isTag:
			return plumbing.ZeroHash, "", fmt.Errorf("%s is both a branch and a tag; write %s or %s", ref, branch, tag)
		case isBranch:
			return hb, branch, nil
		case isTag:
			return ht, tag, nil
		}
		return plumbing.ZeroHash, "", fmt.Errorf("%s is neither a branch nor a tag on the server (deleted, or never pushed; a commit must be given as its full 40-hex SHA): %w", ref, ErrRefNotFound)
	}
}

// hasObject reports whether st holds the object h.
func hasObject(st storer.EncodedObjectStorer, h plumbing.Hash) bool {
	return st.HasEncodedObject(h) == nil
}

// netSource fetches over http(s) or ssh into CacheDir/repo.git.
type netSource struct {
	r    *Repo
	st   *filesystem.Storage
	sess transport.UploadPackSession
	// hasAuth says credentials were sent, for the error of a refusal.
	hasAuth bool
}

// storeDir is the folder of the cache's bare repository.
func (s *netSource) storeDir() string { return filepath.Join(s.r.opts.CacheDir, repoDir) }

// openStore opens (creating if need be) the cache's bare repository.
func (s *netSource) openStore() error {
	dir := s.storeDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	// KeepDescriptors: packs stay open until close, rather than being
	// opened again for every object. Not ExclusiveAccess: with it, go-git
	// v5.19.3 does not see a pack it has just written.
	st := filesystem.NewStorageWithOptions(osfs.New(dir, osfs.WithBoundOS()), cache.NewObjectLRUDefault(),
		filesystem.Options{KeepDescriptors: true, LargeObjectThreshold: largeObject})
	if err := st.Init(); err != nil {
		return fmt.Errorf("cache %s: %w", dir, err)
	}
	s.st = st
	return nil
}

// resetStore empties the cache's bare repository.
func (s *netSource) resetStore() error {
	if s.st != nil {
		_ = s.st.Close()
		s.st = nil
	}
	if err := os.RemoveAll(s.storeDir()); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return s.openStore()
}

func (s *netSource) damaged() {
	if s.st != nil {
		_ = s.st.Close()
		s.st = nil
	}
	_ = os.RemoveAll(s.storeDir())
}

func (s *netSource) close() {
	if s.sess != nil {
		_ = s.sess.Close()
		s.sess = nil
	}
	if s.st != nil {
		_ = s.st.Close()
		s.st = nil
	}
}

func (s *netSource) get(ctx context.Context, kind refKind, ref string) (fetched, error) {
	if err := s.openStore(); err != nil {
		return fetched{}, err
	}
	if kind == refCommit {
		// A pinned commit never changes: once cached, no round trip.
		h, name, _ := refTable{}.resolve(kind, ref)
		if hasObject(s.st, h) {
			return fetched{objects: s.st, target: h, ref: name}, nil
		}
	}
	adv, err := s.connect(ctx)
	if err != nil {
		return fetched{}, err
	}
	table := advTable(adv)
	target, name, err := table.resolve(kind, ref)
	if err != nil {
		return fetched{}, err
	}
	if hasObject(s.st, target) {
		return fetched{objects: s.st, target: target, ref: name}, nil
	}
	advertised := false
	for _, h := range table.refs {
		advertised = advertised || h == target
	}
	caps := adv.Capabilities
	byCommit := kind == refCommit && !advertised
	wantable := !byCommit || caps.Supports(capability.AllowReachableSHA1InWant) || caps.Supports(capability.AllowTipSHA1InWant)
	var n int64
	if wantable {
		n, err = s.download(ctx, adv, []plumbing.Hash{target}, true)
	}
	if byCommit && (!wantable || err != nil && !errors.Is(err, ErrTooLarge) && ctx.Err() == nil) {
		// The server does not let us ask for a commit that no ref names:
		// take every branch and tag, whole, and look for it there.
		if err := s.resetStore(); err != nil {
			return fetched{}, err
		}
		if s.sess != nil {
			_ = s.sess.Close()
			s.sess = nil
		}
		if adv, err = s.connect(ctx); err != nil {
			return fetched{}, err
		}
		var wants []plumbing.Hash
		seen := map[plumbing.Hash]bool{}
		for name, h := range advTable(adv).refs {
			if (strings.HasPrefix(name, "refs/heads/") || strings.HasPrefix(name, "refs/tags/")) && !seen[h] {
				seen[h] = true
				wants = append(wants, h)
			}
		}
		n, err = s.download(ctx, adv, wants, false)
	}
	if err != nil {
		return fetched{}, err
	}
	if !hasObject(s.st, target) {
		if byCommit {
			return fetched{}, fmt.Errorf("commit %s is not on any branch or tag of the server: %w", target, ErrRefNotFound)
		}
		return fetched{}, fmt.Errorf("the server's pack lacks %s, which %s names", target, name)
	}
	return fetched{objects: s.st, target: target, ref: name, downloaded: n}, nil
}

// advTable turns a server's advertisement into a refTable.
func advTable(adv *packp.AdvRefs) refTable {
	t := refTable{refs: adv.References}
	if adv.Head != nil {
		t.headHash = *adv.Head
	}
	for _, v := range adv.Capabilities.Get(capability.SymRef) {
		if from, to, ok := strings.Cut(v, ":"); ok && from == "HEAD" {
			t.head = to
		}
	}
	return t
}

// connect opens an upload-pack session and lists the server's refs.
func (s *netSource) connect(ctx context.Context) (*packp.AdvRefs, error) {
	ep, err := transport.NewEndpoint(s.r.url.endpoint)
	if err != nil {
		return nil, err
	}
	if s.r.url.scheme == "ssh" {
		addr, cfg, err := s.sshConfig(ep)
		if err != nil {
			return nil, err
		}
		s.hasAuth = true
		sess, err := dialSSH(ctx, addr, cfg, ep.Path)
		if err != nil {
			return nil, s.explain("connect", err)
		}
		s.sess = sess
	} else {
		auth, err := s.httpAuth()
		if err != nil {
			return nil, err
		}
		s.hasAuth = auth != nil
		tr := githttp.NewClientWithOptions(s.r.client, &githttp.ClientOptions{RedirectPolicy: githttp.FollowInitialRedirects})
		sess, err := tr.NewUploadPackSession(ep, auth)
		if err != nil {
			return nil, s.explain("connect", err)
		}
		s.sess = sess
	}
	adv, err := s.sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return nil, s.explain("list refs", err)
	}
	return adv, nil
}

// explain wraps a transport error with what was being done, and says what
// the usual go-git errors mean here.
func (s *netSource) explain(what string, err error) error {
	var keyErr *knownhosts.KeyError
	switch {
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return fmt.Errorf("%s: the repository is empty: %w", what, ErrRefNotFound)
	case errors.Is(err, transport.ErrAuthenticationRequired) && s.hasAuth:
		return fmt.Errorf("%s: the server refused the credentials of auth: %w", what, err)
	case errors.Is(err, transport.ErrAuthenticationRequired):
		return fmt.Errorf("%s: the server wants credentials (auth): %w", what, err)
	case errors.Is(err, transport.ErrAuthorizationFailed):
		return fmt.Errorf("%s: the credentials of auth may not read this repository: %w", what, err)
	case errors.As(err, &keyErr):
		if len(keyErr.Want) == 0 {
			return fmt.Errorf("%s: the server's host key is not in auth.knownHostsFile %s: %w", what, s.r.opts.Auth.KnownHostsFile, err)
		}
		return fmt.Errorf("%s: the server's host key differs from the one in auth.knownHostsFile %s: %w", what, s.r.opts.Auth.KnownHostsFile, err)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return fmt.Errorf("%s: no such repository (or it is private and needs auth): %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// httpAuth reads the HTTP credentials, nil when none are configured.
func (s *netSource) httpAuth() (transport.AuthMethod, error) {
	a := s.r.opts.Auth
	user := "x-access-token"
	if a.UsernameFile != "" {
		u, err := safefile.ReadCredential("auth.usernameFile", a.UsernameFile)
		if err != nil {
			return nil, err
		}
		user = u
	}
	var pass string
	var err error
	switch {
	case a.TokenFile != "":
		pass, err = safefile.ReadCredential("auth.tokenFile", a.TokenFile)
	case a.PasswordFile != "":
		pass, err = safefile.ReadCredential("auth.passwordFile", a.PasswordFile)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &githttp.BasicAuth{Username: user, Password: pass}, nil
}

// sshConfig returns the address and the SSH configuration of this Repo
// alone: its key, its known_hosts, its timeout.
func (s *netSource) sshConfig(ep *transport.Endpoint) (string, *ssh.ClientConfig, error) {
	a := s.r.opts.Auth
	pem, err := safefile.ReadLimited(a.SSHKeyFile, safefile.MaxCredentialBytes)
	if err != nil {
		return "", nil, fmt.Errorf("auth.sshKeyFile: %w", err)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		if a.PasswordFile == "" {
			return "", nil, fmt.Errorf("auth.sshKeyFile %s is encrypted; put its passphrase in auth.passwordFile", a.SSHKeyFile)
		}
		pass, perr := safefile.ReadCredential("auth.passwordFile", a.PasswordFile)
		if perr != nil {
			return "", nil, perr
		}
		signer, err = ssh.ParsePrivateKeyWithPassphrase(pem, []byte(pass))
	}
	if err != nil {
		return "", nil, fmt.Errorf("auth.sshKeyFile %s: %w", a.SSHKeyFile, err)
	}
	if _, err := safefile.ReadLimited(a.KnownHostsFile, 16<<20); err != nil {
		return "", nil, fmt.Errorf("auth.knownHostsFile: %w", err)
	}
	// go-git's known_hosts database (github.com/skeema/knownhosts) also
	// says which host key algorithms to ask for, so that a host listed
	// with one key type is not offered another and refused.
	db, err := gitssh.NewKnownHostsDb(a.KnownHostsFile)
	if err != nil {
		return "", nil, fmt.Errorf("auth.knownHostsFile %s: %w", a.KnownHostsFile, err)
	}
	port := ep.Port
	if port <= 0 {
		port = gitssh.DefaultPort
	}
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(port))
	return addr, &ssh.ClientConfig{
		User:              s.r.url.user,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback:   db.HostKeyCallback(),
		HostKeyAlgorithms: db.HostKeyAlgorithms(addr),
		Timeout:           min(s.r.opts.Timeout, maxConnectTimeout),
	}, nil
}

// download asks the server for the objects of wants (at depth 1 when
// shallow is set and the server can), saves the pack to a file within the
// byte limit, then indexes it into the store. It returns the pack's size.
func (s *netSource) download(ctx context.Context, adv *packp.AdvRefs, wants []plumbing.Hash, shallow bool) (int64, error) {
	if packs, err := s.st.ObjectPacks(); err == nil && len(packs) >= s.r.maxPacks {
		if err := s.resetStore(); err != nil {
			return 0, err
		}
	}
	caps := adv.Capabilities
	req := packp.NewUploadPackRequestFromCapabilities(caps)
	req.Wants = wants
	if caps.Supports(capability.NoProgress) {
		if err := req.Capabilities.Set(capability.NoProgress); err != nil {
			return 0, err
		}
	}
	deep := shallow && caps.Supports(capability.Shallow)
	if deep {
		req.Depth = packp.DepthCommits(1)
		if err := req.Capabilities.Set(capability.Shallow); err != nil {
			return 0, err
		}
		var err error
		if req.Shallows, err = s.st.Shallow(); err != nil {
			return 0, fmt.Errorf("cache: %w", err)
		}
	}
	if cur := s.r.state.Current; cur != "" {
		if h := plumbing.NewHash(cur); hasObject(s.st, h) {
			req.Haves = []plumbing.Hash{h}
		}
	}
	resp, err := s.sess.UploadPack(ctx, req)
	if err != nil {
		return 0, s.explain("fetch", err)
	}
	defer resp.Close()

	var pack io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		pack = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		pack = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	tmp, err := os.CreateTemp(s.r.opts.CacheDir, tmpPrefix+"pack-")
	if err != nil {
		return 0, fmt.Errorf("cache: %w", err)
	}
	defer func() {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
	}()
	limit := s.r.opts.MaxBytes
	n, err := io.Copy(tmp, io.LimitReader(pack, limit+1))
	if err != nil {
		return n, fmt.Errorf("fetch: receive pack: %w", err)
	}
	if n > limit {
		return n, fmt.Errorf("fetch: the pack is larger than %d bytes (maxBytes): %w", limit, ErrTooLarge)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return n, fmt.Errorf("cache: %w", err)
	}
	if err := checkPack(tmp, s.r.opts.MaxObjectBytes); err != nil {
		return n, fmt.Errorf("fetch: %w", err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return n, fmt.Errorf("cache: %w", err)
	}
	if deep {
		if err := s.addShallows(resp.Shallows); err != nil {
			return n, err
		}
	}
	if err := packfile.UpdateObjectStorage(s.st, tmp); err != nil {
		s.damaged()
		return n, fmt.Errorf("fetch: store pack: %w", err)
	}
	return n, nil
}

// addShallows records the commits the server sent without their parents.
func (s *netSource) addShallows(add []plumbing.Hash) error {
	if len(add) == 0 {
		return nil
	}
	have, err := s.st.Shallow()
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	seen := make(map[plumbing.Hash]bool, len(have))
	for _, h := range have {
		seen[h] = true
	}
	for _, h := range add {
		if !seen[h] {
			seen[h] = true
			have = append(have, h)
		}
	}
	if err := s.st.SetShallow(have); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// localSource reads a repository on this machine in place.
type localSource struct {
	path string
	st   *filesystem.Storage
}

func (s *localSource) damaged() {}

func (s *localSource) close() {
	if s.st != nil {
		_ = s.st.Close()
		s.st = nil
	}
}

func (s *localSource) get(_ context.Context, kind refKind, ref string) (fetched, error) {
	gitDir, err := localGitDir(s.path)
	if err != nil {
		return fetched{}, err
	}
	s.st = filesystem.NewStorageWithOptions(osfs.New(gitDir), cache.NewObjectLRUDefault(),
		filesystem.Options{KeepDescriptors: true, LargeObjectThreshold: largeObject})
	if kind == refCommit {
		h, name, _ := refTable{}.resolve(kind, ref)
		if !hasObject(s.st, h) {
			return fetched{}, fmt.Errorf("commit %s is not in the repository: %w", name, ErrRefNotFound)
		}
		return fetched{objects: s.st, target: h, ref: name}, nil
	}
	t := refTable{refs: map[string]plumbing.Hash{}}
	iter, err := s.st.IterReferences()
	if err != nil {
		return fetched{}, fmt.Errorf("list refs: %w", err)
	}
	err = iter.ForEach(func(r *plumbing.Reference) error {
		if r.Type() == plumbing.HashReference && strings.HasPrefix(r.Name().String(), "refs/") {
			t.refs[r.Name().String()] = r.Hash()
		}
		return nil
	})
	if err != nil {
		return fetched{}, fmt.Errorf("list refs: %w", err)
	}
	if head, err := s.st.Reference(plumbing.HEAD); err == nil {
		if head.Type() == plumbing.SymbolicReference {
			t.head = head.Target().String()
		} else {
			t.headHash = head.Hash()
		}
	}
	target, name, err := t.resolve(kind, ref)
	if err != nil {
		return fetched{}, err
	}
	if !hasObject(s.st, target) {
		return fetched{}, fmt.Errorf("%s names %s, which is not in the repository", name, target)
	}
	return fetched{objects: s.st, target: target, ref: name}, nil
}

// localGitDir returns the git folder of the repository at path: path
// itself when bare, path/.git otherwise.
func localGitDir(path string) (string, error) {
	if fi, err := os.Stat(filepath.Join(path, ".git")); err == nil {
		if !fi.IsDir() {
			return "", fmt.Errorf("%s/.git is a file (a linked worktree or submodule); give the main repository's path", path)
		}
		return filepath.Join(path, ".git"), nil
	}
	for _, n := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(path, n)); err != nil {
			return "", fmt.Errorf("%s is not a git repository: %w", path, err)
		}
	}
	return path, nil
}

package gitsource

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/driftwatch/driftwatch/internal/remoteurl"
)

// Defaults of Options.
const (
	// DefaultTimeout bounds one Fetch, from the first byte sent to the
	// checked-out tree.
	DefaultTimeout = 2 * time.Minute
	// DefaultMaxBytes bounds the file content of one checkout, and the pack
	// one Fetch downloads: 512 MiB.
	DefaultMaxBytes int64 = 512 << 20
	// DefaultMaxFiles bounds the entries (files, folders, links) of one
	// checkout.
	DefaultMaxFiles = 100_000
	// DefaultMaxObjectBytes bounds one object of a fetched pack, inflated
	// (a file, or what a delta builds): 100 MiB, the largest file GitHub
	// accepts. go-git holds each object whole while it indexes a pack.
	DefaultMaxObjectBytes int64 = 100 << 20
)

// Options of a Repo.
type Options struct {
	// URL of the repository: https://host/path, http://host/path (allowed,
	// but neither the content nor, off loopback, credentials are protected:
	// prefer https), ssh://[user@]host[:port]/path, the scp-like
	// [user@]host:path (SSH), or file:///absolute/path for a repository on
	// this machine. Other schemes (git://, ext::, a bare local path) are
	// refused, and so are http(s) URLs that carry a user or password:
	// credentials come from Auth.
	URL string
	// Ref to check out: a branch ("main" or "refs/heads/main"), a tag
	// ("v1.2.0" or "refs/tags/v1.2.0"), a full 40-hex commit SHA, or "" for
	// the remote's HEAD (its default branch). A short name that is both a
	// branch and a tag is refused as ambiguous.
	Ref string
	// CacheDir is the folder of this Repo's cache (created 0700 if missing).
	// It belongs to one Repo at a time: two Repos, or two processes, must
	// not share it. A hub keeps one per source under its state folder; see
	// DirName.
	CacheDir string
	// Auth holds the paths of the credentials files.
	Auth Auth
	// Verify, when set, makes Fetch refuse a commit that is not signed by
	// one of its keys. Nil: no signature verification.
	Verify *Verify
	// Timeout bounds one Fetch (DefaultTimeout when zero). Connecting is
	// bounded by the smaller of Timeout and 30 seconds.
	Timeout time.Duration
	// MaxBytes bounds the file content of a checkout and the size of the
	// pack one Fetch downloads (DefaultMaxBytes when zero).
	MaxBytes int64
	// MaxFiles bounds the entries of a checkout (DefaultMaxFiles when zero).
	MaxFiles int
	// MaxObjectBytes bounds one object of a fetched pack, inflated: a
	// file, or the object a delta builds (the smaller of
	// DefaultMaxObjectBytes and MaxBytes when zero). The pack is read
	// through once, in constant memory, and refused before it is indexed:
	// a few megabytes of pack can inflate to gigabytes.
	MaxObjectBytes int64
}

// Auth names the files that hold the credentials of a Repo. Every file is
// read at each Fetch (at most 64 KiB, surrounding white space trimmed), so
// that credentials can be rotated in place; symbolic links are followed,
// as Kubernetes mounts Secrets through them.
type Auth struct {
	// TokenFile holds an HTTPS access token (a GitHub, GitLab, Gitea or
	// Forgejo personal or app token). It is sent with HTTP basic
	// authentication as the password of the user "x-access-token" (or of
	// the user in UsernameFile), which those servers accept.
	TokenFile string
	// UsernameFile and PasswordFile hold an HTTPS user and password (HTTP
	// basic authentication). PasswordFile and TokenFile are exclusive.
	UsernameFile string
	// PasswordFile holds the HTTPS password; with SSHKeyFile, the passphrase
	// of an encrypted key.
	PasswordFile string
	// SSHKeyFile holds an SSH private key (OpenSSH or PEM) for ssh:// and
	// scp-like URLs. The SSH user is the URL's, or "git".
	SSHKeyFile string
	// KnownHostsFile is an OpenSSH known_hosts file. It is required for SSH:
	// the server's host key must be in it.
	KnownHostsFile string
}

// Verify configures signature verification: the commit that a Fetch
// returns must carry its own signature by a trusted key (the signature of
// an annotated tag naming it is not what is checked). The check is made at
// every Fetch, also of a commit already in the cache, so that removing a
// key from the file refuses what it signed.
type Verify struct {
	// KeysFile holds the trusted keys: any number of ASCII-armored OpenPGP
	// public key blocks, and SSH public keys, one per line, either as in
	// authorized_keys ("ssh-ed25519 AAAA... comment") or as in git's
	// gpg.ssh.allowedSignersFile ("alice@example.com ssh-ed25519 AAAA...",
	// with the options namespaces="..." (which must then include "git"),
	// valid-after and valid-before; cert-authority is not supported). Lines
	// starting with # are comments. The file is read at each Fetch.
	KeysFile string
}

// DirName returns a folder name for the cache of the source (url, ref): the
// host and path made safe for a file name, shortened, then a hash of both
// (so two refs of one repository get two folders, as a CacheDir serves one
// Repo). It is stable across versions and restarts.
func DirName(rawURL, ref string) string {
	sum := sha256.Sum256([]byte(rawURL + "\x00" + ref))
	var b strings.Builder
	for _, r := range strings.ToLower(rawURL) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := b.String()
	for _, p := range []string{"https___", "http___", "ssh___", "file___"} {
		name = strings.TrimPrefix(name, p)
	}
	name = strings.Trim(name, "._-")
	if len(name) > 48 {
		name = name[len(name)-48:]
	}
	return name + "-" + hex.EncodeToString(sum[:6])
}

// scpLike matches [user@]host:path, git's SSH shorthand: no slash before
// the colon, and the path does not start with "//" (that would be a URL).
var scpLike = regexp.MustCompile(`^(?:([^@/:\s]+)@)?([^@/:\s\[\]]+|\[[0-9a-fA-F:.]+\]):([^/].*|/[^/].*)$`)

// remoteHelper matches git's "transport::address" syntax (ext::, fd::),
// which runs programs: never a URL here.
var remoteHelper = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*::`)

// remoteURL is a validated Options.URL.
type remoteURL struct {
	scheme string // https, http, ssh or file
	// endpoint is what go-git is given: the URL as written, or for
	// scp-like URLs ssh://user@host/path.
	endpoint string
	host     string // hostname without port; "" for file
	user     string // SSH user
	path     string // file: the local path
}

// parseURL validates raw against the schemes a Repo supports.
func parseURL(raw string) (remoteURL, error) {
	if raw == "" {
		return remoteURL{}, errors.New("url is empty")
	}
	// Every error shows the URL with its password, if any, redacted.
	shown := remoteurl.Redact(raw)
	for _, r := range raw {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return remoteURL{}, fmt.Errorf("url %q contains white space or a control character", shown)
		}
	}
	if strings.HasPrefix(raw, "-") {
		return remoteURL{}, fmt.Errorf("url %q starts with '-'", shown)
	}
	if !strings.Contains(raw, "://") {
		m := scpLike.FindStringSubmatch(raw)
		if m == nil || remoteHelper.MatchString(raw) {
			return remoteURL{}, fmt.Errorf("url %q: want https://, http://, ssh://, [user@]host:path or file:///path", shown)
		}
		user := m[1]
		if user == "" {
			user = "git"
		}
		host := strings.Trim(m[2], "[]")
		return remoteURL{scheme: "ssh", endpoint: raw, host: host, user: user}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error repeats the URL, and its reason may quote
		// part of the password: given only when there is none.
		var ue *url.Error
		if shown != raw || !errors.As(err, &ue) {
			return remoteURL{}, fmt.Errorf("url %q does not parse as a URL", shown)
		}
		return remoteURL{}, fmt.Errorf("url %q does not parse as a URL: %v", shown, ue.Err)
	}
	if u.Fragment != "" || u.RawQuery != "" {
		return remoteURL{}, fmt.Errorf("url %q: a query or fragment is not allowed", shown)
	}
	switch u.Scheme {
	case "https", "http":
		if u.User != nil {
			return remoteURL{}, fmt.Errorf("url %q carries credentials; put them in auth files instead", shown)
		}
		if u.Hostname() == "" {
			return remoteURL{}, fmt.Errorf("url %q has no host", shown)
		}
		return remoteURL{scheme: u.Scheme, endpoint: raw, host: u.Hostname()}, nil
	case "ssh":
		if _, ok := u.User.Password(); ok {
			return remoteURL{}, fmt.Errorf("url %q carries a password; use auth.sshKeyFile", shown)
		}
		if u.Hostname() == "" {
			return remoteURL{}, fmt.Errorf("url %q has no host", shown)
		}
		user := u.User.Username()
		if user == "" {
			user = "git"
		}
		return remoteURL{scheme: "ssh", endpoint: raw, host: u.Hostname(), user: user}, nil
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return remoteURL{}, fmt.Errorf("url %q: a file URL names no host (file:///path)", shown)
		}
		if !filepath.IsAbs(u.Path) {
			return remoteURL{}, fmt.Errorf("url %q: the path must be absolute", shown)
		}
		return remoteURL{scheme: "file", endpoint: raw, path: filepath.Clean(u.Path)}, nil
	default:
		return remoteURL{}, fmt.Errorf("url %q: scheme %q is not supported (https, http, ssh, file)", shown, u.Scheme)
	}
}

// refKind says what Options.Ref names.
type refKind int

const (
	refHead   refKind = iota // "": the remote's HEAD
	refCommit                // a full commit SHA
	refFull                  // refs/...
	refShort                 // a short branch or tag name
)

// parseRef validates ref and says what it names.
func parseRef(ref string) (refKind, error) {
	switch {
	case ref == "" || ref == "HEAD":
		return refHead, nil
	case len(ref) == 40 && isHex(ref):
		return refCommit, nil
	case strings.HasPrefix(ref, "refs/"):
		if err := plumbing.ReferenceName(ref).Validate(); err != nil {
			return 0, fmt.Errorf("ref %q is not a valid reference name", ref)
		}
		return refFull, nil
	default:
		if err := plumbing.ReferenceName("refs/heads/" + ref).Validate(); err != nil || strings.HasPrefix(ref, "-") {
			return 0, fmt.Errorf("ref %q is not a valid branch or tag name", ref)
		}
		return refShort, nil
	}
}

// isHex reports whether s is lowercase or uppercase hexadecimal.
func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return true
}

// CheckURL reports whether Open would accept rawURL as Options.URL (for a
// config reader that validates before any fetch).
func CheckURL(rawURL string) error {
	_, err := parseURL(rawURL)
	return err
}

// CheckRef reports whether Open would accept ref as Options.Ref.
func CheckRef(ref string) error {
	_, err := parseRef(ref)
	return err
}

package chartrepo

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/Masterminds/semver/v3"

	"github.com/driftwatch/driftwatch/internal/remoteurl"
	"github.com/driftwatch/driftwatch/internal/safefile"
)

// Defaults of Options.
const (
	// DefaultTimeout bounds one Fetch, from the first byte sent to the
	// archive written into the cache.
	DefaultTimeout = 2 * time.Minute
	// DefaultMaxIndexBytes bounds a repository's index.yaml: 64 MiB (large
	// public indexes are tens of megabytes).
	DefaultMaxIndexBytes int64 = 64 << 20
	// DefaultMaxChartBytes bounds a chart archive (.tgz) as downloaded:
	// 16 MiB. Helm's loader bounds what it inflates to on its own.
	DefaultMaxChartBytes int64 = 16 << 20
)

// Options of a Repo.
type Options struct {
	// URL of the repository: https://host/path or http://host/path for a
	// Helm chart repository (serving index.yaml), or
	// oci://host[:port]/path for an OCI registry, where the chart is the
	// repository path + "/" + Chart. http:// is allowed, but neither the
	// content nor, off loopback, credentials are protected: prefer https.
	// A URL that carries a user or password, a query or a fragment is
	// refused: credentials come from Auth.
	URL string
	// Chart is the chart's name in the repository (see CheckChart). For
	// OCI it is the last element of the registry repository's path.
	Chart string
	// Version is an exact version ("4.11.2") or a semantic version
	// constraint ("~4.11", ">=1.0 <2", "^2"), with the syntax and
	// resolution of `helm pull --version` (Masterminds/semver): an exact
	// version present is taken as is, otherwise the highest version that
	// satisfies the constraint. "" is the latest stable version
	// (prereleases are skipped).
	Version string
	// CacheDir is the folder of this Repo's cache (created 0700 if missing).
	// It belongs to one Repo at a time: two Repos, or two processes, must
	// not share it. See DirName.
	CacheDir string
	// Timeout bounds one Fetch (DefaultTimeout when zero). Connecting is
	// bounded by the smaller of Timeout and 30 seconds.
	Timeout time.Duration
	// Auth names the files holding basic-auth credentials, if any.
	Auth Auth
	// CAFile is a PEM bundle of certificate authorities trusted in addition
	// to the system's ("" for none). It is read at each Fetch.
	CAFile string
	// MaxIndexBytes bounds index.yaml (DefaultMaxIndexBytes when zero).
	MaxIndexBytes int64
	// MaxChartBytes bounds the chart archive as downloaded
	// (DefaultMaxChartBytes when zero).
	MaxChartBytes int64
	// PlainHTTP makes an oci:// Repo talk plain HTTP to its registry. It is
	// refused for other schemes and unless the registry's host is a
	// loopback address (it exists for tests and local registries).
	PlainHTTP bool
}

// Auth names the files that hold the basic-auth credentials of a Repo, for
// an HTTP(S) chart repository or an OCI registry. Both are set or neither.
// The files are read at each Fetch (at most 64 KiB, surrounding white space
// trimmed), so that credentials can be rotated in place; symbolic links are
// followed, as Kubernetes mounts Secrets through them.
//
// Credentials are only sent over https, or plain http to a loopback
// address, and only to the repository's own host (and port): a chart
// archive whose URL names another host, or a redirect to another host, gets
// none (Helm's default, without --pass-credentials). For OCI they are
// given to the registry, and to the token service its challenge names, as
// docker and helm do.
type Auth struct {
	// UsernameFile holds the user name.
	UsernameFile string
	// PasswordFile holds the password (or token).
	PasswordFile string
}

// Names of the URL schemes.
const (
	schemeHTTPS = "https"
	schemeHTTP  = "http"
	schemeOCI   = "oci"
)

// repoURL is a validated Options.URL.
type repoURL struct {
	scheme string // https, http or oci
	// u is the parsed URL; for http(s) its path has no trailing slash.
	u *url.URL
	// host is the hostname without port, lowercased.
	host string
	// hostPort is the host and port, with the scheme's default port when
	// the URL names none (oci: 443).
	hostPort string
	// ociRepo is, for oci, the registry repository path without the chart
	// ("" when the chart sits at the registry's top).
	ociRepo string
}

// maxURLLength bounds Options.URL.
const maxURLLength = 2048

// parseURL validates raw as Options.URL.
func parseURL(raw string) (repoURL, error) {
	if raw == "" {
		return repoURL{}, errors.New("url is empty")
	}
	if len(raw) > maxURLLength {
		return repoURL{}, fmt.Errorf("url is longer than %d characters", maxURLLength)
	}
	for _, r := range raw {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return repoURL{}, fmt.Errorf("url %q contains white space or a control character", remoteurl.Redact(raw))
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error repeats the URL, which may hold a password.
		return repoURL{}, fmt.Errorf("url %q does not parse as a URL", remoteurl.Redact(raw))
	}
	if u.User != nil {
		return repoURL{}, fmt.Errorf("url %q carries credentials; put them in auth files instead", remoteurl.Redact(raw))
	}
	if u.Opaque != "" {
		return repoURL{}, fmt.Errorf("url %q: want scheme://host/path", raw)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#") {
		return repoURL{}, fmt.Errorf("url %q: a query or fragment is not allowed", raw)
	}
	scheme := u.Scheme
	switch scheme {
	case schemeHTTPS, schemeHTTP, schemeOCI:
	case "":
		return repoURL{}, fmt.Errorf("url %q has no scheme (https://, http:// or oci://)", raw)
	default:
		return repoURL{}, fmt.Errorf("url %q: scheme %q is not supported (https, http, oci)", raw, u.Scheme)
	}
	if u.Hostname() == "" {
		return repoURL{}, fmt.Errorf("url %q has no host", raw)
	}
	out := repoURL{scheme: scheme, u: u, host: strings.ToLower(u.Hostname())}
	out.hostPort = hostPort(scheme, u)
	if scheme == schemeOCI {
		p := strings.Trim(u.Path, "/")
		if strings.Contains(u.Path, "//") || strings.Contains(p, "..") {
			return repoURL{}, fmt.Errorf("url %q: the path has an empty or \"..\" element", raw)
		}
		for _, r := range p {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/", r)) {
				return repoURL{}, fmt.Errorf("url %q: an OCI repository path has lowercase letters, digits, '.', '_', '-' and '/' only", raw)
			}
		}
		out.ociRepo = p
		return out, nil
	}
	c := *u
	c.Path = strings.TrimRight(u.Path, "/")
	c.RawPath = ""
	out.u = &c
	return out, nil
}

// hostPort returns u's lowercased host and port, with the scheme's default
// port when u names none.
func hostPort(scheme string, u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "443"
		if scheme == schemeHTTP {
			port = "80"
		}
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// displayURL is u as errors and Revision.URL show it: without user
// information or query (which may hold a signed token).
func displayURL(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	c.ForceQuery = false
	c.Fragment = ""
	c.RawFragment = ""
	return c.String()
}

// maxChartName bounds a chart's name.
const maxChartName = 250

// CheckChart reports whether name is acceptable as Options.Chart: not
// empty, at most 250 characters of [A-Za-z0-9._-], not "." or ".." and
// without "..". (An OCI registry also wants it lowercase.)
func CheckChart(name string) error {
	switch {
	case name == "":
		return errors.New("chart name is empty")
	case len(name) > maxChartName:
		return fmt.Errorf("chart name is longer than %d characters", maxChartName)
	case strings.Contains(name, ".."):
		return fmt.Errorf("chart name %q contains \"..\"", name)
	case name == ".":
		return errors.New(`chart name "." is not allowed`)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("chart name %q: only letters, digits, '.', '_' and '-' are allowed", name)
		}
	}
	return nil
}

// maxVersionLength bounds Options.Version, and a version read from a
// server.
const maxVersionLength = 128

// CheckVersion reports whether v is acceptable as Options.Version: "" (the
// latest stable version), a version, or a semantic version constraint.
func CheckVersion(v string) error {
	_, err := parseVersion(v)
	return err
}

// parseVersion validates Options.Version and returns its constraint
// (nil for "": the latest stable version).
func parseVersion(v string) (*semver.Constraints, error) {
	if v == "" {
		return nil, nil
	}
	if len(v) > maxVersionLength {
		return nil, fmt.Errorf("version is longer than %d characters", maxVersionLength)
	}
	for _, r := range v {
		if unicode.IsControl(r) || r > unicode.MaxASCII {
			return nil, fmt.Errorf("version %q contains a control or non-ASCII character", v)
		}
	}
	c, err := semver.NewConstraint(v)
	if err != nil {
		if _, verr := semver.NewVersion(v); verr == nil {
			// Every version parses as a constraint too; kept for safety.
			return nil, fmt.Errorf("version %q: %v", v, err)
		}
		return nil, fmt.Errorf("version %q is neither a version nor a constraint: %v", v, err)
	}
	return c, nil
}

// safeVersion reports whether a version read from a server can be part of
// a file name and names a semantic version.
func safeVersion(v string) bool {
	if v == "" || len(v) > maxVersionLength || v[0] == '.' || v[0] == '-' {
		return false
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '+') {
			return false
		}
	}
	_, err := semver.NewVersion(v)
	return err == nil
}

// CheckURL reports whether Open would accept raw as Options.URL (for a
// config reader that validates before any fetch): scheme https, http or
// oci, a host, no user information, query or fragment.
func CheckURL(raw string) error {
	_, err := parseURL(raw)
	return err
}

// DirName returns a folder name for the cache of the chart (url, chart):
// the host, path and chart made safe for a file name, shortened, then a
// hash of both (so two charts of one repository get two folders, as a
// CacheDir serves one Repo). It is stable across versions and restarts.
func DirName(rawURL, chart string) string {
	sum := sha256.Sum256([]byte(rawURL + "\x00" + chart))
	var b strings.Builder
	for _, r := range strings.ToLower(rawURL + "/" + chart) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := b.String()
	for _, p := range []string{"https___", "http___", "oci___"} {
		name = strings.TrimPrefix(name, p)
	}
	name = strings.Trim(name, "._-")
	if len(name) > 48 {
		name = strings.TrimLeft(name[len(name)-48:], "._-")
	}
	return name + "-" + hex.EncodeToString(sum[:6])
}

// credentials are the basic-auth user and password of one Fetch.
type credentials struct {
	user, password string
}

// readAuth reads the credentials files of a, if set.
func readAuth(a Auth) (*credentials, error) {
	if a.UsernameFile == "" && a.PasswordFile == "" {
		return nil, nil
	}
	user, err := safefile.ReadCredential("auth.usernameFile", a.UsernameFile)
	if err != nil {
		return nil, err
	}
	pass, err := safefile.ReadCredential("auth.passwordFile", a.PasswordFile)
	if err != nil {
		return nil, err
	}
	if strings.Contains(user, ":") {
		return nil, fmt.Errorf("auth.usernameFile: %s: a user name for basic authentication must not contain ':'", a.UsernameFile)
	}
	return &credentials{user: user, password: pass}, nil
}

// sizeLabel writes a byte limit the way operators read it ("16 MiB").
func sizeLabel(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}

package chartrepo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/remoteurl"
	"github.com/driftwatch/driftwatch/internal/safefile"
)

// maxCAFileBytes bounds Options.CAFile.
const maxCAFileBytes = 4 << 20

// maxRedirects bounds the redirects one request follows.
const maxRedirects = 10

// userAgent is sent with every request.
const userAgent = "driftwatch-chartrepo"

// newTransport returns the HTTP transport of one Fetch: the system's
// certificate authorities plus those of caFile, proxies from the
// environment, bounded connect, TLS handshake and response header wait;
// the Fetch context bounds the rest.
func newTransport(timeout time.Duration, caFile string) (*http.Transport, error) {
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := safefile.ReadLimited(caFile, maxCAFileBytes)
		if err != nil {
			return nil, fmt.Errorf("caFile: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("caFile: %s holds no PEM certificate", caFile)
		}
		tlsConf.RootCAs = pool
	}
	connect := min(timeout, maxConnectTimeout)
	d := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            d.DialContext,
		TLSClientConfig:        tlsConf,
		TLSHandshakeTimeout:    connect,
		ResponseHeaderTimeout:  timeout,
		ForceAttemptHTTP2:      true,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        30 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
	}, nil
}

// guardTransport never lets an Authorization header travel in clear text
// off the loopback: whatever set it (a redirect, a token service named by a
// registry), it is removed from a plain-http request to another host.
type guardTransport struct{ base http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (g guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") != "" && !secureFor(req.URL) {
		req = req.Clone(req.Context())
		req.Header.Del("Authorization")
	}
	return g.base.RoundTrip(req)
}

// secureFor reports whether credentials may travel to u: over https, or
// plain http to a loopback address.
func secureFor(u *url.URL) bool {
	return u.Scheme == schemeHTTPS || (u.Scheme == schemeHTTP && remoteurl.IsLoopback(u.Hostname()))
}

// newClient returns an HTTP client over tr that follows at most
// maxRedirects redirects, refuses a redirect from https to http or to
// another scheme, and drops the Authorization header on a redirect to any
// host (and port) other than home's.
func newClient(tr http.RoundTripper, timeout time.Duration, home string) *http.Client {
	return &http.Client{
		Transport: guardTransport{base: tr},
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("more than %d redirects", maxRedirects)
			}
			prev := via[len(via)-1].URL
			switch {
			case req.URL.Scheme != schemeHTTPS && req.URL.Scheme != schemeHTTP:
				return fmt.Errorf("redirect to a %s URL refused", req.URL.Scheme)
			case prev.Scheme == schemeHTTPS && req.URL.Scheme == schemeHTTP:
				return fmt.Errorf("redirect from https to http (%s) refused", displayURL(req.URL))
			case req.URL.User != nil:
				return errors.New("redirect to a URL with credentials refused")
			}
			if hostPort(req.URL.Scheme, req.URL) != home || !secureFor(req.URL) {
				req.Header.Del("Authorization")
			}
			return nil
		},
	}
}

// httpSource is a Helm chart repository: index.yaml and archives.
type httpSource struct {
	r      *Repo
	tr     *http.Transport
	client *http.Client
	creds  *credentials
}

// newHTTPSource returns the source of an http(s) Repo.
func newHTTPSource(r *Repo, tr *http.Transport, creds *credentials) *httpSource {
	return &httpSource{r: r, tr: tr, client: newClient(tr, r.opts.Timeout, r.url.hostPort), creds: creds}
}

// close implements source.
func (s *httpSource) close() { s.tr.CloseIdleConnections() }

// get sends a GET for u, with the credentials when u is on the
// repository's host over a secure channel, and returns the response of
// status 200; other statuses are errors naming u.
func (s *httpSource) get(ctx context.Context, u *url.URL) (*http.Response, error) {
	return s.getIf(ctx, u, nil)
}

// getIf is get with the conditional headers of memo (If-None-Match,
// If-Modified-Since) when it is not nil; a 304 is then returned as it is.
func (s *httpSource) getIf(ctx context.Context, u *url.URL, memo *indexMemo) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", displayURL(u), err)
	}
	req.Header.Set("User-Agent", userAgent)
	if memo != nil {
		if memo.etag != "" {
			req.Header.Set("If-None-Match", memo.etag)
		}
		if memo.lastModified != "" {
			req.Header.Set("If-Modified-Since", memo.lastModified)
		}
	}
	if s.creds != nil && hostPort(u.Scheme, u) == s.r.url.hostPort && secureFor(u) {
		req.SetBasicAuth(s.creds.user, s.creds.password)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		// The *url.Error repeats the URL, with its query: name it once,
		// without.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s: %w", displayURL(u), err)
	}
	if resp.StatusCode == http.StatusNotModified && memo != nil {
		return resp, nil
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, statusError(displayURL(u), resp.StatusCode)
	}
	return resp, nil
}

// indexMemo is what the last index read of a Repo resolved, so that a
// poll that finds the index unchanged (a 304 to its conditional request,
// or the same bytes) neither parses it nor picks again: a large public
// index takes hundreds of milliseconds of CPU to parse.
type indexMemo struct {
	etag, lastModified string
	sum                [sha256.Size]byte
	cand               candidate
}

// statusError names an HTTP status that is not 200 (the reason phrase the
// server sent is not repeated: it is the server's text).
func statusError(what string, code int) error {
	text := http.StatusText(code)
	if text == "" {
		text = "status"
	}
	msg := fmt.Sprintf("%s: %d %s", what, code, text)
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden:
		return kindErr(ErrUnauthorized, "%s", msg)
	}
	return errors.New(msg)
}

// readBody copies at most max bytes of resp's body to w and refuses a
// body that is longer, or that says so in its Content-Length, before
// reading it. what names the resource in errors.
func readBody(resp *http.Response, w io.Writer, max int64, what string) (int64, error) {
	if resp.ContentLength > max {
		return 0, kindErr(ErrTooLarge, "%s is over %s (the server announces %d bytes)", what, sizeLabel(max), resp.ContentLength)
	}
	n, err := io.Copy(w, io.LimitReader(resp.Body, max+1))
	if err != nil {
		return n, fmt.Errorf("%s: %w", what, err)
	}
	if n > max {
		return n, kindErr(ErrTooLarge, "%s is over %s", what, sizeLabel(max))
	}
	return n, nil
}

// indexURL is the repository's index.yaml.
func (s *httpSource) indexURL() *url.URL {
	u := *s.r.url.u
	u.Path += "/index.yaml"
	return &u
}

// resolve implements source: it downloads and parses index.yaml and picks
// the version with Helm's own rules.
func (s *httpSource) resolve(ctx context.Context) (candidate, error) {
	name := s.r.opts.Chart
	shownIndex := displayURL(s.indexURL())
	memo := s.r.index
	data, resp, err := s.loadIndex(ctx, memo)
	if err != nil {
		return candidate{}, err
	}
	if resp.StatusCode == http.StatusNotModified {
		return memo.cand, nil
	}
	next := &indexMemo{etag: resp.Header.Get("ETag"), lastModified: resp.Header.Get("Last-Modified"), sum: sha256.Sum256(data)}
	if memo != nil && memo.sum == next.sum {
		next.cand = memo.cand
		s.r.index = next
		return next.cand, nil
	}
	c, err := s.pick(data, name, shownIndex)
	if err != nil {
		s.r.index = nil
		return candidate{}, err
	}
	next.cand = c
	s.r.index = next
	return c, nil
}

// pick parses index.yaml and picks the version with Helm's own rules.
func (s *httpSource) pick(data []byte, name, shownIndex string) (candidate, error) {
	versions, charts, err := parseIndex(data, name)
	if errors.Is(err, errNoChart) {
		return candidate{}, namedErr(ErrNotFound, "chart %s not found in %s (%s)", name, s.r.opts.URL, chartsHint(name, charts))
	}
	if err != nil {
		return candidate{}, fmt.Errorf("%s is not a valid chart repository index: %v", shownIndex, err)
	}
	cv := pickVersion(versions, s.r.opts.Version, s.r.constraint)
	if cv == nil {
		list := make([]string, 0, min(len(versions), maxListed+1))
		for _, v := range versions[:min(len(versions), maxListed+1)] {
			list = append(list, v.Version)
		}
		return candidate{}, notFoundError(name, s.r.opts.Version, s.r.opts.URL, list)
	}
	if len(cv.URLs) == 0 {
		return candidate{}, fmt.Errorf("%s: version %s has no download URL", shownIndex, cv.Version)
	}
	u, err := s.chartURL(cv.URLs[0])
	if err != nil {
		return candidate{}, fmt.Errorf("%s: version %s: %w", shownIndex, cv.Version, err)
	}
	c := candidate{version: cv.Version, created: cv.Created, url: displayURL(u), rawURL: u, size: -1, digestFrom: "index.yaml"}
	if cv.Digest != "" {
		d := strings.ToLower(strings.TrimPrefix(cv.Digest, "sha256:"))
		if len(d) != 64 || !isLowerHex(d) {
			return candidate{}, fmt.Errorf("%s: version %s: digest %q is not a sha256 digest", shownIndex, cv.Version, cv.Digest)
		}
		c.sha256 = d
		c.digest = "sha256:" + d
	}
	return c, nil
}

// maxListed bounds the versions a not-found error lists.
const maxListed = 5

// notFoundError says that no version of chart satisfies want (""
// for the latest stable version) in repo, listing the first of the
// versions it has.
func notFoundError(chart, want, repo string, versions []string) error {
	var b strings.Builder
	if len(versions) == 0 {
		b.WriteString("no versions")
	} else {
		b.WriteString("versions: ")
		for i, v := range versions {
			if i == maxListed {
				b.WriteString(", ...; at most " + strconv.Itoa(maxListed) + " listed")
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(v)
		}
	}
	if want == "" {
		return namedErr(ErrNotFound, "chart %s has no stable version in %s (%s)", chart, repo, b.String())
	}
	return namedErr(ErrNotFound, "chart %s version %q not found in %s (%s)", chart, want, repo, b.String())
}

// chartURL resolves an archive URL of the index against the repository
// URL (as Helm does: relative to the repository folder).
func (s *httpSource) chartURL(raw string) (*url.URL, error) {
	ref, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("chart URL %q does not parse", remoteurl.Redact(raw))
	}
	base := *s.r.url.u
	base.Path += "/"
	u := base.ResolveReference(ref)
	switch {
	case u.Scheme != schemeHTTPS && u.Scheme != schemeHTTP:
		return nil, fmt.Errorf("chart URL %q: scheme %q is not allowed (https, http)", remoteurl.Redact(raw), u.Scheme)
	case u.User != nil:
		return nil, fmt.Errorf("chart URL %q carries credentials", remoteurl.Redact(raw))
	case u.Hostname() == "":
		return nil, fmt.Errorf("chart URL %q has no host", remoteurl.Redact(raw))
	case s.r.url.scheme == schemeHTTPS && u.Scheme == schemeHTTP:
		return nil, fmt.Errorf("chart URL %s is plain http in an https repository", displayURL(u))
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// loadIndex downloads index.yaml, within MaxIndexBytes, asking the
// server to answer 304 when it has not changed since memo (nil: no
// condition); the response's body is read and closed.
func (s *httpSource) loadIndex(ctx context.Context, memo *indexMemo) ([]byte, *http.Response, error) {
	u := s.indexURL()
	resp, err := s.getIf(ctx, u, memo)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified {
		return nil, resp, nil
	}
	var buf bytes.Buffer
	if _, err := readBody(resp, &buf, s.r.opts.MaxIndexBytes, displayURL(u)); err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), resp, nil
}

// download implements source.
func (s *httpSource) download(ctx context.Context, c candidate, max int64) ([]byte, error) {
	resp, err := s.get(ctx, c.rawURL)
	if err != nil {
		return nil, fmt.Errorf("chart archive %w", err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := readBody(resp, &buf, max, "chart archive "+c.url); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

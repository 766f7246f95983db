package gitsource

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// MaxWebhookBytes bounds the body of a webhook request ParsePush reads.
const MaxWebhookBytes = 1 << 20

// Errors of ParsePush, for errors.Is.
var (
	// ErrWebhookAuth: the request's signature or token is missing or wrong
	// (answer 401), or no secret is configured.
	ErrWebhookAuth = errors.New("webhook not authenticated")
	// ErrNotPush: an authenticated event of another kind (a ping, an issue),
	// to acknowledge and ignore.
	ErrNotPush = errors.New("not a push event")
)

// Push is an authenticated push event.
type Push struct {
	// Provider is "github", "gitlab", "gitea" or "forgejo".
	Provider string
	// Ref is the full ref pushed: "refs/heads/main", "refs/tags/v1".
	Ref string
	// After is the commit the ref points to after the push; all zeros when
	// the ref was deleted.
	After string
	// Deleted says the push deleted the ref.
	Deleted bool
	// URLs are the repository's URLs the payload gives (clone, SSH, web),
	// in that order, without duplicates.
	URLs []string
}

// pushPayload holds the fields ParsePush reads of the providers' payloads.
type pushPayload struct {
	Ref        string `json:"ref"`
	After      string `json:"after"`
	Deleted    bool   `json:"deleted"`
	ObjectKind string `json:"object_kind"`
	Repository struct {
		CloneURL   string `json:"clone_url"`
		SSHURL     string `json:"ssh_url"`
		HTMLURL    string `json:"html_url"`
		GitHTTPURL string `json:"git_http_url"`
		GitSSHURL  string `json:"git_ssh_url"`
		Homepage   string `json:"homepage"`
	} `json:"repository"`
	Project struct {
		GitHTTPURL string `json:"git_http_url"`
		GitSSHURL  string `json:"git_ssh_url"`
		WebURL     string `json:"web_url"`
	} `json:"project"`
}

// ParsePush authenticates a push webhook with secret and returns the push.
// It recognises, by their headers:
//
//   - Forgejo (X-Forgejo-Event, X-Forgejo-Signature) and Gitea
//     (X-Gitea-Event, X-Gitea-Signature): the hex HMAC-SHA256 of the body;
//   - GitLab (X-Gitlab-Event, X-Gitlab-Token): the token equals secret
//     (compared in constant time);
//   - GitHub (X-GitHub-Event, X-Hub-Signature-256): "sha256=" and the hex
//     HMAC-SHA256 of the body. Both JSON and form-encoded (payload=...)
//     deliveries are read.
//
// The body is read up to MaxWebhookBytes; a larger one is refused. A
// missing or wrong signature or token, or an empty secret, is ErrWebhookAuth;
// an authenticated event other than a push is ErrNotPush. The request's
// body is consumed.
func ParsePush(r *http.Request, secret []byte) (Push, error) {
	if len(secret) == 0 {
		return Push{}, fmt.Errorf("no webhook secret is configured: %w", ErrWebhookAuth)
	}
	if r.Method != http.MethodPost {
		return Push{}, fmt.Errorf("webhook: method %s, want POST", r.Method)
	}
	h := r.Header
	var provider, event, sigHeader string
	switch {
	case h.Get("X-Forgejo-Event") != "":
		provider, event, sigHeader = "forgejo", h.Get("X-Forgejo-Event"), "X-Forgejo-Signature"
	case h.Get("X-Gitea-Event") != "":
		provider, event, sigHeader = "gitea", h.Get("X-Gitea-Event"), "X-Gitea-Signature"
	case h.Get("X-Gitlab-Event") != "":
		provider, event = "gitlab", h.Get("X-Gitlab-Event")
	case h.Get("X-GitHub-Event") != "":
		provider, event, sigHeader = "github", h.Get("X-GitHub-Event"), "X-Hub-Signature-256"
	default:
		return Push{}, errors.New("webhook: no X-GitHub-Event, X-Gitlab-Event, X-Gitea-Event or X-Forgejo-Event header")
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxWebhookBytes+1))
	if err != nil {
		return Push{}, fmt.Errorf("webhook: read body: %w", err)
	}
	if len(body) > MaxWebhookBytes {
		return Push{}, fmt.Errorf("webhook: the body is larger than %d bytes", MaxWebhookBytes)
	}
	if provider == "gitlab" {
		token := h.Get("X-Gitlab-Token")
		if token == "" {
			return Push{}, fmt.Errorf("gitlab webhook: no X-Gitlab-Token header: %w", ErrWebhookAuth)
		}
		if subtle.ConstantTimeCompare([]byte(token), secret) != 1 {
			return Push{}, fmt.Errorf("gitlab webhook: wrong X-Gitlab-Token: %w", ErrWebhookAuth)
		}
	} else if err := checkHMAC(provider, sigHeader, h.Get(sigHeader), body, secret); err != nil {
		return Push{}, err
	}

	switch provider {
	case "gitlab":
		if event != "Push Hook" && event != "Tag Push Hook" {
			return Push{}, fmt.Errorf("gitlab webhook: event %q: %w", event, ErrNotPush)
		}
	default:
		if event != "push" {
			return Push{}, fmt.Errorf("%s webhook: event %q: %w", provider, event, ErrNotPush)
		}
	}
	if provider == "github" {
		if body, err = githubJSON(r.Header.Get("Content-Type"), body); err != nil {
			return Push{}, err
		}
	}
	var p pushPayload
	if err := json.Unmarshal(body, &p); err != nil {
		return Push{}, fmt.Errorf("%s webhook: payload: %w", provider, err)
	}
	if !strings.HasPrefix(p.Ref, "refs/") {
		return Push{}, fmt.Errorf("%s webhook: payload: ref %q is not a full ref name", provider, p.Ref)
	}
	if len(p.After) != 40 || !isHex(p.After) {
		return Push{}, fmt.Errorf("%s webhook: payload: after %q is not a commit SHA", provider, p.After)
	}
	push := Push{
		Provider: provider,
		Ref:      p.Ref,
		After:    strings.ToLower(p.After),
		Deleted:  p.Deleted || strings.Trim(p.After, "0") == "",
	}
	for _, u := range []string{
		p.Repository.CloneURL, p.Repository.GitHTTPURL, p.Project.GitHTTPURL,
		p.Repository.SSHURL, p.Repository.GitSSHURL, p.Project.GitSSHURL,
		p.Repository.HTMLURL, p.Project.WebURL, p.Repository.Homepage,
	} {
		if u != "" && !slices.Contains(push.URLs, u) {
			push.URLs = append(push.URLs, u)
		}
	}
	if len(push.URLs) == 0 {
		return Push{}, fmt.Errorf("%s webhook: payload: no repository URL", provider)
	}
	return push, nil
}

// checkHMAC checks a hex HMAC-SHA256 signature of body (GitHub's with a
// "sha256=" prefix) in constant time.
func checkHMAC(provider, header, value string, body, secret []byte) error {
	if value == "" {
		return fmt.Errorf("%s webhook: no %s header: %w", provider, header, ErrWebhookAuth)
	}
	if provider == "github" {
		v, ok := strings.CutPrefix(value, "sha256=")
		if !ok {
			return fmt.Errorf("%s webhook: %s is not sha256=<hex>: %w", provider, header, ErrWebhookAuth)
		}
		value = v
	}
	got, err := hex.DecodeString(value)
	if err != nil {
		return fmt.Errorf("%s webhook: %s is not hexadecimal: %w", provider, header, ErrWebhookAuth)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return fmt.Errorf("%s webhook: wrong %s: %w", provider, header, ErrWebhookAuth)
	}
	return nil
}

// githubJSON returns the JSON of a GitHub delivery: the body itself, or
// the payload field of a form-encoded one.
func githubJSON(contentType string, body []byte) ([]byte, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt != "application/x-www-form-urlencoded" {
		return body, nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fmt.Errorf("github webhook: form body: %w", err)
	}
	payload := form.Get("payload")
	if payload == "" {
		return nil, errors.New("github webhook: form body without a payload field")
	}
	return []byte(payload), nil
}

// Matches reports whether url names the repository the push was to,
// whatever its form: https or ssh, scp-like, with or without ".git", a
// user, a port or a trailing slash. Hosts and paths compare without regard
// to case.
func (p Push) Matches(url string) bool {
	want := repoKey(url)
	if want == "" {
		return false
	}
	for _, u := range p.URLs {
		if repoKey(u) == want {
			return true
		}
	}
	return false
}

// repoKey reduces a repository URL to "host/path", lowercase, without
// scheme, user, port, ".git" or slashes at either end; "" when it names no
// host.
func repoKey(raw string) string {
	var host, path string
	if i := strings.Index(raw, "://"); i >= 0 {
		u, err := url.Parse(raw)
		if err != nil {
			return ""
		}
		host, path = u.Hostname(), u.Path
	} else if m := scpLike.FindStringSubmatch(raw); m != nil {
		host, path = strings.Trim(m[2], "[]"), m[3]
	} else {
		return ""
	}
	path = strings.Trim(path, "/")
	path = strings.TrimSuffix(path, ".git")
	path = strings.Trim(path, "/")
	if host == "" || path == "" {
		return ""
	}
	return strings.ToLower(host + "/" + path)
}

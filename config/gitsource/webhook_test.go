package gitsource

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// Payloads as the providers send them, trimmed to a realistic subset of
// their fields.
const (
	githubPush = `{
  "ref": "refs/heads/main",
  "before": "9049f1265b7d61be4a8904a9a27120d2064dab3b",
  "after": "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",
  "created": false,
  "deleted": false,
  "forced": false,
  "base_ref": null,
  "compare": "https://github.com/acme/manifests/compare/9049f1265b7d...0d1a26e67d8f",
  "commits": [{"id": "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c", "message": "Scale inventory to 3", "author": {"name": "Ada", "email": "ada@example.com"}}],
  "head_commit": {"id": "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c", "message": "Scale inventory to 3"},
  "repository": {
    "id": 35129377,
    "name": "manifests",
    "full_name": "acme/manifests",
    "private": true,
    "html_url": "https://github.com/acme/manifests",
    "url": "https://github.com/acme/manifests",
    "git_url": "git://github.com/acme/manifests.git",
    "ssh_url": "git@github.com:acme/manifests.git",
    "clone_url": "https://github.com/acme/manifests.git",
    "default_branch": "main"
  },
  "pusher": {"name": "ada", "email": "ada@example.com"},
  "sender": {"login": "ada", "id": 21031067}
}`
	githubDelete = `{"ref":"refs/heads/feature","before":"0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c","after":"0000000000000000000000000000000000000000","created":false,"deleted":true,"forced":false,"commits":[],"head_commit":null,"repository":{"html_url":"https://github.com/acme/manifests","ssh_url":"git@github.com:acme/manifests.git","clone_url":"https://github.com/acme/manifests.git"}}`
	githubPing   = `{"zen":"Keep it logically awesome.","hook_id":123,"hook":{"type":"Repository","events":["push"]},"repository":{"clone_url":"https://github.com/acme/manifests.git"}}`
	gitlabPush   = `{
  "object_kind": "push",
  "event_name": "push",
  "before": "95790bf891e76fee5e1747ab589903a6a1f80f22",
  "after": "da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
  "ref": "refs/heads/main",
  "ref_protected": true,
  "checkout_sha": "da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
  "user_username": "jsmith",
  "project_id": 15,
  "project": {
    "id": 15,
    "name": "Manifests",
    "web_url": "https://gitlab.example.com/platform/manifests",
    "git_ssh_url": "git@gitlab.example.com:platform/manifests.git",
    "git_http_url": "https://gitlab.example.com/platform/manifests.git",
    "namespace": "Platform",
    "path_with_namespace": "platform/manifests",
    "default_branch": "main"
  },
  "commits": [{"id": "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", "message": "Update Catalan translation\n"}],
  "total_commits_count": 1,
  "repository": {
    "name": "Manifests",
    "url": "git@gitlab.example.com:platform/manifests.git",
    "homepage": "https://gitlab.example.com/platform/manifests",
    "git_http_url": "https://gitlab.example.com/platform/manifests.git",
    "git_ssh_url": "git@gitlab.example.com:platform/manifests.git"
  }
}`
	gitlabTag = `{"object_kind":"tag_push","before":"0000000000000000000000000000000000000000","after":"82b3d5ae55f7080f1e6022629cdb57bfae7cccc7","ref":"refs/tags/v1.0.0","checkout_sha":"82b3d5ae55f7080f1e6022629cdb57bfae7cccc7","project":{"web_url":"https://gitlab.example.com/platform/manifests","git_ssh_url":"git@gitlab.example.com:platform/manifests.git","git_http_url":"https://gitlab.example.com/platform/manifests.git"},"repository":{"git_http_url":"https://gitlab.example.com/platform/manifests.git","git_ssh_url":"git@gitlab.example.com:platform/manifests.git","homepage":"https://gitlab.example.com/platform/manifests"}}`
	giteaPush = `{
  "ref": "refs/heads/develop",
  "before": "28e1879d029cb852e4844d9c718537df08844e03",
  "after": "bffeb74224043ba2feb48d137756c8a9331c449a",
  "compare_url": "https://gitea.example.com/ops/manifests/compare/28e1879d029cb852e4844d9c718537df08844e03...bffeb74224043ba2feb48d137756c8a9331c449a",
  "commits": [{"id": "bffeb74224043ba2feb48d137756c8a9331c449a", "message": "Bump image\n", "url": "https://gitea.example.com/ops/manifests/commit/bffeb74224043ba2feb48d137756c8a9331c449a"}],
  "repository": {
    "id": 140,
    "owner": {"id": 1, "login": "ops"},
    "name": "manifests",
    "full_name": "ops/manifests",
    "private": false,
    "html_url": "https://gitea.example.com/ops/manifests",
    "ssh_url": "ssh://git@gitea.example.com:2222/ops/manifests.git",
    "clone_url": "https://gitea.example.com/ops/manifests.git",
    "default_branch": "main"
  },
  "pusher": {"id": 1, "login": "ops"},
  "sender": {"id": 1, "login": "ops"}
}`
)

// hmacHex is the hex HMAC-SHA256 of body under secret.
func hmacHex(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

// TestParsePush checks ParsePush on the providers' payloads, signed and
// unsigned, right and wrong.
func TestParsePush(t *testing.T) {
	const secret = "It's a Secret to Everybody"
	form := url.Values{"payload": {githubPush}}.Encode()
	cases := []struct {
		name    string
		method  string
		headers map[string]string
		body    string
		secret  string
		want    Push
		err     string
		is      error
	}{
		{
			name:    "github push",
			headers: map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + hmacHex(secret, githubPush), "Content-Type": "application/json"},
			body:    githubPush,
			want: Push{Provider: "github", Ref: "refs/heads/main", After: "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",
				URLs: []string{"https://github.com/acme/manifests.git", "git@github.com:acme/manifests.git", "https://github.com/acme/manifests"}},
		},
		{
			name:    "github push, form-encoded",
			headers: map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + hmacHex(secret, form), "Content-Type": "application/x-www-form-urlencoded"},
			body:    form,
			want: Push{Provider: "github", Ref: "refs/heads/main", After: "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",
				URLs: []string{"https://github.com/acme/manifests.git", "git@github.com:acme/manifests.git", "https://github.com/acme/manifests"}},
		},
		{
			name:    "github branch deleted",
			headers: map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + hmacHex(secret, githubDelete)},
			body:    githubDelete,
			want: Push{Provider: "github", Ref: "refs/heads/feature", After: strings.Repeat("0", 40), Deleted: true,
				URLs: []string{"https://github.com/acme/manifests.git", "git@github.com:acme/manifests.git", "https://github.com/acme/manifests"}},
		},
		{
			name:    "github ping",
			headers: map[string]string{"X-GitHub-Event": "ping", "X-Hub-Signature-256": "sha256=" + hmacHex(secret, githubPing)},
			body:    githubPing,
			err:     `github webhook: event "ping"`,
			is:      ErrNotPush,
		},
		{
			name:    "github wrong signature",
			headers: map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + hmacHex("guess", githubPush)},
			body:    githubPush,
			err:     "wrong X-Hub-Signature-256",
			is:      ErrWebhookAuth,
		},
		{
			name:    "github body changed after signing",
			headers: map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + hmacHex(secret, githubPush)},
			body:    strings.Replace(githubPush, "refs/heads/main", "refs/heads/prod", 1),
			err:     "wrong X-Hub-Signature-256",
			is:      ErrWebhookAuth,
		},
		{
			name:    "github sha1 signature only",
			headers: map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature": "sha1=0123"},
			body:    githubPush,
			err:     "no X-Hub-Signature-256 header",
			is:      ErrWebhookAuth,
		},
		{
			name:    "github signature without prefix",
			headers: map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": hmacHex(secret, githubPush)},
			body:    githubPush,
			err:     "is not sha256=<hex>",
			is:      ErrWebhookAuth,
		},
		{
			name:    "gitlab push",
			headers: map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": secret},
			body:    gitlabPush,
			want: Push{Provider: "gitlab", Ref: "refs/heads/main", After: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
				URLs: []string{"https://gitlab.example.com/platform/manifests.git", "git@gitlab.example.com:platform/manifests.git", "https://gitlab.example.com/platform/manifests"}},
		},
		{
			name:    "gitlab tag push",
			headers: map[string]string{"X-Gitlab-Event": "Tag Push Hook", "X-Gitlab-Token": secret},
			body:    gitlabTag,
			want: Push{Provider: "gitlab", Ref: "refs/tags/v1.0.0", After: "82b3d5ae55f7080f1e6022629cdb57bfae7cccc7",
				URLs: []string{"https://gitlab.example.com/platform/manifests.git", "git@gitlab.example.com:platform/manifests.git", "https://gitlab.example.com/platform/manifests"}},
		},
		{
			name:    "gitlab wrong token",
			headers: map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": secret + "x"},
			body:    gitlabPush,
			err:     "wrong X-Gitlab-Token",
			is:      ErrWebhookAuth,
		},
		{
			name:    "gitlab no token",
			headers: map[string]string{"X-Gitlab-Event": "Push Hook"},
			body:    gitlabPush,
			err:     "no X-Gitlab-Token header",
			is:      ErrWebhookAuth,
		},
		{
			name:    "gitlab merge request",
			headers: map[string]string{"X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": secret},
			body:    `{"object_kind":"merge_request"}`,
			is:      ErrNotPush,
			err:     "Merge Request Hook",
		},
		{
			name:    "gitea push",
			headers: map[string]string{"X-Gitea-Event": "push", "X-Gitea-Signature": hmacHex(secret, giteaPush), "X-GitHub-Event": "push", "X-Gogs-Event": "push"},
			body:    giteaPush,
			want: Push{Provider: "gitea", Ref: "refs/heads/develop", After: "bffeb74224043ba2feb48d137756c8a9331c449a",
				URLs: []string{"https://gitea.example.com/ops/manifests.git", "ssh://git@gitea.example.com:2222/ops/manifests.git", "https://gitea.example.com/ops/manifests"}},
		},
		{
			name:    "forgejo push",
			headers: map[string]string{"X-Forgejo-Event": "push", "X-Forgejo-Signature": hmacHex(secret, giteaPush), "X-Gitea-Event": "push", "X-Gitea-Signature": hmacHex(secret, giteaPush)},
			body:    giteaPush,
			want: Push{Provider: "forgejo", Ref: "refs/heads/develop", After: "bffeb74224043ba2feb48d137756c8a9331c449a",
				URLs: []string{"https://gitea.example.com/ops/manifests.git", "ssh://git@gitea.example.com:2222/ops/manifests.git", "https://gitea.example.com/ops/manifests"}},
		},
		{
			name:    "gitea wrong signature",
			headers: map[string]string{"X-Gitea-Event": "push", "X-Gitea-Signature": hmacHex("guess", giteaPush)},
			body:    giteaPush,
			err:     "wrong X-Gitea-Signature",
			is:      ErrWebhookAuth,
		},
		{
			name:    "forgejo signature missing",
			headers: map[string]string{"X-Forgejo-Event": "push"},
			body:    giteaPush,
			err:     "no X-Forgejo-Signature header",
			is:      ErrWebhookAuth,
		},
		{
			name:    "gitea signature not hex",
			headers: map[string]string{"X-Gitea-Event": "push", "X-Gitea-Signature": "zz"},
			body:    giteaPush,
			err:     "is not hexadecimal",
			is:      ErrWebhookAuth,
		},
		{
			name:    "no secret configured",
			headers: map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": ""},
			body:    gitlabPush,
			secret:  "-",
			err:     "no webhook secret is configured",
			is:      ErrWebhookAuth,
		},
		{
			name:    "unknown provider",
			headers: map[string]string{"X-Bitbucket-Event": "repo:push"},
			body:    "{}",
			err:     "no X-GitHub-Event",
		},
		{
			name:    "GET",
			method:  http.MethodGet,
			headers: map[string]string{"X-GitHub-Event": "push"},
			err:     "method GET, want POST",
		},
		{
			name:    "too large",
			headers: map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=00"},
			body:    strings.Repeat(" ", MaxWebhookBytes+1),
			err:     "larger than 1048576 bytes",
		},
		{
			name:    "not JSON",
			headers: map[string]string{"X-Gitea-Event": "push", "X-Gitea-Signature": hmacHex(secret, "{")},
			body:    "{",
			err:     "gitea webhook: payload",
		},
		{
			name:    "ref not full",
			headers: map[string]string{"X-Gitea-Event": "push", "X-Gitea-Signature": hmacHex(secret, `{"ref":"main","after":"bffeb74224043ba2feb48d137756c8a9331c449a","repository":{"clone_url":"https://x/y.git"}}`)},
			body:    `{"ref":"main","after":"bffeb74224043ba2feb48d137756c8a9331c449a","repository":{"clone_url":"https://x/y.git"}}`,
			err:     `ref "main" is not a full ref name`,
		},
		{
			name:    "no repository URL",
			headers: map[string]string{"X-Gitea-Event": "push", "X-Gitea-Signature": hmacHex(secret, `{"ref":"refs/heads/main","after":"bffeb74224043ba2feb48d137756c8a9331c449a"}`)},
			body:    `{"ref":"refs/heads/main","after":"bffeb74224043ba2feb48d137756c8a9331c449a"}`,
			err:     "no repository URL",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			req := httptest.NewRequest(method, "/hooks/git", strings.NewReader(tc.body))
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			s := secret
			if tc.secret == "-" {
				s = ""
			}
			got, err := ParsePush(req, []byte(s))
			if tc.err != "" || tc.is != nil {
				if err == nil || !strings.Contains(err.Error(), tc.err) || tc.is != nil && !errors.Is(err, tc.is) {
					t.Fatalf("ParsePush = %+v, %v; want an error saying %q (%v)", got, err, tc.err, tc.is)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePush: %v", err)
			}
			if got.Provider != tc.want.Provider || got.Ref != tc.want.Ref || got.After != tc.want.After || got.Deleted != tc.want.Deleted || !slices.Equal(got.URLs, tc.want.URLs) {
				t.Fatalf("ParsePush = %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestPushMatches checks that a push matches every spelling of its
// repository's URL and no other repository.
func TestPushMatches(t *testing.T) {
	p := Push{URLs: []string{"https://github.com/acme/manifests.git", "git@github.com:acme/manifests.git", "https://github.com/acme/manifests"}}
	for _, u := range []string{
		"https://github.com/acme/manifests.git",
		"https://github.com/acme/manifests",
		"https://github.com/acme/manifests/",
		"https://GitHub.com/Acme/Manifests.git",
		"ssh://git@github.com/acme/manifests.git",
		"ssh://git@github.com:22/acme/manifests",
		"git@github.com:acme/manifests",
		"github.com:acme/manifests.git",
	} {
		if !p.Matches(u) {
			t.Errorf("Matches(%s) = false", u)
		}
	}
	for _, u := range []string{
		"https://github.com/acme/manifests-prod.git",
		"https://github.com/acme/other.git",
		"https://gitlab.com/acme/manifests.git",
		"https://github.com/acme",
		"https://github.com/",
		"file:///srv/acme/manifests.git",
		"not a url",
		"",
	} {
		if p.Matches(u) {
			t.Errorf("Matches(%s) = true", u)
		}
	}
}

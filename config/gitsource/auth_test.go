package gitsource

import (
	"errors"
	"strings"
	"testing"
)

// TestFetchBasicAuth serves the repository behind HTTP basic
// authentication: the right user and password files, or a token file
// (sent as the password of x-access-token), are let in; wrong or missing
// credentials are a clear error.
func TestFetchBasicAuth(t *testing.T) {
	f := newFixture(t)
	c := f.commit("one", map[string]string{"f": "secret stuff"})
	f.push()
	srv := startGitServer(t, f, "robot", "s3cr3t")
	tokenSrv := startGitServer(t, f, "x-access-token", "ghp_token123")
	dir := t.TempDir()
	user := writeFile(t, dir, "user", "robot\n")
	pass := writeFile(t, dir, "pass", "  s3cr3t\n")
	wrong := writeFile(t, dir, "wrong", "guess")
	token := writeFile(t, dir, "token", "ghp_token123\n")
	empty := writeFile(t, dir, "empty", "\n")

	ok := []struct {
		name string
		url  string
		auth Auth
	}{
		{"user and password", srv.url("repo.git"), Auth{UsernameFile: user, PasswordFile: pass}},
		{"token", tokenSrv.url("repo.git"), Auth{TokenFile: token}},
		{"user and token", srv.url("repo.git"), Auth{UsernameFile: user, TokenFile: pass}},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			r := openOK(t, Options{URL: tc.url, Auth: tc.auth, CacheDir: t.TempDir()})
			if rev := fetchOK(t, r); rev.Commit != c || readTree(t, rev.Dir, "f") != "secret stuff" {
				t.Fatalf("%+v", rev)
			}
		})
	}

	bad := []struct {
		name string
		auth Auth
		want string
	}{
		{"wrong password", Auth{UsernameFile: user, PasswordFile: wrong}, "the server refused the credentials"},
		{"wrong token", Auth{TokenFile: wrong}, "the server refused the credentials"},
		{"no credentials", Auth{}, "the server wants credentials"},
		{"missing file", Auth{TokenFile: dir + "/nope"}, "auth.tokenFile: open " + dir + "/nope"},
		{"empty file", Auth{UsernameFile: empty, PasswordFile: pass}, "auth.usernameFile: " + empty + " is empty"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			r := openOK(t, Options{URL: srv.url("repo.git"), Auth: tc.auth, CacheDir: t.TempDir()})
			_, err := r.Fetch(t.Context())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), srv.url("repo.git")) {
				t.Fatalf("error %v, want one naming the URL and saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "guess") {
				t.Fatalf("the error shows a credential: %v", err)
			}
		})
	}
}

// TestOpenRefusesBadOptions checks Open's validation: schemes, inline
// credentials, refs, credentials that do not fit the scheme.
func TestOpenRefusesBadOptions(t *testing.T) {
	cache := t.TempDir()
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"empty url", Options{}, "url is empty"},
		{"git scheme", Options{URL: "git://example.com/r.git"}, `scheme "git" is not supported`},
		{"ext transport", Options{URL: "ext::sh -c touch% /tmp/pwned"}, "white space"},
		{"ext no space", Options{URL: "ext::evil"}, "want https://"},
		{"ftp", Options{URL: "ftp://example.com/r.git"}, `scheme "ftp"`},
		{"local path", Options{URL: "/srv/repo.git"}, "want https://"},
		{"relative path", Options{URL: "./repo"}, "want https://"},
		{"dash", Options{URL: "-oProxyCommand=x:y"}, "starts with '-'"},
		{"inline password", Options{URL: "https://u:p@example.com/r.git"}, "carries credentials"},
		{"inline user", Options{URL: "https://u@example.com/r.git"}, "carries credentials"},
		{"ssh password", Options{URL: "ssh://git:pw@example.com/r.git"}, "carries a password"},
		{"query", Options{URL: "https://example.com/r.git?x=1"}, "query or fragment"},
		{"file with host", Options{URL: "file://host/srv/r.git"}, "names no host"},
		{"bad ref", Options{URL: "https://example.com/r.git", Ref: "a..b"}, "not a valid branch or tag name"},
		{"bad full ref", Options{URL: "https://example.com/r.git", Ref: "refs/heads/x y"}, "not a valid reference name"},
		{"dash ref", Options{URL: "https://example.com/r.git", Ref: "-x"}, "not a valid"},
		{"no cache", Options{URL: "https://example.com/r.git"}, "cacheDir is empty"},
		{"ssh without known hosts", Options{URL: "git@example.com:r.git", Auth: Auth{SSHKeyFile: "k"}}, "knownHostsFile"},
		{"ssh with token", Options{URL: "ssh://example.com/r.git", Auth: Auth{TokenFile: "t"}}, "for https URLs"},
		{"https with ssh key", Options{URL: "https://example.com/r.git", Auth: Auth{SSHKeyFile: "k"}}, "are for ssh URLs"},
		{"token and password", Options{URL: "https://example.com/r.git", Auth: Auth{TokenFile: "t", PasswordFile: "p"}}, "exclusive"},
		{"user alone", Options{URL: "https://example.com/r.git", Auth: Auth{UsernameFile: "u"}}, "needs auth.passwordFile"},
		{"credentials over http", Options{URL: "http://example.com/r.git", Auth: Auth{TokenFile: "t"}}, "plain http"},
		{"file with auth", Options{URL: "file:///srv/r.git", Auth: Auth{TokenFile: "t"}}, "no credentials"},
		{"empty keys file", Options{URL: "https://example.com/r.git", Verify: &Verify{}}, "verify.keysFile is empty"},
		{"negative", Options{URL: "https://example.com/r.git", CacheDir: cache, MaxFiles: -1}, "must not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.opts.CacheDir == "" && tc.name != "no cache" {
				tc.opts.CacheDir = cache
			}
			_, err := Open(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open(%+v) = %v, want an error saying %q", tc.opts, err, tc.want)
			}
		})
	}
	for _, u := range []string{
		"https://example.com/r.git", "http://example.com/r", "http://127.0.0.1:8080/r.git",
		"file:///srv/r.git", "file://localhost/srv/r.git",
	} {
		if _, err := Open(Options{URL: u, CacheDir: t.TempDir()}); err != nil {
			t.Errorf("Open(%s): %v", u, err)
		}
	}
	for _, u := range []string{"git@github.com:acme/r.git", "ssh://git@example.com:2222/r.git", "example.com:r.git", "git@[::1]:r.git"} {
		if _, err := Open(Options{URL: u, CacheDir: t.TempDir(), Auth: Auth{SSHKeyFile: "k", KnownHostsFile: "kh"}}); err != nil {
			t.Errorf("Open(%s): %v", u, err)
		}
	}
	if _, err := Open(Options{URL: "http://localhost:1/r.git", CacheDir: t.TempDir(), Auth: Auth{TokenFile: "t"}}); err != nil {
		t.Errorf("credentials over http to loopback: %v", err)
	}
}

// TestDirName checks that cache folder names are stable, safe, short, and
// differ by URL and by ref.
func TestDirName(t *testing.T) {
	a := DirName("https://github.com/acme/manifests.git", "main")
	if a != DirName("https://github.com/acme/manifests.git", "main") {
		t.Fatal("not stable")
	}
	if a == DirName("https://github.com/acme/manifests.git", "prod") || a == DirName("https://github.com/acme/other.git", "main") {
		t.Fatal("two sources share a folder name")
	}
	if !strings.HasPrefix(a, "github.com_acme_manifests.git-") {
		t.Fatalf("DirName = %q", a)
	}
	long := DirName("ssh://git@example.com/"+strings.Repeat("x/", 200)+"../../etc", "")
	if len(long) > 64 || strings.ContainsAny(long, `/\:`) || strings.Contains(long, "..") && !strings.Contains(long, "-") {
		t.Fatalf("DirName = %q", long)
	}
	for _, n := range []string{long, a} {
		if n == "." || n == ".." || strings.ContainsAny(n, "/\\") {
			t.Fatalf("unsafe name %q", n)
		}
	}
}

// TestFetchWrongScheme checks that an ssh URL without a reachable server
// fails with an error naming the URL, not a panic, and that a missing SSH
// key file is named.
func TestFetchSSHKeyFileMissing(t *testing.T) {
	dir := t.TempDir()
	kh := writeFile(t, dir, "known_hosts", "")
	r := openOK(t, Options{URL: "ssh://git@127.0.0.1:1/r.git", CacheDir: t.TempDir(),
		Auth: Auth{SSHKeyFile: dir + "/missing", KnownHostsFile: kh}})
	_, err := r.Fetch(t.Context())
	if err == nil || !strings.Contains(err.Error(), "auth.sshKeyFile") || !strings.Contains(err.Error(), "ssh://git@127.0.0.1:1/r.git") {
		t.Fatalf("Fetch: %v", err)
	}
	if errors.Is(err, ErrRefNotFound) {
		t.Fatal("a missing key is not a missing ref")
	}
}

package gitsource

import (
	"strings"
	"testing"
)

// TestCheckURLErrorsHidePassword checks URLs with a password that are
// refused for a reason of each kind (credentials, a port or an escape
// url.Parse refuses, an unsupported scheme, a query, an SCP-style URL):
// no error shows the password, and each names the URL with it redacted.
func TestCheckURLErrorsHidePassword(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"https://user:s3cret@host/x", `url "https://user:xxxxx@host/x" carries credentials`},
		{"https://user:s3cret@host:http/x", `url "https://user:xxxxx@host:http/x" does not parse as a URL`},
		{"https://user:s3cret%zz@host/x", `url "https://user:xxxxx@host/x" does not parse as a URL`},
		{"ftp://user:s3cret@host/x", `url "ftp://user:xxxxx@host/x": scheme "ftp" is not supported`},
		{"https://user:s3cret@host/x?ref=main", `url "https://user:xxxxx@host/x?ref=main": a query or fragment is not allowed`},
		{"ssh://git:s3cret@host/x", `url "ssh://git:xxxxx@host/x" carries a password`},
		{"-user:s3cret@host:x", `url "-user:xxxxx@host:x" starts with '-'`},
		{"https://host:http/x", `url "https://host:http/x" does not parse as a URL: invalid port ":http" after host`},
	} {
		err := CheckURL(tt.url)
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckURL(%q) = %v, want an error with %q and no password", tt.url, err, tt.want)
		}
	}
}

package remoteurl

import "testing"

// TestRedact: a password in the user information is hidden, whatever
// follows; a URL without one, or with a user alone, is kept as written.
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://u:p@h/r.git":          "https://u:xxxxx@h/r.git",
		"https://u:p@h":                "https://u:xxxxx@h",
		"https://u:p:q@h/x?y=@z":       "https://u:xxxxx@h/x?y=@z",
		"https://u@h/r":                "https://u@h/r",
		"https://h/r?x=a:b@c":          "https://h/r?x=a:b@c",
		"oci://user:tok@reg.example/c": "oci://user:xxxxx@reg.example/c",
		"git@host:path":                "git@host:path",
		"no url at all":                "no url at all",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestIsLoopback: localhost and loopback addresses, not other hosts.
func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{"localhost": true, "LOCALHOST": true, "127.0.0.1": true, "127.8.9.1": true, "::1": true,
		"10.0.0.1": false, "example.com": false, "": false, "localhost.example": false} {
		if got := IsLoopback(host); got != want {
			t.Errorf("IsLoopback(%q) = %v", host, got)
		}
	}
}

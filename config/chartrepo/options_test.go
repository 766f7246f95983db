package chartrepo

import (
	"strings"
	"testing"
)

func TestCheckURL(t *testing.T) {
	for _, ok := range []string{
		"https://charts.example.com",
		"https://charts.example.com/sub/path/",
		"http://127.0.0.1:8080/repo",
		"oci://registry.example.com/charts",
		"oci://localhost:5000",
	} {
		if err := CheckURL(ok); err != nil {
			t.Errorf("CheckURL(%q): %v", ok, err)
		}
	}
	for raw, want := range map[string]string{
		"":                                "empty",
		"charts.example.com":              "no scheme",
		"ftp://example.com/x":             `scheme "ftp" is not supported`,
		"file:///etc":                     `scheme "file"`,
		"https://":                        "no host",
		"https://user:secret@example.com": "carries credentials",
		"oci://u:secret@example.com/x":    "carries credentials",
		"https://example.com/?a=b":        "query or fragment",
		"https://example.com/#x":          "query or fragment",
		"https://example.com/a b":         "white space",
		"oci://example.com/Upper":         "lowercase",
		"oci://example.com/a//b":          "empty",
	} {
		err := CheckURL(raw)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckURL(%q) = %v, want %q", raw, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("CheckURL(%q) shows the password: %v", raw, err)
		}
	}
}

func TestCheckChart(t *testing.T) {
	for _, ok := range []string{"redis", "ingress-nginx", "a.b_c-D9"} {
		if err := CheckChart(ok); err != nil {
			t.Errorf("CheckChart(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", "a..b", "a b", "x\x00", "é", strings.Repeat("a", 251)} {
		if err := CheckChart(bad); err == nil {
			t.Errorf("CheckChart(%q) = nil", bad)
		}
	}
}

func TestCheckVersion(t *testing.T) {
	for _, ok := range []string{"", "1.2.3", "v1.2.3", "1.2.3-rc.1+b5", "~1.2", "^2", ">=1.0 <2", "1.x", "*", ">= 1.2, < 1.3 || 2.0.0"} {
		if err := CheckVersion(ok); err != nil {
			t.Errorf("CheckVersion(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"latest", "1.2.3.4.5", ">>1", "~1\n", strings.Repeat("1", 200)} {
		if err := CheckVersion(bad); err == nil {
			t.Errorf("CheckVersion(%q) = nil", bad)
		}
	}
}

func TestDirName(t *testing.T) {
	a := DirName("https://charts.example.com/stable", "redis")
	if a != DirName("https://charts.example.com/stable", "redis") {
		t.Error("DirName is not stable")
	}
	if !strings.HasPrefix(a, "charts.example.com_stable_redis-") {
		t.Errorf("DirName = %q", a)
	}
	for _, other := range []string{
		DirName("https://charts.example.com/stable", "nginx"),
		DirName("https://charts.example.com/stable/redis", ""),
		DirName("oci://charts.example.com/stable", "redis"),
	} {
		if other == a {
			t.Errorf("DirName collides: %q", a)
		}
	}
	long := DirName("https://"+strings.Repeat("x", 300)+"/../..", "c")
	if len(long) > 64 || strings.ContainsAny(long, "/\\") || strings.HasPrefix(long, ".") {
		t.Errorf("DirName = %q", long)
	}
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	auth := authFiles(t, "u", "p")
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{URL: "https://x.example", Chart: "a/b", CacheDir: dir}, "chart name"},
		{Options{URL: "https://x.example", Chart: "c", Version: "latest", CacheDir: dir}, "neither a version nor a constraint"},
		{Options{URL: "https://x.example", Chart: "c"}, "cacheDir is empty"},
		{Options{URL: "http://x.example", Chart: "c", CacheDir: dir, Auth: auth}, "plain http"},
		{Options{URL: "https://x.example", Chart: "c", CacheDir: dir, Auth: Auth{UsernameFile: auth.UsernameFile}}, "go together"},
		{Options{URL: "https://x.example", Chart: "c", CacheDir: dir, PlainHTTP: true}, "plainHTTP is for oci"},
		{Options{URL: "oci://x.example/charts", Chart: "c", CacheDir: dir, PlainHTTP: true}, "loopback"},
		{Options{URL: "oci://x.example/charts", Chart: "Upper", CacheDir: dir}, "not a valid OCI repository name"},
		{Options{URL: "https://x.example", Chart: "c", CacheDir: dir, MaxChartBytes: -1}, "negative"},
	} {
		_, err := Open(tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%+v) = %v, want %q", tc.o, err, tc.want)
		}
	}
	// Credentials over plain http to a loopback address are fine.
	if _, err := Open(Options{URL: "http://127.0.0.1:1/r", Chart: "c", CacheDir: dir, Auth: auth}); err != nil {
		t.Errorf("loopback http with credentials: %v", err)
	}
}

package app

import (
	"crypto/x509"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/e2etest"
)

// TestCertReloader drives the reloader with a fake clock: files are
// checked at most once per interval, a changed pair is loaded, a broken one
// is logged and the current pair kept until the files change again.
func TestCertReloader(t *testing.T) {
	ca := e2etest.NewCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	install := func(serial int64) {
		c, k := ca.Issue(t, serial)
		e2etest.WriteAtomic(t, keyFile, k)
		e2etest.WriteAtomic(t, certFile, c)
	}
	install(1)
	var logs syncBuffer
	r, err := newCertReloader(certFile, keyFile, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	r.now = func() time.Time { return now }
	serial := func() int64 {
		t.Helper()
		c, err := r.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf.SerialNumber.Int64()
	}
	for _, step := range []struct {
		name    string
		change  func()
		advance time.Duration
		want    int64
		wantLog string
	}{
		{name: "first pair", want: 1},
		{name: "new pair, not checked yet", change: func() { install(2) }, advance: r.interval / 2, want: 1},
		{name: "new pair after the interval", advance: r.interval, want: 2, wantLog: "TLS certificate reloaded"},
		{name: "broken certificate", change: func() { e2etest.WriteAtomic(t, certFile, []byte("garbage")) }, advance: r.interval, want: 2,
			wantLog: "TLS certificate reload failed; keeping the current pair"},
		{name: "key missing", change: func() { _ = os.Remove(keyFile) }, advance: r.interval, want: 2, wantLog: "TLS certificate check failed"},
		{name: "fixed", change: func() { install(3) }, advance: r.interval, want: 3},
	} {
		if step.change != nil {
			step.change()
		}
		now = now.Add(step.advance)
		if got := serial(); got != step.want {
			t.Fatalf("%s: serial %d, want %d", step.name, got, step.want)
		}
		if !strings.Contains(logs.String(), step.wantLog) {
			t.Fatalf("%s: log lacks %q:\n%s", step.name, step.wantLog, logs.String())
		}
	}
	if _, err := newCertReloader(certFile, filepath.Join(dir, "none.key"), slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("a missing key was accepted at start")
	}
	e2etest.WriteAtomic(t, keyFile, []byte("garbage"))
	if _, err := newCertReloader(certFile, keyFile, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), certFile) {
		t.Fatalf("a broken pair at start = %v", err)
	}
}

// syncBuffer is a goroutine-safe writer.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCertReloader drives the reloader with a fake clock: files are
// checked at most once per interval, a changed pair is loaded, a broken one
// is logged and the current pair kept until the files change again.
func TestCertReloader(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	install := func(serial int64) {
		c, k := ca.issue(t, serial)
		writeAtomic(t, keyFile, k)
		writeAtomic(t, certFile, c)
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
		{name: "broken certificate", change: func() { writeAtomic(t, certFile, []byte("garbage")) }, advance: r.interval, want: 2,
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
	writeAtomic(t, keyFile, []byte("garbage"))
	if _, err := newCertReloader(certFile, keyFile, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), certFile) {
		t.Fatalf("a broken pair at start = %v", err)
	}
}

// testCA is a certificate authority made for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "driftwatch test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a serving certificate for 127.0.0.1 and localhost with a
// serial number, and its key, in PEM.
func (ca *testCA) issue(t *testing.T, serial int64) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "driftwatch"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// writeAtomic replaces a file by a rename, as certificate managers do.
func writeAtomic(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
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

package clusters

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestTLSHints: a TLS error names what to check. A certificate issued for
// other names than the server address's host points at the server address
// and the certificate's names (not at the certificate authority); one
// signed by an unknown authority at certificate-authority-data; an expired
// one at its dates. Each is a real handshake with a test server whose
// certificate is valid for 127.0.0.1, ::1 and example.com.
func TestTLSHints(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	trusting := func(now func() time.Time) *http.Client {
		roots := x509.NewCertPool()
		roots.AddCert(srv.Certificate())
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Time: now}}}
	}
	get := func(c *http.Client, host string) error {
		t.Helper()
		resp, err := c.Get("https://" + net.JoinHostPort(host, port) + "/readyz")
		if err == nil {
			resp.Body.Close()
			t.Fatalf("GET via %s: no error", host)
		}
		return err
	}
	tests := []struct {
		name      string
		err       error
		want, not []string
	}{
		{"host not in the certificate", get(trusting(nil), "localhost"),
			[]string{`cluster "c1": TLS: `, `not for "localhost"`, "127.0.0.1", "example.com", "server address", "tls-server-name"},
			[]string{"certificate-authority"}},
		{"host not in the certificate, as text", errors.New(`Get "https://10.0.0.9:6443/readyz": tls: failed to verify certificate: x509: certificate is valid for 10.0.0.1, not 10.0.0.9`),
			[]string{"server address", "tls-server-name"}, []string{"certificate-authority"}},
		{"unknown authority", get(&http.Client{Timeout: 10 * time.Second}, "127.0.0.1"),
			[]string{"unknown", "certificate-authority-data"}, []string{"tls-server-name"}},
		{"expired", get(trusting(func() time.Time { return srv.Certificate().NotAfter.Add(time.Hour) }), "127.0.0.1"),
			[]string{"expired or is not valid yet", "clock"}, []string{"certificate-authority", "tls-server-name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if c := classify(tt.err); c != classTLS {
				t.Fatalf("%v classified %v, want TLS", tt.err, c)
			}
			msg := describe("c1", "probe", "/readyz", "", tt.err)
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q lacks %q", msg, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(msg, n) {
					t.Errorf("%q mentions %q", msg, n)
				}
			}
		})
	}
}

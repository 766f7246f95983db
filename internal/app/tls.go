package app

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// certReloader serves a certificate and key pair from two files and picks
// up a new pair when the files change: tls.Config.GetCertificate checks
// their modification times (and sizes) at most once per interval. A pair
// that fails to load is logged and the previous one kept; it is tried
// again when either file changes again (the second file of a rotation
// written after a TLS handshake saw only the first).
//
// Hand-written rather than a file watcher (fsnotify) or k8s.io/apiserver's
// dynamic certificates: one stat per second on the handshake path needs no
// goroutine to own and no extra dependency, and it sees a Secret volume's
// link swap as well as a rewrite.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger
	now               func() time.Time
	interval          time.Duration

	mu      sync.Mutex
	cert    *tls.Certificate
	checked time.Time
	// seen are the stamps of the files last loaded or tried.
	seen [2]fileStamp
}

// fileStamp is what tells that a file changed.
type fileStamp struct {
	mod  time.Time
	size int64
}

// newCertReloader loads the pair once; it fails when that load fails.
func newCertReloader(certFile, keyFile string, log *slog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, log: log, now: time.Now, interval: time.Second}
	stamps, err := r.stamps()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	r.cert, r.seen, r.checked = &cert, stamps, r.now()
	return r, nil
}

// stamps stats both files (following links).
func (r *certReloader) stamps() ([2]fileStamp, error) {
	var s [2]fileStamp
	for i, f := range []string{r.certFile, r.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return s, fmt.Errorf("TLS: %w", err)
		}
		s[i] = fileStamp{mod: fi.ModTime(), size: fi.Size()}
	}
	return s, nil
}

// GetCertificate implements tls.Config.GetCertificate.
func (r *certReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if now.Sub(r.checked) < r.interval {
		return r.cert, nil
	}
	r.checked = now
	stamps, err := r.stamps()
	if err != nil {
		r.log.Warn("TLS certificate check failed; keeping the current pair", "err", err)
		return r.cert, nil
	}
	if stamps == r.seen {
		return r.cert, nil
	}
	r.seen = stamps
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		r.log.Warn("TLS certificate reload failed; keeping the current pair", "cert", r.certFile, "key", r.keyFile, "err", err)
		return r.cert, nil
	}
	r.cert = &cert
	r.log.Info("TLS certificate reloaded", "cert", r.certFile, "key", r.keyFile)
	return r.cert, nil
}

// tlsConfig returns a server TLS config that serves r's pair, TLS 1.2 at
// least.
func (r *certReloader) tlsConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate}
}

package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// pki is one cluster's key material, written to files in the cluster's
// folder by writePKI.
type pki struct {
	caCertPEM     []byte
	caKeyPEM      []byte
	serverCertPEM []byte
	serverKeyPEM  []byte
	saKeyPEM      []byte // RSA private key: --service-account-signing-key-file
	saPubPEM      []byte // its public key: --service-account-key-file
}

// pkiFiles are the paths of a cluster's PKI files.
type pkiFiles struct {
	caCert, caKey, serverCert, serverKey, saKey, saPub string
}

func newPKIFiles(dir string) pkiFiles {
	return pkiFiles{
		caCert:     filepath.Join(dir, "ca.crt"),
		caKey:      filepath.Join(dir, "ca.key"),
		serverCert: filepath.Join(dir, "apiserver.crt"),
		serverKey:  filepath.Join(dir, "apiserver.key"),
		saKey:      filepath.Join(dir, "sa.key"),
		saPub:      filepath.Join(dir, "sa.pub"),
	}
}

// newPKI generates a CA, an apiserver serving certificate signed by it and a
// service-account RSA key pair.
func newPKI(clusterName string) (*pki, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: "driftwatch-localcluster-ca-" + clusterName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}

	serverKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate serving key: %w", err)
	}
	serverTmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		// Loopback plus the in-cluster names of the kubernetes Service (its
		// ClusterIP is the first address of --service-cluster-ip-range).
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 0, 0, 1)},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
	}
	serverDER, err := x509.CreateCertificate(rand.Reader, serverTmpl, caCert, &serverKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create serving certificate: %w", err)
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generate service-account key: %w", err)
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("marshal service-account public key: %w", err)
	}
	caKeyDER, err := x509.MarshalECPrivateKey(caKey)
	if err != nil {
		return nil, fmt.Errorf("marshal CA key: %w", err)
	}
	serverKeyDER, err := x509.MarshalECPrivateKey(serverKey)
	if err != nil {
		return nil, fmt.Errorf("marshal serving key: %w", err)
	}
	return &pki{
		caCertPEM:     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		caKeyPEM:      pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: caKeyDER}),
		serverCertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: serverDER}),
		serverKeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: serverKeyDER}),
		saKeyPEM:      pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}),
		saPubPEM:      pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}),
	}, nil
}

// write stores the PKI in files (private keys readable by the owner only).
func (p *pki) write(f pkiFiles) error {
	for _, w := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{f.caCert, p.caCertPEM, 0o644},
		{f.caKey, p.caKeyPEM, 0o600},
		{f.serverCert, p.serverCertPEM, 0o644},
		{f.serverKey, p.serverKeyPEM, 0o600},
		{f.saKey, p.saKeyPEM, 0o600},
		{f.saPub, p.saPubPEM, 0o644},
	} {
		if err := os.WriteFile(w.path, w.data, w.mode); err != nil {
			return err
		}
	}
	return nil
}

func randomSerial() *big.Int {
	// 128 random bits; crypto/rand.Int never fails on Linux and friends.
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		panic(fmt.Sprintf("localcluster: crypto/rand: %v", err))
	}
	return n
}

// newToken returns a random bearer token (256 bits, hex).
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never returns an error (crypto/rand doc)
	return hex.EncodeToString(b)
}

// tokenEntry is one line of a --token-auth-file.
type tokenEntry struct {
	token  string
	user   string
	groups []string
}

// tokenFile renders a kube-apiserver --token-auth-file (CSV: token, user,
// uid, optional quoted comma-separated groups).
func tokenFile(entries []tokenEntry) []byte {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%s,%s,%s", e.token, e.user, e.user)
		if len(e.groups) > 0 {
			fmt.Fprintf(&b, ",%q", strings.Join(e.groups, ","))
		}
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

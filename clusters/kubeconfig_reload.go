package clusters

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"

	"k8s.io/client-go/rest"
)

// credentials fingerprints where and as whom a REST config connects: the
// server, its certificate authority and name, and every way of proving an
// identity, inline or by file name (client-go itself reads a token file
// and client certificate files again as they change; what a kubeconfig
// holds inline it reads once).
func credentials(rc *rest.Config) string {
	h := sha256.New()
	field := func(h hash.Hash, b []byte) {
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	for _, s := range []string{rc.Host, rc.APIPath, rc.BearerToken, rc.BearerTokenFile, rc.Username, rc.Password,
		rc.TLSClientConfig.CertFile, rc.TLSClientConfig.KeyFile, rc.TLSClientConfig.CAFile, rc.TLSClientConfig.ServerName,
		fmt.Sprint(rc.TLSClientConfig.Insecure), rc.Impersonate.UserName, fmt.Sprint(rc.Impersonate.Groups)} {
		field(h, []byte(s))
	}
	for _, b := range [][]byte{rc.TLSClientConfig.CertData, rc.TLSClientConfig.KeyData, rc.TLSClientConfig.CAData} {
		field(h, b)
	}
	if e := rc.ExecProvider; e != nil {
		// Its fields by value (Config is a pointer, set per load).
		field(h, fmt.Appendf(nil, "%q %q %q %+v %v", e.Command, e.Args, e.APIVersion, e.Env, e.ProvideClusterInfo))
	}
	if a := rc.AuthProvider; a != nil {
		field(h, fmt.Appendf(nil, "%q %v", a.Name, a.Config)) // fmt sorts a map's keys
	}
	return hex.EncodeToString(h.Sum(nil))
}

// kubeconfigChanged reports whether the kubeconfig file the manager
// connected with now says something else of where or as whom to connect
// (see credentials): a rotated token or certificate, a moved server.
// Only a manager connected from a kubeconfig file can tell (a Cluster API
// secret's kubeconfig is watched by discovery, the in-cluster token read
// again by client-go); a file that cannot be read now (a rotation half
// done) tells nothing.
func (m *Manager) kubeconfigChanged() bool {
	m.mu.Lock()
	was := m.creds
	m.mu.Unlock()
	if was == "" {
		return false
	}
	rc, err := kubeconfigRESTConfig(m.cfg)
	if err != nil {
		return false
	}
	return credentials(rc) != was
}

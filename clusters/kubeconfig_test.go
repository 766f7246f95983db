package clusters

import (
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// testKubeconfig returns a Cluster API style kubeconfig (one context, CA and
// credentials embedded) after edit changed it.
func testKubeconfig(t *testing.T, edit func(c *clientcmdapi.Config)) []byte {
	t.Helper()
	c := clientcmdapi.NewConfig()
	c.Clusters["w"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthorityData: []byte("ca")}
	c.AuthInfos["w-admin"] = &clientcmdapi.AuthInfo{Token: "secret-token"}
	c.Contexts["w-admin@w"] = &clientcmdapi.Context{Cluster: "w", AuthInfo: "w-admin"}
	c.CurrentContext = "w-admin@w"
	if edit != nil {
		edit(c)
	}
	data, err := clientcmd.Write(*c)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func execUser(command string) func(c *clientcmdapi.Config) {
	return func(c *clientcmdapi.Config) {
		c.AuthInfos["w-admin"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
			Command: command, Args: []string{"-c", "touch /tmp/pwned"},
			APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		}}
	}
}

func TestParseUntrustedKubeconfig(t *testing.T) {
	mgmt := KubeconfigPolicy{Origin: `clusterAPI source "mgmt"`}
	allowSh := KubeconfigPolicy{Origin: `clusterAPI source "mgmt"`, ExecAllowlist: []clientcmdapi.AllowlistEntry{{Command: "/bin/sh"}}}
	tests := []struct {
		name   string
		data   []byte
		policy KubeconfigPolicy
		// want is a substring of the refusal; "" means accepted.
		want string
		// unsafe: the error is an *UnsafeKubeconfigError (not a parse error).
		unsafe bool
	}{
		{name: "embedded data", data: testKubeconfig(t, nil), policy: mgmt},
		{name: "certificate-authority file", policy: mgmt, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) {
				c.Clusters["w"].CertificateAuthorityData, c.Clusters["w"].CertificateAuthority = nil, "/etc/kubernetes/pki/ca.crt"
			}),
			want: `certificate-authority file reference "/etc/kubernetes/pki/ca.crt" is not allowed`},
		{name: "client-certificate file", policy: mgmt, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) {
				c.AuthInfos["w-admin"] = &clientcmdapi.AuthInfo{ClientCertificate: "/root/.kube/cert.pem", ClientKeyData: []byte("k")}
			}),
			want: `client-certificate file reference "/root/.kube/cert.pem" is not allowed`},
		{name: "client-key file", policy: mgmt, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) {
				c.AuthInfos["w-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("c"), ClientKey: "/etc/ssh/ssh_host_ed25519_key"}
			}),
			want: `client-key file reference "/etc/ssh/ssh_host_ed25519_key" is not allowed`},
		{name: "tokenFile", policy: mgmt, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) {
				c.AuthInfos["w-admin"] = &clientcmdapi.AuthInfo{TokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token"}
			}),
			want: `tokenFile file reference "/var/run/secrets/kubernetes.io/serviceaccount/token" is not allowed`},
		{name: "auth-provider", policy: mgmt, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) {
				c.AuthInfos["w-admin"] = &clientcmdapi.AuthInfo{AuthProvider: &clientcmdapi.AuthProviderConfig{Name: "oidc", Config: map[string]string{"idp-certificate-authority": "/etc/shadow"}}}
			}),
			want: `auth-provider "oidc" is not allowed`},
		{name: "exec denied by default", policy: mgmt, unsafe: true, data: testKubeconfig(t, execUser("/bin/sh")),
			want: `exec plugin "/bin/sh" is not allowed (clusterAPI source "mgmt" has no execAllowlist)`},
		{name: "exec denied by the zero policy", unsafe: true, data: testKubeconfig(t, execUser("/bin/sh")),
			want: `exec plugin "/bin/sh" is not allowed (the policy has no execAllowlist)`},
		{name: "exec not in the allowlist", policy: allowSh, unsafe: true, data: testKubeconfig(t, execUser("/bin/bash")),
			want: `exec plugin "/bin/bash" is not allowed (not in the execAllowlist of clusterAPI source "mgmt")`},
		{name: "exec path tricks are cleaned first", policy: allowSh, unsafe: true, data: testKubeconfig(t, execUser("/bin/../bin/bash")),
			want: `exec plugin "/bin/../bin/bash" is not allowed`},
		{name: "exec allowed by the allowlist", policy: allowSh, data: testKubeconfig(t, execUser("/bin/sh"))},
		{name: "exec allowed after cleaning", policy: allowSh, data: testKubeconfig(t, execUser("/bin/./sh"))},
		{name: "exec env refused", policy: allowSh, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) {
				execUser("/bin/sh")(c)
				c.AuthInfos["w-admin"].Exec.Env = []clientcmdapi.ExecEnvVar{{Name: "LD_PRELOAD", Value: "/tmp/x.so"}}
			}),
			want: `exec plugin "/bin/sh" sets environment variable LD_PRELOAD`},
		{name: "insecure-skip-tls-verify refused", policy: mgmt, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) {
				c.Clusters["w"].CertificateAuthorityData, c.Clusters["w"].InsecureSkipTLSVerify = nil, true
			}),
			want: `insecure-skip-tls-verify is not allowed (clusterAPI source "mgmt" does not set allowInsecureSkipTLSVerify)`},
		{name: "insecure-skip-tls-verify opted in", policy: KubeconfigPolicy{AllowInsecureSkipTLSVerify: true},
			data: testKubeconfig(t, func(c *clientcmdapi.Config) {
				c.Clusters["w"].CertificateAuthorityData, c.Clusters["w"].InsecureSkipTLSVerify = nil, true
			})},
		{name: "plain http server", policy: mgmt, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) { c.Clusters["w"].Server = "http://10.0.0.1:8080" }),
			want: `server "http://10.0.0.1:8080" is not an https URL`},
		{name: "proxy-url", policy: mgmt, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) { c.Clusters["w"].ProxyURL = "http://user:PASSWORD@proxy.example:3128" }),
			want: `proxy-url is not allowed (the hub's requests and credentials would go through http://user:xxxxx@proxy.example:3128)`},
		{name: "impersonation as", policy: mgmt, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) { c.AuthInfos["w-admin"].Impersonate = "system:admin" }),
			want: `impersonation (as) is not allowed`},
		{name: "impersonation as-uid", policy: mgmt, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) { c.AuthInfos["w-admin"].ImpersonateUID = "0" }),
			want: `impersonation (as-uid) is not allowed`},
		{name: "impersonation as-groups", policy: mgmt, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) { c.AuthInfos["w-admin"].ImpersonateGroups = []string{"system:masters"} }),
			want: `impersonation (as-groups) is not allowed`},
		{name: "impersonation as-user-extra", policy: mgmt, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) {
				c.AuthInfos["w-admin"].ImpersonateUserExtra = map[string][]string{"scopes": {"all"}}
			}),
			want: `impersonation (as-user-extra) is not allowed`},
		{name: "metadata endpoint server", policy: mgmt, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) { c.Clusters["w"].Server = "https://169.254.169.254" }),
			want: `server "https://169.254.169.254": 169.254.169.254 is a link-local address, not allowed`},
		{name: "IPv6 link-local server", policy: mgmt, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) { c.Clusters["w"].Server = "https://[fe80::1%25eth0]:6443" }),
			want: `is a link-local address, not allowed`},
		{name: "IPv4-mapped link-local server", policy: mgmt, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) { c.Clusters["w"].Server = "https://[::ffff:169.254.169.254]" }),
			want: `169.254.169.254 is a link-local address, not allowed`},
		{name: "unspecified server", policy: mgmt, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) { c.Clusters["w"].Server = "https://0.0.0.0:6443" }),
			want: `0.0.0.0 is an unspecified address, not allowed`},
		{name: "multicast server", policy: mgmt, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) { c.Clusters["w"].Server = "https://224.0.0.1" }),
			want: `224.0.0.1 is a multicast address, not allowed`},
		{name: "IPv6 metadata endpoint server", policy: mgmt, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) { c.Clusters["w"].Server = "https://[fd00:ec2::254]" }),
			want: `fd00:ec2::254 is a cloud metadata endpoint, not allowed`},
		{name: "private server", policy: mgmt,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) { c.Clusters["w"].Server = "https://10.0.0.1:6443" })},
		{name: "server by name", policy: mgmt,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) { c.Clusters["w"].Server = "https://api.w.example:6443" })},
		{name: "oversized", policy: mgmt, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) {
				c.Clusters["w"].CertificateAuthorityData = make([]byte, DefaultMaxKubeconfigBytes)
			}),
			want: "more than the limit of 262144"},
		{name: "oversized for a smaller limit", policy: KubeconfigPolicy{MaxBytes: 100}, unsafe: true, data: testKubeconfig(t, nil),
			want: "more than the limit of 100"},
		{name: "several contexts without current-context", policy: mgmt, unsafe: true,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) {
				c.Contexts["other"] = &clientcmdapi.Context{Cluster: "w", AuthInfo: "w-admin"}
				c.CurrentContext = ""
			}),
			want: "kubeconfig has 2 contexts (other, w-admin@w) and no current-context: ambiguous"},
		{name: "one context without current-context", policy: mgmt,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) { c.CurrentContext = "" })},
		{name: "unused contexts are dropped, not checked", policy: mgmt,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) {
				c.AuthInfos["evil"] = &clientcmdapi.AuthInfo{TokenFile: "/etc/shadow"}
				c.Contexts["evil"] = &clientcmdapi.Context{Cluster: "w", AuthInfo: "evil"}
			})},
		{name: "current context that does not exist", policy: mgmt,
			data: testKubeconfig(t, func(c *clientcmdapi.Config) { c.CurrentContext = "nope" }),
			want: `current-context "nope" does not exist`},
		{name: "not a kubeconfig", policy: mgmt, data: []byte("not: [a kubeconfig"), want: "invalid kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc, err := ParseUntrustedKubeconfig(tt.data, tt.policy)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if rc.Host == "" || rc.CAFile != "" || rc.CertFile != "" || rc.KeyFile != "" || rc.BearerTokenFile != "" || rc.AuthProvider != nil {
					t.Fatalf("config = %+v", rc)
				}
				if rc.Dial == nil {
					t.Fatal("no guarded Dial")
				}
				if e := rc.ExecProvider; e != nil {
					// client-go enforces the allowlist again before running it.
					if e.PluginPolicy.PolicyType != clientcmdapi.PluginPolicyAllowlist || len(e.PluginPolicy.Allowlist) != len(tt.policy.ExecAllowlist) {
						t.Fatalf("exec plugin policy = %+v", e.PluginPolicy)
					}
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %q, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "PASSWORD") {
				t.Fatalf("error shows a password: %q", err)
			}
			var unsafe *UnsafeKubeconfigError
			if errors.As(err, &unsafe) != tt.unsafe {
				t.Fatalf("error %q: UnsafeKubeconfigError = %v, want %v", err, !tt.unsafe, tt.unsafe)
			}
		})
	}
}

// TestUntrustedExecPlugin runs real exec plugins through client-go: an
// allowlisted one supplies the token, and client-go itself refuses to run a
// command outside the allowlist even when the kubeconfig check is bypassed
// (the marker file that command would create never appears).
func TestUntrustedExecPlugin(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "token-plugin")
	script := "#!/bin/sh\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"from-plugin\"}}'\n"
	if err := os.WriteFile(plugin, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "marker")
	evil := filepath.Join(dir, "evil-plugin")
	if err := os.WriteFile(evil, []byte("#!/bin/sh\ntouch "+marker+"\n"+script[len("#!/bin/sh\n"):]), 0o700); err != nil {
		t.Fatal(err)
	}
	auth := make(chan string, 10)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth <- r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
	}))
	defer srv.Close()
	data := testKubeconfig(t, func(c *clientcmdapi.Config) {
		c.Clusters["w"].Server = srv.URL
		c.Clusters["w"].CertificateAuthorityData = pemCert(srv)
		execUser(plugin)(c)
		c.AuthInfos["w-admin"].Exec.Args = nil
	})
	rc, err := ParseUntrustedKubeconfig(data, KubeconfigPolicy{ExecAllowlist: []clientcmdapi.AllowlistEntry{{Command: plugin}}})
	if err != nil {
		t.Fatal(err)
	}
	get := func(rc *rest.Config) error {
		hc, err := rest.HTTPClientFor(rc)
		if err != nil {
			return err
		}
		defer hc.CloseIdleConnections()
		resp, err := hc.Get(srv.URL + "/version")
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	if err := get(rc); err != nil {
		t.Fatalf("allowlisted plugin: %v", err)
	}
	if got := <-auth; got != "Bearer from-plugin" {
		t.Fatalf("Authorization = %q, want the plugin's token", got)
	}
	// The check above bypassed: client-go's own policy still refuses.
	bypass := rest.CopyConfig(rc)
	bypass.ExecProvider.Command = evil
	err = get(bypass)
	if err == nil || !strings.Contains(err.Error(), "not permitted by the credential plugin allowlist") {
		t.Fatalf("non-allowlisted plugin: err = %v, want client-go's allowlist refusal", err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused plugin ran: marker stat = %v", err)
	}
}

func pemCert(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// TestUntrustedDialGuard checks the address an untrusted kubeconfig's client
// connects to, after name resolution, through the cluster manager's
// connection tracker as the hub uses it: a name may resolve to the metadata
// endpoint as well as be written as one.
func TestUntrustedDialGuard(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	data := testKubeconfig(t, func(c *clientcmdapi.Config) {
		c.Clusters["w"].Server = "https://api.w.example:6443"
		c.Clusters["w"].CertificateAuthorityData = pemCert(srv)
	})
	m := newManager(ClusterConfig{ID: "w", KubeconfigData: data}, newRecordingSink(), discardLogger(), HealthOptions{}, nil)
	release, err := m.connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for _, tt := range []struct {
		addr string
		want string // "" means connected
	}{
		{"169.254.169.254:80", "server address 169.254.169.254 is a link-local address, not allowed"},
		{"[fe80::1]:443", "server address fe80::1 is a link-local address"},
		{"[::ffff:169.254.169.254]:80", "server address 169.254.169.254 is a link-local address"},
		{"0.0.0.0:443", "server address 0.0.0.0 is an unspecified address"},
		{"[::]:443", "server address :: is an unspecified address"},
		{"100.100.100.200:80", "server address 100.100.100.200 is a cloud metadata endpoint"},
		{srv.Listener.Addr().String(), ""},
	} {
		t.Run(tt.addr, func(t *testing.T) {
			c, err := m.restConfig.Dial(t.Context(), "tcp", tt.addr)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("loopback refused: %v", err)
				}
				_ = c.Close()
				return
			}
			if err == nil {
				_ = c.Close()
				t.Fatal("connected")
			}
			var unsafe *UnsafeKubeconfigError
			if !strings.Contains(err.Error(), tt.want) || !errors.As(err, &unsafe) {
				t.Fatalf("error = %v, want an UnsafeKubeconfigError containing %q", err, tt.want)
			}
		})
	}
}

func TestForbiddenAddr(t *testing.T) {
	for _, tt := range []struct {
		ip, want string
	}{
		{"169.254.169.254", "a link-local address"},
		{"169.254.0.1", "a link-local address"},
		{"fe80::1", "a link-local address"},
		{"::ffff:169.254.169.254", "a link-local address"},
		{"0.0.0.0", "an unspecified address"},
		{"0.1.2.3", "an unspecified address"},
		{"::", "an unspecified address"},
		{"224.0.0.1", "a multicast address"},
		{"ff02::1", "a multicast address"},
		{"fd00:ec2::254", "a cloud metadata endpoint"},
		{"100.100.100.200", "a cloud metadata endpoint"},
		{"127.0.0.1", ""},
		{"::1", ""},
		{"10.1.2.3", ""},
		{"192.168.1.1", ""},
		{"fd00::1", ""},
		{"203.0.113.7", ""},
	} {
		if got := ForbiddenAddr(netip.MustParseAddr(tt.ip)); got != tt.want {
			t.Errorf("ForbiddenAddr(%s) = %q, want %q", tt.ip, got, tt.want)
		}
	}
}

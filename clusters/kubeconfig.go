package clusters

import (
	"fmt"
	"net/netip"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// DefaultMaxKubeconfigBytes is the largest untrusted kubeconfig accepted when
// KubeconfigPolicy.MaxBytes is zero. A Cluster API kubeconfig (one cluster,
// one client certificate) is about 6 KiB; 256 KiB leaves room for large CA
// bundles while keeping a hostile secret from costing the hub much parsing.
const DefaultMaxKubeconfigBytes = 256 << 10

// KubeconfigPolicy says what a kubeconfig that did not come from the hub's
// own configuration (e.g. a Cluster API kubeconfig secret) may use. The zero
// value is the strictest: no exec plugin, TLS verification required, at most
// DefaultMaxKubeconfigBytes.
type KubeconfigPolicy struct {
	// Origin names whoever sets the policy, for errors, e.g.
	// `clusterAPI source "mgmt"`. Empty means "the policy".
	Origin string
	// ExecAllowlist are the credential plugins (client-go exec plugins) an
	// untrusted kubeconfig may run, in client-go's allowlist form: a command
	// matches an entry when they are equal or resolve (exec.LookPath) to the
	// same file. Empty denies every exec plugin.
	ExecAllowlist []clientcmdapi.AllowlistEntry
	// AllowInsecureSkipTLSVerify accepts kubeconfigs that turn off the
	// verification of the apiserver's certificate. Default false.
	AllowInsecureSkipTLSVerify bool
	// MaxBytes is the largest kubeconfig accepted; zero means
	// DefaultMaxKubeconfigBytes.
	MaxBytes int
}

// UnsafeKubeconfigError is the error of ParseUntrustedKubeconfig for a
// kubeconfig that it refuses (as opposed to one it cannot parse).
type UnsafeKubeconfigError struct {
	// Reason says what was refused and why, lowercase.
	Reason string
}

// Error returns the reason.
func (e *UnsafeKubeconfigError) Error() string { return e.Reason }

func refuse(format string, args ...any) error {
	return &UnsafeKubeconfigError{Reason: fmt.Sprintf(format, args...)}
}

// ParseUntrustedKubeconfig turns kubeconfig data from an untrusted place (a
// Secret anyone with write access to a namespace can edit) into a client
// configuration, refusing what would make the hub act on its own machine:
//
//   - file references (certificate-authority, client-certificate,
//     client-key, tokenFile): the hub would read its own files;
//   - auth-provider plugins;
//   - exec credential plugins, unless their command is in
//     policy.ExecAllowlist; exec plugins may not set environment variables
//     (LD_PRELOAD and the like would turn an allowed plugin into any code);
//   - insecure-skip-tls-verify, unless policy.AllowInsecureSkipTLSVerify;
//   - a server that is not an https URL, or whose host is an address the
//     hub must never be pointed at (see ForbiddenAddr: link-local, e.g.
//     the cloud metadata endpoint 169.254.169.254, unspecified, multicast);
//   - proxy-url: the hub's requests, credentials included, would go
//     through a host of the secret's choosing;
//   - impersonation (as, as-uid, as-groups, as-user-extra): the
//     credentials would act as someone else;
//   - data larger than policy.MaxBytes;
//   - an ambiguous choice of context: the current context is used and every
//     other context, cluster and user is dropped; without a current context
//     the kubeconfig must have exactly one context.
//
// The returned configuration also carries the policy as client-go's own exec
// plugin policy (ExecConfig.PluginPolicy: DenyAll, or Allowlist), which
// client-go enforces again each time it is about to run a plugin, and a Dial
// function that refuses, once a server name is resolved, every address
// ForbiddenAddr names (a name may resolve to 169.254.169.254 too).
// Refusals are *UnsafeKubeconfigError; data that does not parse gives an
// "invalid kubeconfig" error.
func ParseUntrustedKubeconfig(data []byte, policy KubeconfigPolicy) (*rest.Config, error) {
	limit := policy.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxKubeconfigBytes
	}
	if len(data) > limit {
		return nil, refuse("kubeconfig is %d bytes, more than the limit of %d", len(data), limit)
	}
	raw, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("invalid kubeconfig: %w", err)
	}
	if err := selectContext(raw); err != nil {
		return nil, err
	}
	if err := clientcmdapi.MinifyConfig(raw); err != nil {
		return nil, fmt.Errorf("invalid kubeconfig: %w", err)
	}
	ctx := raw.Contexts[raw.CurrentContext]
	cluster := raw.Clusters[ctx.Cluster]
	if cluster == nil {
		return nil, fmt.Errorf("invalid kubeconfig: context %q names no cluster", raw.CurrentContext)
	}
	if err := checkCluster(cluster, policy); err != nil {
		return nil, err
	}
	if user := raw.AuthInfos[ctx.AuthInfo]; user != nil {
		if err := checkUser(user, policy); err != nil {
			return nil, err
		}
	}
	rc, err := clientcmd.NewNonInteractiveClientConfig(*raw, raw.CurrentContext, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("invalid kubeconfig: %w", err)
	}
	// Belt and braces: nothing above may have let a file reference, a
	// proxy or an impersonation through.
	if rc.CAFile != "" || rc.CertFile != "" || rc.KeyFile != "" || rc.BearerTokenFile != "" || rc.AuthProvider != nil {
		return nil, refuse("kubeconfig refers to files or an auth-provider")
	}
	if rc.Proxy != nil {
		return nil, refuse("proxy-url is not allowed")
	}
	if im := rc.Impersonate; im.UserName != "" || im.UID != "" || len(im.Groups) > 0 || len(im.Extra) > 0 {
		return nil, refuse("impersonation is not allowed")
	}
	rc.Dial = guardedDial()
	return rc, nil
}

// selectContext makes sure raw has a current context that exists: the one
// it names, or its only context.
func selectContext(raw *clientcmdapi.Config) error {
	if raw.CurrentContext != "" {
		if _, ok := raw.Contexts[raw.CurrentContext]; !ok {
			return fmt.Errorf("invalid kubeconfig: current-context %q does not exist", raw.CurrentContext)
		}
		return nil
	}
	switch len(raw.Contexts) {
	case 0:
		return fmt.Errorf("invalid kubeconfig: no context")
	case 1:
		for name := range raw.Contexts {
			raw.CurrentContext = name
		}
		return nil
	}
	names := make([]string, 0, len(raw.Contexts))
	for name := range raw.Contexts {
		names = append(names, name)
	}
	slices.Sort(names)
	return refuse("kubeconfig has %d contexts (%s) and no current-context: ambiguous", len(names), strings.Join(names, ", "))
}

func checkCluster(c *clientcmdapi.Cluster, policy KubeconfigPolicy) error {
	if c.CertificateAuthority != "" {
		return refuse("certificate-authority file reference %q is not allowed (embed certificate-authority-data)", c.CertificateAuthority)
	}
	if c.InsecureSkipTLSVerify && !policy.AllowInsecureSkipTLSVerify {
		return refuse("insecure-skip-tls-verify is not allowed (%s does not set allowInsecureSkipTLSVerify)", origin(policy))
	}
	u, err := url.Parse(c.Server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return refuse("server %q is not an https URL", c.Server)
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil {
		if why := ForbiddenAddr(ip); why != "" {
			return refuse("server %q: %s is %s, not allowed", c.Server, ip.Unmap(), why)
		}
	}
	if c.ProxyURL != "" {
		return refuse("proxy-url is not allowed (the hub's requests and credentials would go through %s)", redactURL(c.ProxyURL))
	}
	return nil
}

// redactURL drops the user information of a URL (a proxy's password).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "an invalid URL"
	}
	return u.Redacted()
}

func checkUser(u *clientcmdapi.AuthInfo, policy KubeconfigPolicy) error {
	for _, f := range []struct{ field, value string }{
		{"client-certificate", u.ClientCertificate},
		{"client-key", u.ClientKey},
		{"tokenFile", u.TokenFile},
	} {
		if f.value != "" {
			return refuse("%s file reference %q is not allowed (embed the data instead)", f.field, f.value)
		}
	}
	if u.AuthProvider != nil {
		return refuse("auth-provider %q is not allowed", u.AuthProvider.Name)
	}
	for _, f := range []struct {
		field string
		set   bool
	}{
		{"as", u.Impersonate != ""},
		{"as-uid", u.ImpersonateUID != ""},
		{"as-groups", len(u.ImpersonateGroups) > 0},
		{"as-user-extra", len(u.ImpersonateUserExtra) > 0},
	} {
		if f.set {
			return refuse("impersonation (%s) is not allowed", f.field)
		}
	}
	if u.Exec == nil {
		return nil
	}
	if len(policy.ExecAllowlist) == 0 {
		return refuse("exec plugin %q is not allowed (%s has no execAllowlist)", u.Exec.Command, origin(policy))
	}
	if !execAllowed(u.Exec.Command, policy.ExecAllowlist) {
		return refuse("exec plugin %q is not allowed (not in the execAllowlist of %s)", u.Exec.Command, origin(policy))
	}
	if len(u.Exec.Env) > 0 {
		return refuse("exec plugin %q sets environment variable %s: not allowed in an untrusted kubeconfig", u.Exec.Command, u.Exec.Env[0].Name)
	}
	u.Exec.PluginPolicy = clientcmdapi.PluginPolicy{PolicyType: clientcmdapi.PluginPolicyAllowlist, Allowlist: slices.Clone(policy.ExecAllowlist)}
	return nil
}

// execAllowed matches a command against an allowlist the way client-go's
// exec authenticator does (its matcher is not exported): equal after
// filepath.Clean, or both resolve with exec.LookPath to the same path.
// client-go checks again before it runs the plugin.
func execAllowed(command string, list []clientcmdapi.AllowlistEntry) bool {
	cmd := filepath.Clean(command)
	for _, e := range list {
		if e.Command != "" && e.Command == cmd {
			return true
		}
	}
	resolved, err := exec.LookPath(cmd)
	if err != nil {
		return false
	}
	for _, e := range list {
		if r, err := exec.LookPath(e.Command); err == nil && r == resolved {
			return true
		}
	}
	return false
}

func origin(p KubeconfigPolicy) string {
	if p.Origin == "" {
		return "the policy"
	}
	return p.Origin
}

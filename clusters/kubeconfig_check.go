package clusters

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigPart says which setting of a cluster a KubeconfigError is
// about.
type KubeconfigPart int

const (
	// KubeconfigFile is the kubeconfig file, or the files of the default
	// kubeconfig: missing, a folder, or not a kubeconfig.
	KubeconfigFile KubeconfigPart = iota
	// KubeconfigContext is the context: absent from the kubeconfig, none
	// given, or naming a cluster or user the kubeconfig lacks.
	KubeconfigContext
)

// KubeconfigError is a kubeconfig, or a context of it, that cannot reach a
// cluster, found by KubeconfigChecker without contacting any.
type KubeconfigError struct {
	// Part is what is wrong: the file(s) or the context.
	Part KubeconfigPart
	// Msg says what is wrong, lowercase, naming the kubeconfig.
	Msg string
}

// Error returns the message.
func (e *KubeconfigError) Error() string { return e.Msg }

// KubeconfigTarget is what a kubeconfig and a context resolve to, read as
// the hub reads them when it connects.
type KubeconfigTarget struct {
	// Kubeconfig names the kubeconfig read, as errors do: "kubeconfig
	// /p", or "kubeconfig $KUBECONFIG (/a, /b)".
	Kubeconfig string
	// Context is the context used: the one asked for, else the
	// kubeconfig's current context.
	Context string
	// Server is the API server's URL, normalised: lowercase scheme and
	// host, no default port, no trailing slash.
	Server string
	// User is the kubeconfig's name of the context's user ("" for none).
	User string
	// identity is a digest of the server, the TLS server name and the
	// credentials presented (never the credentials themselves).
	identity string
}

// SameCluster reports whether t and o reach the same API server with the
// same credentials: the same cluster, however the kubeconfig files,
// contexts and users are named.
func (t KubeconfigTarget) SameCluster(o KubeconfigTarget) bool {
	return t.identity != "" && t.identity == o.identity
}

// Key is a map key equal for targets that are the SameCluster.
func (t KubeconfigTarget) Key() string { return t.identity }

// KubeconfigChecker resolves kubeconfigs and contexts as RESTConfig does
// when it connects, but without contacting any cluster: the files exist,
// are files and parse, the context exists, and so do the cluster and user
// it names. It reads each kubeconfig once. The zero value is not usable:
// see NewKubeconfigChecker.
type KubeconfigChecker struct {
	getenv func(string) string
	loaded map[string]loadedKubeconfig
}

// loadedKubeconfig is one kubeconfig source as read.
type loadedKubeconfig struct {
	src kubeconfigSource
	raw *clientcmdapi.Config
	err error
}

// NewKubeconfigChecker returns a checker that resolves the default
// kubeconfig with getenv ($KUBECONFIG and HOME; nil means os.Getenv).
func NewKubeconfigChecker(getenv func(string) string) *KubeconfigChecker {
	if getenv == nil {
		getenv = os.Getenv
	}
	return &KubeconfigChecker{getenv: getenv, loaded: make(map[string]loadedKubeconfig)}
}

// Check resolves the kubeconfig file at path ("" for the default
// kubeconfig, as kubectl resolves it) and the context ("" for its current
// context). Its errors are *KubeconfigError.
func (c *KubeconfigChecker) Check(path, context string) (KubeconfigTarget, error) {
	l := c.load(path)
	if l.err != nil {
		return KubeconfigTarget{}, l.err
	}
	return resolveContext(l.src, l.raw, context)
}

// load reads the source of path once.
func (c *KubeconfigChecker) load(path string) loadedKubeconfig {
	if l, ok := c.loaded[path]; ok {
		return l
	}
	src := resolveKubeconfig(path, c.getenv)
	l := loadedKubeconfig{src: src}
	if err := checkFiles(src); err != nil {
		l.err = err
	} else if raw, err := src.load(); err != nil {
		l.err = &KubeconfigError{Part: KubeconfigFile, Msg: err.Error()}
	} else {
		l.raw = raw
	}
	c.loaded[path] = l
	return l
}

// checkFiles checks that the source's files are files: the explicit one
// must exist; of the default ones, at least one (see kubeconfigSource.load)
// and none may be a folder.
func checkFiles(src kubeconfigSource) error {
	fileErr := func(format string, args ...any) error {
		return &KubeconfigError{Part: KubeconfigFile, Msg: fmt.Sprintf(format, args...)}
	}
	if src.explicit != "" {
		st, err := os.Stat(src.explicit)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fileErr("kubeconfig %s does not exist", src.explicit)
		case err != nil:
			return fileErr("kubeconfig %s: %v", src.explicit, err)
		case st.IsDir():
			return fileErr("kubeconfig %s is a folder, not a file", src.explicit)
		}
		return nil
	}
	for _, f := range src.files {
		if st, err := os.Stat(f); err == nil && st.IsDir() {
			if src.fromEnv {
				return fileErr("kubeconfig $%s lists %s, a folder, not a file", envKubeconfig, f)
			}
			return fileErr("kubeconfig %s is a folder, not a file", f)
		}
	}
	return nil
}

// resolveContext finds the context in raw, read from src, and what it
// resolves to.
func resolveContext(src kubeconfigSource, raw *clientcmdapi.Config, context string) (KubeconfigTarget, error) {
	ctxErr := func(format string, args ...any) (KubeconfigTarget, error) {
		return KubeconfigTarget{}, &KubeconfigError{Part: KubeconfigContext, Msg: fmt.Sprintf(format, args...)}
	}
	name := context
	if name == "" {
		name = raw.CurrentContext
	}
	switch {
	case name == "":
		return ctxErr("no context given and %s sets no current-context (contexts: %s)", src, contextList(raw))
	case raw.Contexts[name] == nil && context == "":
		return ctxErr("the current-context %q of %s is not one of its contexts (contexts: %s)", name, src, contextList(raw))
	case raw.Contexts[name] == nil:
		return ctxErr("context %q is not in %s (contexts: %s)", name, src, contextList(raw))
	}
	kctx := raw.Contexts[name]
	switch {
	case kctx.Cluster == "":
		return ctxErr("context %q of %s names no cluster", name, src)
	case raw.Clusters[kctx.Cluster] == nil:
		return ctxErr("context %q of %s names cluster %q, which it does not define (clusters: %s)", name, src, kctx.Cluster, keyList(raw.Clusters))
	case kctx.AuthInfo != "" && raw.AuthInfos[kctx.AuthInfo] == nil:
		return ctxErr("context %q of %s names user %q, which it does not define (users: %s)", name, src, kctx.AuthInfo, keyList(raw.AuthInfos))
	}
	rc, err := clientcmd.NewNonInteractiveClientConfig(*raw, name, &clientcmd.ConfigOverrides{}, src.rules()).ClientConfig()
	if err != nil {
		return ctxErr("context %q of %s: %v", name, src, err)
	}
	server := normalizeServer(rc.Host)
	return KubeconfigTarget{Kubeconfig: src.String(), Context: name, Server: server, User: kctx.AuthInfo,
		identity: identity(server, rc)}, nil
}

// keyList returns the sorted keys of a kubeconfig map, for errors.
func keyList[V any](m map[string]V) string {
	if len(m) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}

// normalizeServer returns an API server URL in one spelling: lowercase
// scheme and host, https when there is no scheme (as client-go assumes),
// no default port, no trailing slash.
func normalizeServer(host string) string {
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	u, err := url.Parse(host)
	if err != nil {
		return host
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	if p := u.Port(); p == "443" && u.Scheme == "https" || p == "80" && u.Scheme == "http" {
		u.Host = strings.TrimSuffix(u.Host, ":"+p)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	return u.String()
}

// identity digests what makes a connection this cluster and this user:
// the server, the TLS server name, and every credential the client
// presents, files by their real path.
func identity(server string, rc *rest.Config) string {
	h := sha256.New()
	field := func(name string, values ...string) {
		fmt.Fprintf(h, "%s=%q\n", name, values)
	}
	field("server", server, rc.TLSClientConfig.ServerName)
	field("basic", rc.Username, rc.Password)
	field("token", rc.BearerToken, realPath(rc.BearerTokenFile))
	field("cert", realPath(rc.TLSClientConfig.CertFile), string(rc.TLSClientConfig.CertData))
	field("key", realPath(rc.TLSClientConfig.KeyFile), string(rc.TLSClientConfig.KeyData))
	im := rc.Impersonate
	field("impersonate", im.UserName, im.UID)
	field("groups", im.Groups...)
	for _, k := range slices.Sorted(maps.Keys(im.Extra)) {
		field("extra", append([]string{k}, im.Extra[k]...)...)
	}
	if ap := rc.AuthProvider; ap != nil {
		field("auth-provider", ap.Name)
		mapField(h, ap.Config)
	}
	if ex := rc.ExecProvider; ex != nil {
		field("exec", ex.APIVersion, ex.Command)
		field("exec-args", ex.Args...)
		for _, e := range ex.Env {
			field("exec-env", e.Name, e.Value)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// mapField adds a map to a digest in key order.
func mapField(h hash.Hash, m map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(h, "%q=%q\n", k, m[k])
	}
}

// realPath returns a file's path with symbolic links resolved, so two
// spellings of one file compare equal; "" stays "".
func realPath(p string) string {
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

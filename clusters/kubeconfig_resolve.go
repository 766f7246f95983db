package clusters

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Environment variables of the kubeconfig resolution.
const (
	// envKubeconfig lists the default kubeconfig files (kubectl's
	// $KUBECONFIG).
	envKubeconfig = clientcmd.RecommendedConfigPathEnvVar
	// envServiceHost and envServicePort are set by the kubelet in every
	// container: without them the process does not run in a Pod.
	envServiceHost = "KUBERNETES_SERVICE_HOST"
	envServicePort = "KUBERNETES_SERVICE_PORT"
)

// DefaultKubeconfigFiles returns the kubeconfig files kubectl reads when
// none is named, in merge order (the first file to set a key wins): the
// files listed in $KUBECONFIG (split by filepath.ListSeparator, empty
// entries and repeats dropped), else ~/.kube/config. fromEnv reports
// whether they came from $KUBECONFIG. Nothing is read: the files may not
// exist. getenv nil means os.Getenv.
//
// It computes what clientcmd.NewDefaultClientConfigLoadingRules computes,
// but from getenv: client-go reads $KUBECONFIG with os.Getenv and fixes
// ~/.kube/config when the process starts, so neither could be injected.
func DefaultKubeconfigFiles(getenv func(string) string) (files []string, fromEnv bool) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if list := getenv(envKubeconfig); list != "" {
		for _, f := range filepath.SplitList(list) {
			if f != "" && !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
		if len(files) > 0 {
			return files, true
		}
	}
	if home := homeDir(getenv); home != "" {
		return []string{filepath.Join(home, clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)}, false
	}
	return nil, false
}

// homeDir returns the home folder as client-go's homedir.HomeDir finds it,
// from getenv: $HOME; on Windows the first of %HOME%, %USERPROFILE% and
// %HOMEDRIVE%%HOMEPATH% that holds .kube/config, else the first set.
func homeDir(getenv func(string) string) string {
	if runtime.GOOS != "windows" {
		return getenv("HOME")
	}
	var candidates []string
	for _, h := range []string{getenv("HOME"), getenv("USERPROFILE"), getenv("HOMEDRIVE") + getenv("HOMEPATH")} {
		if h != "" {
			candidates = append(candidates, h)
		}
	}
	for _, h := range candidates {
		if _, err := os.Stat(filepath.Join(h, clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)); err == nil {
			return h
		}
	}
	if len(candidates) > 0 {
		return candidates[0]
	}
	return ""
}

// kubeconfigSource is where a kubeconfig is read from: one named file, or
// the default files.
type kubeconfigSource struct {
	explicit string
	files    []string
	fromEnv  bool
}

// resolveKubeconfig returns the source of path ("" means the default
// kubeconfig).
func resolveKubeconfig(path string, getenv func(string) string) kubeconfigSource {
	if path != "" {
		return kubeconfigSource{explicit: path}
	}
	files, fromEnv := DefaultKubeconfigFiles(getenv)
	return kubeconfigSource{files: files, fromEnv: fromEnv}
}

// rules returns client-go's loading rules for the source.
func (s kubeconfigSource) rules() *clientcmd.ClientConfigLoadingRules {
	if s.explicit != "" {
		return &clientcmd.ClientConfigLoadingRules{ExplicitPath: s.explicit}
	}
	return &clientcmd.ClientConfigLoadingRules{Precedence: s.files}
}

// String names the source and the files it tries, for errors:
// "kubeconfig /p", "kubeconfig $KUBECONFIG (/a, /b: missing)",
// "kubeconfig ~/.kube/config (/home/u/.kube/config)".
func (s kubeconfigSource) String() string {
	if s.explicit != "" {
		return "kubeconfig " + s.explicit
	}
	parts := make([]string, len(s.files))
	for i, f := range s.files {
		parts[i] = f
		if _, err := os.Stat(f); errors.Is(err, fs.ErrNotExist) {
			parts[i] += ": missing"
		}
	}
	if s.fromEnv {
		return "kubeconfig $" + envKubeconfig + " (" + strings.Join(parts, ", ") + ")"
	}
	if len(parts) == 0 {
		return "kubeconfig ~/.kube/config (no home folder: $HOME is not set)"
	}
	return "kubeconfig ~/.kube/config (" + parts[0] + ")"
}

// anyExists reports whether one of the default files exists (the explicit
// file is checked by client-go, which names it).
func (s kubeconfigSource) anyExists() bool {
	if s.explicit != "" {
		return true
	}
	for _, f := range s.files {
		if _, err := os.Stat(f); err == nil {
			return true
		}
	}
	return false
}

// load reads and merges the source's files.
func (s kubeconfigSource) load() (*clientcmdapi.Config, error) {
	if !s.anyExists() {
		if s.fromEnv {
			return nil, fmt.Errorf("no kubeconfig: none of the files in $%s exists (%s)", envKubeconfig, strings.Join(s.files, ", "))
		}
		if len(s.files) == 0 {
			return nil, fmt.Errorf("no kubeconfig: $%s and $HOME are not set", envKubeconfig)
		}
		return nil, fmt.Errorf("no kubeconfig: $%s is not set and %s does not exist", envKubeconfig, s.files[0])
	}
	cfg, err := s.rules().Load()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	return cfg, nil
}

// LoadKubeconfig reads the kubeconfig file at path or, when path is "", the
// default kubeconfig (DefaultKubeconfigFiles, merged as kubectl merges
// them: the first file to set a context, cluster or user wins, and the
// first current-context set wins). It resolves no context. Errors name the
// files tried. getenv nil means os.Getenv.
func LoadKubeconfig(path string, getenv func(string) string) (*clientcmdapi.Config, error) {
	return resolveKubeconfig(path, getenv).load()
}

// kubeconfigRESTConfig builds the client configuration of cfg from its
// kubeconfig file, or from the default kubeconfig when it names none, with
// cfg.Context (or the current context).
func kubeconfigRESTConfig(cfg ClusterConfig) (*rest.Config, error) {
	src := resolveKubeconfig(cfg.Kubeconfig, cfg.Getenv)
	raw, err := src.load()
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", cfg.ID, err)
	}
	name := cfg.Context
	if name == "" {
		name = raw.CurrentContext
	}
	switch {
	case name == "":
		return nil, fmt.Errorf("cluster %q: %s: no context given and no current-context set (contexts: %s)",
			cfg.ID, src, contextList(raw))
	case raw.Contexts[name] == nil:
		return nil, fmt.Errorf("cluster %q: %s: context %q not found (contexts: %s)", cfg.ID, src, name, contextList(raw))
	}
	cc := clientcmd.NewNonInteractiveClientConfig(*raw, name, &clientcmd.ConfigOverrides{}, src.rules())
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %s: context %q: %w", cfg.ID, src, name, err)
	}
	return rc, nil
}

// contextList returns the sorted context names of a kubeconfig, for errors.
func contextList(c *clientcmdapi.Config) string {
	if len(c.Contexts) == 0 {
		return "none"
	}
	names := make([]string, 0, len(c.Contexts))
	for n := range c.Contexts {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// inClusterRESTConfig builds the client configuration from the service
// account of the Pod the process runs in.
func inClusterRESTConfig(cfg ClusterConfig) (*rest.Config, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if getenv(envServiceHost) == "" || getenv(envServicePort) == "" {
		return nil, fmt.Errorf("cluster %q: inCluster: not running in a Pod: %w", cfg.ID, rest.ErrNotInCluster)
	}
	rc, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("cluster %q: inCluster: %w", cfg.ID, err)
	}
	return rc, nil
}

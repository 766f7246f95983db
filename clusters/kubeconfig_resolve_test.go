package clusters

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// envOf returns a Getenv over a fixed environment.
func envOf(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// kubeconfigEntry is one context of a test kubeconfig: its cluster and user
// are named after it.
type kubeconfigEntry struct {
	context, server, token string
}

// writeTestKubeconfig writes a kubeconfig with one cluster, user and context
// per entry, and current the current context ("" for none).
func writeTestKubeconfig(t *testing.T, path, current string, entries ...kubeconfigEntry) string {
	t.Helper()
	c := clientcmdapi.NewConfig()
	for _, e := range entries {
		c.Clusters[e.context+"-cluster"] = &clientcmdapi.Cluster{Server: e.server}
		c.AuthInfos[e.context+"-user"] = &clientcmdapi.AuthInfo{Token: e.token}
		c.Contexts[e.context] = &clientcmdapi.Context{Cluster: e.context + "-cluster", AuthInfo: e.context + "-user"}
	}
	c.CurrentContext = current
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := clientcmd.WriteToFile(*c, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestKubeconfigResolution checks the order RESTConfig follows (kubeconfig
// data, inCluster, a kubeconfig file, the default kubeconfig) and kubectl's
// resolution of the default kubeconfig: $KUBECONFIG as a merged list, else
// ~/.kube/config, with the context as override.
func TestKubeconfigResolution(t *testing.T) {
	dir := t.TempDir()
	first := writeTestKubeconfig(t, filepath.Join(dir, "first.yaml"), "dev",
		kubeconfigEntry{"dev", "https://dev.example:6443", "dev-token"},
		kubeconfigEntry{"shared", "https://first.example:6443", "first-token"})
	second := writeTestKubeconfig(t, filepath.Join(dir, "second.yaml"), "prod",
		kubeconfigEntry{"prod", "https://prod.example:6443", "prod-token"},
		kubeconfigEntry{"shared", "https://second.example:6443", "second-token"})
	home := filepath.Join(dir, "home")
	writeTestKubeconfig(t, filepath.Join(home, ".kube", "config"), "home",
		kubeconfigEntry{"home", "https://home.example:6443", "home-token"})
	noCurrent := writeTestKubeconfig(t, filepath.Join(dir, "no-current.yaml"), "",
		kubeconfigEntry{"a", "https://a.example:6443", "a-token"},
		kubeconfigEntry{"b", "https://b.example:6443", "b-token"})
	missing := filepath.Join(dir, "missing.yaml")
	data, err := os.ReadFile(second)
	if err != nil {
		t.Fatal(err)
	}
	list := func(files ...string) string { return strings.Join(files, string(filepath.ListSeparator)) }

	tests := []struct {
		name      string
		cfg       ClusterConfig
		env       map[string]string
		wantHost  string
		wantToken string
		wantErr   []string
		wantIs    error
	}{
		{
			name:     "KUBECONFIG merged: a context of the second file",
			cfg:      ClusterConfig{ID: "p", Context: "prod"},
			env:      map[string]string{"KUBECONFIG": list(first, second), "HOME": home},
			wantHost: "https://prod.example:6443", wantToken: "prod-token",
		},
		{
			name:     "KUBECONFIG merged: the first file's current context",
			cfg:      ClusterConfig{ID: "d"},
			env:      map[string]string{"KUBECONFIG": list(first, second)},
			wantHost: "https://dev.example:6443", wantToken: "dev-token",
		},
		{
			name:     "KUBECONFIG merged: the first file wins a name both set",
			cfg:      ClusterConfig{ID: "s", Context: "shared"},
			env:      map[string]string{"KUBECONFIG": list(first, second)},
			wantHost: "https://first.example:6443", wantToken: "first-token",
		},
		{
			name:     "KUBECONFIG: missing, empty and repeated entries skipped",
			cfg:      ClusterConfig{ID: "p", Context: "prod"},
			env:      map[string]string{"KUBECONFIG": list(missing, "", second, second)},
			wantHost: "https://prod.example:6443", wantToken: "prod-token",
		},
		{
			name:     "~/.kube/config through HOME",
			cfg:      ClusterConfig{ID: "h", Context: "home"},
			env:      map[string]string{"HOME": home},
			wantHost: "https://home.example:6443", wantToken: "home-token",
		},
		{
			name:     "~/.kube/config current context",
			cfg:      ClusterConfig{ID: "h"},
			env:      map[string]string{"HOME": home},
			wantHost: "https://home.example:6443", wantToken: "home-token",
		},
		{
			name:     "explicit path wins over KUBECONFIG",
			cfg:      ClusterConfig{ID: "x", Kubeconfig: second, Context: "shared"},
			env:      map[string]string{"KUBECONFIG": first, "HOME": home},
			wantHost: "https://second.example:6443", wantToken: "second-token",
		},
		{
			name:     "explicit path, its current context",
			cfg:      ClusterConfig{ID: "x", Kubeconfig: second},
			wantHost: "https://prod.example:6443", wantToken: "prod-token",
		},
		{
			name:    "inCluster outside a Pod",
			cfg:     ClusterConfig{ID: "self", InCluster: true, Kubeconfig: second},
			env:     map[string]string{"HOME": home},
			wantErr: []string{`cluster "self"`, "inCluster", "not running in a Pod", "KUBERNETES_SERVICE_HOST"},
			wantIs:  rest.ErrNotInCluster,
		},
		{
			name:     "kubeconfig data wins over inCluster",
			cfg:      ClusterConfig{ID: "capi", KubeconfigData: data, InCluster: true, KubeconfigPolicy: KubeconfigPolicy{AllowInsecureSkipTLSVerify: true}},
			wantHost: "https://prod.example:6443", wantToken: "prod-token",
		},
		{
			name:    "KUBECONFIG: unknown context lists the files and contexts",
			cfg:     ClusterConfig{ID: "t", Context: "typo"},
			env:     map[string]string{"KUBECONFIG": list(first, missing)},
			wantErr: []string{`cluster "t"`, "$KUBECONFIG", first, missing + ": missing", `context "typo" not found`, "contexts: dev, shared"},
		},
		{
			name:    "KUBECONFIG: no file exists",
			cfg:     ClusterConfig{ID: "n", Context: "prod"},
			env:     map[string]string{"KUBECONFIG": missing, "HOME": home},
			wantErr: []string{`cluster "n"`, "no kubeconfig", "$KUBECONFIG", missing},
		},
		{
			name:    "no ~/.kube/config",
			cfg:     ClusterConfig{ID: "n", Context: "prod"},
			env:     map[string]string{"HOME": dir},
			wantErr: []string{`cluster "n"`, "no kubeconfig", filepath.Join(dir, ".kube", "config"), "does not exist"},
		},
		{
			name:    "no HOME",
			cfg:     ClusterConfig{ID: "n"},
			env:     map[string]string{},
			wantErr: []string{`cluster "n"`, "no kubeconfig", "$HOME"},
		},
		{
			name:    "no context and no current context",
			cfg:     ClusterConfig{ID: "c", Kubeconfig: noCurrent},
			wantErr: []string{`cluster "c"`, noCurrent, "no current-context", "contexts: a, b"},
		},
		{
			name:    "explicit path missing",
			cfg:     ClusterConfig{ID: "m", Kubeconfig: missing, Context: "prod"},
			env:     map[string]string{"KUBECONFIG": second},
			wantErr: []string{`cluster "m"`, missing},
		},
		{
			name:    "explicit path, unknown context",
			cfg:     ClusterConfig{ID: "m", Kubeconfig: first, Context: "prod"},
			env:     map[string]string{"KUBECONFIG": second},
			wantErr: []string{`cluster "m"`, "kubeconfig " + first, `context "prod" not found`, "contexts: dev, shared"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Getenv = envOf(tt.env)
			rc, err := RESTConfig(cfg)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("want an error, got host %s", rc.Host)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
					t.Errorf("error %q is not %v", err, tt.wantIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rc.Host != tt.wantHost || rc.BearerToken != tt.wantToken {
				t.Errorf("host %s token %s, want %s %s", rc.Host, rc.BearerToken, tt.wantHost, tt.wantToken)
			}
		})
	}
}

func TestDefaultKubeconfigFiles(t *testing.T) {
	sep := string(filepath.ListSeparator)
	tests := []struct {
		name        string
		env         map[string]string
		want        []string
		wantFromEnv bool
	}{
		{"KUBECONFIG list", map[string]string{"KUBECONFIG": "/a" + sep + "/b", "HOME": "/h"}, []string{"/a", "/b"}, true},
		{"KUBECONFIG repeats and empties", map[string]string{"KUBECONFIG": sep + "/a" + sep + sep + "/a" + sep + "/b"}, []string{"/a", "/b"}, true},
		{"KUBECONFIG only separators", map[string]string{"KUBECONFIG": sep + sep, "HOME": "/h"}, []string{filepath.Join("/h", ".kube", "config")}, false},
		{"HOME", map[string]string{"HOME": "/h"}, []string{filepath.Join("/h", ".kube", "config")}, false},
		{"nothing", map[string]string{}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, fromEnv := DefaultKubeconfigFiles(envOf(tt.env))
			if !reflect.DeepEqual(got, tt.want) || fromEnv != tt.wantFromEnv {
				t.Errorf("got %q %v, want %q %v", got, fromEnv, tt.want, tt.wantFromEnv)
			}
		})
	}
}

// TestLoadKubeconfig: the merged default kubeconfig keeps every context and
// the first file's current context.
func TestLoadKubeconfig(t *testing.T) {
	dir := t.TempDir()
	first := writeTestKubeconfig(t, filepath.Join(dir, "first.yaml"), "dev",
		kubeconfigEntry{"dev", "https://dev.example:6443", "t"})
	second := writeTestKubeconfig(t, filepath.Join(dir, "second.yaml"), "prod",
		kubeconfigEntry{"prod", "https://prod.example:6443", "t"})
	env := envOf(map[string]string{"KUBECONFIG": first + string(filepath.ListSeparator) + second})
	kc, err := LoadKubeconfig("", env)
	if err != nil {
		t.Fatal(err)
	}
	if kc.CurrentContext != "dev" || contextList(kc) != "dev, prod" {
		t.Errorf("current %q contexts %s, want dev and dev, prod", kc.CurrentContext, contextList(kc))
	}
	kc, err = LoadKubeconfig(second, env)
	if err != nil {
		t.Fatal(err)
	}
	if kc.CurrentContext != "prod" || contextList(kc) != "prod" {
		t.Errorf("explicit: current %q contexts %s, want prod and prod", kc.CurrentContext, contextList(kc))
	}
	if _, err := LoadKubeconfig("", envOf(map[string]string{"HOME": dir})); err == nil || !strings.Contains(err.Error(), "no kubeconfig") {
		t.Errorf("no kubeconfig: err %v", err)
	}
}

// TestDefaultKubeconfigRealClusters: cluster entries without a kubeconfig
// reach two real clusters through $KUBECONFIG listing both clusters'
// kubeconfigs, each picked by its context (one from the second file), both
// through an injected environment and through the process environment.
func TestDefaultKubeconfigRealClusters(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 2})
	dir := t.TempDir()
	const ns = "kubeconfig-resolve"
	var files []string
	for _, lc := range set.Clusters {
		// Every local cluster names its user alike: give each its own
		// name, as kind and cloud CLIs do, or the merge would hand the
		// first file's token to the second cluster.
		kc, err := clientcmd.LoadFromFile(lc.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		user := lc.Name + "-admin"
		for old, ai := range kc.AuthInfos {
			delete(kc.AuthInfos, old)
			kc.AuthInfos[user] = ai
		}
		kc.Contexts[lc.Name].AuthInfo = user
		path := filepath.Join(dir, lc.Name+".yaml")
		if err := clientcmd.WriteToFile(*kc, path); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)

		cs, err := kubernetes.NewForConfig(lc.RESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		createNamespace(t, cs, ns)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "who", Namespace: ns}, Data: map[string]string{"cluster": lc.Name}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list := strings.Join(files, string(filepath.ListSeparator))

	// whoAmI connects with cfg and returns the marker of the cluster it
	// reached.
	whoAmI := func(t *testing.T, cfg ClusterConfig) string {
		t.Helper()
		m, release, err := Connect(t.Context(), cfg, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		spec := hub.NodeSpec{ID: hub.NewNodeID(cfg.ID, ns, "who", hub.KindConfigMap), Namespace: ns, Name: "who", Kind: hub.KindConfigMap}
		st, err := m.ReadState(t.Context(), spec, true)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Exists {
			t.Fatal("marker ConfigMap not found")
		}
		who, _, _ := unstructured.NestedString(LiveObject(st).Object, "data", "cluster")
		return who
	}
	env := envOf(map[string]string{"KUBECONFIG": list, "HOME": dir})
	for _, lc := range set.Clusters {
		if got := whoAmI(t, ClusterConfig{ID: "by-context", Context: lc.Name, Getenv: env}); got != lc.Name {
			t.Errorf("context %s reached cluster %s", lc.Name, got)
		}
	}
	if got := whoAmI(t, ClusterConfig{ID: "current", Getenv: env}); got != set.Clusters[0].Name {
		t.Errorf("no context: reached %s, want the first file's current context %s", got, set.Clusters[0].Name)
	}
	// The process environment, as the hub runs (Getenv nil).
	t.Setenv("KUBECONFIG", list)
	second := set.Clusters[1].Name
	if got := whoAmI(t, ClusterConfig{ID: "process-env", Context: second}); got != second {
		t.Errorf("$KUBECONFIG from the process: context %s reached %s", second, got)
	}
}

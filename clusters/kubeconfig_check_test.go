package clusters

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestKubeconfigChecker: each way a kubeconfig or a context cannot reach
// a cluster is a *KubeconfigError about the file or the context, found
// without contacting anything; a usable one resolves to its context,
// server and user.
func TestKubeconfigChecker(t *testing.T) {
	dir := t.TempDir()
	fleet := writeTestKubeconfig(t, filepath.Join(dir, "fleet.yaml"), "prod",
		kubeconfigEntry{"prod", "https://Prod.example:443/", "prod-token"},
		kubeconfigEntry{"dev", "https://dev.example:6443", "dev-token"})
	other := writeTestKubeconfig(t, filepath.Join(dir, "other.yaml"), "",
		kubeconfigEntry{"staging", "https://staging.example:6443", "staging-token"})
	noCurrent := writeTestKubeconfig(t, filepath.Join(dir, "no-current.yaml"), "",
		kubeconfigEntry{"a", "https://a.example:6443", "a-token"})
	dangling := writeTestKubeconfig(t, filepath.Join(dir, "dangling.yaml"), "gone",
		kubeconfigEntry{"a", "https://a.example:6443", "a-token"})
	broken := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(broken, []byte("apiVersion: v1\nkind: Config\nclusters: {not: a list}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	refs := filepath.Join(dir, "refs.yaml")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://c.example:6443"}
	kc.Clusters["no-server"] = &clientcmdapi.Cluster{}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	kc.Contexts["ghost-user"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "ghost"}
	kc.Contexts["ghost-cluster"] = &clientcmdapi.Context{Cluster: "ghost", AuthInfo: "u"}
	kc.Contexts["no-cluster"] = &clientcmdapi.Context{AuthInfo: "u"}
	kc.Contexts["no-server"] = &clientcmdapi.Context{Cluster: "no-server", AuthInfo: "u"}
	kc.Contexts["anonymous"] = &clientcmdapi.Context{Cluster: "c"}
	if err := clientcmd.WriteToFile(*kc, refs); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(dir, "folder")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.yaml")
	list := func(files ...string) string { return strings.Join(files, string(filepath.ListSeparator)) }

	tests := []struct {
		name       string
		env        map[string]string
		path, ctx  string
		wantPart   KubeconfigPart
		wantErr    string // substring; "" for success
		wantCtx    string
		wantServer string
	}{
		{name: "current context", path: fleet, wantCtx: "prod", wantServer: "https://prod.example"},
		{name: "named context", path: fleet, ctx: "dev", wantCtx: "dev", wantServer: "https://dev.example:6443"},
		{name: "a context without a user", path: refs, ctx: "anonymous", wantCtx: "anonymous", wantServer: "https://c.example:6443"},
		{name: "missing file", path: missing, wantPart: KubeconfigFile, wantErr: "kubeconfig " + missing + " does not exist"},
		{name: "a folder", path: folder, wantPart: KubeconfigFile, wantErr: "kubeconfig " + folder + " is a folder, not a file"},
		{name: "does not parse", path: broken, wantPart: KubeconfigFile, wantErr: broken},
		{name: "unknown context", path: fleet, ctx: "prod-eu", wantPart: KubeconfigContext,
			wantErr: `context "prod-eu" is not in kubeconfig ` + fleet + " (contexts: dev, prod)"},
		{name: "no context, no current-context", path: noCurrent, wantPart: KubeconfigContext,
			wantErr: "no context given and kubeconfig " + noCurrent + " sets no current-context (contexts: a)"},
		{name: "dangling current-context", path: dangling, wantPart: KubeconfigContext,
			wantErr: `the current-context "gone" of kubeconfig ` + dangling + " is not one of its contexts"},
		{name: "context names a missing user", path: refs, ctx: "ghost-user", wantPart: KubeconfigContext,
			wantErr: `context "ghost-user" of kubeconfig ` + refs + ` names user "ghost", which it does not define (users: u)`},
		{name: "context names a missing cluster", path: refs, ctx: "ghost-cluster", wantPart: KubeconfigContext,
			wantErr: `names cluster "ghost", which it does not define (clusters: c, no-server)`},
		{name: "context names no cluster", path: refs, ctx: "no-cluster", wantPart: KubeconfigContext,
			wantErr: `context "no-cluster" of kubeconfig ` + refs + " names no cluster"},
		{name: "cluster without a server", path: refs, ctx: "no-server", wantPart: KubeconfigContext,
			wantErr: `context "no-server" of kubeconfig ` + refs + ": "},
		{name: "KUBECONFIG merged: a context of the second file", env: map[string]string{"KUBECONFIG": list(fleet, other)},
			ctx: "staging", wantCtx: "staging", wantServer: "https://staging.example:6443"},
		{name: "KUBECONFIG merged: a context of no file", env: map[string]string{"KUBECONFIG": list(fleet, other)},
			ctx: "qa", wantPart: KubeconfigContext, wantErr: `context "qa" is not in kubeconfig $KUBECONFIG (` + fleet + ", " + other + ") (contexts: dev, prod, staging)"},
		{name: "KUBECONFIG lists a folder", env: map[string]string{"KUBECONFIG": list(fleet, folder)},
			ctx: "prod", wantPart: KubeconfigFile, wantErr: "kubeconfig $KUBECONFIG lists " + folder + ", a folder, not a file"},
		{name: "KUBECONFIG lists no file that exists", env: map[string]string{"KUBECONFIG": missing},
			ctx: "prod", wantPart: KubeconfigFile, wantErr: "none of the files in $KUBECONFIG exists"},
		{name: "no KUBECONFIG, no ~/.kube/config", env: map[string]string{"HOME": dir},
			ctx: "prod", wantPart: KubeconfigFile, wantErr: "$KUBECONFIG is not set and " + filepath.Join(dir, ".kube", "config") + " does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewKubeconfigChecker(envOf(tt.env)).Check(tt.path, tt.ctx)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got.Context != tt.wantCtx || got.Server != tt.wantServer {
					t.Errorf("got context %q, server %q; want %q, %q", got.Context, got.Server, tt.wantCtx, tt.wantServer)
				}
				return
			}
			var ke *KubeconfigError
			if !errors.As(err, &ke) {
				t.Fatalf("error %v (%T), want a *KubeconfigError", err, err)
			}
			if ke.Part != tt.wantPart || !strings.Contains(ke.Msg, tt.wantErr) {
				t.Errorf("error (part %d) %q, want part %d with %q", ke.Part, ke.Msg, tt.wantPart, tt.wantErr)
			}
		})
	}
}

// TestKubeconfigSameCluster: two contexts are the same cluster when they
// reach the same server with the same credentials, however the files
// (a symbolic link, $KUBECONFIG or a path), contexts and users are named.
func TestKubeconfigSameCluster(t *testing.T) {
	dir := t.TempDir()
	fleet := writeTestKubeconfig(t, filepath.Join(dir, "fleet.yaml"), "prod",
		kubeconfigEntry{"prod", "https://prod.example:6443", "prod-token"},
		kubeconfigEntry{"prod-admin", "https://prod.example:6443", "admin-token"},
		kubeconfigEntry{"dev", "https://dev.example:6443", "prod-token"})
	// The same cluster and user under other names, the server spelled
	// otherwise.
	copyOf := writeTestKubeconfig(t, filepath.Join(dir, "copy.yaml"), "",
		kubeconfigEntry{"my-prod", "https://PROD.example:6443/", "prod-token"})
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(fleet, link); err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["prod"] = &clientcmdapi.Cluster{Server: "https://prod.example:6443", TLSServerName: "other.example"}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "prod-token"}
	kc.Contexts["sni"] = &clientcmdapi.Context{Cluster: "prod", AuthInfo: "u"}
	sni := filepath.Join(dir, "sni.yaml")
	if err := clientcmd.WriteToFile(*kc, sni); err != nil {
		t.Fatal(err)
	}

	type ref struct {
		env       map[string]string
		path, ctx string
	}
	base := ref{path: fleet, ctx: "prod"}
	tests := []struct {
		name  string
		other ref
		same  bool
	}{
		{"the same file and context", base, true},
		{"the current context", ref{path: fleet}, true},
		{"a symbolic link to the file", ref{path: link, ctx: "prod"}, true},
		{"$KUBECONFIG naming the file", ref{env: map[string]string{"KUBECONFIG": fleet}, ctx: "prod"}, true},
		{"~/.kube/config being a link to it", ref{env: map[string]string{"HOME": dir}, ctx: "prod"}, true},
		{"another file, other names", ref{path: copyOf, ctx: "my-prod"}, true},
		{"another user", ref{path: fleet, ctx: "prod-admin"}, false},
		{"another server, the same token", ref{path: fleet, ctx: "dev"}, false},
		{"another TLS server name", ref{path: sni, ctx: "sni"}, false},
	}
	if err := os.MkdirAll(filepath.Join(dir, ".kube"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fleet, filepath.Join(dir, ".kube", "config")); err != nil {
		t.Fatal(err)
	}
	a, err := NewKubeconfigChecker(envOf(nil)).Check(base.path, base.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := NewKubeconfigChecker(envOf(tt.other.env)).Check(tt.other.path, tt.other.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.SameCluster(b); got != tt.same {
				t.Errorf("SameCluster = %v, want %v (%+v, %+v)", got, tt.same, a, b)
			}
			if (a.Key() == b.Key()) != tt.same {
				t.Errorf("Key equal = %v, want %v", a.Key() == b.Key(), tt.same)
			}
		})
	}
}

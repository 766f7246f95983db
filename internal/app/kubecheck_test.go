package app

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/driftwatch/driftwatch/clusters"
)

// TestKubeconfigEnv: --kubeconfig of serve and the TUI replaces
// $KUBECONFIG for the clusters that name no kubeconfig (as kubectl's
// does), made absolute; a missing file or a folder is a usage error.
func TestKubeconfigEnv(t *testing.T) {
	dir := t.TempDir()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://flag.example:6443"}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	kc.Contexts["from-flag"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	flagFile := filepath.Join(dir, "flag.yaml")
	if err := clientcmd.WriteToFile(*kc, flagFile); err != nil {
		t.Fatal(err)
	}
	base := func(k string) string {
		return map[string]string{"KUBECONFIG": filepath.Join(dir, "env.yaml"), "HOME": dir}[k]
	}
	t.Chdir(dir)
	getenv, err := KubeconfigEnv(base, "flag.yaml", "serve")
	if err != nil {
		t.Fatal(err)
	}
	if got := getenv("KUBECONFIG"); got != flagFile {
		t.Errorf("$KUBECONFIG = %q, want %q", got, flagFile)
	}
	if got := getenv("HOME"); got != dir {
		t.Errorf("$HOME = %q, want %q", got, dir)
	}
	target, err := clusters.NewKubeconfigChecker(getenv).Check("", "from-flag")
	if err != nil || target.Server != "https://flag.example:6443" {
		t.Errorf("a context of the --kubeconfig file: %+v, %v", target, err)
	}
	if same, _ := KubeconfigEnv(base, "", "serve"); same("KUBECONFIG") != base("KUBECONFIG") {
		t.Error("no --kubeconfig changed $KUBECONFIG")
	}
	for _, tt := range []struct{ path, want string }{
		{"missing.yaml", "serve: --kubeconfig missing.yaml does not exist"},
		{dir, "serve: --kubeconfig " + dir + " is a folder, not a file"},
	} {
		_, err := KubeconfigEnv(base, tt.path, "serve")
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != 2 || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("--kubeconfig %s: %v, want exit 2 with %q", tt.path, err, tt.want)
		}
	}
}

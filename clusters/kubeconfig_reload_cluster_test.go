package clusters

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// TestRotatedKubeconfigPickedUp: a cluster whose kubeconfig's token the
// apiserver refuses is unauthorized; once the file holds a token it
// accepts (rotated in place, as a mounted Secret or a credentials helper
// does), the manager connects with it and the cluster is synced again, no
// reload needed. A file that says nothing new leaves the manager as it is.
func TestRotatedKubeconfigPickedUp(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	kc, err := clientcmd.LoadFromFile(lc.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var good string
	for _, u := range kc.AuthInfos {
		good, u.Token = u.Token, "revoked-"+strings.Repeat("x", 40)
	}
	if good == "" {
		t.Fatal("the local cluster's kubeconfig has no token")
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	sink := newRecordingSink()
	runRegistry(t, sink, ClusterConfig{ID: lc.Name, Kubeconfig: path, Namespaces: []string{"default"}})
	sink.waitFor(t, 30*time.Second, "unauthorized with the refused token", func() bool {
		return sink.state(lc.Name) == hub.ClusterUnauthorized
	})
	// Rewritten with the same refused token (another order of keys,
	// another mtime): nothing new to connect with.
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * fastHealth.Interval)
	sink.mu.Lock()
	got := sink.state(lc.Name)
	sink.mu.Unlock()
	if got != hub.ClusterUnauthorized {
		t.Fatalf("after an unchanged rewrite: %s", got)
	}
	for _, u := range kc.AuthInfos {
		u.Token = good
	}
	tmp := path + ".new"
	if err := clientcmd.WriteToFile(*kc, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	sink.waitFor(t, 30*time.Second, "synced with the rotated token", func() bool {
		return sink.state(lc.Name) == hub.ClusterSynced
	})
}

// TestCredentialsFingerprint: the fingerprint of one kubeconfig loaded
// twice is the same (an exec plugin's too), and it changes with the
// server, a token, certificate data or the exec plugin's arguments.
func TestCredentialsFingerprint(t *testing.T) {
	base := func() *rest.Config {
		return &rest.Config{Host: "https://10.0.0.1:6443", BearerToken: "t",
			TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")},
			ExecProvider: &clientcmdapi.ExecConfig{Command: "aws", Args: []string{"eks", "get-token"}, APIVersion: "client.authentication.k8s.io/v1",
				Env: []clientcmdapi.ExecEnvVar{{Name: "AWS_PROFILE", Value: "prod"}}, Config: &runtime.Unknown{}}}
	}
	a, b := base(), base()
	if credentials(a) != credentials(b) {
		t.Fatal("the same kubeconfig loaded twice fingerprints differently")
	}
	for name, change := range map[string]func(*rest.Config){
		"server":      func(c *rest.Config) { c.Host = "https://10.0.0.2:6443" },
		"token":       func(c *rest.Config) { c.BearerToken = "u" },
		"certificate": func(c *rest.Config) { c.TLSClientConfig.CertData = []byte("cert") },
		"exec args":   func(c *rest.Config) { c.ExecProvider.Args = []string{"eks", "get-token", "--cluster", "x"} },
		"exec env":    func(c *rest.Config) { c.ExecProvider.Env[0].Value = "staging" },
	} {
		c := base()
		change(c)
		if credentials(c) == credentials(a) {
			t.Errorf("%s changed, the fingerprint did not", name)
		}
	}
}

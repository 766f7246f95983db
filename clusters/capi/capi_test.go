package capi

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/conc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// CRDDir returns the cluster-api module's CRD folder (from the module cache).
func CRDDir(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/cluster-api").Output()
	if err != nil {
		t.Fatalf("locate the cluster-api module: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "core", "config", "crd", "bases")
}

type recorder struct {
	mu   sync.Mutex
	ups  []Discovered
	gone []string
}

func (r *recorder) ClusterUp(d Discovered) {
	r.mu.Lock()
	r.ups = append(r.ups, d)
	r.mu.Unlock()
}

func (r *recorder) ClusterGone(id string) {
	r.mu.Lock()
	r.gone = append(r.gone, id)
	r.mu.Unlock()
}

// wait polls until cond, called with mu held, holds, for up to 20s.
func (r *recorder) wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, 20*time.Second, what, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		return testwait.Check(cond(), "ups %d gone %v", len(r.ups), r.gone)
	})
}

// Cluster API helpers shared with the end-to-end tests' style.
func createCluster(t *testing.T, dyn dynamic.Interface, ns, name string, initialized bool) {
	t.Helper()
	gvr := clusterv1.GroupVersion.WithResource("clusters")
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": clusterv1.GroupVersion.String(), "kind": "Cluster",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"tier": "gold"}},
		"spec":     map[string]any{"clusterNetwork": map[string]any{"serviceDomain": "cluster.local"}},
	}}
	created, err := dyn.Resource(gvr).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if initialized {
		_ = unstructured.SetNestedField(created.Object, true, "status", "initialization", "controlPlaneInitialized")
		_ = unstructured.SetNestedField(created.Object, "Provisioned", "status", "phase")
		if _, err := dyn.Resource(gvr).Namespace(ns).UpdateStatus(t.Context(), created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func putSecret(t *testing.T, c kubernetes.Interface, ns, cluster string, kubeconfig []byte) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: cluster + "-kubeconfig", Namespace: ns, Labels: map[string]string{"cluster.x-k8s.io/cluster-name": cluster}},
		Type:       "cluster.x-k8s.io/secret",
		Data:       map[string][]byte{"value": kubeconfig},
	}
	_, err := c.CoreV1().Secrets(ns).Create(t.Context(), s, metav1.CreateOptions{})
	if err != nil {
		if _, err = c.CoreV1().Secrets(ns).Update(t.Context(), s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDiscovery: on a management cluster with the Cluster API CRDs from the
// module, a provisioned Cluster with its kubeconfig secret is reported up,
// one without a secret is reported with a clear error, an unprovisioned one
// is not reported, a changed secret is reported again (rotation) and a
// deleted Cluster is reported gone.
func TestDiscovery(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 2, Names: []string{"mgmt", "work"}})
	mgmt, work := set.Clusters[0], set.Clusters[1]
	ctx := t.Context()
	if err := InstallCRDs(ctx, mgmt.RESTConfig(), CRDDir(t)); err != nil {
		t.Fatal(err)
	}
	rc := rest.CopyConfig(mgmt.RESTConfig())
	dyn := dynamic.NewForConfigOrDie(rc)
	kc := kubernetes.NewForConfigOrDie(rc)
	for _, ns := range []string{"fleet"} {
		if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rec := &recorder{}
	d, err := New(Source{Name: "mgmt", Kubeconfig: mgmt.Kubeconfig, Namespaces: []string{"fleet"}, Labels: map[string]string{"env": "prod"}}, rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	var runErr error
	wg.Go(func() { runErr = d.Run(runCtx) })
	defer func() {
		cancel()
		wg.Wait()
		if runErr != nil {
			t.Errorf("Run: %v", runErr)
		}
	}()

	kubeconfig, err := os.ReadFile(work.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	putSecret(t, kc, "fleet", "alpha", kubeconfig)
	createCluster(t, dyn, "fleet", "alpha", true)
	createCluster(t, dyn, "fleet", "pending", false)
	createCluster(t, dyn, "fleet", "nosecret", true)
	rec.wait(t, "alpha up and nosecret error", func() bool {
		var alpha, nosecret bool
		for _, u := range rec.ups {
			alpha = alpha || (u.ID == "fleet-alpha" && u.Err == nil && len(u.Kubeconfig) > 0)
			nosecret = nosecret || (u.ID == "fleet-nosecret" && u.Err != nil)
		}
		return alpha && nosecret
	})
	rec.mu.Lock()
	for _, u := range rec.ups {
		switch u.ID {
		case "fleet-alpha":
			if u.Source != "capi:mgmt/fleet" || u.Labels["env"] != "prod" || u.Labels["tier"] != "gold" || u.Phase != "Provisioned" {
				t.Errorf("alpha = %+v", u)
			}
		case "fleet-nosecret":
			if !strings.Contains(u.Err.Error(), "fleet/nosecret-kubeconfig not found") {
				t.Errorf("nosecret error = %v", u.Err)
			}
		case "fleet-pending":
			t.Errorf("an unprovisioned cluster was reported: %+v", u)
		}
	}
	n := len(rec.ups)
	rec.mu.Unlock()

	// Rotation: a new secret content is reported again.
	rotated := append([]byte(nil), kubeconfig...)
	rotated = append(rotated, []byte("\n# rotated\n")...)
	putSecret(t, kc, "fleet", "alpha", rotated)
	rec.wait(t, "alpha reported again", func() bool {
		for _, u := range rec.ups[n:] {
			if u.ID == "fleet-alpha" && strings.Contains(string(u.Kubeconfig), "# rotated") {
				return true
			}
		}
		return false
	})
	// An invalid secret becomes a clear error.
	putSecret(t, kc, "fleet", "nosecret", []byte("not: [a kubeconfig"))
	rec.wait(t, "invalid kubeconfig error", func() bool {
		for _, u := range rec.ups {
			if u.ID == "fleet-nosecret" && u.Err != nil && strings.Contains(u.Err.Error(), "invalid kubeconfig") {
				return true
			}
		}
		return false
	})
	// Deletion.
	if err := dyn.Resource(clusterv1.GroupVersion.WithResource("clusters")).Namespace("fleet").Delete(ctx, "alpha", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "alpha gone", func() bool {
		for _, id := range rec.gone {
			if id == "fleet-alpha" {
				return true
			}
		}
		return false
	})
	if got := d.Known(); len(got) != 1 || got[0] != "fleet-nosecret" {
		t.Fatalf("Known = %v", got)
	}
}

// TestSecretsCache: the secrets informers cache only Cluster API secrets
// (type cluster.x-k8s.io/secret), and of those only the "value" key of
// <name>-kubeconfig secrets: the CA and etcd keys of a cluster, a secret's
// other keys and its annotations (kubectl's last-applied copy of the whole
// secret) never enter memory. Secrets of another type are not cached at all.
func TestSecretsCache(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 2, Names: []string{"mgmt", "work"}})
	mgmt, work := set.Clusters[0], set.Clusters[1]
	ctx := t.Context()
	if err := InstallCRDs(ctx, mgmt.RESTConfig(), CRDDir(t)); err != nil {
		t.Fatal(err)
	}
	kc := kubernetes.NewForConfigOrDie(mgmt.RESTConfig())
	dyn := dynamic.NewForConfigOrDie(mgmt.RESTConfig())
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := os.ReadFile(work.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	label := map[string]string{"cluster.x-k8s.io/cluster-name": "alpha"}
	secrets := []*corev1.Secret{
		// Cluster API's other secrets: cached without data.
		{ObjectMeta: metav1.ObjectMeta{Name: "alpha-ca", Labels: label}, Type: secretType,
			Data: map[string][]byte{"tls.crt": []byte("cert"), "tls.key": []byte("CA PRIVATE KEY")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "alpha-etcd", Labels: label}, Type: secretType,
			Data: map[string][]byte{"tls.key": []byte("ETCD PRIVATE KEY")}},
		// Another type (the field selector) or without the label: not cached.
		{ObjectMeta: metav1.ObjectMeta{Name: "beta-kubeconfig", Labels: map[string]string{"cluster.x-k8s.io/cluster-name": "beta"}},
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"value": []byte("OPAQUE")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "gamma-kubeconfig"}, Type: secretType, Data: map[string][]byte{"value": []byte("UNLABELLED")}},
		// The kubeconfig: only its value is cached.
		{ObjectMeta: metav1.ObjectMeta{Name: "alpha-kubeconfig", Labels: label,
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"value":"LAST APPLIED"}}`}},
			Type: secretType, Data: map[string][]byte{"value": kubeconfig, "extra": []byte("EXTRA")}},
	}
	for _, s := range secrets {
		if _, err := kc.CoreV1().Secrets("fleet").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createCluster(t, dyn, "fleet", "alpha", true)

	rec := &recorder{}
	d, err := New(Source{Name: "mgmt", Kubeconfig: mgmt.Kubeconfig, Namespaces: []string{"fleet"}}, rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	storesCh := make(chan []cache.Store, 1)
	d.secretsSynced = func(s []cache.Store) { storesCh <- s }
	runCtx, cancel := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	wg.Go(func() { _ = d.Run(runCtx) })
	defer func() { cancel(); wg.Wait() }()
	var stores []cache.Store
	select {
	case stores = <-storesCh:
	case <-time.After(30 * time.Second):
		t.Fatal("the secrets informers did not sync")
	}
	rec.wait(t, "alpha up", func() bool {
		for _, u := range rec.ups {
			if u.ID == "fleet-alpha" && u.Err == nil && string(u.Kubeconfig) == string(kubeconfig) {
				return true
			}
		}
		return false
	})
	got := map[string]*corev1.Secret{}
	for _, st := range stores {
		for _, o := range st.List() {
			s := o.(*corev1.Secret)
			got[s.Name] = s
		}
	}
	want := map[string][]string{"alpha-ca": nil, "alpha-etcd": nil, "alpha-kubeconfig": {"value"}}
	if len(got) != len(want) {
		names := make([]string, 0, len(got))
		for n := range got {
			names = append(names, n)
		}
		t.Fatalf("cached secrets %v, want alpha-ca, alpha-etcd, alpha-kubeconfig", names)
	}
	for name, keys := range want {
		s, ok := got[name]
		if !ok {
			t.Fatalf("secret %s not cached", name)
		}
		var have []string
		for k := range s.Data {
			have = append(have, k)
		}
		if !reflect.DeepEqual(have, keys) || len(s.StringData) > 0 || len(s.Annotations) > 0 || len(s.ManagedFields) > 0 {
			t.Errorf("cached %s: data keys %v, annotations %v, managedFields %d; want keys %v and nothing else", name, have, s.Annotations, len(s.ManagedFields), keys)
		}
	}
	if v := string(got["alpha-kubeconfig"].Data["value"]); v != string(kubeconfig) {
		t.Errorf("cached kubeconfig value = %q", v)
	}
}

// TestUnsafeKubeconfigSecret: a kubeconfig secret with an exec plugin is
// reported as the cluster's error, naming the secret, the command and the
// source; the source's execAllowlist lets it through.
func TestUnsafeKubeconfigSecret(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1, Names: []string{"mgmt"}})
	mgmt := set.Clusters[0]
	ctx := t.Context()
	if err := InstallCRDs(ctx, mgmt.RESTConfig(), CRDDir(t)); err != nil {
		t.Fatal(err)
	}
	kc := kubernetes.NewForConfigOrDie(mgmt.RESTConfig())
	dyn := dynamic.NewForConfigOrDie(mgmt.RESTConfig())
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	execKubeconfig := []byte(`apiVersion: v1
kind: Config
clusters: [{name: w, cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: Y2E=}}]
users: [{name: w, user: {exec: {command: /bin/sh, args: [-c, "true"], apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never}}}]
contexts: [{name: w, context: {cluster: w, user: w}}]
current-context: w
`)
	putSecret(t, kc, "fleet", "c2", execKubeconfig)
	createCluster(t, dyn, "fleet", "c2", true)
	tests := []struct {
		name    string
		policy  clusters.KubeconfigPolicy
		wantErr string
	}{
		{"denied by default", clusters.KubeconfigPolicy{},
			`cluster "fleet-c2": kubeconfig secret fleet/c2-kubeconfig: exec plugin "/bin/sh" is not allowed (clusterAPI source "mgmt" has no execAllowlist)`},
		{"allowlisted", clusters.KubeconfigPolicy{ExecAllowlist: []clientcmdapi.AllowlistEntry{{Command: "/bin/sh"}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			d, err := New(Source{Name: "mgmt", Kubeconfig: mgmt.Kubeconfig, Namespaces: []string{"fleet"}, KubeconfigPolicy: tt.policy}, rec, nil)
			if err != nil {
				t.Fatal(err)
			}
			runCtx, cancel := context.WithCancel(context.Background())
			var wg conc.WaitGroup
			wg.Go(func() { _ = d.Run(runCtx) })
			defer func() { cancel(); wg.Wait() }()
			rec.wait(t, "c2 reported", func() bool { return len(rec.ups) > 0 })
			rec.mu.Lock()
			u := rec.ups[0]
			rec.mu.Unlock()
			switch {
			case tt.wantErr == "" && (u.Err != nil || len(u.Kubeconfig) == 0):
				t.Fatalf("allowlisted exec plugin: %+v", u)
			case tt.wantErr != "" && (u.Err == nil || u.Err.Error() != tt.wantErr || len(u.Kubeconfig) != 0):
				t.Fatalf("error = %v, want %s", u.Err, tt.wantErr)
			}
		})
	}
}

func TestIDTemplate(t *testing.T) {
	d, err := New(Source{Name: "m", IDTemplate: "capi-{{.Name}}"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := d.ID("ns", "Web"); id != "capi-web" {
		t.Fatalf("id = %q", id)
	}
	if _, err := New(Source{Name: "m", IDTemplate: "{{.Nope"}, nil, nil); err == nil {
		t.Fatal("want a template error")
	}
	if _, err := New(Source{Name: "m", Selector: "a in (("}, nil, nil); err == nil {
		t.Fatal("want a selector error")
	}
}

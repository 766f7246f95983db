package localcluster_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// readyz asks the apiserver's /readyz through cs.
func readyz(t *testing.T, cs kubernetes.Interface) error {
	t.Helper()
	_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(t.Context())
	return err
}

func TestAPIServerRestart(t *testing.T) {
	t.Parallel()
	set := lctest.Start(t, localcluster.Options{Names: []string{"restart"}})
	c := set.Clusters[0]
	ctx := t.Context()
	cs := newClientset(t, c)
	ns := createNamespace(t, cs)
	want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before-outage"}, Data: map[string]string{"k": "v"}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, want, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	server := c.Server

	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if err := readyz(t, cs); err == nil {
		t.Fatal("/readyz answered while the apiserver was stopped")
	}
	if err := c.StopAPIServer(); err != nil {
		t.Fatalf("second StopAPIServer: %v", err)
	}

	if err := c.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Server != server {
		t.Fatalf("Server changed from %s to %s", server, c.Server)
	}
	if err := readyz(t, cs); err != nil {
		t.Fatalf("/readyz after restart: %v", err)
	}
	got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("object created before the outage: %v", err)
	}
	if got.Data["k"] != "v" {
		t.Fatalf("data after restart = %v", got.Data)
	}
}

func TestRotateAdminToken(t *testing.T) {
	t.Parallel()
	set := lctest.Start(t, localcluster.Options{Names: []string{"rotate"}, Users: []string{"alice"}})
	c := set.Clusters[0]
	ctx := t.Context()
	oldCS := newClientset(t, c)
	if _, err := oldCS.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("admin before rotation: %v", err)
	}
	oldKubeconfig, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	alice := kubeconfigClientset(t, c.UserKubeconfig("alice"))
	if _, err := alice.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("alice lists ConfigMaps: err = %v, want Forbidden (authenticated, no RBAC grants)", err)
	}
	if got := c.UserKubeconfig("nobody"); got != "" {
		t.Fatalf("UserKubeconfig(nobody) = %q, want empty", got)
	}

	path, err := c.RotateAdminToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if path != c.Kubeconfig {
		t.Fatalf("RotateAdminToken returned %q, want %q", path, c.Kubeconfig)
	}
	newKubeconfig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(newKubeconfig) == string(oldKubeconfig) {
		t.Fatal("kubeconfig content did not change")
	}

	if _, err := oldCS.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Fatalf("old token after rotation: err = %v, want 401 Unauthorized", err)
	}
	if _, err := kubeconfigClientset(t, path).CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("new kubeconfig: %v", err)
	}
	if _, err := newClientset(t, c).CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("RESTConfig after rotation: %v", err)
	}
	if _, err := alice.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("alice after rotation: err = %v, want Forbidden", err)
	}
}

func kubeconfigClientset(t *testing.T, path string) kubernetes.Interface {
	t.Helper()
	if path == "" {
		t.Fatal("empty kubeconfig path")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestCompact compacts and defragments a cluster's etcd between writes: the
// old versions of an object are gone from etcd, the object and a watch
// started before the compaction carry on.
func TestCompact(t *testing.T) {
	t.Parallel()
	set := lctest.Start(t, localcluster.Options{Names: []string{"compact"}})
	c := set.Clusters[0]
	ctx := t.Context()
	cs := newClientset(t, c)
	ns := createNamespace(t, cs)
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "history"}, Data: map[string]string{"n": "0"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := strconv.ParseInt(cm.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		cm.Data["n"] = strconv.Itoa(i)
		if cm, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	key := "/registry/configmaps/" + ns + "/history"
	if ok, err := localcluster.EtcdRevisionReadable(c, key, first); err != nil || !ok {
		t.Fatalf("before Compact: revision %d of %s readable = %v, %v; want true", first, key, ok, err)
	}
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	if err := c.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := localcluster.EtcdRevisionReadable(c, key, first); err != nil || ok {
		t.Fatalf("after Compact: revision %d of %s readable = %v, %v; want compacted", first, key, ok, err)
	}
	got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "history", metav1.GetOptions{})
	if err != nil || got.Data["n"] != "5" {
		t.Fatalf("the object after Compact: %v, %v; want n=5", got.Data, err)
	}
	cm.Data["n"] = "6"
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("a write after Compact: %v", err)
	}
	select {
	case ev := <-w.ResultChan():
		if o, ok := ev.Object.(*corev1.ConfigMap); !ok || o.Data["n"] != "6" {
			t.Fatalf("the watch started before Compact got %s %T, want the write after it", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the watch started before Compact saw no event of the write after it")
	}
}

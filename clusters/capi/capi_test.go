package capi

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/driftwatch/driftwatch/clusters/localcluster"
	"github.com/driftwatch/driftwatch/clusters/localcluster/lctest"
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
	mu     sync.Mutex
	ups    []Discovered
	gone   []string
	notify chan struct{}
}

func (r *recorder) ClusterUp(d Discovered) {
	r.mu.Lock()
	r.ups = append(r.ups, d)
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

func (r *recorder) ClusterGone(id string) {
	r.mu.Lock()
	r.gone = append(r.gone, id)
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

func (r *recorder) wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		r.mu.Lock()
		ok := cond()
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.notify:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for %s; ups %d gone %v", what, len(r.ups), r.gone)
		}
	}
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
	rec := &recorder{notify: make(chan struct{}, 1)}
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

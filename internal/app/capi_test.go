package app

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/driftwatch/driftwatch/clusters/capi"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

func capiCRDDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/cluster-api").Output()
	if err != nil {
		t.Fatalf("locate the cluster-api module: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "core", "config", "crd", "bases")
}

// TestClusterAPIDiscovery: one management cluster with the Cluster API CRDs
// and two workload clusters. Creating a Cluster plus its kubeconfig secret
// makes driftwatch manage it (applications selected by label are applied and
// an external delete is repaired); rotating the token keeps it managed;
// deleting the Cluster removes it and every goroutine it had.
func TestClusterAPIDiscovery(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 3, Names: []string{"mgmt", "w1", "w2"}})
	mgmt, w1, w2 := set.Clusters[0], set.Clusters[1], set.Clusters[2]
	ctx := t.Context()
	mk := managementCluster(t, mgmt)
	dyn := dynamic.NewForConfigOrDie(mgmt.RESTConfig())
	cfgText := fmt.Sprintf(`hub:
  id: capi-e2e
clusterAPI:
  - name: mgmt
    kubeconfig: %s
    namespaces: [fleet]
    labels: {source: capi}
applications:
  - id: edge
    namespace: edge
    selector: source=capi
    image: registry.example/edge:1
    port: 8080
`, mgmt.Kubeconfig)
	path := filepath.Join(t.TempDir(), "capi.yaml")
	if err := os.WriteFile(path, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startApp(t, path, nil)
	// The baseline is taken once the management cluster's discovery runs:
	// right after its CRDs are established the apiserver may not serve the
	// group yet, and a discovery retrying after its backoff starts its
	// informers after a baseline taken too early (they would count as the
	// deleted clusters' leftovers).
	testwait.For(t, 60*time.Second, "the management cluster's discovery to run", func() error {
		return testwait.Check(discoveryRunning(), "no Cluster API discovery worker yet")
	})
	// And once each of its informers has its watch open: a reflector
	// between its list and its watch has one goroutine fewer (the watch
	// stream's reader) than it has for the rest of the test.
	testwait.For(t, 60*time.Second, "the management cluster's informers to watch", func() error {
		reflectors, watching, readers := watchState()
		return testwait.Check(reflectors > 0 && watching == reflectors && readers == reflectors,
			"%d reflectors, %d watching, %d watch readers", reflectors, watching, readers)
	})
	steadyGoroutines()
	baseline := len(clusterStacks())
	reflectors, _, _ := watchState()
	t.Logf("baseline: %d informer and watch goroutines, %d reflectors watching", baseline, reflectors)

	addCluster := func(name string, lc *localcluster.Cluster) {
		t.Helper()
		kc, err := os.ReadFile(lc.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		putCAPISecret(t, mk, "fleet", name, kc)
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": clusterv1.GroupVersion.String(), "kind": "Cluster",
			"metadata": map[string]any{"name": name, "namespace": "fleet"},
			"spec":     map[string]any{"clusterNetwork": map[string]any{"serviceDomain": "cluster.local"}},
		}}
		gvr := clusterv1.GroupVersion.WithResource("clusters")
		created, err := dyn.Resource(gvr).Namespace("fleet").Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(created.Object, true, "status", "initialization", "controlPlaneInitialized")
		_ = unstructured.SetNestedField(created.Object, "Provisioned", "status", "phase")
		if _, err := dyn.Resource(gvr).Namespace("fleet").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	addCluster("alpha", w1)
	addCluster("beta", w2)
	alphaDep := hub.NewNodeID("fleet-alpha", "edge", "edge", hub.KindDeployment)
	betaDep := hub.NewNodeID("fleet-beta", "edge", "edge", hub.KindDeployment)
	a.waitSnap(t, 60*time.Second, "discovered clusters managed", func(s *hub.Snapshot) bool {
		for _, id := range []hub.NodeID{alphaDep, betaDep} {
			if n, ok := s.Node(id); !ok || n.Status != hub.StatusInSync {
				return false
			}
		}
		cs, ok := s.Cluster("fleet-alpha")
		return ok && cs.Source == "capi:mgmt/fleet" && cs.Phase == "Provisioned"
	})
	var tt testTransports
	w1c := tt.client(w1)
	t0 := time.Now()
	if err := w1c.AppsV1().Deployments("edge").Delete(ctx, "edge", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	a.waitSnap(t, 20*time.Second, "delete on a discovered cluster repaired", repairedAfter(alphaDep, t0))

	// Rotation: the workload apiserver gets a new token; the secret follows.
	newKubeconfig, err := w1.RotateAdminToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := os.ReadFile(newKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := a.hub.Snapshot().Cluster("fleet-alpha")
	putCAPISecret(t, mk, "fleet", "alpha", kc)
	w1c = tt.client(w1)
	a.waitSnap(t, 60*time.Second, "alpha synced with the new token", func(s *hub.Snapshot) bool {
		cs, ok := s.Cluster("fleet-alpha")
		return ok && cs.State == hub.ClusterSynced && cs.Generation > before.Generation
	})
	t0 = time.Now()
	if err := w1c.CoreV1().Services("edge").Delete(ctx, "edge", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	a.waitSnap(t, 30*time.Second, "repair after rotation", repairedAfter(hub.NewNodeID("fleet-alpha", "edge", "edge", hub.KindService), t0))

	// Deleting the Clusters removes them from the hub, with their goroutines.
	for _, name := range []string{"alpha", "beta"} {
		if err := dyn.Resource(clusterv1.GroupVersion.WithResource("clusters")).Namespace("fleet").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	a.waitSnap(t, 30*time.Second, "clusters removed", func(s *hub.Snapshot) bool {
		return len(s.Nodes) == 0 && len(s.Clusters) == 0
	})
	if ids := a.reg.IDs(); len(ids) != 0 {
		t.Fatalf("registry still holds %v", ids)
	}
	// The goroutines of informers and watch managers are back to what the
	// app had before the clusters came (the management cluster's discovery
	// keeps its own).
	tt.closeAll()
	testwait.For(t, 15*time.Second, "the informer/manager goroutines of the deleted clusters to end", func() error {
		stacks := clusterStacks()
		return testwait.Check(len(stacks) <= baseline, "%d goroutines, %d before the clusters were added:\n%s",
			len(stacks), baseline, strings.Join(stacks, "\n\n"))
	})
}

// TestClusterAPIUnsafeKubeconfig: of two discovered clusters, one's
// kubeconfig secret carries an exec plugin (/bin/sh creating a marker file).
// It is refused: the cluster shows in the snapshot as unreachable with an
// error naming the secret and the reason, and the command never runs. The
// other cluster is managed and repaired all along. Fixing the secret makes
// the refused cluster managed too.
func TestClusterAPIUnsafeKubeconfig(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 3, Names: []string{"mgmt", "w1", "w2"}})
	mgmt, w1, w2 := set.Clusters[0], set.Clusters[1], set.Clusters[2]
	ctx := t.Context()
	mk := managementCluster(t, mgmt)
	dyn := dynamic.NewForConfigOrDie(mgmt.RESTConfig())
	cfgText := fmt.Sprintf(`hub:
  id: capi-unsafe
clusterAPI:
  - name: mgmt
    kubeconfig: %s
    namespaces: [fleet]
    labels: {source: capi}
applications:
  - id: edge
    namespace: edge
    selector: source=capi
    image: registry.example/edge:1
`, mgmt.Kubeconfig)
	path := filepath.Join(t.TempDir(), "capi.yaml")
	if err := os.WriteFile(path, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startApp(t, path, nil)

	readKubeconfig := func(lc *localcluster.Cluster) []byte {
		t.Helper()
		kc, err := os.ReadFile(lc.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		return kc
	}
	// w2's kubeconfig with an exec plugin instead of its token.
	marker := filepath.Join(t.TempDir(), "exec-plugin-ran")
	evil, err := clientcmd.Load(readKubeconfig(w2))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range evil.AuthInfos {
		*u = clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
			Command: "/bin/sh", Args: []string{"-c", "touch " + marker},
			APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		}}
	}
	evilData, err := clientcmd.Write(*evil)
	if err != nil {
		t.Fatal(err)
	}
	putCAPISecret(t, mk, "fleet", "good", readKubeconfig(w1))
	putCAPISecret(t, mk, "fleet", "evil", evilData)
	for _, name := range []string{"good", "evil"} {
		createProvisionedCluster(t, dyn, "fleet", name)
	}

	goodDep := hub.NewNodeID("fleet-good", "edge", "edge", hub.KindDeployment)
	evilDep := hub.NewNodeID("fleet-evil", "edge", "edge", hub.KindDeployment)
	const wantErr = `kubeconfig secret fleet/evil-kubeconfig: exec plugin "/bin/sh" is not allowed (clusterAPI source "mgmt" has no execAllowlist)`
	a.waitSnap(t, 60*time.Second, "good managed, evil refused with a clear error", func(s *hub.Snapshot) bool {
		n, ok := s.Node(goodDep)
		if !ok || n.Status != hub.StatusInSync {
			return false
		}
		cs, ok := s.Cluster("fleet-evil")
		return ok && cs.State == hub.ClusterUnreachable && strings.Contains(cs.LastError, wantErr) && cs.Source == "capi:mgmt/fleet"
	})
	if _, ok := a.reg.Config("fleet-evil"); ok {
		t.Fatal("the refused cluster was registered")
	}
	if _, ok := a.hub.Snapshot().Node(evilDep); ok {
		t.Fatal("the refused cluster has desired state")
	}
	var tt testTransports
	defer tt.closeAll()
	t0 := time.Now()
	if err := tt.client(w1).AppsV1().Deployments("edge").Delete(ctx, "edge", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	a.waitSnap(t, 20*time.Second, "delete on the good cluster repaired", repairedAfter(goodDep, t0))
	if cs, _ := a.hub.Snapshot().Cluster("fleet-evil"); !strings.Contains(cs.LastError, wantErr) {
		t.Fatalf("fleet-evil = %+v, want the refusal still shown", cs)
	}

	// Fixed secret: the cluster is managed.
	putCAPISecret(t, mk, "fleet", "evil", readKubeconfig(w2))
	a.waitSnap(t, 60*time.Second, "the fixed cluster managed", func(s *hub.Snapshot) bool {
		n, ok := s.Node(evilDep)
		cs, _ := s.Cluster("fleet-evil")
		return ok && n.Status == hub.StatusInSync && cs.State == hub.ClusterSynced
	})
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the exec plugin of a refused kubeconfig ran (marker stat: %v)", err)
	}
}

// managementCluster makes mgmt a Cluster API management cluster: the Cluster
// API CRDs installed and the namespace fleet created. It returns a client.
func managementCluster(t *testing.T, mgmt *localcluster.Cluster) kubernetes.Interface {
	t.Helper()
	if err := capi.InstallCRDs(t.Context(), mgmt.RESTConfig(), capiCRDDir(t)); err != nil {
		t.Fatal(err)
	}
	mk := kubernetes.NewForConfigOrDie(mgmt.RESTConfig())
	if _, err := mk.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return mk
}

// createProvisionedCluster creates a Cluster object with its control plane
// initialized.
func createProvisionedCluster(t *testing.T, dyn dynamic.Interface, ns, name string) {
	t.Helper()
	gvr := clusterv1.GroupVersion.WithResource("clusters")
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": clusterv1.GroupVersion.String(), "kind": "Cluster",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"clusterNetwork": map[string]any{"serviceDomain": "cluster.local"}},
	}}
	created, err := dyn.Resource(gvr).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(created.Object, true, "status", "initialization", "controlPlaneInitialized")
	_ = unstructured.SetNestedField(created.Object, "Provisioned", "status", "phase")
	if _, err := dyn.Resource(gvr).Namespace(ns).UpdateStatus(t.Context(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func putCAPISecret(t *testing.T, c kubernetes.Interface, ns, cluster string, kubeconfig []byte) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: cluster + "-kubeconfig", Namespace: ns, Labels: map[string]string{"cluster.x-k8s.io/cluster-name": cluster}},
		Type:       "cluster.x-k8s.io/secret",
		Data:       map[string][]byte{"value": kubeconfig},
	}
	if _, err := c.CoreV1().Secrets(ns).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
		if _, err := c.CoreV1().Secrets(ns).Update(t.Context(), s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// steadyGoroutines waits until the goroutine count holds still for half a
// second (the app's own goroutines have started) and returns it.
func steadyGoroutines() int {
	n := runtime.NumGoroutine()
	stable := 0
	for i := 0; i < 100 && stable < 5; i++ {
		time.Sleep(100 * time.Millisecond)
		if m := runtime.NumGoroutine(); m == n {
			stable++
		} else {
			n, stable = m, 0
		}
	}
	return n
}

// goroutineStacks returns the stack of every goroutine, one string each.
func goroutineStacks() []string {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Split(string(buf), "\n\n")
}

// discoveryRunning tells whether a Cluster API discoverer's worker runs: it
// starts once the discoverer's informers have synced.
func discoveryRunning() bool {
	return slices.ContainsFunc(goroutineStacks(), func(g string) bool {
		return strings.Contains(g, "capi.(*Discoverer).Run") && strings.Contains(g, "workqueue.(*Typed")
	})
}

// watchState counts the informers' reflectors, those handling a watch, and
// the watch streams' readers.
func watchState() (reflectors, watching, readers int) {
	for _, g := range goroutineStacks() {
		if strings.Contains(g, "cache.(*Reflector).RunWithContext") {
			reflectors++
			if strings.Contains(g, "cache.handleWatch(") {
				watching++
			}
		}
		if strings.Contains(g, "watch.(*StreamWatcher).receive") {
			readers++
		}
	}
	return reflectors, watching, readers
}

// clusterStacks returns the stacks of goroutines that belong to informers or
// watch managers. (Connection goroutines are left out here: the test's own
// clients make some; the clusters package checks the hub's connections go
// away with their cluster.)
func clusterStacks() []string {
	var out []string
	for _, g := range goroutineStacks() {
		for _, marker := range []string{"clusters.(*Manager)", "k8s.io/client-go/tools/cache", "k8s.io/apimachinery/pkg/watch"} {
			if strings.Contains(g, marker) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// testTransports remembers the test's own HTTP/1.1 transports so their
// connections can be closed before the goroutine check counts the hub's.
type testTransports struct {
	mu sync.Mutex
	ts []*http.Transport
}

// client returns a client for lc over HTTP/1.1 whose connections closeAll
// can close.
func (tt *testTransports) client(lc *localcluster.Cluster) kubernetes.Interface {
	rc := lc.RESTConfig()
	rc.NextProtos = []string{"http/1.1"}
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if t, ok := rt.(*http.Transport); ok {
			tt.mu.Lock()
			tt.ts = append(tt.ts, t)
			tt.mu.Unlock()
		}
		return rt
	}
	return kubernetes.NewForConfigOrDie(rc)
}

func (tt *testTransports) closeAll() {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	for _, t := range tt.ts {
		t.CloseIdleConnections()
	}
}

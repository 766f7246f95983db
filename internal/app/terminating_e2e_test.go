package app

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// TestDeletedNamespaceAndCRDComeBack: someone deletes the namespace that
// holds a source's objects (the namespace controller deletes what is in it,
// then the namespace), then the CRD of a custom resource the source keeps
// (the CRD's cleanup deletes its custom resources). While the apiserver
// refuses to create anything in the terminating namespace or of the
// terminating CRD's kind, the repairs wait: never shown as forbidden or
// failed, said in the feed as waiting; once the deletion ends, everything
// is back (the namespace created anew, the CRD recreated and then its
// custom resource).
func TestDeletedNamespaceAndCRDComeBack(t *testing.T) {
	f := newSourceFixture(t)
	lc := f.lc
	f.manifest(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gauges.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gauges, singular: gauge, kind: Gauge}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: example.com/v1
kind: Gauge
metadata: {name: pressure}
spec: {max: 10}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: "1"}
`)
	path := f.config(t, "ending", "")
	a := startApp(t, path, nil)
	a.waitSnap(t, 60*time.Second, "every object created and in sync", allInSync(3))
	ctx := t.Context()
	c := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	dyn := dynamic.NewForConfigOrDie(lc.RESTConfig())
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	cm := hub.NewNodeID(lc.Name, "ending", "settings", hub.KindConfigMap)
	gauge := hub.NewNodeID(lc.Name, "ending", "pressure", "gauge.example.com")
	crd := hub.NewNodeID(lc.Name, "", "gauges.example.com", "customresourcedefinition.apiextensions.k8s.io")

	// seen collects every status each NodeID showed while waiting.
	seen := map[hub.NodeID]map[hub.Status]bool{}
	watching := func(cond func(*hub.Snapshot) bool) func(*hub.Snapshot) bool {
		return func(s *hub.Snapshot) bool {
			for _, id := range []hub.NodeID{cm, gauge, crd} {
				if n, ok := s.Node(id); ok {
					if seen[id] == nil {
						seen[id] = map[hub.Status]bool{}
					}
					seen[id][n.Status] = true
				}
			}
			return cond(s)
		}
	}
	feedOf := func(s *hub.Snapshot, id hub.NodeID) (actions []string) {
		for _, e := range s.Feed {
			if e.ID == id {
				actions = append(actions, e.Action)
			}
		}
		return actions
	}

	t0 := time.Now()
	if err := c.CoreV1().Namespaces().Delete(ctx, "ending", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 60*time.Second, "the namespace deleted and created anew", func() error {
		ns, err := c.CoreV1().Namespaces().Get(ctx, "ending", metav1.GetOptions{})
		if err != nil {
			return err
		}
		return testwait.Check(ns.CreationTimestamp.After(t0.Add(-time.Second)) && ns.DeletionTimestamp == nil, "namespace from %s, deleting %v", ns.CreationTimestamp, ns.DeletionTimestamp)
	})
	s := a.waitSnap(t, 30*time.Second, "the namespace's objects recreated", watching(func(s *hub.Snapshot) bool {
		return repairedAfter(cm, t0)(s) && repairedAfter(gauge, t0)(s)
	}))
	for _, id := range []hub.NodeID{cm, gauge} {
		n, _ := s.Node(id)
		t.Logf("%s: statuses %v, feed %v, recreated %s after the namespace's delete", id, seen[id], feedOf(s, id), n.LastRepair.AppliedAt.Sub(t0).Round(time.Millisecond))
		if seen[id][hub.StatusForbidden] || seen[id][hub.StatusFailed] {
			t.Errorf("%s showed %v while its namespace was deleted, want no forbidden or failed", id, seen[id])
		}
		if !slices.Contains(feedOf(s, id), "waiting") {
			t.Errorf("%s: the feed does not say it waited for the namespace: %v", id, feedOf(s, id))
		}
	}

	t1 := time.Now()
	if err := crds.Delete(ctx, "gauges.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s = a.waitSnap(t, 60*time.Second, "the CRD and its custom resource recreated", watching(func(s *hub.Snapshot) bool {
		return repairedAfter(crd, t1)(s) && repairedAfter(gauge, t1)(s)
	}))
	n, _ := s.Node(gauge)
	t.Logf("%s: statuses %v, feed %v, recreated %s after the CRD's delete", gauge, seen[gauge], feedOf(s, gauge), n.LastRepair.AppliedAt.Sub(t1).Round(time.Millisecond))
	if seen[gauge][hub.StatusForbidden] {
		t.Errorf("%s showed forbidden while its CRD was deleted", gauge)
	}
	if _, err := c.CoreV1().ConfigMaps("ending").Get(ctx, "settings", metav1.GetOptions{}); err != nil {
		t.Errorf("settings: %v", err)
	}
}

// sourceFixture is one local cluster with its controllers and a folder
// for a config whose one manifest source, team, renders manifests/.
type sourceFixture struct {
	lc  *localcluster.Cluster
	dir string
}

// newSourceFixture starts the cluster and makes the folders.
func newSourceFixture(t *testing.T) *sourceFixture {
	t.Helper()
	set := lctest.Start(t, localcluster.Options{Count: 1, ControllerManager: true})
	f := &sourceFixture{lc: set.Clusters[0], dir: t.TempDir()}
	if err := os.Mkdir(filepath.Join(f.dir, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

// manifest writes the source's one manifest file.
func (f *sourceFixture) manifest(t *testing.T, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, "manifests", "all.yaml"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// config writes the config (the source's namespace, and extra lines of
// the source's entry) and returns its path.
func (f *sourceFixture) config(t *testing.T, namespace, extra string) string {
	t.Helper()
	path := filepath.Join(f.dir, "driftwatch.yaml")
	text := fmt.Sprintf(`hub:
  id: e2e
clusters:
  - {id: %s, kubeconfig: %s}
sources:
  - id: team
    path: manifests
    clusters: [%s]
    namespace: %s
%s`, f.lc.Name, f.lc.Kubeconfig, f.lc.Name, namespace, extra)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

package clusters

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// TestRecordEventOnARealControlPlane: RecordEvent writes an Event on the
// managed object, found by kubectl describe's field selector (its UID),
// with the reason, type, message (one bounded line), source and reporting
// instance, the same one again counted on the first; a cluster-scoped
// object's goes to default; an object the
// watch does not hold gets none, without an error.
func TestRecordEventOnARealControlPlane(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	createNamespace(t, admin, diagNS)
	cc := clusterConfig(lc, diagNS)
	clusterRole := schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}
	cc.Kinds = append(append([]schema.GroupVersionKind{}, diagKinds...), clusterRole)
	cc.HubID = hub.DefaultHubID
	sink := newRecordingSink()
	r := runRegistry(t, sink, cc)
	sink.waitFor(t, 30*time.Second, "synced", func() bool { return sink.state(lc.Name) == hub.ClusterSynced })
	be, _ := r.Backend(lc.Name)
	m := be.(*Manager)
	_, pvc, _, pvcObj := createDiagObjects(t, lc)
	role := genericSpec(t, lc.Name, "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: diag-reader}\nrules: []\n")
	u, err := kubeobj.Object(role)
	if err != nil {
		t.Fatal(err)
	}
	roleObj, err := dynamic.NewForConfigOrDie(lc.RESTConfig()).Resource(schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}).
		Create(t.Context(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, be, pvc, "in the cache", func(st hub.State, _ hub.Drift) bool { return st.Exists })
	waitState(t, be, role, "in the cache", func(st hub.State, _ hub.Drift) bool { return st.Exists })

	long := "hub hq: modified drift repaired in 12ms (spec.resources, changed by kubectl-edit)\n" + strings.Repeat("é", 600)
	if retry, err := m.RecordEvent(t.Context(), pvc.ID, "Normal", "DriftRepaired", long); err != nil || retry {
		t.Fatalf("RecordEvent: retry %v, %v", retry, err)
	}
	// The same event twice counts on the first, as a controller's do.
	for range 2 {
		if _, err := m.RecordEvent(t.Context(), role.ID, "Warning", "RepairFailed", "hub hq: repair failed"); err != nil {
			t.Fatal(err)
		}
	}
	gone := hub.NewNodeID(lc.Name, diagNS, "gone", pvc.Kind)
	if retry, err := m.RecordEvent(t.Context(), gone, "Normal", "DriftRepaired", "x"); err != nil || retry {
		t.Fatalf("RecordEvent of an object not there: retry %v, %v", retry, err)
	}

	// As kubectl describe finds them.
	events := func(ns string, uid string) []string {
		t.Helper()
		l, err := admin.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", uid).String()})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range l.Items {
			if strings.Contains(e.Message, "\n") || len(e.Message) > eventMessageLen || e.Source.Component != EventComponent ||
				e.ReportingInstance != hub.DefaultHubID || e.InvolvedObject.Name == "" || e.InvolvedObject.APIVersion == "" {
				t.Errorf("event %+v", e)
			}
			out = append(out, fmt.Sprintf("%s %s %s ×%d %s", e.Type, e.Reason, e.InvolvedObject.Kind, e.Count, strings.SplitN(e.Message, " (", 2)[0]))
		}
		return out
	}
	testwait.For(t, 10*time.Second, "the events listed", func() error {
		got := events(diagNS, string(pvcObj.GetUID()))
		return testwait.Check(len(got) == 1 && got[0] == "Normal DriftRepaired PersistentVolumeClaim ×1 hub hq: modified drift repaired in 12ms", "%q", got)
	})
	if got := events(metav1.NamespaceDefault, string(roleObj.GetUID())); len(got) != 1 || got[0] != "Warning RepairFailed ClusterRole ×2 hub hq: repair failed" {
		t.Errorf("the cluster-scoped object's events in default: %q", got)
	}
	if l, _ := admin.CoreV1().Events(diagNS).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=gone"}); len(l.Items) != 0 {
		t.Errorf("an event on an object not there: %+v", l.Items)
	}
}

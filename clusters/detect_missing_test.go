package clusters

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"github.com/driftwatch/driftwatch/hub"
)

// TestDetectMissingOrDeleting: an object that is missing or being deleted
// is classified so without decoding the desired object (a manager with no
// connection and no schema can still say it), but a spec without a desired
// object is still an error, and a live object is compared as before.
func TestDetectMissingOrDeleting(t *testing.T) {
	m := &Manager{cfg: ClusterConfig{ID: "c1"}}
	spec := deploymentSpec(t, "c1", "shop", "api")
	d, err := m.DetectDrift(t.Context(), spec, hub.State{})
	if err != nil || d.Class != hub.DriftMissing {
		t.Fatalf("missing: %v, %v; want %s", d.Class, err, hub.DriftMissing)
	}
	live, err := kubeobj.Object(spec)
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	live.SetDeletionTimestamp(&now)
	d, err = m.DetectDrift(t.Context(), spec, hub.State{Exists: true, Live: live})
	if err != nil || d.Class != hub.DriftDeleting {
		t.Fatalf("deleting: %v, %v; want %s", d.Class, err, hub.DriftDeleting)
	}
	empty := spec
	empty.Body = nil
	if _, err := m.DetectDrift(t.Context(), empty, hub.State{}); err == nil {
		t.Fatal("a spec without a desired object classified without an error")
	}
	// A live object needs the desired one decoded and the kind's schema:
	// this manager has neither a connection nor a schema cache, so it
	// falls back on client-go's embedded schema and compares.
	live = live.DeepCopy()
	live.SetDeletionTimestamp(nil)
	unstructured.SetNestedField(live.Object, int64(5), "spec", "replicas")
	d, err = m.DetectDrift(t.Context(), spec, hub.State{Exists: true, Live: live})
	if err != nil {
		t.Fatal(err)
	}
	if d.Class != hub.DriftModified || len(d.Fields) != 1 || d.Fields[0].Path != "spec.replicas" {
		t.Fatalf("live: %+v, want spec.replicas modified", d)
	}
}

// BenchmarkDetectMissing is the classification of an object the cluster
// does not have, as a cold sync makes it for every object before creating
// it, beside that of a live object in sync.
func BenchmarkDetectMissing(b *testing.B) {
	m := &Manager{cfg: ClusterConfig{ID: "c1"}}
	spec := deploymentSpec(b, "c1", "shop", "api")
	live, err := kubeobj.Object(spec)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		st   hub.State
	}{{"missing", hub.State{}}, {"in-sync", hub.State{Exists: true, Live: live}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.DetectDrift(b.Context(), spec, bc.st); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

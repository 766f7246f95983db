package app

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/clusters"
)

// TestKeepWatching: while a source fails, a cluster keeps watching the
// namespaces and kinds it watched (a union in the config's orders), so an
// unchanged watch is the same config and its manager is not restarted.
func TestKeepWatching(t *testing.T) {
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	gadget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}
	sts := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	prev := clusters.ClusterConfig{ID: "c1", Namespaces: []string{"pruning", "shop"}, Kinds: []schema.GroupVersionKind{cm, sts, gadget}}
	next := clusters.ClusterConfig{ID: "c1", Namespaces: []string{"pruning"}, Kinds: []schema.GroupVersionKind{cm}}
	got := keepWatching(next, prev)
	if !reflect.DeepEqual(got, prev) {
		t.Errorf("keepWatching = %+v, want the previous watch %+v", got, prev)
	}
	grown := clusters.ClusterConfig{ID: "c1", Namespaces: []string{"new", "pruning"}, Kinds: []schema.GroupVersionKind{cm, sts}}
	got = keepWatching(grown, prev)
	want := clusters.ClusterConfig{ID: "c1", Namespaces: []string{"new", "pruning", "shop"}, Kinds: []schema.GroupVersionKind{cm, sts, gadget}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("keepWatching = %+v, want %+v", got, want)
	}
	if len(next.Kinds) != 1 || len(next.Namespaces) != 1 {
		t.Errorf("keepWatching changed its argument: %+v", next)
	}
}

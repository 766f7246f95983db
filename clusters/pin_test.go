package clusters

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"github.com/driftwatch/driftwatch/hub"
)

// pinDecoded is pinBody as it was written first, the whole object decoded
// and encoded again: the test's reference and the benchmark's baseline.
func pinDecoded(t testing.TB, spec hub.NodeSpec, rv string) []byte {
	desired, err := kubeobj.Object(spec)
	if err != nil || desired == nil {
		t.Fatalf("decode: %v", err)
	}
	desired.SetResourceVersion(rv)
	b, err := kubeobj.EncodeBody(desired)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pinSpec(body string) hub.NodeSpec {
	return hub.NodeSpec{ID: hub.NewNodeID("c1", "shop", "web", hub.KindDeployment), Kind: hub.KindDeployment, Namespace: "shop", Name: "web", Body: []byte(body)}
}

func TestPinBody(t *testing.T) {
	dep := kubeobj.MustEncodeBody(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "labels": map[string]any{"app": "web"}},
		"spec": map[string]any{"replicas": int64(3), "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "app", "image": "nginx:1.27", "resources": map[string]any{"limits": map[string]any{"cpu": "1.5"}}}}}}},
	}})
	for name, body := range map[string]string{
		"deployment":        string(dep),
		"no metadata":       `{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"1"}}`,
		"a version already": `{"kind":"ConfigMap","metadata":{"name":"x","resourceVersion":"7"}}`,
	} {
		spec := pinSpec(body)
		got, err := pinBody(spec, "42")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var gotObj, wantObj unstructured.Unstructured
		if err := gotObj.UnmarshalJSON(got); err != nil {
			t.Errorf("%s: the pinned body does not decode: %v\n%s", name, err, got)
			continue
		}
		if err := wantObj.UnmarshalJSON(pinDecoded(t, spec, "42")); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gotObj.Object, wantObj.Object) {
			t.Errorf("%s: pinned %s, want %s", name, got, pinDecoded(t, spec, "42"))
		}
		if gotObj.GetResourceVersion() != "42" {
			t.Errorf("%s: resourceVersion %q", name, gotObj.GetResourceVersion())
		}
	}
	// Where decoding everything changed the object, the raw pin does not:
	// a null metadata is pinned (a decoded one stayed null, unpinned),
	// and numbers keep their literal (a decoded one lost the digits past
	// a float64's and turned 1.5e3 into 1500).
	for body, want := range map[string]string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":null}`:                                           `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"42"}}`,
		"{ \"kind\": \"X\",\n \"spec\": {\"n\": 12345678901234567890, \"f\": 1.5e3, \"s\": \"\\u00e9\"} }": `{"kind":"X","metadata":{"resourceVersion":"42"},"spec":{"n":12345678901234567890,"f":1.5e3,"s":"\u00e9"}}`,
	} {
		if got, err := pinBody(pinSpec(body), "42"); err != nil || string(got) != want {
			t.Errorf("pinBody(%s) = %s, %v; want %s", body, got, err, want)
		}
	}
	if got, _ := pinBody(pinSpec(string(dep)), "42"); string(got) != string(pinDecoded(t, pinSpec(string(dep)), "42")) {
		t.Errorf("a canonical body pins to other bytes than a full re-encoding:\n%s\n%s", got, pinDecoded(t, pinSpec(string(dep)), "42"))
	}

	for name, body := range map[string]string{
		"empty":              "",
		"null":               "null",
		"not an object":      `["a"]`,
		"metadata a string":  `{"metadata":"x"}`,
		"truncated":          `{"metadata":{"name":"x"}`,
		"trailing garbage":   `{"metadata":{}} x`,
		"invalid nested":     `{"metadata":{},"spec":{"a":tru}}`,
		"deeply nested junk": strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 19999),
	} {
		if got, err := pinBody(pinSpec(body), "42"); err == nil {
			t.Errorf("%s: pinned to %.80s, want an error", name, got)
		}
	}
}

// BenchmarkPinBody measures pinning an edit repair's apply to the
// resourceVersion it checked, on a Deployment's body: decoding only the
// top level and metadata (raw) against decoding and encoding the whole
// object (decoded, the baseline).
func BenchmarkPinBody(b *testing.B) {
	spec := pinSpec(string(kubeobj.MustEncodeBody(benchDesiredDeployment())))
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := pinBody(spec, "123456"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decoded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pinDecoded(b, spec, "123456")
		}
	})
}

// benchDesiredDeployment is a desired Deployment as the config compiles
// one: labels, annotations, a container with ports, env and resources.
func benchDesiredDeployment() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop",
			"labels":      map[string]any{"app": "web", kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy, "driftwatch.io/application": "web"},
			"annotations": map[string]any{kubeobj.NodeIDAnnotation: "c1:shop/web:deployment", kubeobj.HubAnnotation: "hub-a"}},
		"spec": map[string]any{"replicas": int64(2),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "web"}, "annotations": map[string]any{"driftwatch.io/config-hash": "8f14e45fceea167a"}},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "app", "image": "registry.example.com/shop/web:1.4.2",
					"ports":     []any{map[string]any{"name": "http", "containerPort": int64(8080), "protocol": "TCP"}},
					"env":       []any{map[string]any{"name": "LOG_LEVEL", "value": "info"}, map[string]any{"name": "REGION", "value": "eu"}},
					"envFrom":   []any{map[string]any{"configMapRef": map[string]any{"name": "web"}}},
					"resources": map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}, "limits": map[string]any{"memory": "256Mi"}},
				}}}}},
	}}
}

package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/pack"
)

func TestApplyOrder(t *testing.T) {
	for _, tc := range []struct {
		gk   k8sschema.GroupKind
		want uint8
	}{
		{k8sschema.GroupKind{Kind: "Namespace"}, 0},
		{k8sschema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, 0},
		{k8sschema.GroupKind{Group: "apps", Kind: "StatefulSet"}, 1},
		{k8sschema.GroupKind{Kind: "ConfigMap"}, 1},
		{k8sschema.GroupKind{Group: "example.com", Kind: "Namespace"}, 1},
		{k8sschema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}, 2},
	} {
		if got := applyOrder(tc.gk); got != tc.want {
			t.Errorf("applyOrder(%v) = %d, want %d", tc.gk, got, tc.want)
		}
	}
}

// TestSourceObjectsPacked: rendered objects are kept packed against a
// dictionary of their kind and compile to the same specs as the JSON they
// were rendered to; a packed object that does not unpack is an error of
// CompileCluster, not a panic.
func TestSourceObjectsPacked(t *testing.T) {
	cfg := sourcesConfig(t, `clusters: [{id: a, kubeconfig: /k}]
sources: [{id: plain, path: sources/plain, clusters: [a], namespace: team}]
`)
	specs, err := CompileCluster(cfg, ClusterInfo{ID: "a"})
	if err != nil || len(specs) == 0 {
		t.Fatalf("%d specs, %v", len(specs), err)
	}
	st := cfg.state()
	st.mu.Lock()
	var objs []*sourceObject
	for _, r := range st.renders {
		for i := range r.objects {
			objs = append(objs, &r.objects[i])
		}
	}
	st.mu.Unlock()
	if len(objs) == 0 {
		t.Fatal("no rendered objects kept")
	}
	for _, o := range objs {
		body, err := o.dict.Unpack(o.body)
		if err != nil || !json.Valid(body) {
			t.Fatalf("%s %s: unpacked %q, %v", o.gvk.Kind, o.name, body, err)
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil || m["kind"] != o.gvk.Kind {
			t.Errorf("%s %s: %v", o.gvk.Kind, o.name, m)
		}
	}
	again, err := CompileCluster(cfg, ClusterInfo{ID: "a"})
	if err != nil || !reflect.DeepEqual(again, specs) {
		t.Fatalf("compiled again: %v", err)
	}

	objs[0].body = objs[0].body[:len(objs[0].body)/2]
	if _, err := CompileCluster(cfg, ClusterInfo{ID: "a"}); !errors.Is(err, pack.ErrCorrupt) {
		t.Fatalf("CompileCluster with a damaged object: %v, want pack.ErrCorrupt", err)
	}
}

// TestSourceSpecsInParallel: a source of many objects (past parallelSpecs)
// is encoded and compiled on several cores to the specs one core gives, in
// the same order, each spec with its own object's body.
func TestSourceSpecsInParallel(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 3 * parallelSpecs {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%03d}\ndata: {key: value-%d}\n", i, i)
		if i%50 == 7 {
			fmt.Fprintf(&b, "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web-%d, labels: {tier: web}}\nspec: {replicas: %d}\n", i, i)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "many"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "many", "all.yaml"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	src := "clusters: [{id: a, kubeconfig: /k}]\nsources: [{id: many, path: many, clusters: [a], namespace: team}]\n"
	compile := func(procs int) []hub.NodeSpec {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		cfg, err := Parse(filepath.Join(dir, "config.yaml"), []byte(src), testOptions())
		if err != nil {
			t.Fatal(err)
		}
		specs, err := CompileCluster(cfg, ClusterInfo{ID: "a"})
		if err != nil {
			t.Fatal(err)
		}
		return specs
	}
	one, many := compile(1), compile(4)
	if want := 3*parallelSpecs + 4; len(many) != want {
		t.Fatalf("%d specs, want %d", len(many), want)
	}
	if !reflect.DeepEqual(one, many) {
		t.Fatal("the specs compiled on four cores differ from those compiled on one")
	}
	for _, s := range many {
		o := objectOf(t, s)
		if got := o.GetAnnotations()[kubeobj.NodeIDAnnotation]; got != s.ID.String() || o.GetName() != s.Name || o.GetNamespace() != "team" {
			t.Errorf("%s: body of %s %s/%s (node-id %q)", s.ID, o.GetKind(), o.GetNamespace(), o.GetName(), got)
		}
		if o.GetLabels()[kubeobj.ApplicationLabel] != "many" {
			t.Errorf("%s: labels %v", s.ID, o.GetLabels())
		}
	}
}

// TestMetaStringsMatchesGetAndSet: metaStrings plus the caller's entries
// leaves an object as Unstructured's Get and Set of labels (and
// annotations) plus the same entries leave it, for every shape of
// metadata a manifest can hold.
func TestMetaStringsMatchesGetAndSet(t *testing.T) {
	shapes := map[string]string{
		"none":                    `{"kind":"ConfigMap"}`,
		"metadata null":           `{"metadata":null}`,
		"metadata not a map":      `{"metadata":"x"}`,
		"no labels":               `{"metadata":{"name":"a"}}`,
		"labels null":             `{"metadata":{"name":"a","labels":null}}`,
		"labels empty":            `{"metadata":{"name":"a","labels":{}}}`,
		"labels of strings":       `{"metadata":{"name":"a","labels":{"x":"1","y":"2","app.kubernetes.io/managed-by":"someone"}}}`,
		"a null label":            `{"metadata":{"name":"a","labels":{"x":null,"y":"2"}}}`,
		"a number label":          `{"metadata":{"name":"a","labels":{"x":1,"y":"2"}}}`,
		"a map label":             `{"metadata":{"name":"a","labels":{"x":{"z":"1"}}}}`,
		"labels a list":           `{"metadata":{"name":"a","labels":["x"]}}`,
		"labels a string":         `{"metadata":{"name":"a","labels":"x"}}`,
		"annotations and labels":  `{"metadata":{"name":"a","labels":{"x":"1"},"annotations":{"driftwatch.io/prune":"enabled","n":null}}}`,
		"annotations not strings": `{"metadata":{"name":"a","annotations":{"n":true}}}`,
	}
	for name, doc := range shapes {
		t.Run(name, func(t *testing.T) {
			for _, field := range []string{"labels", "annotations"} {
				want := &unstructured.Unstructured{Object: mustUnmarshal(t, doc)}
				got := &unstructured.Unstructured{Object: mustUnmarshal(t, doc)}
				var old map[string]string
				if field == "labels" {
					old = want.GetLabels()
				} else {
					old = want.GetAnnotations()
				}
				if old == nil {
					old = map[string]string{}
				}
				old["app.kubernetes.io/managed-by"] = "driftwatch"
				old["k"] = "v"
				if field == "labels" {
					want.SetLabels(old)
				} else {
					want.SetAnnotations(old)
				}
				m := metaStrings(got, field)
				m["app.kubernetes.io/managed-by"] = "driftwatch"
				m["k"] = "v"
				wb, err := kubeobj.Marshal(want.Object)
				if err != nil {
					t.Fatal(err)
				}
				gb, err := kubeobj.Marshal(got.Object)
				if err != nil {
					t.Fatal(err)
				}
				if string(gb) != string(wb) {
					t.Errorf("%s:\n got %s\nwant %s", field, gb, wb)
				}
			}
		})
	}
}

func mustUnmarshal(t *testing.T, doc string) map[string]any {
	t.Helper()
	m, err := kubeobj.Unmarshal([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

package drift

import (
	"bytes"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	smd "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// clientGoSchemas resolves every kind of scheme.Scheme through client-go's
// own type converter (the schema client-go parses from its embedded copy):
// the kinds it has a type for, and the types of its schema.
func clientGoSchemas(tb testing.TB, tc managedfields.TypeConverter) (kinds []schema.GroupVersionKind, types *smd.Schema) {
	tb.Helper()
	for gvk := range scheme.Scheme.AllKnownTypes() {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		tv, err := tc.ObjectToTyped(u)
		if err != nil {
			continue
		}
		kinds = append(kinds, gvk)
		types = tv.Schema()
	}
	if types == nil {
		tb.Fatal("client-go's type converter knows no kind")
	}
	return kinds, types
}

func sortedKinds(k []schema.GroupVersionKind) []schema.GroupVersionKind {
	return slices.SortedFunc(slices.Values(k), func(a, b schema.GroupVersionKind) int {
		return strings.Compare(a.String(), b.String())
	})
}

// TestBuiltinSchemaIsClientGos: builtin_schema.yaml holds the schema
// client-go's apply configurations embed, type for type, and the built-in
// schemas cover the kinds client-go's type converter resolves, no more, no
// fewer. It fails when client-go was upgraded without the copy
// (go generate ./clusters/drift).
func TestBuiltinSchemaIsClientGos(t *testing.T) {
	kinds, want := clientGoSchemas(t, applyconfigurations.NewTypeConverter(scheme.Scheme))
	var got smd.Schema
	if err := yaml.Unmarshal(builtinSchemaYAML, &got); err != nil {
		t.Fatalf("builtin_schema.yaml: %v", err)
	}
	// Marshalled, the types compare without the lookup caches client-go's
	// parser filled in while resolving.
	wantText, err := yaml.Marshal(want.Types)
	if err != nil {
		t.Fatal(err)
	}
	gotText, err := yaml.Marshal(got.Types)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotText, wantText) {
		t.Fatalf("builtin_schema.yaml (%d types) is not the schema of the client-go this module builds with (%d types): run go generate ./clusters/drift", len(got.Types), len(want.Types))
	}
	if got, want := sortedKinds(slices.Collect(maps.Keys(builtinSchemas()))), sortedKinds(kinds); !slices.Equal(got, want) {
		t.Errorf("built-in schemas for %d kinds, client-go resolves %d:\n got %v\nwant %v", len(got), len(want), got, want)
	}
	if len(kinds) < 100 {
		t.Errorf("client-go resolves %d kinds, want the whole built-in API (more than 100)", len(kinds))
	}
}

// TestBuiltinSchemaCompiledAsClientGos: a kind's schema compiled from the
// copy walks as the one compiled from client-go's parser: the same keyed
// lists, sets and free-form maps along the kind's fields.
func TestBuiltinSchemaCompiledAsClientGos(t *testing.T) {
	_, types := clientGoSchemas(t, applyconfigurations.NewTypeConverter(scheme.Scheme))
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "apps", Version: "v1", Kind: "StatefulSet"},
		{Version: "v1", Kind: "Service"},
		{Version: "v1", Kind: "ConfigMap"},
		{Group: "batch", Version: "v1", Kind: "CronJob"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	} {
		name, err := scheme.Scheme.ToOpenAPIDefinitionName(gvk)
		if err != nil {
			t.Fatal(err)
		}
		want := NewSchema(typed.ParseableType{Schema: types, TypeRef: smd.TypeRef{NamedType: &name}})
		got, ok := BuiltinSchema(gvk)
		if !ok {
			t.Fatalf("%v: no built-in schema", gvk)
		}
		// The node graphs are cyclic (recursive types); DeepEqual
		// follows them.
		if !reflect.DeepEqual(got.root, want.root) {
			t.Errorf("%v: the schema compiled from the copy differs from the one compiled from client-go's parser", gvk)
		}
	}
}

// TestCompileBuiltinRefusesBadYAML: a copy that is not YAML is an error,
// not an empty set of schemas.
func TestCompileBuiltinRefusesBadYAML(t *testing.T) {
	if _, err := compileBuiltin([]byte("types: [\n"), scheme.Scheme); err == nil {
		t.Error("compileBuiltin of broken YAML: no error")
	}
	got, err := compileBuiltin([]byte("types: []\n"), scheme.Scheme)
	if err != nil || len(got) != 0 {
		t.Errorf("compileBuiltin of no types = %d schemas, %v; want none, no error", len(got), err)
	}
}

// BenchmarkBuiltinSchemas builds the built-in kinds' schemas as the hub does
// on its first pass (copy: one parse of builtin_schema.yaml), against the
// way client-go's type converter parses the same schema (client-go: the
// validating parse, then the parse, then each kind resolved through the
// converter), in the same run: go test -run '^$' -bench BuiltinSchemas
// -benchmem ./clusters/drift/
func BenchmarkBuiltinSchemas(b *testing.B) {
	b.Run("client-go", func(b *testing.B) {
		for b.Loop() {
			p, err := typed.NewParser(typed.YAMLObject(builtinSchemaYAML))
			if err != nil {
				b.Fatal(err)
			}
			tc := managedfields.NewSchemeTypeConverter(scheme.Scheme, p)
			kinds, types := clientGoSchemas(b, tc)
			c := newCompiler(types)
			for _, gvk := range kinds {
				name, _ := scheme.Scheme.ToOpenAPIDefinitionName(gvk)
				c.schema(smd.TypeRef{NamedType: &name})
			}
		}
	})
	b.Run("copy", func(b *testing.B) {
		for b.Loop() {
			if _, err := compileBuiltin(builtinSchemaYAML, scheme.Scheme); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package drift

import (
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	smd "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// Schema describes the fields of one kind's objects as structured-merge-diff
// does (and so as server-side apply and managedFields see them): the type of
// the object's root within a set of named types, each a scalar, a list
// (atomic, a set, or associative with key fields) or a map (a struct with
// fields, or free-form with one element type). The comparer consults it
// instead of a table of field names.
//
// The zero Schema knows nothing about its kind (a custom resource whose
// schema is not at hand): every list is atomic (compared by index), every
// map a struct (only the fields desired sets are compared), so nothing
// someone adds inside it is reported. A Schema is immutable and safe for
// concurrent use.
type Schema struct {
	types *smd.Schema
	root  smd.TypeRef
}

// NewSchema returns the Schema of the objects of type pt, as
// typed.Parser.Type and the GVK parsers of
// k8s.io/apimachinery/pkg/util/managedfields return it.
func NewSchema(pt typed.ParseableType) Schema {
	return Schema{types: pt.Schema, root: pt.TypeRef}
}

// Known reports whether s describes its kind (false for the zero Schema).
func (s Schema) Known() bool { return s.types != nil }

// BuiltinSchema returns the schema client-go embeds for a built-in kind
// (the one its apply configurations use), and false when client-go does
// not know gvk (a custom resource, or a version client-go lacks).
func BuiltinSchema(gvk schema.GroupVersionKind) (Schema, bool) {
	s, ok := builtinSchemas()[gvk]
	return s, ok
}

// schemaOf returns the built-in schema of obj's kind, or the zero Schema.
func schemaOf(obj map[string]any) Schema {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	s, _ := BuiltinSchema(schema.FromAPIVersionAndKind(apiVersion, kind))
	return s
}

// builtinSchemas indexes client-go's embedded schema by kind. It is built
// once, on first use (parsing the schema takes a few hundred milliseconds),
// and never written afterwards: a constant computed lazily, not state.
var builtinSchemas = sync.OnceValue(func() map[schema.GroupVersionKind]Schema {
	tc := applyconfigurations.NewTypeConverter(scheme.Scheme)
	out := make(map[schema.GroupVersionKind]Schema)
	for gvk := range scheme.Scheme.AllKnownTypes() {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		// Converting an object with no fields but its kind resolves the
		// kind's type; kinds the schema lacks (lists, options) fail.
		tv, err := tc.ObjectToTyped(u)
		if err != nil {
			continue
		}
		out[gvk] = Schema{types: tv.Schema(), root: tv.TypeRef()}
	}
	return out
})

// Type names the comparer treats specially.
const (
	objectMetaType = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
	quantityType   = "io.k8s.apimachinery.pkg.api.resource.Quantity"
	envVarType     = "io.k8s.api.core.v1.EnvVar"
	envSourceType  = "io.k8s.api.core.v1.EnvVarSource"
	// The types of fields whose structure the schema leaves open
	// (x-kubernetes-preserve-unknown-fields, untyped objects): walked as
	// the zero Schema walks everything.
	untypedDeduced = "__untyped_deduced_"
	untypedAtomic  = "__untyped_atomic_"
)

// typ is the type of one value in a Schema: its atom, the element
// relationship in force for its list or map, and its name ("" when
// inlined). The zero typ is unknown: maps are walked as structs and lists
// as atomic.
type typ struct {
	atom smd.Atom
	rel  smd.ElementRelationship
	name string
	// oursOnly marks the labels and annotations of an ObjectMeta: only the
	// keys desired sets are compared, keys others add never are.
	oursOnly bool
}

// resolve returns the type tr refers to in types; the zero typ when types
// is nil or does not hold it. It applies the reference's element
// relationship override itself rather than through smd.Schema.Resolve,
// which takes a lock and copies the atom.
func resolve(types *smd.Schema, tr smd.TypeRef) typ {
	if types == nil {
		return typ{}
	}
	var t typ
	if tr.NamedType != nil {
		name := *tr.NamedType
		if name == untypedDeduced || name == untypedAtomic {
			return typ{}
		}
		td, ok := types.FindNamedType(name)
		if !ok {
			return typ{}
		}
		t = typ{atom: td.Atom, name: name}
	} else {
		t.atom = tr.Inlined
	}
	switch {
	case t.atom.List != nil:
		t.rel = t.atom.List.ElementRelationship
	case t.atom.Map != nil:
		t.rel = t.atom.Map.ElementRelationship
	}
	if tr.ElementRelationship != nil {
		t.rel = *tr.ElementRelationship
	}
	return t
}

// isSet reports whether tr refers to a type at all (an empty map element
// type means a struct without free-form entries).
func isSet(tr smd.TypeRef) bool {
	return tr.NamedType != nil || tr.Inlined.Scalar != nil || tr.Inlined.List != nil || tr.Inlined.Map != nil
}

// freeForm reports whether t is a free-form map (string keys, one element
// type, no fields: a ConfigMap's data, nodeSelector, matchLabels), whose
// keys someone else adds are drift. An object whose keys the schema leaves
// open (x-kubernetes-preserve-unknown-fields) is not: it is walked as a
// struct.
func (t typ) freeForm() bool {
	m := t.atom.Map
	if m == nil || len(m.Fields) > 0 || !isSet(m.ElementType) || t.oursOnly {
		return false
	}
	return m.ElementType.NamedType == nil || *m.ElementType.NamedType != untypedDeduced
}

// quantity reports whether t is a resource quantity (compared by amount).
func (t typ) quantity() bool { return t.name == quantityType }

// field returns the type of the field name of a map of type t: the
// struct field's, else the element type's; unknown when t is unknown.
func field(types *smd.Schema, t typ, name string) typ {
	m := t.atom.Map
	if m == nil {
		return typ{}
	}
	var ft typ
	if sf, ok := m.FindField(name); ok {
		ft = resolve(types, sf.Type)
	} else if isSet(m.ElementType) {
		ft = resolve(types, m.ElementType)
	} else {
		return typ{}
	}
	if t.name == objectMetaType && (name == "labels" || name == "annotations") {
		ft.oursOnly = true
	}
	return ft
}

// listKind is how a list's items are matched.
type listKind int

const (
	atomicList listKind = iota // by index, compared whole
	setList                    // scalars matched by value
	keyedList                  // maps matched by their key fields
)

// listOf returns how the items of a list of type t are matched, and their
// type.
func listOf(types *smd.Schema, t typ) (listKind, typ, *smd.List) {
	l := t.atom.List
	if l == nil {
		return atomicList, typ{}, nil
	}
	elem := resolve(types, l.ElementType)
	if t.rel != smd.Associative {
		return atomicList, elem, l
	}
	if len(l.Keys) > 0 {
		return keyedList, elem, l
	}
	return setList, elem, l
}

// itemKey returns the key of an item of an associative list with the key
// fields keys, in field path form (KeyString: the values in key-name
// order, joined by "/"). A key field the item omits takes the default the
// schema publishes for it (a port's protocol, TCP); complete is false when
// one has no default, and the key is then made of the fields the item has.
func itemKey(item map[string]any, keys []string, elem typ) (key string, complete bool) {
	if len(keys) == 1 {
		v, ok := keyValue(item, keys[0], elem)
		if !ok {
			return "", false
		}
		return scalarString(v), true
	}
	names := keys
	if !slices.IsSorted(names) {
		names = slices.Sorted(slices.Values(keys))
	}
	complete = true
	var b strings.Builder
	for _, k := range names {
		v, ok := keyValue(item, k, elem)
		if !ok {
			complete = false
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		b.WriteString(scalarString(v))
	}
	return b.String(), complete
}

// keyValue returns the value of the key field k of item, or its default.
func keyValue(item map[string]any, k string, elem typ) (any, bool) {
	if v, ok := item[k]; ok {
		return v, true
	}
	if m := elem.atom.Map; m != nil {
		if sf, ok := m.FindField(k); ok && sf.Default != nil {
			return sf.Default, true
		}
	}
	return nil, false
}

// sameKeys reports whether the live item has the values of the key fields
// the desired item sets (for a desired item whose key is incomplete).
func sameKeys(desired, live map[string]any, keys []string, elem typ) bool {
	for _, k := range keys {
		dv, ok := desired[k]
		if !ok {
			continue
		}
		lv, ok := keyValue(live, k, elem)
		if !ok || scalarString(dv) != scalarString(lv) {
			return false
		}
	}
	return true
}

// exclusiveGroup is a group of fields of a struct of which the apiserver
// accepts at most one. A member the desired object leaves out but the live
// one has was added by someone else: it is reported (and projected) with a
// pointer so the repair removes it before applying, since applying our
// member next to it would be refused.
type exclusiveGroup struct {
	fields []string
	// always: the group is checked even when desired sets none of its
	// members; otherwise only when it sets one.
	always bool
	// parentPointer: the pointer of an added member is the struct's own
	// (the apiserver refuses the struct empty, so the repair removes it
	// whole and the apply puts ours back).
	parentPointer bool
}

// envVarGroups and envSourceGroups are the one rule the schema cannot
// express: an EnvVar takes a value or a valueFrom, and an EnvVarSource one
// source, but neither type carries x-kubernetes-unions (validation alone
// enforces it), so smd sees independent fields. Without the rule a
// variable switched to another source would be reported as our member
// missing only, and its repair refused by validation. They are never
// written.
var (
	envVarGroups    = []exclusiveGroup{{fields: []string{"value", "valueFrom"}, always: true}}
	envSourceGroups = []exclusiveGroup{{
		fields:        []string{"configMapKeyRef", "fieldRef", "fileKeyRef", "resourceFieldRef", "secretKeyRef"},
		always:        true,
		parentPointer: true,
	}}
)

// exclusive returns the groups of mutually exclusive fields of a struct of
// type t: its unions (x-kubernetes-unions), and the EnvVar rule above.
func exclusive(t typ, dst []exclusiveGroup) []exclusiveGroup {
	switch t.name {
	case envVarType:
		return envVarGroups
	case envSourceType:
		return envSourceGroups
	}
	m := t.atom.Map
	if m == nil || len(m.Unions) == 0 {
		return nil
	}
	for _, u := range m.Unions {
		g := exclusiveGroup{fields: make([]string, len(u.Fields))}
		for i, f := range u.Fields {
			g.fields[i] = f.FieldName
		}
		slices.Sort(g.fields)
		dst = append(dst, g)
	}
	return dst
}

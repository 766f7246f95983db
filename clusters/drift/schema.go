package drift

import (
	_ "embed"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	root *node
}

// NewSchema returns the Schema of the objects of type pt, as
// typed.Parser.Type and the GVK parsers of
// k8s.io/apimachinery/pkg/util/managedfields return it. It resolves the
// types reachable from the root once, so that the comparisons on the watch
// path only follow pointers.
func NewSchema(pt typed.ParseableType) Schema {
	if pt.Schema == nil {
		return Schema{}
	}
	return newCompiler(pt.Schema).schema(pt.TypeRef)
}

// Known reports whether s describes its kind (false for the zero Schema).
func (s Schema) Known() bool { return s.root != nil }

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

// builtinSchemaYAML is client-go's schema of the built-in kinds, as its
// apply configurations embed it (see internal/genschema; a test checks the
// copy against the client-go the module builds with).
//
//go:generate go run ./internal/genschema -o builtin_schema.yaml
//go:embed builtin_schema.yaml
var builtinSchemaYAML []byte

// builtinSchemas indexes client-go's embedded schema by kind. It is built
// once, on first use, and never written afterwards: a constant computed
// lazily, not state. It parses the copy of the schema in
// builtin_schema.yaml once, where client-go's own parser
// (applyconfigurations.NewTypeConverter) parses it twice, validating it
// against the schema of schemas first, and keeps it for the process's
// life: at a hub's first pass 9 MB allocated in 22 ms instead of 24 MB in
// 55 ms (BenchmarkBuiltinSchemas), and the parsed types dropped once
// compiled.
var builtinSchemas = sync.OnceValue(func() map[schema.GroupVersionKind]Schema {
	out, err := compileBuiltin(builtinSchemaYAML, scheme.Scheme)
	if err != nil {
		// The copy is checked by the package's tests: this is a build
		// that changed it by hand.
		panic("drift: builtin_schema.yaml: " + err.Error())
	}
	return out
})

// compileBuiltin parses a structured-merge-diff schema and compiles the
// schema of each kind s knows whose type it has (by the OpenAPI name s gives
// the kind, as managedfields' scheme type converter resolves it); kinds it
// lacks (lists, options) are left out.
func compileBuiltin(text []byte, s *runtime.Scheme) (map[schema.GroupVersionKind]Schema, error) {
	var types smd.Schema
	if err := yaml.Unmarshal(text, &types); err != nil {
		return nil, err
	}
	out := make(map[schema.GroupVersionKind]Schema)
	c := newCompiler(&types) // one schema: the kinds share its types
	for gvk := range s.AllKnownTypes() {
		name, err := s.ToOpenAPIDefinitionName(gvk)
		if err != nil {
			continue
		}
		if _, ok := types.FindNamedType(name); !ok {
			continue
		}
		out[gvk] = c.schema(smd.TypeRef{NamedType: &name})
	}
	return out, nil
}

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

// node is one type of a Schema, resolved: what the comparer needs of its
// map and list forms (an untyped atom may have both). A nil *node is
// unknown: maps are walked as structs and lists as atomic.
type node struct {
	name     string
	quantity bool // a resource quantity, compared by amount
	m        *mapNode
	l        *listNode
}

// mapNode is the map form of a type.
type mapNode struct {
	fields map[string]*node
	// elem is the type of the keys that are not fields: a free-form map's
	// entries (nil: unknown).
	elem *node
	// free: a free-form map (one element type, no fields: a ConfigMap's
	// data, nodeSelector, matchLabels), whose keys someone else adds are
	// drift. Not the labels and annotations of an ObjectMeta (only the
	// keys desired sets are compared), nor an object whose keys the
	// schema leaves open (x-kubernetes-preserve-unknown-fields).
	free bool
	// groups are its exclusive field groups (see exclusive).
	groups []exclusiveGroup
	// keyedLists are its fields that are associative lists with keys.
	keyedLists []string
}

// listNode is the list form of a type.
type listNode struct {
	kind listKind
	elem *node
	// keys are the key fields of an associative list, in key-name order
	// (the order of KeyString and managedFields); defaults the values the
	// schema publishes for key fields an item may omit.
	keys     []string
	defaults map[string]any
}

// field returns the type of the field name of a map of type n (the struct
// field's, else the element type's); nil when unknown.
func (n *node) field(name string) *node {
	if n == nil || n.m == nil {
		return nil
	}
	if f, ok := n.m.fields[name]; ok {
		return f
	}
	return n.m.elem
}

// freeForm reports whether n is a free-form map.
func (n *node) freeForm() bool { return n != nil && n.m != nil && n.m.free }

// list returns the list form of n; an atomic list of unknown items when
// n is unknown.
func (n *node) list() *listNode {
	if n == nil || n.l == nil {
		return &atomicUnknown
	}
	return n.l
}

// atomicUnknown is the list form of an unknown type. It is never written.
var atomicUnknown = listNode{kind: atomicList}

// listKind is how a list's items are matched.
type listKind int

const (
	atomicList listKind = iota // by index, compared whole
	setList                    // scalars matched by value
	keyedList                  // maps matched by their key fields
)

// compiler resolves the types of one smd schema into nodes, each named
// type (with its element relationship override) once, so recursive types
// end in a cycle of pointers.
type compiler struct {
	types *smd.Schema
	memo  map[compiled]*node
}

// compiled names a resolved named type.
type compiled struct {
	name string
	rel  smd.ElementRelationship
}

func newCompiler(types *smd.Schema) *compiler {
	return &compiler{types: types, memo: make(map[compiled]*node)}
}

// schema returns the Schema whose root has type root.
func (c *compiler) schema(root smd.TypeRef) Schema {
	n := c.ref(root)
	if n == nil {
		return Schema{}
	}
	return Schema{root: n}
}

// ref resolves a type reference; nil when unknown or open.
func (c *compiler) ref(tr smd.TypeRef) *node {
	var rel smd.ElementRelationship
	if tr.ElementRelationship != nil {
		rel = *tr.ElementRelationship
	}
	if tr.NamedType == nil {
		if tr.Inlined.Scalar == nil && tr.Inlined.List == nil && tr.Inlined.Map == nil {
			return nil
		}
		n := &node{}
		c.fill(n, tr.Inlined, rel)
		return n
	}
	name := *tr.NamedType
	if name == untypedDeduced || name == untypedAtomic {
		return nil
	}
	key := compiled{name, rel}
	if n, ok := c.memo[key]; ok {
		return n
	}
	td, ok := c.types.FindNamedType(name)
	if !ok {
		return nil
	}
	n := &node{name: name, quantity: name == quantityType}
	c.memo[key] = n
	c.fill(n, td.Atom, rel)
	return n
}

// fill resolves the map and list forms of atom into n; rel overrides the
// list's element relationship when set.
func (c *compiler) fill(n *node, atom smd.Atom, rel smd.ElementRelationship) {
	if m := atom.Map; m != nil {
		mn := &mapNode{fields: make(map[string]*node, len(m.Fields))}
		n.m = mn
		for _, f := range m.Fields {
			ft := c.ref(f.Type)
			if n.name == objectMetaType && (f.Name == "labels" || f.Name == "annotations") && ft != nil && ft.m != nil {
				only := *ft
				om := *ft.m
				om.free = false
				only.m = &om
				ft = &only
			}
			mn.fields[f.Name] = ft
			if ft != nil && ft.l != nil && ft.l.kind == keyedList {
				mn.keyedLists = append(mn.keyedLists, f.Name)
			}
		}
		open := m.ElementType.NamedType != nil && *m.ElementType.NamedType == untypedDeduced
		mn.elem = c.ref(m.ElementType)
		hasElem := m.ElementType.NamedType != nil || m.ElementType.Inlined.Scalar != nil ||
			m.ElementType.Inlined.List != nil || m.ElementType.Inlined.Map != nil
		mn.free = len(m.Fields) == 0 && hasElem && !open
		mn.groups = exclusive(n.name, m.Unions)
	}
	if l := atom.List; l != nil {
		ln := &listNode{kind: atomicList, elem: c.ref(l.ElementType)}
		n.l = ln
		r := l.ElementRelationship
		if rel != "" {
			r = rel
		}
		if r == smd.Associative {
			ln.kind = setList
			if len(l.Keys) > 0 {
				ln.kind = keyedList
				ln.keys = slices.Sorted(slices.Values(l.Keys))
				ln.defaults = keyDefaults(c.types, l)
			}
		}
	}
}

// keyDefaults returns the defaults the schema publishes for the key fields
// of the items of l.
func keyDefaults(types *smd.Schema, l *smd.List) map[string]any {
	var atom smd.Atom
	if l.ElementType.NamedType != nil {
		td, ok := types.FindNamedType(*l.ElementType.NamedType)
		if !ok {
			return nil
		}
		atom = td.Atom
	} else {
		atom = l.ElementType.Inlined
	}
	if atom.Map == nil {
		return nil
	}
	var out map[string]any
	for _, k := range l.Keys {
		if sf, ok := atom.Map.FindField(k); ok && sf.Default != nil {
			if out == nil {
				out = make(map[string]any, len(l.Keys))
			}
			out[k] = sf.Default
		}
	}
	return out
}

// itemKey returns the key of an item of the associative list l in field
// path form (KeyString: the values in key-name order, joined by "/"). A key
// field the item omits takes the default the schema publishes for it (a
// port's protocol, TCP); complete is false when one has no default, and
// the key is then made of the fields the item has.
func (l *listNode) itemKey(item map[string]any) (key string, complete bool) {
	if len(l.keys) == 1 {
		v, ok := l.keyValue(item, l.keys[0])
		if !ok {
			return "", false
		}
		return scalarString(v), true
	}
	complete = true
	var b strings.Builder
	for _, k := range l.keys {
		v, ok := l.keyValue(item, k)
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
func (l *listNode) keyValue(item map[string]any, k string) (any, bool) {
	if v, ok := item[k]; ok {
		return v, true
	}
	v, ok := l.defaults[k]
	return v, ok
}

// sameKeys reports whether the live item has the values of the key fields
// the desired item sets (for a desired item whose key is incomplete).
func (l *listNode) sameKeys(desired, live map[string]any) bool {
	for _, k := range l.keys {
		dv, ok := desired[k]
		if !ok {
			continue
		}
		lv, ok := l.keyValue(live, k)
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

// exclusive returns the groups of mutually exclusive fields of a struct
// type: the EnvVar rule above, else its unions (x-kubernetes-unions).
func exclusive(name string, unions []smd.Union) []exclusiveGroup {
	switch name {
	case envVarType:
		return envVarGroups
	case envSourceType:
		return envSourceGroups
	}
	var out []exclusiveGroup
	for _, u := range unions {
		g := exclusiveGroup{fields: make([]string, len(u.Fields))}
		for i, f := range u.Fields {
			g.fields[i] = f.FieldName
		}
		slices.Sort(g.fields)
		out = append(out, g)
	}
	return out
}

package drift

import (
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/hub"
)

// none is the text of an absent value.
const none = "<none>"

// Classify compares the desired object with the live one (nil when it does
// not exist), by the built-in schema of its kind (BuiltinSchema; the zero
// Schema for kinds client-go does not know). See ClassifyWith.
// managedBy is the expected value of kubeobj.ManagedByLabel (empty means
// kubeobj.DefaultManagedBy).
func Classify(desired, actual *unstructured.Unstructured, managedBy string) hub.Drift {
	d, _ := ClassifyWith(desired, actual, managedBy, Ignore{}, schemaOf(desired.Object))
	return d
}

// Ignore is what ClassifyIgnoring needs to set ignored differences apart.
type Ignore struct {
	// Rules are the ignore rules that apply to the object's kind.
	Rules []hub.IgnoreRule
	// Owners returns the live object's field owners (its managedFields).
	// It is called at most once, and only when a rule with managers must
	// be matched against a difference.
	Owners func() ([]FieldOwner, error)
	// Self is the hub's own field manager (kubeobj.FieldManagerFor), never a
	// field's current owner for a manager rule. Empty means
	// kubeobj.FieldManager.
	Self string
}

// ClassifyIgnoring is ClassifyWith with the built-in schema of desired's
// kind (see Classify).
func ClassifyIgnoring(desired, actual *unstructured.Unstructured, managedBy string, ig Ignore) (hub.Drift, error) {
	return ClassifyWith(desired, actual, managedBy, ig, schemaOf(desired.Object))
}

// ClassifyWith compares the desired object with the live one (nil when it
// does not exist) along s, the schema of their kind, and sorts the
// difference into a class with the differing fields:
//
//   - only fields present in desired are compared; in a struct the live
//     object's other fields are defaults or someone else's, never drift;
//   - associative lists (x-kubernetes-list-type map) are matched by their
//     key fields, set lists by value, and the items someone else added to
//     them are reported as added, with the JSON pointer that removes them
//     (the items of ours they lack carry the pointer of the live list and
//     that of the item in desired, ListPointer and DesiredPointer, so a
//     replaced item can be put back in the patch that removes the other);
//     so are the entries of the associative lists of an item we declare
//     (the env vars of our container) when desired leaves that list out;
//   - atomic lists are compared whole: the same length, and each item
//     equal at the fields desired sets (the apiserver defaults fields
//     inside items, such as a volume claim template's volumeMode);
//   - the keys someone else adds to a free-form map desired sets (a
//     ConfigMap's data, nodeSelector, matchLabels) are added too; the
//     labels and annotations of an object's metadata (and of a template's)
//     are compared only for the keys desired sets;
//   - status, and the rest of the object's metadata, are never drift.
//
// ig sets ignored differences apart: the differences a rule covers move to
// Drift.Ignored, with the rule's name, and the class is decided by the
// rest (only ignored differences: in sync). A missing or deleting object
// has no fields to ignore: it is classified without reading desired, ig or
// s, so a caller may pass nil and zero values for them then. The error is ig.Owners' (the manager rules then
// match nothing); the drift is still returned. managedBy is the expected
// value of kubeobj.ManagedByLabel (empty means kubeobj.DefaultManagedBy).
func ClassifyWith(desired, actual *unstructured.Unstructured, managedBy string, ig Ignore, s Schema) (hub.Drift, error) {
	if actual == nil {
		return hub.Drift{Class: hub.DriftMissing}, nil
	}
	if actual.GetDeletionTimestamp() != nil {
		return hub.Drift{Class: hub.DriftDeleting}, nil
	}
	if managedBy == "" {
		managedBy = kubeobj.DefaultManagedBy
	}
	c := walker{keepSegs: len(ig.Rules) > 0}
	c.object(desired.Object, actual.Object, s.root)
	sort.Sort(&c)
	var ignored []hub.IgnoredField
	var err error
	if c.keepSegs && len(c.diffs) > 0 {
		c.diffs, ignored, err = applyIgnore(c.diffs, c.segs, ig)
	}
	if v, ok := actual.GetLabels()[kubeobj.ManagedByLabel]; !ok || v != managedBy {
		return hub.Drift{Class: hub.DriftUnlabelled, Fields: c.diffs, Ignored: ignored}, err
	}
	if len(c.diffs) == 0 {
		return hub.Drift{Class: hub.DriftNone, Ignored: ignored}, err
	}
	class := hub.DriftAdded
	for _, f := range c.diffs {
		if !f.Added {
			class = hub.DriftModified
			break
		}
	}
	return hub.Drift{Class: class, Fields: c.diffs, Ignored: ignored}, err
}

// walker walks a desired object and the live one along their schema. It
// records the differences (ClassifyWith) and, when project is set, builds
// the projection of the live object (ProjectWith): both follow the same
// rules by construction. It keeps the current position as a stack of
// segments and only spells the field path and JSON pointer when it records
// a difference, so an in-sync comparison allocates little.
type walker struct {
	project bool
	diffs   []hub.FieldDiff
	path    []seg
	// keepSegs records, for each difference, its path as segments (segs,
	// parallel to diffs), for the ignore rules.
	keepSegs bool
	segs     [][]string
}

// seg is one step of the walker's position: a map field, or a list item.
type seg struct {
	// name is the field's name, or the item's key (or value, in a set);
	// empty for an item of an atomic list (named by its index).
	name string
	// idx is the live index of a list item, and -1 for a step that adds
	// nothing to the pointer (an item live lacks, or a member whose
	// pointer is its struct's).
	idx int
	// didx is the desired index of a list item, and -1 for an item
	// desired lacks.
	didx int
	item bool
}

// Len, Less and Swap sort the differences (and their segments) by path.
func (c *walker) Len() int           { return len(c.diffs) }
func (c *walker) Less(i, j int) bool { return c.diffs[i].Path < c.diffs[j].Path }
func (c *walker) Swap(i, j int) {
	c.diffs[i], c.diffs[j] = c.diffs[j], c.diffs[i]
	if c.keepSegs {
		c.segs[i], c.segs[j] = c.segs[j], c.segs[i]
	}
}

// pushField enters the map field k; pushItem the list item named name
// (by its index when name is empty) at live index idx and desired index
// didx (-1: none).
func (c *walker) pushField(k string) { c.path = append(c.path, seg{name: k}) }
func (c *walker) pushItem(name string, idx, didx int) {
	c.path = append(c.path, seg{name: name, idx: idx, didx: didx, item: true})
}
func (c *walker) pop() { c.path = c.path[:len(c.path)-1] }

// text returns the path segment's text (a field's name, an item's name or
// index).
func (s seg) text() string {
	if s.item && s.name == "" {
		return strconv.Itoa(s.idx)
	}
	return s.name
}

// pathString spells the current position as a field path.
func (c *walker) pathString() string {
	var b strings.Builder
	for i, s := range c.path {
		switch {
		case s.item:
			b.WriteByte('[')
			b.WriteString(s.text())
			b.WriteByte(']')
		case i > 0:
			b.WriteByte('.')
			b.WriteString(s.name)
		default:
			b.WriteString(s.name)
		}
	}
	return b.String()
}

// ptrString spells the current position as a JSON pointer into the live
// object.
func (c *walker) ptrString() string {
	var b strings.Builder
	for _, s := range c.path {
		switch {
		case s.item && s.idx >= 0:
			b.WriteByte('/')
			b.WriteString(strconv.Itoa(s.idx))
		case !s.item && s.idx >= 0:
			b.WriteByte('/')
			b.WriteString(escapePointer(s.name))
		}
	}
	return b.String()
}

// desiredPtrString spells the current position as a JSON pointer into the
// desired object.
func (c *walker) desiredPtrString() string {
	var b strings.Builder
	for _, s := range c.path {
		b.WriteByte('/')
		if s.item {
			b.WriteString(strconv.Itoa(s.didx))
		} else {
			b.WriteString(escapePointer(s.name))
		}
	}
	return b.String()
}

// underResources reports whether the current position lies inside a
// resources field (requests and limits hold quantities): the quantities
// of custom resources, whose schemas type them int-or-string without a
// name.
func (c *walker) underResources() bool {
	for _, s := range c.path {
		if !s.item && s.name == "resources" {
			return true
		}
	}
	return false
}

func (c *walker) add(f hub.FieldDiff) {
	c.diffs = append(c.diffs, f)
	if !c.keepSegs {
		return
	}
	if len(c.path) == 0 {
		// metadata.labels.<key> and metadata.annotations.<key>: the key
		// may hold dots.
		c.segs = append(c.segs, strings.SplitN(f.Path, ".", 3))
		return
	}
	segs := make([]string, len(c.path))
	for i, s := range c.path {
		segs[i] = s.text()
	}
	c.segs = append(c.segs, segs)
}

// differ records a modified field at the current path.
func (c *walker) differ(desired, actual string) {
	c.add(hub.FieldDiff{Path: c.pathString(), Desired: desired, Actual: actual})
}

// lacks records an item of ours that the live list lacks, at the current
// path (an item step with no live index): with the live list's pointer
// and the item's pointer in the desired object, to add it back.
func (c *walker) lacks(desired string) {
	c.add(hub.FieldDiff{Path: c.pathString(), Desired: desired, Actual: none,
		ListPointer: c.ptrString(), DesiredPointer: c.desiredPtrString()})
}

// added records an entry someone else added at the current path.
func (c *walker) added(actual string) {
	c.add(hub.FieldDiff{Path: c.pathString(), Desired: none, Actual: actual, Added: true, Pointer: c.ptrString()})
}

// copyOf returns a deep copy of v when projecting, else nil.
func (c *walker) copyOf(v any) any {
	if !c.project {
		return nil
	}
	return copyValue(v)
}

// object walks the top level of desired and actual (of type root). It
// returns the projection when projecting: apiVersion, kind, name and
// namespace desired's, the live labels and annotations desired sets, and
// every other field desired sets that the live object has.
func (c *walker) object(desired, actual map[string]any, root *node) map[string]any {
	var out map[string]any
	if c.project {
		out = make(map[string]any, len(desired))
	}
	for k, dv := range desired {
		switch k {
		case "apiVersion", "kind":
			if out != nil {
				out[k] = copyValue(dv)
			}
			continue
		case "status":
			continue
		case "metadata":
			c.metadata(dv, actual["metadata"])
			if out != nil {
				out[k] = projectMetadata(dv, actual["metadata"])
			}
			continue
		}
		av, ok := actual[k]
		c.pushField(k)
		p, kept := c.member(dv, av, ok, root.field(k))
		c.pop()
		if kept && out != nil {
			out[k] = p
		}
	}
	return out
}

// metadata compares only the labels and annotations we set.
func (c *walker) metadata(dv, av any) {
	dm, _ := dv.(map[string]any)
	am, _ := av.(map[string]any)
	for _, field := range []string{"labels", "annotations"} {
		want, _ := dm[field].(map[string]any)
		have, _ := am[field].(map[string]any)
		for k, v := range want {
			got, ok := have[k]
			switch {
			case !ok:
				c.add(hub.FieldDiff{Path: "metadata." + field + "." + k, Desired: text(v), Actual: none})
			case text(got) != text(v):
				c.add(hub.FieldDiff{Path: "metadata." + field + "." + k, Desired: text(v), Actual: text(got)})
			}
		}
	}
}

// member walks one desired value and the live one at the current path; a
// value the live object lacks differs, and has no projection (kept false).
func (c *walker) member(dv, av any, present bool, t *node) (any, bool) {
	if !present {
		c.differ(text(dv), none)
		return nil, false
	}
	return c.value(dv, av, t), true
}

// value walks a desired value and the live one of type t, at the current
// path, and returns the projection of the live one (nil unless
// projecting).
func (c *walker) value(dv, av any, t *node) any {
	switch d := dv.(type) {
	case map[string]any:
		a, ok := av.(map[string]any)
		if !ok {
			c.differ(text(dv), text(av))
			return c.copyOf(av)
		}
		return c.mapValue(d, a, t)
	case []any:
		a, ok := av.([]any)
		if !ok {
			c.differ(text(dv), text(av))
			return c.copyOf(av)
		}
		return c.list(d, a, t)
	default:
		if scalarEqual((t != nil && t.quantity) || c.underResources(), dv, av) {
			return dv
		}
		c.differ(text(dv), text(av))
		return c.copyOf(av)
	}
}

// mapValue walks a map: the fields (or keys) desired sets; in a free-form
// map, the keys someone else added; in a struct, the members of its
// exclusive groups someone else set.
func (c *walker) mapValue(d, a map[string]any, t *node) any {
	var out map[string]any
	if c.project {
		out = make(map[string]any, len(d))
	}
	for k, v := range d {
		got, ok := a[k]
		c.pushField(k)
		p, kept := c.member(v, got, ok, t.field(k))
		c.pop()
		if kept && out != nil {
			out[k] = p
		}
	}
	if t.freeForm() {
		for k, v := range a {
			if _, ok := d[k]; ok {
				continue
			}
			c.pushField(k)
			c.added(text(v))
			c.pop()
			if out != nil {
				out[k] = copyValue(v)
			}
		}
	} else if t != nil && t.m != nil && len(t.m.groups) > 0 {
		c.exclusive(d, a, t.m.groups, out)
	}
	if out == nil {
		return nil
	}
	return out
}

// exclusive records the members of each exclusive group of a struct that
// the live struct has and desired leaves out, and copies them into the
// projection out.
func (c *walker) exclusive(d, a map[string]any, groups []exclusiveGroup, out map[string]any) {
	for _, g := range groups {
		if !g.always && !slices.ContainsFunc(g.fields, func(f string) bool { _, ok := d[f]; return ok }) {
			continue
		}
		for _, f := range g.fields {
			if _, want := d[f]; want {
				continue
			}
			v, ok := a[f]
			if !ok {
				continue
			}
			c.pushField(f)
			if g.parentPointer {
				c.path[len(c.path)-1].idx = -1
			}
			c.added(text(v))
			c.pop()
			if out != nil {
				out[f] = copyValue(v)
			}
		}
	}
}

// list walks a list by how its schema matches items.
func (c *walker) list(d, a []any, t *node) any {
	l := t.list()
	switch l.kind {
	case keyedList:
		return c.keyedList(d, a, l)
	case setList:
		if scalars(d) && scalars(a) {
			return c.setList(d, a)
		}
	}
	return c.atomicList(d, a, l.elem)
}

// atomicList compares a list whole: by index when the lengths match.
func (c *walker) atomicList(d, a []any, elem *node) any {
	if len(d) != len(a) {
		c.differ(text(d), text(a))
		return c.copyOf(a)
	}
	var out []any
	if c.project {
		out = make([]any, len(d))
	}
	for i := range d {
		c.pushItem("", i, i)
		p := c.value(d[i], a[i], elem)
		c.pop()
		if out != nil {
			out[i] = p
		}
	}
	if out == nil {
		return nil
	}
	return out
}

// setList matches scalar items by value: a desired item the live list
// lacks differs, a live item desired lacks was added.
func (c *walker) setList(d, a []any) any {
	var out []any
	if c.project {
		out = make([]any, 0, len(a))
	}
	for j, v := range d {
		if !slices.ContainsFunc(a, func(x any) bool { return scalarEqual(false, v, x) }) {
			c.pushItem(scalarString(v), -1, j)
			c.lacks(text(v))
			c.pop()
		} else if out != nil {
			out = append(out, v)
		}
	}
	for i, v := range a {
		if slices.ContainsFunc(d, func(x any) bool { return scalarEqual(false, x, v) }) {
			continue
		}
		c.pushItem(scalarString(v), i, -1)
		c.added(text(v))
		c.pop()
		if out != nil {
			out = append(out, v)
		}
	}
	if out == nil {
		return nil
	}
	return out
}

// keyedList matches the items of an associative list by their key fields.
// The projection holds the live items desired has, in desired's order,
// then the ones someone else added, in live order.
func (c *walker) keyedList(d, a []any, l *listNode) any {
	live := make(map[string]int, len(a))
	for i, it := range a {
		if m, ok := it.(map[string]any); ok {
			k, _ := l.itemKey(m)
			live[k] = i
		}
	}
	seen := make([]bool, len(a))
	var out []any
	if c.project {
		out = make([]any, 0, len(a))
	}
	for j, it := range d {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		k, complete := l.itemKey(m)
		i, found := live[k]
		if !complete {
			i = slices.IndexFunc(a, func(x any) bool {
				lm, ok := x.(map[string]any)
				return ok && l.sameKeys(m, lm)
			})
			found = i >= 0
		}
		if !found || seen[i] {
			c.pushItem(k, -1, j)
			c.lacks(text(m))
			c.pop()
			continue
		}
		seen[i] = true
		got := a[i].(map[string]any)
		c.pushItem(k, i, j)
		p := c.item(m, got, l.elem)
		c.pop()
		if out != nil {
			out = append(out, p)
		}
	}
	for i, it := range a {
		m, ok := it.(map[string]any)
		if !ok || seen[i] {
			continue
		}
		k, _ := l.itemKey(m)
		c.pushItem(k, i, -1)
		c.added(summary(m))
		c.pop()
		if out != nil {
			out = append(out, copyValue(m))
		}
	}
	if out == nil {
		return nil
	}
	return out
}

// item walks a matched item of an associative list: as a map, and the
// associative lists of the item that desired leaves out are ours whole
// (we declare the item), so every live entry in them was added.
func (c *walker) item(d, a map[string]any, elem *node) any {
	p := c.mapValue(d, a, elem)
	if elem == nil || elem.m == nil || len(elem.m.keyedLists) == 0 {
		return p
	}
	out, _ := p.(map[string]any)
	for _, f := range elem.m.keyedLists {
		if _, want := d[f]; want {
			continue
		}
		items, ok := a[f].([]any)
		if !ok || len(items) == 0 {
			continue
		}
		c.pushField(f)
		c.keyedList(nil, items, elem.field(f).l)
		c.pop()
		if out != nil {
			out[f] = copyList(items)
		}
	}
	return p
}

// scalars reports whether every item of l is a scalar.
func scalars(l []any) bool {
	for _, v := range l {
		switch v.(type) {
		case map[string]any, []any:
			return false
		}
	}
	return true
}

// scalarEqual compares two leaf values; numbers by value, and resource
// quantities by amount when quantity is set.
func scalarEqual(quantity bool, d, a any) bool {
	if quantity {
		ds, dok := d.(string)
		as, aok := a.(string)
		if dok && aok {
			dq, err1 := resource.ParseQuantity(ds)
			aq, err2 := resource.ParseQuantity(as)
			if err1 == nil && err2 == nil {
				return dq.Cmp(aq) == 0
			}
		}
	}
	if df, ok := number(d); ok {
		af, ok := number(a)
		return ok && df == af
	}
	return d == a
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// text formats a value for display.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return scalarString(x)
	case bool:
		return strconv.FormatBool(x)
	case map[string]any:
		return summary(x)
	case []any:
		parts := make([]string, len(x))
		for i := range x {
			parts[i] = text(x[i])
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}

// summary formats a small map as {k: v, ...} in key order.
func summary(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + text(m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// escapePointer escapes a JSON pointer segment (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

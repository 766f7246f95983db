package hub

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DriftClass says how an object differs from its desired state.
type DriftClass string

// Drift classes.
const (
	// DriftNone: the object is in sync.
	DriftNone DriftClass = "in-sync"
	// DriftMissing: the object does not exist (deleted).
	DriftMissing DriftClass = "missing"
	// DriftModified: a field we manage differs.
	DriftModified DriftClass = "modified"
	// DriftAdded: someone added entries inside what we own (a ConfigMap data
	// key, an env var, a container, a port).
	DriftAdded DriftClass = "added"
	// DriftUnlabelled: our managed-by label was removed.
	DriftUnlabelled DriftClass = "unlabelled"
	// DriftDeleting: the object has a deletionTimestamp; it is recreated
	// once it is gone.
	DriftDeleting DriftClass = "deleting"
)

// FieldDiff is one differing field.
type FieldDiff struct {
	// Path is the field path (see FieldsV1Paths for the form).
	Path string
	// Desired and Actual are the values as text; "<none>" when absent.
	Desired string
	Actual  string
	// Added marks an entry someone else added inside what we own.
	Added bool
	// Pointer is the JSON pointer of an added entry in the live object,
	// used to remove it.
	Pointer string
}

// String formats the diff as "path: desired -> actual" or "+path=actual".
func (f FieldDiff) String() string {
	if f.Added {
		return "+" + f.Path + "=" + f.Actual
	}
	return f.Path + ": " + f.Desired + " -> " + f.Actual
}

// Drift is the result of comparing desired with actual.
type Drift struct {
	Class  DriftClass
	Fields []FieldDiff
}

// InSync reports whether there is no drift.
func (d Drift) InSync() bool { return d.Class == DriftNone }

// Summary is a one-line description, e.g. "modified spec.replicas: 3 -> 1".
func (d Drift) Summary() string {
	if len(d.Fields) == 0 {
		return string(d.Class)
	}
	parts := make([]string, 0, len(d.Fields))
	for _, f := range d.Fields {
		parts = append(parts, f.String())
	}
	return string(d.Class) + " " + strings.Join(parts, ", ")
}

const none = "<none>"

// Classify compares the desired object with the live one (nil when it does
// not exist). Only fields present in desired are compared; entries added by
// others inside owned collections (ConfigMap data, container env, containers,
// ports) are reported as added. Status, and labels or annotations we do not
// set, are never drift. managedBy is the expected value of ManagedByLabel.
func Classify(desired, actual *unstructured.Unstructured, managedBy string) Drift {
	if actual == nil {
		return Drift{Class: DriftMissing}
	}
	if actual.GetDeletionTimestamp() != nil {
		return Drift{Class: DriftDeleting}
	}
	if managedBy == "" {
		managedBy = DefaultManagedBy
	}
	c := comparer{}
	for k, dv := range desired.Object {
		switch k {
		case "apiVersion", "kind", "status":
			continue
		case "metadata":
			c.metadata(dv, actual.Object["metadata"])
			continue
		}
		av, ok := actual.Object[k]
		c.push(k, "/"+escapePointer(k))
		c.compare(dv, av, ok)
		c.pop()
	}
	sort.Slice(c.diffs, func(i, j int) bool { return c.diffs[i].Path < c.diffs[j].Path })
	if v, ok := actual.GetLabels()[ManagedByLabel]; !ok || v != managedBy {
		return Drift{Class: DriftUnlabelled, Fields: c.diffs}
	}
	if len(c.diffs) == 0 {
		return Drift{Class: DriftNone}
	}
	class := DriftAdded
	for _, f := range c.diffs {
		if !f.Added {
			class = DriftModified
			break
		}
	}
	return Drift{Class: class, Fields: c.diffs}
}

// comparer walks desired and actual objects. It keeps the current field path
// and JSON pointer as segment stacks and only joins them when it records a
// difference, so an in-sync comparison allocates little.
type comparer struct {
	diffs []FieldDiff
	path  []string // "spec", ".replicas", "[app]", ...
	ptr   []string // "/spec", "/replicas", "/0", ...
}

func (c *comparer) push(pathSeg, ptrSeg string) {
	c.path = append(c.path, pathSeg)
	c.ptr = append(c.ptr, ptrSeg)
}

func (c *comparer) pop() {
	c.path = c.path[:len(c.path)-1]
	c.ptr = c.ptr[:len(c.ptr)-1]
}

func (c *comparer) pathString() string { return strings.Join(c.path, "") }
func (c *comparer) ptrString() string  { return strings.Join(c.ptr, "") }

// field returns the path segment of a map key.
func (c *comparer) field(k string) string {
	if len(c.path) == 0 {
		return k
	}
	return "." + k
}

func (c *comparer) add(f FieldDiff) { c.diffs = append(c.diffs, f) }

// differ records a modified field at the current path.
func (c *comparer) differ(desired, actual string) {
	c.add(FieldDiff{Path: c.pathString(), Desired: desired, Actual: actual})
}

// added records an entry someone else added at the current path.
func (c *comparer) added(actual string) {
	c.add(FieldDiff{Path: c.pathString(), Desired: none, Actual: actual, Added: true, Pointer: c.ptrString()})
}

// metadata compares only the labels and annotations we set.
func (c *comparer) metadata(dv, av any) {
	dm, _ := dv.(map[string]any)
	am, _ := av.(map[string]any)
	for _, field := range []string{"labels", "annotations"} {
		want, _ := dm[field].(map[string]any)
		have, _ := am[field].(map[string]any)
		for k, v := range want {
			got, ok := have[k]
			switch {
			case !ok:
				c.add(FieldDiff{Path: "metadata." + field + "." + k, Desired: text(v), Actual: none})
			case text(got) != text(v):
				c.add(FieldDiff{Path: "metadata." + field + "." + k, Desired: text(v), Actual: text(got)})
			}
		}
	}
}

// addedMap reports whether extra keys of the map at path are drift: data we
// own whole.
func addedMap(path []string) bool {
	return len(path) == 1 && (path[0] == "data" || path[0] == "binaryData")
}

// compare compares one desired value with the actual one at the current
// path.
func (c *comparer) compare(dv, av any, present bool) {
	if !present {
		c.differ(text(dv), none)
		return
	}
	switch d := dv.(type) {
	case map[string]any:
		a, ok := av.(map[string]any)
		if !ok {
			c.differ(text(dv), text(av))
			return
		}
		for k, v := range d {
			got, ok := a[k]
			c.push(c.field(k), "/"+escapePointer(k))
			c.compare(v, got, ok)
			c.pop()
		}
		if addedMap(c.path) {
			for k, v := range a {
				if _, ok := d[k]; !ok {
					c.push(c.field(k), "/"+escapePointer(k))
					c.added(text(v))
					c.pop()
				}
			}
		}
	case []any:
		a, ok := av.([]any)
		if !ok {
			c.differ(text(dv), text(av))
			return
		}
		c.list(d, a)
	default:
		if !scalarEqual(c.path, dv, av) {
			c.differ(text(dv), text(av))
		}
	}
}

// listKey returns the merge key of a list item in the list named last, or
// "" for lists compared by index. added reports whether extra items are
// drift.
func listKey(last string, item map[string]any) (key string, added bool) {
	switch last {
	case "containers", "initContainers", "env":
		return scalarString(item["name"]), true
	case "ports":
		if cp, ok := item["containerPort"]; ok {
			return scalarString(cp) + "/" + scalarString(protocolOf(item)), true
		}
		if p, ok := item["port"]; ok {
			return scalarString(p) + "/" + scalarString(protocolOf(item)), true
		}
	case "volumes", "volumeMounts", "envFrom":
		if n, ok := item["name"]; ok {
			return scalarString(n), false
		}
	}
	return "", false
}

func protocolOf(item map[string]any) any {
	if p, ok := item["protocol"]; ok {
		return p
	}
	return "TCP"
}

// lastField returns the name of the field the current path ends in.
func (c *comparer) lastField() string {
	if len(c.path) == 0 {
		return ""
	}
	return strings.TrimPrefix(c.path[len(c.path)-1], ".")
}

func (c *comparer) list(d, a []any) {
	last := c.lastField()
	// Keyed lists: match items by merge key.
	for _, items := range [][]any{d, a} {
		if len(items) == 0 {
			continue
		}
		if first, ok := items[0].(map[string]any); ok {
			if k, _ := listKey(last, first); k != "" {
				c.keyedList(last, d, a)
				return
			}
		}
		break
	}
	// Atomic lists: compare by index.
	if len(d) != len(a) {
		c.differ(text(d), text(a))
		return
	}
	for i := range d {
		seg := strconv.Itoa(i)
		c.push("["+seg+"]", "/"+seg)
		c.compare(d[i], a[i], true)
		c.pop()
	}
}

func (c *comparer) keyedList(last string, d, a []any) {
	type idx struct {
		item map[string]any
		i    int
	}
	actual := make(map[string]idx, len(a))
	extra := false
	for i, it := range a {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		k, add := listKey(last, m)
		actual[k] = idx{m, i}
		extra = extra || add
	}
	var seen map[string]bool
	if extra {
		seen = make(map[string]bool, len(d))
	}
	for _, it := range d {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		k, _ := listKey(last, m)
		if seen != nil {
			seen[k] = true
		}
		got, ok := actual[k]
		if !ok {
			c.push("["+k+"]", "")
			c.differ(text(m), none)
			c.pop()
			continue
		}
		c.push("["+k+"]", "/"+strconv.Itoa(got.i))
		for f, v := range m {
			av, present := got.item[f]
			c.push("."+f, "/"+escapePointer(f))
			c.compare(v, av, present)
			c.pop()
		}
		// Owned collections we left empty: everything in them was added.
		if last == "containers" || last == "initContainers" {
			for _, f := range []string{"env", "ports"} {
				if _, want := m[f]; want {
					continue
				}
				items, _ := got.item[f].([]any)
				if len(items) == 0 {
					continue
				}
				c.push("."+f, "/"+f)
				c.keyedList(f, nil, items)
				c.pop()
			}
		}
		c.pop()
	}
	if !extra {
		return
	}
	for i, it := range a {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		k, add := listKey(last, m)
		if seen[k] || !add {
			continue
		}
		c.push("["+k+"]", "/"+strconv.Itoa(i))
		c.added(summary(m))
		c.pop()
	}
}

// scalarEqual compares two leaf values; numbers by value, resource
// quantities by amount.
func scalarEqual(path []string, d, a any) bool {
	if underResources(path) {
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

func underResources(path []string) bool {
	for _, p := range path {
		if p == ".resources" {
			return true
		}
	}
	return false
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

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

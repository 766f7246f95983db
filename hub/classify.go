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
		c.compare(k, "/"+escapePointer(k), dv, av, ok)
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

type comparer struct {
	diffs []FieldDiff
}

func (c *comparer) add(f FieldDiff) { c.diffs = append(c.diffs, f) }

// metadata compares only the labels and annotations we set.
func (c *comparer) metadata(dv, av any) {
	dm, _ := dv.(map[string]any)
	am, _ := av.(map[string]any)
	for _, field := range []string{"labels", "annotations"} {
		want, _ := dm[field].(map[string]any)
		have, _ := am[field].(map[string]any)
		for k, v := range want {
			path := "metadata." + field + "." + k
			got, ok := have[k]
			if !ok {
				c.add(FieldDiff{Path: path, Desired: text(v), Actual: none})
			} else if text(got) != text(v) {
				c.add(FieldDiff{Path: path, Desired: text(v), Actual: text(got)})
			}
		}
	}
}

// addedMaps are the maps whose extra keys are drift: data we own whole.
func addedMap(path string) bool {
	return path == "data" || path == "binaryData"
}

func (c *comparer) compare(path, ptr string, dv, av any, present bool) {
	if !present {
		c.add(FieldDiff{Path: path, Desired: text(dv), Actual: none})
		return
	}
	switch d := dv.(type) {
	case map[string]any:
		a, ok := av.(map[string]any)
		if !ok {
			c.add(FieldDiff{Path: path, Desired: text(dv), Actual: text(av)})
			return
		}
		for k, v := range d {
			got, ok := a[k]
			c.compare(path+"."+k, ptr+"/"+escapePointer(k), v, got, ok)
		}
		if addedMap(path) {
			for k, v := range a {
				if _, ok := d[k]; !ok {
					c.add(FieldDiff{Path: path + "." + k, Desired: none, Actual: text(v), Added: true, Pointer: ptr + "/" + escapePointer(k)})
				}
			}
		}
	case []any:
		a, ok := av.([]any)
		if !ok {
			c.add(FieldDiff{Path: path, Desired: text(dv), Actual: text(av)})
			return
		}
		c.list(path, ptr, d, a)
	default:
		if !scalarEqual(path, dv, av) {
			c.add(FieldDiff{Path: path, Desired: text(dv), Actual: text(av)})
		}
	}
}

// listKey returns the merge key of a list item at path, or "" for lists
// compared by index. added reports whether extra items are drift.
func listKey(path string, item map[string]any) (key string, added bool) {
	last := path
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		last = path[i+1:]
	}
	switch last {
	case "containers", "initContainers":
		return KeyString(map[string]any{"name": item["name"]}), true
	case "env":
		return KeyString(map[string]any{"name": item["name"]}), true
	case "ports":
		if cp, ok := item["containerPort"]; ok {
			return KeyString(map[string]any{"containerPort": cp, "protocol": protocolOf(item)}), true
		}
		if p, ok := item["port"]; ok {
			return KeyString(map[string]any{"port": p, "protocol": protocolOf(item)}), true
		}
	case "volumes", "volumeMounts", "envFrom":
		if n, ok := item["name"]; ok {
			return KeyString(map[string]any{"name": n}), false
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

func (c *comparer) list(path, ptr string, d, a []any) {
	// Keyed lists: match items by merge key.
	if len(d) > 0 {
		if first, ok := d[0].(map[string]any); ok {
			if k, _ := listKey(path, first); k != "" {
				c.keyedList(path, ptr, d, a)
				return
			}
		}
	}
	if len(d) == 0 && len(a) > 0 {
		if first, ok := a[0].(map[string]any); ok {
			if k, _ := listKey(path, first); k != "" {
				c.keyedList(path, ptr, d, a)
				return
			}
		}
	}
	// Atomic lists: compare by index.
	if len(d) != len(a) {
		c.add(FieldDiff{Path: path, Desired: text(d), Actual: text(a)})
		return
	}
	for i := range d {
		c.compare(fmt.Sprintf("%s[%d]", path, i), fmt.Sprintf("%s/%d", ptr, i), d[i], a[i], true)
	}
}

func (c *comparer) keyedList(path, ptr string, d, a []any) {
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
		k, add := listKey(path, m)
		actual[k] = idx{m, i}
		extra = extra || add
	}
	seen := make(map[string]bool, len(d))
	for _, it := range d {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		k, _ := listKey(path, m)
		seen[k] = true
		p := path + "[" + k + "]"
		got, ok := actual[k]
		if !ok {
			c.add(FieldDiff{Path: p, Desired: text(m), Actual: none})
			continue
		}
		for f, v := range m {
			av, present := got.item[f]
			c.compare(p+"."+f, fmt.Sprintf("%s/%d/%s", ptr, got.i, escapePointer(f)), v, av, present)
		}
		// Owned collections we left empty: everything in them was added.
		for _, f := range []string{"env", "ports"} {
			if _, want := m[f]; want {
				continue
			}
			items, _ := got.item[f].([]any)
			c.keyedList(p+"."+f, fmt.Sprintf("%s/%d/%s", ptr, got.i, f), nil, items)
		}
	}
	if !extra {
		return
	}
	for i, it := range a {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		k, add := listKey(path, m)
		if seen[k] || !add {
			continue
		}
		c.add(FieldDiff{Path: path + "[" + k + "]", Desired: none, Actual: summary(m), Added: true, Pointer: fmt.Sprintf("%s/%d", ptr, i)})
	}
}

// scalarEqual compares two leaf values; numbers by value, resource
// quantities by amount.
func scalarEqual(path string, d, a any) bool {
	if strings.Contains(path, "resources.") {
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

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

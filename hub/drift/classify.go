package drift

import (
	"fmt"
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
// not exist). Only fields present in desired are compared; entries added by
// others inside owned collections (ConfigMap data, container env, containers,
// ports) are reported as added, with the JSON pointer that removes them.
// Status, and labels or annotations we do not set, are never drift.
// managedBy is the expected value of hub.ManagedByLabel (empty means
// hub.DefaultManagedBy).
func Classify(desired, actual *unstructured.Unstructured, managedBy string) hub.Drift {
	d, _ := ClassifyIgnoring(desired, actual, managedBy, Ignore{})
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
	// Self is the hub's own field manager (hub.FieldManagerFor), never a
	// field's current owner for a manager rule. Empty means
	// hub.FieldManager.
	Self string
}

// ClassifyIgnoring is Classify with ignore rules: the differences a rule
// covers move to Drift.Ignored, with the rule's name, and the class is
// decided by the rest (only ignored differences: in sync). A missing or
// deleting object has no fields to ignore. The error is Owners' (the
// manager rules then match nothing); the drift is still returned.
func ClassifyIgnoring(desired, actual *unstructured.Unstructured, managedBy string, ig Ignore) (hub.Drift, error) {
	if actual == nil {
		return hub.Drift{Class: hub.DriftMissing}, nil
	}
	if actual.GetDeletionTimestamp() != nil {
		return hub.Drift{Class: hub.DriftDeleting}, nil
	}
	if managedBy == "" {
		managedBy = hub.DefaultManagedBy
	}
	c := comparer{keepSegs: len(ig.Rules) > 0}
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
	sort.Sort(&c)
	var ignored []hub.IgnoredField
	var err error
	if c.keepSegs && len(c.diffs) > 0 {
		c.diffs, ignored, err = applyIgnore(c.diffs, c.segs, ig)
	}
	if v, ok := actual.GetLabels()[hub.ManagedByLabel]; !ok || v != managedBy {
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

// comparer walks desired and actual objects. It keeps the current field path
// and JSON pointer as segment stacks and only joins them when it records a
// difference, so an in-sync comparison allocates little.
type comparer struct {
	diffs []hub.FieldDiff
	path  []string // "spec", ".replicas", "[app]", ...
	ptr   []string // "/spec", "/replicas", "/0", ...
	// keepSegs records, for each difference, its path as segments (segs,
	// parallel to diffs), for the ignore rules.
	keepSegs bool
	segs     [][]string
}

// Len, Less and Swap sort the differences (and their segments) by path.
func (c *comparer) Len() int           { return len(c.diffs) }
func (c *comparer) Less(i, j int) bool { return c.diffs[i].Path < c.diffs[j].Path }
func (c *comparer) Swap(i, j int) {
	c.diffs[i], c.diffs[j] = c.diffs[j], c.diffs[i]
	if c.keepSegs {
		c.segs[i], c.segs[j] = c.segs[j], c.segs[i]
	}
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

func (c *comparer) add(f hub.FieldDiff) {
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
	for i, p := range c.path {
		switch {
		case strings.HasPrefix(p, "."):
			p = p[1:]
		case strings.HasPrefix(p, "[") && strings.HasSuffix(p, "]"):
			p = p[1 : len(p)-1]
		}
		segs[i] = p
	}
	c.segs = append(c.segs, segs)
}

// differ records a modified field at the current path.
func (c *comparer) differ(desired, actual string) {
	c.add(hub.FieldDiff{Path: c.pathString(), Desired: desired, Actual: actual})
}

// added records an entry someone else added at the current path.
func (c *comparer) added(actual string) {
	c.add(hub.FieldDiff{Path: c.pathString(), Desired: none, Actual: actual, Added: true, Pointer: c.ptrString()})
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
				c.add(hub.FieldDiff{Path: "metadata." + field + "." + k, Desired: text(v), Actual: none})
			case text(got) != text(v):
				c.add(hub.FieldDiff{Path: "metadata." + field + "." + k, Desired: text(v), Actual: text(got)})
			}
		}
	}
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
		if len(c.path) == 1 && ownedMaps[c.path[0]] {
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

// lastField returns the name of the field the current path ends in.
func (c *comparer) lastField() string {
	if len(c.path) == 0 {
		return ""
	}
	return strings.TrimPrefix(c.path[len(c.path)-1], ".")
}

// list compares a list: by merge key when the table has one for the list and
// its first item carries it, else by index (an atomic list).
func (c *comparer) list(d, a []any) {
	if mk, ok := mergeKeys[c.lastField()]; ok {
		items := d
		if len(items) == 0 {
			items = a
		}
		if len(items) > 0 {
			if first, ok := items[0].(map[string]any); ok && mk.key(first) != "" {
				c.keyedList(mk, d, a)
				return
			}
		}
	}
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

// keyedList compares a list whose items are matched by the merge key mk.
func (c *comparer) keyedList(mk mergeKey, d, a []any) {
	type idx struct {
		item map[string]any
		i    int
	}
	actual := make(map[string]idx, len(a))
	for i, it := range a {
		if m, ok := it.(map[string]any); ok {
			actual[mk.key(m)] = idx{m, i}
		}
	}
	var seen map[string]bool
	if mk.added {
		seen = make(map[string]bool, len(d))
	}
	for _, it := range d {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		k := mk.key(m)
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
		c.oneOfAdded(mk.oneOf, m, got.item)
		// Owned collections we left out: everything in them was added.
		for _, f := range mk.owned {
			if _, want := m[f]; want {
				continue
			}
			items, _ := got.item[f].([]any)
			child, ok := mergeKeys[f]
			if len(items) == 0 || !ok {
				continue
			}
			c.push("."+f, "/"+escapePointer(f))
			c.keyedList(child, nil, items)
			c.pop()
		}
		c.pop()
	}
	if !mk.added {
		return
	}
	for i, it := range a {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		k := mk.key(m)
		if seen[k] {
			continue
		}
		c.push("["+k+"]", "/"+strconv.Itoa(i))
		c.added(summary(m))
		c.pop()
	}
}

// oneOfAdded records the members of each one-of group that the live item
// has and the desired item leaves out, at the current path (the item's).
// A group inside a map field is only looked at when both items have that
// map (otherwise the map itself differs or was added), and the pointer of
// its added member is the map's: the apiserver refuses an empty valueFrom
// as it refuses two sources in one, so the repair removes the whole map
// and the apply puts ours back.
func (c *comparer) oneOfAdded(groups []oneOf, desired, actual map[string]any) {
	for _, g := range groups {
		d, a := desired, actual
		if g.in != "" {
			d, _ = desired[g.in].(map[string]any)
			a, _ = actual[g.in].(map[string]any)
			if d == nil || a == nil {
				continue
			}
			c.push("."+g.in, "/"+escapePointer(g.in))
		}
		for _, f := range g.fields {
			if _, want := d[f]; want {
				continue
			}
			if v, ok := a[f]; ok {
				ptr := "/" + escapePointer(f)
				if g.in != "" {
					ptr = ""
				}
				c.push("."+f, ptr)
				c.added(text(v))
				c.pop()
			}
		}
		if g.in != "" {
			c.pop()
		}
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

// underResources reports whether path lies inside a resources field
// (requests and limits hold quantities).
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

// escapePointer escapes a JSON pointer segment (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

package drift

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Project returns the part of the live object that Classify compares with
// desired, shaped like desired: for every field desired sets, the live
// value (desired's own where Classify counts them equal, such as the
// quantities 1 and 1000m, so only drift differs), plus the entries someone
// else added inside what we own (ConfigMap data keys, containers, env vars,
// ports, a second member of a one-of group). Status, and metadata other
// than name, namespace and the labels and annotations desired sets, are
// left out; apiVersion, kind, name and namespace are desired's.
//
// Project(desired, desired) is the managed view of desired itself, so the
// two render as a diff of only what driftwatch manages. It returns nil when
// live is nil (the object does not exist). The result shares no map or
// list with either object.
func Project(desired, live *unstructured.Unstructured) map[string]any {
	if desired == nil || live == nil {
		return nil
	}
	out := make(map[string]any, len(desired.Object))
	p := projector{}
	for k, dv := range desired.Object {
		switch k {
		case "apiVersion", "kind":
			out[k] = copyValue(dv)
		case "status":
		case "metadata":
			out[k] = projectMetadata(dv, live.Object["metadata"])
		default:
			av, ok := live.Object[k]
			if !ok {
				continue
			}
			p.path = append(p.path[:0], k)
			out[k] = p.value(dv, av)
		}
	}
	return out
}

// projectMetadata keeps desired's name and namespace, and the live values
// of the labels and annotations desired sets.
func projectMetadata(dv, av any) map[string]any {
	dm, _ := dv.(map[string]any)
	am, _ := av.(map[string]any)
	out := make(map[string]any, 4)
	for _, f := range []string{"name", "namespace"} {
		if v, ok := dm[f]; ok {
			out[f] = copyValue(v)
		}
	}
	for _, field := range []string{"labels", "annotations"} {
		want, _ := dm[field].(map[string]any)
		if len(want) == 0 {
			continue
		}
		have, _ := am[field].(map[string]any)
		kept := make(map[string]any, len(want))
		for k := range want {
			if v, ok := have[k]; ok {
				kept[k] = copyValue(v)
			}
		}
		if len(kept) > 0 {
			out[field] = kept
		}
	}
	return out
}

// projector walks desired and live values as comparer does, keeping the
// field path in comparer's form (for merge keys and quantities).
type projector struct {
	path []string
}

func (p *projector) push(seg string) { p.path = append(p.path, seg) }
func (p *projector) pop()            { p.path = p.path[:len(p.path)-1] }

// lastField returns the name of the field the current path ends in.
func (p *projector) lastField() string {
	if len(p.path) == 0 {
		return ""
	}
	return strings.TrimPrefix(p.path[len(p.path)-1], ".")
}

// value projects the live value av onto the desired value dv.
func (p *projector) value(dv, av any) any {
	switch d := dv.(type) {
	case map[string]any:
		a, ok := av.(map[string]any)
		if !ok {
			return copyValue(av)
		}
		out := make(map[string]any, len(d))
		for k, v := range d {
			got, ok := a[k]
			if !ok {
				continue
			}
			p.push("." + k)
			out[k] = p.value(v, got)
			p.pop()
		}
		if len(p.path) == 1 && ownedMaps[p.path[0]] {
			for k, v := range a {
				if _, ok := d[k]; !ok {
					out[k] = copyValue(v)
				}
			}
		}
		return out
	case []any:
		a, ok := av.([]any)
		if !ok {
			return copyValue(av)
		}
		return p.list(d, a)
	default:
		if scalarEqual(p.path, dv, av) {
			return dv
		}
		return copyValue(av)
	}
}

// list projects a list as comparer.list compares it: by merge key, else by
// index; an atomic list of another length is the live list whole.
func (p *projector) list(d, a []any) []any {
	if mk, ok := mergeKeys[p.lastField()]; ok {
		items := d
		if len(items) == 0 {
			items = a
		}
		if len(items) > 0 {
			if first, ok := items[0].(map[string]any); ok && mk.key(first) != "" {
				return p.keyedList(mk, d, a)
			}
		}
	}
	if len(d) != len(a) {
		return copyList(a)
	}
	out := make([]any, len(d))
	for i := range d {
		p.push("[" + strconv.Itoa(i) + "]")
		out[i] = p.value(d[i], a[i])
		p.pop()
	}
	return out
}

// keyedList projects a list whose items are matched by mk: the live items
// desired has, in desired's order, then the ones someone else added (when
// mk counts added items), in live order.
func (p *projector) keyedList(mk mergeKey, d, a []any) []any {
	actual := make(map[string]map[string]any, len(a))
	for _, it := range a {
		if m, ok := it.(map[string]any); ok {
			actual[mk.key(m)] = m
		}
	}
	seen := make(map[string]bool, len(d))
	out := make([]any, 0, len(a))
	for _, it := range d {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		k := mk.key(m)
		seen[k] = true
		got, ok := actual[k]
		if !ok {
			continue
		}
		p.push("[" + k + "]")
		item := make(map[string]any, len(m))
		for f, v := range m {
			av, present := got[f]
			if !present {
				continue
			}
			p.push("." + f)
			item[f] = p.value(v, av)
			p.pop()
		}
		p.pop()
		oneOfAdded(mk.oneOf, m, got, item)
		// Owned collections desired leaves out: everything in them was
		// added.
		for _, f := range mk.owned {
			if _, want := m[f]; want {
				continue
			}
			items, _ := got[f].([]any)
			if child, ok := mergeKeys[f]; ok && child.added && len(items) > 0 {
				item[f] = copyList(items)
			}
		}
		out = append(out, item)
	}
	if mk.added {
		for _, it := range a {
			m, ok := it.(map[string]any)
			if !ok || seen[mk.key(m)] {
				continue
			}
			out = append(out, copyValue(m))
		}
	}
	return out
}

// oneOfAdded copies into item (the projection of the live item actual) the
// members of each one-of group that actual has and desired leaves out, as
// comparer.oneOfAdded reports them.
func oneOfAdded(groups []oneOf, desired, actual, item map[string]any) {
	for _, g := range groups {
		d, a, target := desired, actual, item
		if g.in != "" {
			d, _ = desired[g.in].(map[string]any)
			a, _ = actual[g.in].(map[string]any)
			target, _ = item[g.in].(map[string]any)
			if d == nil || a == nil || target == nil {
				continue
			}
		}
		for _, f := range g.fields {
			if _, want := d[f]; want {
				continue
			}
			if v, ok := a[f]; ok {
				target[f] = copyValue(v)
			}
		}
	}
}

// copyValue deep-copies the maps and lists of an unstructured value.
func copyValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = copyValue(e)
		}
		return out
	case []any:
		return copyList(x)
	}
	return v
}

func copyList(l []any) []any {
	out := make([]any, len(l))
	for i, e := range l {
		out[i] = copyValue(e)
	}
	return out
}

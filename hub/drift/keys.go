package drift

import "strings"

// mergeKey describes how the items of a list field are matched between the
// desired and the live object.
type mergeKey struct {
	// alternatives are the key field sets, tried in order: the first set
	// whose leading field is present in an item keys it. Each set is in
	// key-name order, the order KeyString and managedFields use.
	alternatives [][]string
	// defaults are values of key fields an item may omit (the apiserver
	// defaults them), such as a port's protocol.
	defaults map[string]any
	// added says whether items someone else adds to the list are drift
	// (true), or the list is only matched by key (false).
	added bool
	// owned lists the child list fields of an item that we own whole: when
	// the desired item leaves one out, every live entry in it was added.
	owned []string
	// oneOf are groups of an item's fields of which the apiserver accepts
	// at most one (an env var's value or valueFrom). A member the desired
	// item leaves out but the live one has was added by someone else: it is
	// reported with its pointer so the repair removes it before applying,
	// since applying our member next to it would be refused.
	oneOf []oneOf
}

// oneOf is a group of mutually exclusive fields of a list item.
type oneOf struct {
	// in is the item's map field holding the group; "" means the item
	// itself.
	in string
	// fields are the members, in name order.
	fields []string
}

// mergeKeys is the one table of list merge keys, by the list's field name
// (the last segment of its path). Lists not in it are atomic and compared by
// index. It is never written.
var mergeKeys = map[string]mergeKey{
	"containers":     {alternatives: [][]string{{"name"}}, added: true, owned: []string{"env", "ports"}},
	"initContainers": {alternatives: [][]string{{"name"}}, added: true, owned: []string{"env", "ports"}},
	"env": {alternatives: [][]string{{"name"}}, added: true, oneOf: []oneOf{
		{fields: []string{"value", "valueFrom"}},
		{in: "valueFrom", fields: []string{"configMapKeyRef", "fieldRef", "fileKeyRef", "resourceFieldRef", "secretKeyRef"}},
	}},
	"ports": {
		alternatives: [][]string{{"containerPort", "protocol"}, {"port", "protocol"}},
		defaults:     map[string]any{"protocol": "TCP"},
		added:        true,
	},
	"volumes":      {alternatives: [][]string{{"name"}}},
	"volumeMounts": {alternatives: [][]string{{"mountPath"}}},
	"envFrom":      {alternatives: [][]string{{"name"}}},
}

// ownedMaps are the top-level map fields we own whole: keys someone else adds
// to them are drift (a ConfigMap's data). It is never written.
var ownedMaps = map[string]bool{"data": true, "binaryData": true}

// key returns the merge key of item, or "" when no key set applies.
func (k mergeKey) key(item map[string]any) string {
	for _, fields := range k.alternatives {
		if _, ok := item[fields[0]]; !ok {
			continue
		}
		if len(fields) == 1 {
			return scalarString(item[fields[0]])
		}
		parts := make([]string, len(fields))
		for i, f := range fields {
			v, ok := item[f]
			if !ok {
				v = k.defaults[f]
			}
			parts[i] = scalarString(v)
		}
		return strings.Join(parts, "/")
	}
	return ""
}

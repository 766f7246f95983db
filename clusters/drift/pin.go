package drift

import (
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"
)

// Pin makes the desired object carry the live value of each ignored field
// (given as path segments), so that an apply of it repairs the other
// differences without undoing the ignored ones. A field the desired object
// does not have is left alone (an apply without it does not touch it); one
// the live object no longer has is dropped from desired. desired is
// modified; live is only read. It reports whether desired changed. List
// items are found by the built-in schema of desired's kind (see PinWith).
func Pin(desired, live map[string]any, fields [][]string) bool {
	return PinWith(desired, live, fields, schemaOf(desired))
}

// PinWith is Pin along s, the schema of the objects' kind: a segment names
// an item of an associative list by its key (as ClassifyWith reports it),
// of a set by its value, and of an atomic list by its index.
func PinWith(desired, live map[string]any, fields [][]string, s Schema) bool {
	changed := false
	for _, segs := range fields {
		if len(segs) == 0 {
			continue
		}
		dParent, dKey, ok := locate(s.root, desired, segs)
		if !ok {
			continue
		}
		lParent, lKey, lok := locate(s.root, live, segs)
		var lv any
		present := false
		if lok {
			lv, present = get(lParent, lKey)
		}
		if present {
			set(dParent, dKey, runtime.DeepCopyJSONValue(lv))
		} else {
			drop(dParent, dKey)
		}
		changed = true
	}
	return changed
}

// locate walks obj (of type t) along segs and returns the container of
// the last segment and that segment, when every container on the way
// exists and the last one holds the field.
func locate(t *node, obj map[string]any, segs []string) (any, string, bool) {
	var cur any = obj
	for i, s := range segs {
		last := i == len(segs)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				_, ok := c[s]
				return c, s, ok
			}
			cur, t = c[s], t.field(s)
		case []any:
			l := t.list()
			idx := itemIndex(c, l, s)
			if idx < 0 {
				return nil, "", false
			}
			if last {
				return c, strconv.Itoa(idx), true
			}
			cur, t = c[idx], l.elem
		default:
			return nil, "", false
		}
	}
	return nil, "", false
}

// itemIndex finds the item of list that seg names, as ClassifyWith names
// items: by key in an associative list, by value in a set, else by index;
// -1 when none.
func itemIndex(list []any, l *listNode, seg string) int {
	switch l.kind {
	case keyedList:
		return slices.IndexFunc(list, func(it any) bool {
			m, ok := it.(map[string]any)
			if !ok {
				return false
			}
			k, _ := l.itemKey(m)
			return k == seg
		})
	case setList:
		if i := slices.IndexFunc(list, func(it any) bool { return scalarString(it) == seg }); i >= 0 {
			return i
		}
	}
	if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(list) {
		return i
	}
	return -1
}

func get(parent any, key string) (any, bool) {
	switch p := parent.(type) {
	case map[string]any:
		v, ok := p[key]
		return v, ok
	case []any:
		i, _ := strconv.Atoi(key)
		return p[i], true
	}
	return nil, false
}

func set(parent any, key string, v any) {
	switch p := parent.(type) {
	case map[string]any:
		p[key] = v
	case []any:
		i, _ := strconv.Atoi(key)
		p[i] = v
	}
}

// drop removes a map key; a list item is left (removing it would shift the
// others).
func drop(parent any, key string) {
	if p, ok := parent.(map[string]any); ok {
		delete(p, key)
	}
}

package drift

import (
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"
)

// Pin makes the desired object carry the live value of each ignored field
// (given as path segments), so that an apply of it repairs the other
// differences without undoing the ignored ones. A field the desired object
// does not have is left alone (an apply without it does not touch it); one
// the live object no longer has is dropped from desired. desired is
// modified; live is only read. It reports whether desired changed.
func Pin(desired, live map[string]any, fields [][]string) bool {
	changed := false
	for _, segs := range fields {
		if len(segs) == 0 {
			continue
		}
		dParent, dKey, ok := locate(desired, segs)
		if !ok {
			continue
		}
		lParent, lKey, lok := locate(live, segs)
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

// locate walks obj along segs and returns the container of the last
// segment and that segment, when every container on the way exists and
// the last one holds the field.
func locate(obj map[string]any, segs []string) (any, string, bool) {
	var cur any = obj
	field := ""
	for i, s := range segs {
		last := i == len(segs)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				_, ok := c[s]
				return c, s, ok
			}
			cur, field = c[s], s
		case []any:
			idx := itemIndex(c, field, s)
			if idx < 0 {
				return nil, "", false
			}
			if last {
				return c, strconv.Itoa(idx), true
			}
			cur = c[idx]
		default:
			return nil, "", false
		}
	}
	return nil, "", false
}

// itemIndex finds the item of list (the value of field) that seg names:
// by merge key when the list has one, else by index; -1 when none.
func itemIndex(list []any, field, seg string) int {
	if mk, ok := mergeKeys[field]; ok {
		for i, it := range list {
			if m, ok := it.(map[string]any); ok && mk.key(m) == seg {
				return i
			}
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

package drift

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// FieldsV1Paths lists the field paths a managedFields FieldsV1 document owns
// (see the package documentation for their form): every leaf, and every list
// item itself (its "." entry), sorted.
func FieldsV1Paths(raw []byte) ([]string, error) {
	var tree map[string]any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, fmt.Errorf("fieldsV1: %w", err)
	}
	var out []string
	var walk func(prefix string, node map[string]any) error
	walk = func(prefix string, node map[string]any) error {
		if len(node) == 0 {
			if prefix != "" {
				out = append(out, prefix)
			}
			return nil
		}
		for k, v := range node {
			if k == "." {
				if prefix != "" {
					out = append(out, prefix)
				}
				continue
			}
			child, _ := v.(map[string]any)
			var p string
			switch {
			case strings.HasPrefix(k, "f:"):
				p = joinField(prefix, k[2:])
			case strings.HasPrefix(k, "k:"):
				var key map[string]any
				if err := json.Unmarshal([]byte(k[2:]), &key); err != nil {
					return fmt.Errorf("fieldsV1 key %s: %w", k, err)
				}
				p = prefix + "[" + KeyString(key) + "]"
			case strings.HasPrefix(k, "v:"):
				var val any
				if err := json.Unmarshal([]byte(k[2:]), &val); err != nil {
					return fmt.Errorf("fieldsV1 value %s: %w", k, err)
				}
				p = prefix + "[" + scalarString(val) + "]"
			case strings.HasPrefix(k, "i:"):
				p = prefix + "[" + k[2:] + "]"
			default:
				p = joinField(prefix, k)
			}
			if err := walk(p, child); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk("", tree); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

func joinField(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// KeyString formats a list item's merge key as field paths show it: the
// values in key-name order, joined by "/"; a lone "name" key is just the
// name.
func KeyString(key map[string]any) string {
	names := make([]string, 0, len(key))
	for k := range key {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = scalarString(key[n])
	}
	return strings.Join(parts, "/")
}

// scalarString formats a scalar JSON value; whole numbers without a
// fraction.
func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		if x == float64(int64(x)) {
			return fmt.Sprintf("%d", int64(x))
		}
		return fmt.Sprintf("%g", x)
	case int64:
		return fmt.Sprintf("%d", x)
	case nil:
		return "null"
	}
	return fmt.Sprint(v)
}

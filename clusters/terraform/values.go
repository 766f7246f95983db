package terraform

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/driftwatch/driftwatch/hub"
)

// redacted replaces the value of a sensitive attribute everywhere the hub
// could show it.
const redacted = "(sensitive)"

// sensitiveChanged replaces the refreshed value of a sensitive attribute
// that differs from the one applied: the change is drift, the value is
// never shown.
const sensitiveChanged = "(sensitive value changed)"

// none is how an absent value shows in a field diff.
const none = "<none>"

// sensitiveMark reports whether a sensitive_values entry marks a value (or
// any part of it) as sensitive.
func sensitiveMark(m any) bool {
	switch v := m.(type) {
	case bool:
		return v
	case map[string]any:
		for _, e := range v {
			if sensitiveMark(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if sensitiveMark(e) {
				return true
			}
		}
	}
	return false
}

// encodeValues is the JSON of a resource's attribute values: encoding/json
// sorts map keys, so equal values encode to equal bytes.
func encodeValues(values map[string]any) []byte {
	if values == nil {
		values = map[string]any{}
	}
	b, err := json.Marshal(values)
	if err != nil {
		// Values decoded from JSON always encode again.
		panic(fmt.Sprintf("terraform: encode values: %v", err))
	}
	return b
}

// hashOf is a short content hash.
func hashOf(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// flatten turns a value into leaf paths (a.b, list.0) and their text;
// empty maps and lists have no leaves.
func flatten(prefix string, v any, out map[string]string) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			flatten(join(prefix, k), e, out)
		}
	case []any:
		for i, e := range t {
			flatten(join(prefix, strconv.Itoa(i)), e, out)
		}
	default:
		out[prefix] = text(t)
	}
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// text formats a leaf value: strings as they are, the rest as JSON.
func text(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case string:
		return t
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// diffValues lists the attributes whose values differ between desired and
// actual, sorted by path. Attributes desired does not know (null, computed
// ones not yet applied) are not drift.
func diffValues(desired, actual map[string]any) []hub.FieldDiff {
	d, a := map[string]string{}, map[string]string{}
	flatten("", desired, d)
	flatten("", actual, a)
	var out []hub.FieldDiff
	for p, dv := range d {
		if dv == "null" {
			continue
		}
		av, ok := a[p]
		if !ok {
			av = none
		}
		if av != dv {
			out = append(out, hub.FieldDiff{Path: p, Desired: dv, Actual: av})
		}
	}
	for p, av := range a {
		if _, ok := d[p]; !ok && av != "null" {
			out = append(out, hub.FieldDiff{Path: p, Desired: none, Actual: av})
		}
	}
	slices.SortFunc(out, func(x, y hub.FieldDiff) int { return bytes.Compare([]byte(x.Path), []byte(y.Path)) })
	return out
}

// fileInspector reads what a resource type's refresh cannot say: the local
// provider reports a local_file whose content changed as gone, so the file
// itself tells an edit from a delete. It takes the values last applied and
// returns them with what it found (nil when the resource is really gone).
// Both may hold sensitive values: the caller redacts them.
type fileInspector func(dir string, applied map[string]any) (current map[string]any, exists bool)

// inspectors are the resource types with a fileInspector.
func inspectors() map[string]fileInspector {
	return map[string]fileInspector{
		"local_file": inspectLocalFile,
	}
}

// inspectLocalFile reads a local_file's filename (relative to the
// workspace's folder) and returns the applied values with the file's
// content in the attribute that set it: content, sensitive_content or
// content_base64.
func inspectLocalFile(dir string, applied map[string]any) (map[string]any, bool) {
	name, _ := applied["filename"].(string)
	if name == "" {
		return nil, false
	}
	if !filepath.IsAbs(name) {
		name = filepath.Join(dir, name)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, false
	}
	current := maps.Clone(applied)
	switch {
	case applied["content"] != nil:
		current["content"] = string(b)
	case applied["sensitive_content"] != nil:
		current["sensitive_content"] = string(b)
	case applied["content_base64"] != nil:
		current["content_base64"] = base64.StdEncoding.EncodeToString(b)
	}
	return current, true
}

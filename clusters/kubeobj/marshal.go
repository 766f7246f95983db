package kubeobj

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// maxMarshalDepth is how deep Marshal writes a value itself: deeper
// values go to encoding/json, which also reports a cycle.
const maxMarshalDepth = 512

// Marshal returns v's JSON in exactly the bytes encoding/json.Marshal
// gives (map keys sorted, HTML characters escaped), several times faster
// for the values a decoded object is made of: it writes maps with string
// keys, slices of any, integers, booleans, null and strings of printable
// ASCII itself, and hands any other value (a float, a string that needs
// escaping, a typed map or slice, a struct) to encoding/json, whose
// encoding of a value is the same alone as inside a collection.
// TestMarshalMatchesEncodingJSON and FuzzMarshal hold it to that.
func Marshal(v any) ([]byte, error) {
	return appendJSON(make([]byte, 0, 256), v, 0)
}

// AppendMarshal is Marshal appending to b: a caller that knows about how
// long the result is passes a b with that capacity and spares the
// buffer's growth.
func AppendMarshal(b []byte, v any) ([]byte, error) {
	return appendJSON(b, v, 0)
}

// appendJSON appends v's JSON to b.
func appendJSON(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxMarshalDepth {
		return appendLibrary(b, v)
	}
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, t), nil
	case string:
		return AppendJSONString(b, t), nil
	case int64:
		return strconv.AppendInt(b, t, 10), nil
	case int:
		return strconv.AppendInt(b, int64(t), 10), nil
	case map[string]any:
		if t == nil {
			return append(b, "null"...), nil
		}
		// Most objects' maps have a few keys: sorted on the stack.
		var small [8]string
		keys := small[:0]
		if len(t) > len(small) {
			keys = make([]string, 0, len(t))
		}
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		var err error
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, k)
			b = append(b, ':')
			if b, err = appendJSON(b, t[k], depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case []any:
		if t == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		var err error
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSON(b, e, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	return appendLibrary(b, v)
}

// appendLibrary appends encoding/json's encoding of v to b.
func appendLibrary(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}

// AppendJSONString appends s as encoding/json writes a string. Strings
// of printable ASCII without the characters it escapes ('"', '\\' and the
// HTML-sensitive '<', '>', '&') are copied as they are; any other string
// is written by encoding/json itself, so the escaping is always its own.
func AppendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			// A copy goes to the library: s itself then never escapes,
			// and callers may pass strings that live on their stack.
			j, _ := json.Marshal(strings.Clone(s)) // a string always encodes
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

package manifest

import (
	"math"
	"strconv"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
)

// decodeFast decodes one YAML document into the value sigs.k8s.io/yaml's
// YAMLToJSON and the apimachinery JSON decoder give together (integers as
// int64), without the JSON text between them: it parses with the same YAML
// library and call YAMLToJSON makes, and converts the tree as that JSON
// round trip would. ok is false for a document it does not convert exactly
// (a syntax error, a key that is not a string, a float JSON cannot carry,
// invalid UTF-8, a value of another type): the caller decodes that one the
// library's way, which also gives its error. FuzzDecodeFast holds the two
// to the same result.
func decodeFast(data []byte) (v any, ok bool) {
	var y any
	if err := yamlv2.Unmarshal(data, &y); err != nil {
		return nil, false
	}
	return jsonValue(y)
}

// jsonValue converts a value the YAML library decoded into the one the
// JSON round trip gives, or reports that it does not.
func jsonValue(y any) (any, bool) {
	switch t := y.(type) {
	case nil, bool:
		return t, true
	case string:
		// The JSON encoder replaces invalid UTF-8.
		return t, utf8.ValidString(t)
	case int:
		return int64(t), true
	case int64:
		return t, true
	case float64:
		return jsonFloat(t)
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			// YAMLToJSON turns other keys into strings, and two keys
			// may then collide: left to it.
			ks, ok := k.(string)
			if !ok || !utf8.ValidString(ks) {
				return nil, false
			}
			v, ok := jsonValue(e)
			if !ok {
				return nil, false
			}
			m[ks] = v
		}
		return m, true
	case []any:
		s := make([]any, len(t))
		for i, e := range t {
			v, ok := jsonValue(e)
			if !ok {
				return nil, false
			}
			s[i] = v
		}
		return s, true
	}
	return nil, false
}

// jsonFloat is a float64 after the JSON round trip: the encoder writes an
// integral value below 1e21 in its shortest decimal digits, without a
// fraction or exponent (so above 2^53 not always the float's exact value),
// and the decoder reads such a number as an int64 when it fits; any other
// finite value comes back as it was. NaN and the infinities, which the
// encoder refuses, are not converted.
func jsonFloat(f float64) (any, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		if i, err := strconv.ParseInt(strconv.FormatFloat(f, 'f', -1, 64), 10, 64); err == nil {
			return i, true
		}
	}
	return f, true
}

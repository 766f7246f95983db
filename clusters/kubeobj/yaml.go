package kubeobj

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// MarshalYAML renders v (an object's content, a report) as YAML laid out as
// kubectl lays it out (sigs.k8s.io/yaml: keys sorted, two-space indent).
// Unlike yaml.Marshal it renders every string, whatever characters it
// holds: see JSONToYAML.
func MarshalYAML(v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return JSONToYAML(j)
}

// JSONToYAML converts a JSON document to YAML as yaml.JSONToYAML does, but
// also when one of its strings holds a character YAML does not allow raw
// in a string (DEL, the C1 controls, U+FEFF, U+FFFE, U+FFFF): a live
// object's value can hold any of them, and encoding/json writes them as
// they are, which the YAML reader refuses ("control characters are not
// allowed"). They are written as \u escapes first (they only occur inside
// JSON strings), so the YAML shows them as escapes in a double-quoted
// string.
func JSONToYAML(j []byte) ([]byte, error) {
	y, err := yaml.JSONToYAML(escapeYAMLUnprintable(j))
	if err != nil {
		return nil, fmt.Errorf("convert to YAML: %w", err)
	}
	return y, nil
}

// escapeYAMLUnprintable returns j with the characters the YAML reader
// refuses written as JSON \u escapes; j itself when it holds none.
func escapeYAMLUnprintable(j []byte) []byte {
	var out []byte
	for i := 0; i < len(j); {
		r, size := rune(j[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(j[i:])
		}
		if yamlPrintable(r) {
			if out != nil {
				out = append(out, j[i:i+size]...)
			}
			i += size
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(j)+16), j[:i]...)
		}
		out = fmt.Appendf(out, `\u%04x`, r)
		i += size
	}
	if out == nil {
		return j
	}
	return out
}

// yamlPrintable reports whether the YAML reader takes r raw in a string as
// itself (YAML 1.1's printable set, as go-yaml checks it, less NEL, which
// it reads as a line break); JSON's own escapes cover the C0 controls,
// which never occur raw in encoding/json's output.
func yamlPrintable(r rune) bool {
	switch {
	case r == utf8.RuneError:
		return true // encoding/json already replaced invalid UTF-8 by U+FFFD
	case r < 0x7f:
		return true
	case r <= 0x9f:
		return false // DEL and C1; NEL (U+0085) too, which YAML reads as a line break
	case r == 0xfeff, r == 0xfffe, r == 0xffff:
		return false
	}
	return true
}

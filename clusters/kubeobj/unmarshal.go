package kubeobj

import (
	"encoding/json"
	"unicode/utf8"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// maxUnmarshalDepth is how deep decodeObject reads: deeper documents go to
// the library, which has its own limit.
const maxUnmarshalDepth = 512

// Unmarshal decodes a JSON object into the map
// k8s.io/apimachinery/pkg/util/json.Unmarshal gives (integers as int64,
// other numbers as float64), several times faster for the compact JSON of
// objects (a spec's body, an object the apiserver sent): it reads objects,
// arrays, strings, integers of up to 18 digits, booleans and null itself,
// each string's escapes as encoding/json reads them, and hands the whole
// document to the library the moment it meets anything else (another
// number, a duplicate key, a byte a string may not hold, a syntax error,
// a document that is not one object), which also gives every error.
// TestUnmarshalMatchesTheLibrary and FuzzUnmarshal hold it to that.
func Unmarshal(data []byte) (map[string]any, error) {
	d := jsonDecoder{data: data, text: string(data)}
	d.space()
	if d.i < len(d.data) && d.data[d.i] == '{' {
		if m, ok := d.object(0); ok {
			if d.space(); d.i == len(d.data) {
				return m, nil
			}
		}
	}
	var m map[string]any
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// jsonDecoder is the state of one Unmarshal's fast path: the document and
// the offset it reads at. The strings it reads share the document's
// memory (one allocation, not one a string).
type jsonDecoder struct {
	data []byte
	text string // data as one string: strings without escapes are cut from it
	i    int
}

// space skips white space.
func (d *jsonDecoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// value reads the value at the offset.
func (d *jsonDecoder) value(depth int) (any, bool) {
	d.space()
	if d.i == len(d.data) {
		return nil, false
	}
	switch c := d.data[d.i]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		return d.string()
	case c == '-' || c >= '0' && c <= '9':
		return d.integer()
	}
	for _, lit := range [...]struct {
		text  string
		value any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if len(d.data)-d.i >= len(lit.text) && string(d.data[d.i:d.i+len(lit.text)]) == lit.text {
			d.i += len(lit.text)
			return lit.value, true
		}
	}
	return nil, false
}

// object reads the object whose '{' is at the offset.
func (d *jsonDecoder) object(depth int) (map[string]any, bool) {
	if depth > maxUnmarshalDepth {
		return nil, false
	}
	d.i++ // '{'
	m := make(map[string]any)
	d.space()
	if d.i < len(d.data) && d.data[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		d.space()
		if d.i == len(d.data) || d.data[d.i] != '"' {
			return nil, false
		}
		k, ok := d.string()
		if !ok {
			return nil, false
		}
		if _, dup := m[k]; dup {
			return nil, false
		}
		d.space()
		if d.i == len(d.data) || d.data[d.i] != ':' {
			return nil, false
		}
		d.i++
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		m[k] = v
		if more, ok := d.next('}'); !more {
			return m, ok
		}
	}
}

// next reads what follows an entry of a collection that ends with close:
// more is true after a comma, false after close; ok is false for anything
// else.
func (d *jsonDecoder) next(close byte) (more, ok bool) {
	d.space()
	if d.i == len(d.data) {
		return false, false
	}
	switch d.data[d.i] {
	case ',':
		d.i++
		return true, true
	case close:
		d.i++
		return false, true
	}
	return false, false
}

// array reads the array whose '[' is at the offset.
func (d *jsonDecoder) array(depth int) ([]any, bool) {
	if depth > maxUnmarshalDepth {
		return nil, false
	}
	d.i++ // '['
	a := make([]any, 0, 4)
	d.space()
	if d.i < len(d.data) && d.data[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		if more, ok := d.next(']'); !more {
			return a, ok
		}
	}
}

// string reads the string whose '"' is at the offset: as it is when it
// holds no escape and is valid UTF-8, else as encoding/json reads it.
func (d *jsonDecoder) string() (string, bool) {
	start := d.i + 1
	plain, ascii := true, true
	for j := start; j < len(d.data); j++ {
		switch c := d.data[j]; {
		case c == '"':
			d.i = j + 1
			s := d.data[start:j]
			if !plain {
				var out string
				if json.Unmarshal(d.data[start-1:j+1], &out) != nil {
					return "", false
				}
				return out, true
			}
			if !ascii && !utf8.Valid(s) {
				return "", false // replaced by the library
			}
			return d.text[start:j], true
		case c == '\\':
			plain = false
			j++ // the escaped byte: never the closing quote
		case c < ' ':
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// integer reads the number at the offset when it is an integer of up to
// 18 digits, as the library reads it (an int64).
func (d *jsonDecoder) integer() (any, bool) {
	j := d.i
	neg := d.data[j] == '-'
	if neg {
		j++
	}
	start := j
	var n int64
	for j < len(d.data) && d.data[j] >= '0' && d.data[j] <= '9' {
		n = n*10 + int64(d.data[j]-'0')
		j++
	}
	digits := j - start
	if digits == 0 || digits > 18 || digits > 1 && d.data[start] == '0' {
		return nil, false
	}
	if j < len(d.data) {
		switch d.data[j] {
		case '.', 'e', 'E':
			return nil, false // a float: the library's
		}
	}
	d.i = j
	if neg {
		n = -n
	}
	return n, true
}

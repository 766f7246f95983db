package config

import (
	"bytes"
	"slices"
	"strconv"

	"github.com/driftwatch/driftwatch/clusters/kubeobj"
)

// bodyWriter writes a compiled object's JSON body directly, in the bytes
// encoding/json would give for the same content as map[string]any: the
// caller writes each object's keys in sorted order, and strMap sorts a
// map's. It tracks only whether a comma is due, so keys and values are
// written one after the other with no other state.
type bodyWriter struct {
	buf   []byte
	comma bool     // a value was written: the next key or element needs a ','
	keys  []string // strMap's scratch space
}

// mapEntry is one entry strMap adds to a map.
type mapEntry struct{ k, v string }

// reset starts a new body.
func (w *bodyWriter) reset() { w.buf, w.comma = w.buf[:0], false }

// body returns a copy of the body written since reset.
func (w *bodyWriter) body() []byte { return bytes.Clone(w.buf) }

func (w *bodyWriter) sep() {
	if w.comma {
		w.buf = append(w.buf, ',')
	}
}

// open starts an object ('{') or a list ('[').
func (w *bodyWriter) open(c byte) {
	w.sep()
	w.buf = append(w.buf, c)
	w.comma = false
}

// close ends an object ('}') or a list (']').
func (w *bodyWriter) close(c byte) {
	w.buf = append(w.buf, c)
	w.comma = true
}

// key writes an object key; its value comes next.
func (w *bodyWriter) key(k string) {
	w.sep()
	w.buf = kubeobj.AppendJSONString(w.buf, k)
	w.buf = append(w.buf, ':')
	w.comma = false
}

// str writes a string value.
func (w *bodyWriter) str(s string) {
	w.sep()
	w.buf = kubeobj.AppendJSONString(w.buf, s)
	w.comma = true
}

// optStr writes the key and its string value unless the value is empty
// (a field tagged omitempty).
func (w *bodyWriter) optStr(k, s string) {
	if s != "" {
		w.key(k)
		w.str(s)
	}
}

// int writes an integer value.
func (w *bodyWriter) int(n int64) {
	w.sep()
	w.buf = strconv.AppendInt(w.buf, n, 10)
	w.comma = true
}

// strMap writes the object of base's entries and extra's, sorted by key;
// an extra entry replaces base's entry of the same key, and a later extra
// entry an earlier one.
func (w *bodyWriter) strMap(base map[string]string, extra ...mapEntry) {
	keys := w.keys[:0]
	for k := range base {
		if !slices.ContainsFunc(extra, func(e mapEntry) bool { return e.k == k }) {
			keys = append(keys, k)
		}
	}
	for i, e := range extra {
		if !slices.ContainsFunc(extra[i+1:], func(l mapEntry) bool { return l.k == e.k }) {
			keys = append(keys, e.k)
		}
	}
	slices.Sort(keys)
	w.open('{')
	for _, k := range keys {
		w.key(k)
		if i := slices.IndexFunc(extra, func(e mapEntry) bool { return e.k == k }); i >= 0 {
			// The last entry of the key wins.
			for j := len(extra) - 1; j >= i; j-- {
				if extra[j].k == k {
					w.str(extra[j].v)
					break
				}
			}
		} else {
			w.str(base[k])
		}
	}
	w.close('}')
	clear(keys)
	w.keys = keys[:0]
}

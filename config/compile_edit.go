package config

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/clusters/kubeobj"
)

// metaEdit is what the compile changes in a source object for a cluster:
// its namespace ("" removes it), and labels and annotations added to its
// own. Besides, it drops the object's status and the metadata the
// apiserver sets (serverFields).
type metaEdit struct {
	namespace           string
	labels, annotations []metaEntry // sorted by key, keys distinct
	// deadline asks for spec.progressDeadlineSeconds (a Deployment's).
	deadline bool
}

// metaEntry is a label or an annotation the compile sets: over the
// object's own, or only where the object has none (ifAbsent).
type metaEntry struct {
	key, value string
	ifAbsent   bool
}

// sortEntries sorts entries by key (the order a body's keys are written).
func sortEntries(entries []metaEntry) []metaEntry {
	slices.SortFunc(entries, func(a, b metaEntry) int { return cmp.Compare(a.key, b.key) })
	return entries
}

// apply writes the edit into the compiled body of a stored source body,
// and reads spec.progressDeadlineSeconds when asked (0 when it is not a
// positive integer). A body in plain form (kubeobj.AppendPlainMembers),
// which is how the load stores most objects, is written without decoding
// it (e.plain); any other is decoded, changed and encoded again
// (e.decoded), and plain gives decoded's exact bytes
// (TestPlainEditMatchesDecoded, FuzzPlainEdit).
func (e *metaEdit) apply(body []byte) (out []byte, secs int64, err error) {
	if out, secs, ok := e.plain(body); ok {
		return out, secs, nil
	}
	// The decoded way keeps the edit's strings in the object's maps: a
	// copy of it goes there, so that e (on the caller's stack, one an
	// object) never escapes.
	c := metaEdit{namespace: strings.Clone(e.namespace), labels: slices.Clone(e.labels),
		annotations: slices.Clone(e.annotations), deadline: e.deadline}
	return c.decoded(body)
}

// decoded applies the edit to the decoded body: the reference plain keeps
// to.
func (e *metaEdit) decoded(body []byte) ([]byte, int64, error) {
	m, err := kubeobj.Unmarshal(body)
	if err != nil {
		return nil, 0, err
	}
	u := &unstructured.Unstructured{Object: m}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		for _, f := range serverFields() {
			delete(meta, f)
		}
	}
	if e.namespace == "" {
		unstructured.RemoveNestedField(m, "metadata", "namespace")
	} else {
		u.SetNamespace(e.namespace)
	}
	for _, f := range [...]struct {
		field   string
		entries []metaEntry
	}{{"labels", e.labels}, {"annotations", e.annotations}} {
		have := metaStrings(u, f.field)
		for _, en := range f.entries {
			if _, set := have[en.key]; !set || !en.ifAbsent {
				have[en.key] = en.value
			}
		}
	}
	var secs int64
	if e.deadline {
		if n, ok, _ := unstructured.NestedInt64(m, "spec", "progressDeadlineSeconds"); ok && n > 0 {
			secs = n
		}
	}
	// The compiled body is the source's with a few labels and
	// annotations more: written into a buffer of about its size.
	out, err := kubeobj.AppendMarshal(make([]byte, 0, len(body)+256), m)
	if err != nil {
		return nil, 0, err
	}
	return out, secs, nil
}

// plain writes the edited body from the members of a body in plain form,
// copying the ones the edit leaves alone. ok is false, and decoded is
// needed, for any other body, and for shapes decoded handles in its own
// way: no metadata object, or labels or annotations that are not an
// object of strings.
func (e *metaEdit) plain(body []byte) (out []byte, secs int64, ok bool) {
	var topBuf, metaBuf [16]kubeobj.Member
	top, ok := kubeobj.AppendPlainMembers(topBuf[:0], body)
	if !ok {
		return nil, 0, false
	}
	var meta []kubeobj.Member
	metaAt := -1
	for i, m := range top {
		switch string(m.Key) {
		case "metadata":
			if meta, ok = kubeobj.AppendPlainMembers(metaBuf[:0], m.Value); !ok {
				return nil, 0, false
			}
			metaAt = i
		case "spec":
			if e.deadline {
				secs = plainPositiveInt(m.Value, "progressDeadlineSeconds")
			}
		}
	}
	if metaAt < 0 {
		return nil, 0, false
	}
	out = make([]byte, 0, len(body)+256)
	out = append(out, '{')
	for i, m := range top {
		if string(m.Key) == "status" {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = appendMemberKey(out, m.Key)
		if i != metaAt {
			out = append(out, m.Value...)
			continue
		}
		if out, ok = e.appendMeta(out, meta); !ok {
			return nil, 0, false
		}
	}
	return append(out, '}'), secs, true
}

// appendMeta appends the edited metadata object of the plain members meta.
func (e *metaEdit) appendMeta(b []byte, meta []kubeobj.Member) ([]byte, bool) {
	var labels, annotations []byte
	for _, m := range meta {
		switch string(m.Key) {
		case "labels":
			labels = m.Value
		case "annotations":
			annotations = m.Value
		}
	}
	// The three members the edit writes, in key order, merged into the
	// ones it keeps.
	written := [...]string{"annotations", "labels", "namespace"}
	n := len(written)
	if e.namespace == "" {
		n-- // removed
	}
	b = append(b, '{')
	wi, first := 0, true
	var ok bool
	emit := func(key string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = kubeobj.AppendJSONString(b, key)
		b = append(b, ':')
		switch key {
		case "annotations":
			b, ok = appendEntries(b, annotations, e.annotations)
		case "labels":
			b, ok = appendEntries(b, labels, e.labels)
		default:
			b, ok = kubeobj.AppendJSONString(b, e.namespace), true
		}
	}
	for _, m := range meta {
		for ; wi < n && written[wi] < string(m.Key); wi++ {
			if emit(written[wi]); !ok {
				return nil, false
			}
		}
		if slices.Contains(written[:], string(m.Key)) || isServerField(string(m.Key)) {
			continue // written above, or dropped
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(appendMemberKey(b, m.Key), m.Value...)
	}
	for ; wi < n; wi++ {
		if emit(written[wi]); !ok {
			return nil, false
		}
	}
	return append(b, '}'), true
}

// appendEntries appends the object of the plain labels or annotations cur
// (nil: none) with entries set in it; false when cur is not an object of
// strings.
func appendEntries(b, cur []byte, entries []metaEntry) ([]byte, bool) {
	var buf [16]kubeobj.Member
	have := buf[:0]
	if cur != nil {
		var ok bool
		if have, ok = kubeobj.AppendPlainMembers(have, cur); !ok {
			return nil, false
		}
		for _, m := range have {
			if m.Value[0] != '"' {
				return nil, false
			}
		}
	}
	b = append(b, '{')
	first := true
	sep := func() {
		if !first {
			b = append(b, ',')
		}
		first = false
	}
	writeEntry := func(en metaEntry) {
		sep()
		b = kubeobj.AppendJSONString(b, en.key)
		b = append(b, ':')
		b = kubeobj.AppendJSONString(b, en.value)
	}
	ei := 0
	for _, m := range have {
		for ; ei < len(entries) && entries[ei].key < string(m.Key); ei++ {
			writeEntry(entries[ei])
		}
		if ei < len(entries) && entries[ei].key == string(m.Key) {
			en := entries[ei]
			ei++
			if !en.ifAbsent {
				writeEntry(en)
				continue
			}
		}
		sep()
		b = append(appendMemberKey(b, m.Key), m.Value...)
	}
	for ; ei < len(entries); ei++ {
		writeEntry(entries[ei])
	}
	return append(b, '}'), true
}

// appendMemberKey appends a plain member's key and the colon after it.
func appendMemberKey(b, key []byte) []byte {
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

// plainPositiveInt returns the member key of the plain object obj when it
// is a positive integer, else 0 (as unstructured.NestedInt64 reads it: an
// integer is an int64, anything else is not one).
func plainPositiveInt(obj []byte, key string) int64 {
	var buf [16]kubeobj.Member
	members, ok := kubeobj.AppendPlainMembers(buf[:0], obj)
	if !ok {
		return 0
	}
	for _, m := range members {
		if string(m.Key) != key {
			continue
		}
		if c := m.Value[0]; c == '-' || c >= '0' && c <= '9' {
			if n, err := strconv.ParseInt(string(m.Value), 10, 64); err == nil && n > 0 {
				return n
			}
		}
		return 0
	}
	return 0
}

package kubeobj

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// plainDocs are documents in plain form (true) and next to it (false).
var plainDocs = []struct {
	doc   string
	plain bool
}{
	{`{}`, true},
	{`{"a":{},"b":[],"c":null,"d":true,"e":false,"f":"","g":0,"h":-7,"i":123456789012345678,"j":-123456789012345678}`, true},
	{`{"apiVersion":"v1","data":{"key":"value-1"},"kind":"ConfigMap","metadata":{"labels":{"a":"b"},"name":"cm"}}`, true},
	{`{"a":[[[]],[{"x":[1,"y",null]}]],"b":" !#$%'()*+,-./09:;=?@AZ[]^_` + "`" + `az{|}~"}`, true},
	{`{"":"empty key","a":"x"}`, true},
	{`{"b":1,"a":2}`, false},             // keys out of order
	{`{"a":1,"a":2}`, false},             // a duplicate
	{`{"a": 1}`, false},                  // white space
	{` {"a":1}`, false},                  // white space
	{`{"a":1} `, false},                  // trailing white space
	{`{"a":1}{}`, false},                 // trailing data
	{`[]`, false},                        // not an object
	{`"a"`, false},                       // not an object
	{`{"a":"\n"}`, false},                // an escape
	{`{"a":"<"}`, false},                 // escaped by Marshal
	{`{"a":"&"}`, false},                 // escaped by Marshal
	{`{"a":"é"}`, false},                 // not ASCII
	{"{\"a\":\"\x7f\"}", false},          // not printable
	{"{\"a\":\"\t\"}", false},            // a control byte
	{`{"a\\":1}`, false},                 // an escaped key
	{`{"a":1.5}`, false},                 // a float
	{`{"a":1e3}`, false},                 // an exponent
	{`{"a":1234567890123456789}`, false}, // 19 digits
	{`{"a":-0}`, false},                  // written 0
	{`{"a":01}`, false},                  // a leading zero
	{`{"a":-}`, false},                   // no digits
	{`{"a":tru}`, false},                 // not a literal
	{`{"a":[1,]}`, false},                // a trailing comma
	{`{"a":1,}`, false},                  // a trailing comma
	{`{"a"}`, false},                     // no value
	{`{"a":"b}`, false},                  // unterminated
	{`{"a":[1}`, false},                  // unclosed
	{`{`, false},                         // unclosed
	{``, false},                          // empty
	{strings.Repeat(`{"a":`, 600) + `1` + strings.Repeat(`}`, 600), false}, // too deep
}

// checkPlain fails t when AppendPlainMembers calls data plain and it is not
// a fixed point of Unmarshal and Marshal, or its members are not the
// document's; it reports whether data is plain.
func checkPlain(t testing.TB, data []byte) bool {
	t.Helper()
	prefix := []Member{{Key: []byte("kept")}}
	members, ok := AppendPlainMembers(prefix, data)
	if !ok {
		if len(members) != 1 {
			t.Errorf("%s: not plain, but %d members appended", data, len(members)-1)
		}
		return false
	}
	v, err := Unmarshal(data)
	if err != nil {
		t.Fatalf("%s: plain, but Unmarshal: %v", data, err)
	}
	again, err := Marshal(v)
	if err != nil || !bytes.Equal(again, data) {
		t.Fatalf("%s: plain, but Marshal(Unmarshal) = %s, %v", data, again, err)
	}
	if len(members) != len(v)+1 || string(members[0].Key) != "kept" {
		t.Fatalf("%s: %d members after the kept one, %d keys", data, len(members)-1, len(v))
	}
	// The members are the document's, in order.
	b := []byte{'{'}
	for i, m := range members[1:] {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(append(b, '"'), m.Key...), '"', ':'), m.Value...)
	}
	if b = append(b, '}'); !bytes.Equal(b, data) {
		t.Fatalf("%s: members make %s", data, b)
	}
	return true
}

// TestPlainIsAFixedPoint: every document AppendPlainMembers calls plain is
// what Marshal writes for what Unmarshal reads from it, and its members
// put together are the document; documents out of plain form are
// refused; most of Marshal's own output of random objects is plain.
func TestPlainIsAFixedPoint(t *testing.T) {
	for _, d := range plainDocs {
		if got := checkPlain(t, []byte(d.doc)); got != d.plain {
			t.Errorf("%.80s: plain %v, want %v", d.doc, got, d.plain)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	plain := 0
	for range 2000 {
		m := map[string]any{}
		for range r.IntN(6) {
			m[randomString(r)] = randomValue(r, 1)
		}
		data, err := Marshal(m)
		if err != nil {
			continue // NaN or an infinity, which JSON has not
		}
		if checkPlain(t, data) {
			plain++
		}
	}
	if plain < 100 {
		t.Errorf("%d of 2000 random objects plain", plain)
	}
}

// FuzzPlainMembers: whatever AppendPlainMembers calls plain is a fixed
// point of Unmarshal and Marshal, and its members are the document.
func FuzzPlainMembers(f *testing.F) {
	for _, d := range plainDocs {
		f.Add([]byte(d.doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkPlain(t, data)
	})
}

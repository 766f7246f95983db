package kubeobj

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// marshalValues are values of every kind Marshal writes itself or hands
// to encoding/json.
var marshalValues = []any{
	nil, true, false, "", "plain", "<html> & \"quotes\" \\ \n\t\x01\x7f", "é ü \u2028 \u2029", "\xff\xfe invalid",
	int64(0), int64(-42), int64(math.MaxInt64), int64(math.MinInt64), 7, int32(-3), uint64(math.MaxUint64),
	1.5, 1e21, 1e-7, math.Copysign(0, -1), float32(0.1), json.Number("12.50"), math.NaN(), math.Inf(1),
	map[string]any(nil), []any(nil), map[string]any{}, []any{},
	map[string]string{"b": "1", "a": "<"}, []string{"x", "y"}, struct{ A int }{1},
	map[string]any{"z": 1, "a": []any{"x", map[string]any{"k": nil, "K": 2.5}}, "": "empty key", "<": ">"},
}

func TestMarshalMatchesEncodingJSON(t *testing.T) {
	values := append([]any{}, marshalValues...)
	values = append(values, map[string]any{"all": marshalValues[:len(marshalValues)-1]})
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		values = append(values, randomValue(r, 0))
	}
	for _, v := range values {
		checkMarshal(t, v)
	}
	// A cycle is refused, as encoding/json refuses it.
	m := map[string]any{}
	m["self"] = m
	if _, err := Marshal(m); err == nil {
		t.Error("a map that holds itself encoded")
	}
}

// checkMarshal fails t when Marshal and encoding/json disagree on v.
func checkMarshal(t *testing.T, v any) {
	t.Helper()
	want, werr := json.Marshal(v)
	got, gerr := Marshal(v)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%#v: Marshal error %v, encoding/json error %v", v, gerr, werr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%#v: Marshal wrote %s, encoding/json %s", v, got, want)
	}
}

// randomValue builds a random JSON value of the kinds a decoded object
// holds, with a random scalar of another kind now and then.
func randomValue(r *rand.Rand, depth int) any {
	n := 9
	if depth > 4 {
		n = 6 // scalars only
	}
	switch r.IntN(n) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return randomString(r)
	case 3:
		return r.Int64() - math.MaxInt64/2
	case 4:
		return r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
	case 5:
		return marshalValues[r.IntN(len(marshalValues))]
	case 6, 7:
		m := make(map[string]any)
		for range r.IntN(6) {
			m[randomString(r)] = randomValue(r, depth+1)
		}
		return m
	default:
		s := make([]any, r.IntN(5))
		for i := range s {
			s[i] = randomValue(r, depth+1)
		}
		return s
	}
}

// randomString is a short string, mostly printable ASCII.
func randomString(r *rand.Rand) string {
	const chars = "abcXYZ019-_./: <>&\"\\\n\u00e9\u2028"
	var b strings.Builder
	for range r.IntN(8) {
		if r.IntN(10) == 0 {
			b.WriteByte(byte(r.IntN(256)))
			continue
		}
		rs := []rune(chars)
		b.WriteRune(rs[r.IntN(len(rs))])
	}
	return b.String()
}

// FuzzMarshal holds Marshal to encoding/json over the values JSON text
// decodes to, with numbers as float64 and as json.Number.
func FuzzMarshal(f *testing.F) {
	for _, v := range marshalValues {
		if b, err := json.Marshal(v); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"<y>"}},"data":{"k":"v\u00e9"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		checkMarshal(t, v)
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		if d.Decode(&v) == nil {
			checkMarshal(t, v)
		}
	})
}

// BenchmarkMarshal encodes a Deployment's body both ways, in the same run:
//
//	go test -run '^$' -bench Marshal -benchmem ./clusters/kubeobj/
func BenchmarkMarshal(b *testing.B) {
	var obj map[string]any
	body := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop","labels":{"app":"web","app.kubernetes.io/managed-by":"driftwatch"},"annotations":{"driftwatch.io/node-id":"prod:shop/web:deployment"}},` +
		`"spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1.27","ports":[{"containerPort":80}],"env":[{"name":"A","value":"1"}]}]}}}}`
	if err := json.Unmarshal([]byte(body), &obj); err != nil {
		b.Fatal(err)
	}
	b.Run("kubeobj", func(b *testing.B) {
		for b.Loop() {
			if _, err := Marshal(obj); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(obj); err != nil {
				b.Fatal(err)
			}
		}
	})
}

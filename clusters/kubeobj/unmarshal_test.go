package kubeobj

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// unmarshalSeeds are documents that take every branch of the fast path
// and of the hand-over to the library.
var unmarshalSeeds = []string{
	`{}`, ` { } `, `{"a":1,"b":-2,"c":0,"d":-0,"e":123456789012345678,"f":1234567890123456789,"g":1.5,"h":1e3,"i":-1E-2}`,
	`{"s":"plain","t":"esc\"aped\\ \/ \b\f\n\r\t \u00e9 \ud83d\ude00 \ud800","u":"é","v":"\xff","w":"ctl` + "\x01" + `"}`,
	`{"a":[],"b":[1,"x",null,true,false,{"c":[[]]}],"d":{"e":{}}}`, "{\n \"a\" : [ 1 , 2 ] ,\t\"b\":null\r\n}",
	`{"a":1,"a":2}`, `{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":tru}`, `{"a":1}x`, `{"a":1} {}`, `[1]`, `null`, `"s"`, `{"a":1,}`, `{"a" 1}`, `{"a":[1,]}`, `{`, ``,
	`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"y"},"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"a\":\"b\"}\n"}},"data":{"k":"v"}}`,
}

func TestUnmarshalMatchesTheLibrary(t *testing.T) {
	docs := append([]string{}, unmarshalSeeds...)
	r := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		m := map[string]any{}
		for range r.IntN(6) {
			m[randomString(r)] = randomValue(r, 1)
		}
		b, err := json.Marshal(m)
		if err != nil {
			continue // a NaN or an infinity
		}
		docs = append(docs, string(b))
	}
	fast := 0
	for _, doc := range docs {
		d := jsonDecoder{data: []byte(doc), text: doc}
		if d.space(); d.i < len(d.data) && d.data[d.i] == '{' {
			if _, ok := d.object(0); ok {
				fast++
			}
		}
		checkUnmarshal(t, []byte(doc))
	}
	if fast < len(docs)/4 { // random floats go to the library
		t.Errorf("only %d of %d documents took the fast path", fast, len(docs))
	}
}

// checkUnmarshal fails t when Unmarshal and the library disagree on data.
func checkUnmarshal(t *testing.T, data []byte) {
	t.Helper()
	var want map[string]any
	werr := utiljson.Unmarshal(data, &want)
	got, gerr := Unmarshal(data)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%q: Unmarshal error %v, the library's %v", data, gerr, werr)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: Unmarshal gave %#v, the library %#v", data, got, want)
	}
}

// FuzzUnmarshal holds Unmarshal to the library on any input.
func FuzzUnmarshal(f *testing.F) {
	for _, doc := range unmarshalSeeds {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkUnmarshal(t, data)
	})
}

// BenchmarkUnmarshal decodes a Deployment's body both ways, in the same
// run:
//
//	go test -run '^$' -bench Unmarshal -benchmem ./clusters/kubeobj/
func BenchmarkUnmarshal(b *testing.B) {
	body := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{"driftwatch.io/node-id":"prod:shop/web:deployment"},"labels":{"app":"web","app.kubernetes.io/managed-by":"driftwatch"},"name":"web","namespace":"shop"},` +
		`"spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"env":[{"name":"A","value":"1"}],"image":"nginx:1.27","name":"web","ports":[{"containerPort":80}]}]}}}}`)
	b.Run("kubeobj", func(b *testing.B) {
		for b.Loop() {
			if _, err := Unmarshal(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("library", func(b *testing.B) {
		for b.Loop() {
			var m map[string]any
			if err := utiljson.Unmarshal(body, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

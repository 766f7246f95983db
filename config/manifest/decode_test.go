package manifest

import (
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

// decodeReference decodes a document the library's way, as decodeDocument
// does when decodeFast leaves it: YAMLToJSON, then unmarshalDocument.
func decodeReference(data []byte) (any, error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	return unmarshalDocument(j, Origin{})
}

// decodeSeeds are documents whose values take every branch of jsonValue and
// of the fallback.
var decodeSeeds = []string{
	"",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: {app: a, tier: web}\ndata:\n  key: value\n  count: \"1\"\n",
	"n: 1\ny: 2\n",
	"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 3\n  template:\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n        ports: [{containerPort: 8080}]\n        resources: {limits: {cpu: 0.5, memory: 64Mi}}\n",
	"a: yes\nb: off\nc: ~\nd: null\ne: 0777\nf: 0x1F\ng: 1_000\nh: 1:20\n",
	"a: 1.0\nb: 1e3\nc: -0.0\nd: 1e21\ne: 1e20\nf: 9223372036854775807\ng: 9223372036854775808\nh: -9223372036854775808\ni: 18446744073709551616\nj: 0.1\nk: 1e-7\n",
	"a: .inf\n", "a: -.inf\n", "a: .nan\n",
	"1: one\n2.5: two\ntrue: three\n",
	"base: &b {x: 1, y: [1, 2]}\nderived:\n  <<: *b\n  z: 3\n",
	"a: 2001-12-14t21:59:43.10-05:00\nb: 2002-12-14\n",
	"a: !!binary aGVsbG8=\nb: !!str 12\nc: !!float 3\nd: !!int \"7\"\n",
	"- a\n- 1\n- [x, {y: z}]\n",
	"just a string\n",
	"a: \"\\xff\"\n",
	"a: [1, 2\n",
	"a: b\na: c\n",
	"{a: 1, \"1\": 2, 1: 3}\n",
}

func TestDecodeFastMatchesTheLibrary(t *testing.T) {
	fast := 0
	for _, doc := range decodeSeeds {
		got, ok := decodeFast([]byte(doc))
		want, err := decodeReference([]byte(doc))
		if !ok {
			continue
		}
		fast++
		if err != nil {
			t.Errorf("%q: decoded fast to %#v where the library fails: %v", doc, got, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: decoded fast to %#v, the library to %#v", doc, got, want)
		}
	}
	if fast < len(decodeSeeds)/2 {
		t.Errorf("only %d of %d documents took the fast path", fast, len(decodeSeeds))
	}
}

// TestDecodeFastTakesManifests checks that ordinary manifests take the fast
// path (the point of it) and that what it leaves to the library is what it
// says it does.
func TestDecodeFastTakesManifests(t *testing.T) {
	for _, doc := range []string{decodeSeeds[1], decodeSeeds[3]} {
		if _, ok := decodeFast([]byte(doc)); !ok {
			t.Errorf("%q: not decoded fast", doc)
		}
	}
	for _, doc := range []string{"a: .inf\n", "a: .nan\n", "1: one\n", "n: 1\n", "a: [1, 2\n"} {
		if v, ok := decodeFast([]byte(doc)); ok {
			t.Errorf("%q: decoded fast to %#v, want it left to the library", doc, v)
		}
	}
}

// FuzzDecodeFast holds decodeFast to the library's decoding: whatever it
// decodes, the library decodes without an error to the same value.
func FuzzDecodeFast(f *testing.F) {
	for _, doc := range decodeSeeds {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := decodeFast(data)
		if !ok {
			return
		}
		want, err := decodeReference(data)
		if err != nil {
			t.Fatalf("%q: decoded fast to %#v where the library fails: %v", data, got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: decoded fast to %#v, the library to %#v", data, got, want)
		}
	})
}

// BenchmarkDecodeDocument decodes a ConfigMap and a Deployment the two
// ways, in the same run:
//
//	go test -run '^$' -bench DecodeDocument -benchmem ./config/manifest/
func BenchmarkDecodeDocument(b *testing.B) {
	for _, doc := range []struct{ name, yaml string }{{"configmap", decodeSeeds[1]}, {"deployment", decodeSeeds[3]}} {
		data := []byte(doc.yaml)
		b.Run(doc.name+"/fast", func(b *testing.B) {
			for b.Loop() {
				if _, ok := decodeFast(data); !ok {
					b.Fatal("not decoded fast")
				}
			}
		})
		b.Run(doc.name+"/library", func(b *testing.B) {
			for b.Loop() {
				if _, err := decodeReference(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

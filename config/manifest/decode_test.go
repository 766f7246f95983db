package manifest

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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
	// decodeSimple's part of YAML, and its edges.
	"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web # the name\n  labels:\n    app.kubernetes.io/name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        args: []\n        env:\n        - name: A\n          value: '1'\n        - {name: B, value: \"it's\"}\n        resources: {}\n",
	"data:\n  nginx.conf: |\n    server {\n      listen 80;  \n\n      # a comment in the file\n    }\n\n  other: |-\n    one\n    two\n\n\nk: v\n",
	"- |\n a\n-\n- - x\n  - y\n- a: 1\n  b:\n  c: -1\n-   d: 'x''y'\n    e: [1, -2, a b, \"c\", {f: g}]\n",
	"a:\n- 1\n- 2\nb: ~\nc: 0\nd: 007\ne: 123456789012345678\nf: 1234567890123456789\ng: +1\nh: -0\ni: 1.5\nj: .5\nk: yes\nl: Off\nm: yEs\no: 0x1f\np: 0.5\nq: -0.0\nr: 10.250\ns: 1.\nt: 123456789012345678901234.5\nu: 64Mi\nv: 100m\nw: 1e3x\nx: 0b1\ny2: 0o17\nz: 12a3\n",
	"a: b: c\n", "a: b:\n", "a: 'x' y\n", "a: \"x\ny\"\n", "a: |+\n  x\n", "a: >\n  x\n", "a: |\n\n  x\n",
	"a: |\n    x\n  y\n", "a: b\n  c\n", "a:\n  b\n", "- a\n  b\n", "<<: {x: 1}\n", "a: [x: 1]\n", "a: {b}\n",
	"a: [1,]\n", "a: {b: 1,}\n", "a: [a#b]\n", "a: *x\n", "a: &x 1\n", "a: !x 1\n", "a: %x\n", "a: ---\n", "a: - b\n",
	"yes: 1\n", "~: 1\n", "1.5: a\n", "0.5.1: a\n", "a b: c d\n", "a:b: c\n", "url: http://x:8080/p\n", "a : b\n",
	"  a: 1\n  b: 2\n", "  a: 1\nb: 2\n", "a: 1\na: 2\n", "a:\n  - x\n- y\n", "- a:\n  - x\n- b\n", "a: 1\r\n", "a:\tb\n", "a: \u00e9\n",
	"a: '''\n", "a: ''\n", "a: \"\"\n", "a: [\"x, y\", 'z']\n", "a: {b: {c: [d, {e: f}]}}\n", "a: [[], {}]\n", "a: [0?]\n", "a: {b?c: 1}\n", "a?b: c\n", "%YAML 1.1\na: 1\n", "a: 1\n...\n",
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

func TestDecodeSimpleMatchesTheLibrary(t *testing.T) {
	simple := 0
	for _, doc := range decodeSeeds {
		got, ok := decodeSimple([]byte(doc))
		if !ok {
			continue
		}
		simple++
		want, err := decodeReference([]byte(doc))
		if err != nil {
			t.Errorf("%q: decoded simply to %#v where the library fails: %v", doc, got, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: decoded simply to %#v, the library to %#v", doc, got, want)
		}
	}
	if simple < 15 {
		t.Errorf("only %d of %d documents took the simple path", simple, len(decodeSeeds))
	}
}

// TestDecodeSimpleTakesManifests checks that the manifests of the repo
// (the tests', the examples', the demo's, the deployment's) mostly take
// the simple path (the point of it), each to the library's value, and
// that the edges it says it leaves to the library are left.
func TestDecodeSimpleTakesManifests(t *testing.T) {
	docs, simple := 0, 0
	for _, dir := range []string{"testdata", "../examples", "../../internal/app/demomanifests", "../../deploy"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || (!strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".yml")) || strings.Contains(path, "templates") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, doc := range splitDocuments(data) {
				want, err := decodeReference(doc.data)
				if err != nil {
					continue
				}
				docs++
				got, ok := decodeSimple(doc.data)
				if !ok {
					continue
				}
				simple++
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s:%d: decoded simply to %#v, the library to %#v", path, doc.line, got, want)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d of %d manifests took the simple path", simple, docs)
	if docs < 50 || simple*10 < docs*8 {
		t.Errorf("%d of %d manifests took the simple path, want 80%%", simple, docs)
	}
	for _, doc := range []string{decodeSeeds[1], decodeSeeds[3], decodeSeeds[19], decodeSeeds[20], decodeSeeds[21], decodeSeeds[22]} {
		if _, ok := decodeSimple([]byte(doc)); !ok {
			t.Errorf("%q: not decoded simply", doc)
		}
	}
	for _, doc := range []string{"a: b: c\n", "a: |+\n  x\n", "a: >\n  x\n", "<<: {x: 1}\n", "a: *x\n", "a: !x 1\n", "a: 1\na: 2\n", "yes: 1\n", "a: \"x\\ny\"\n", "a:\tb\n", "a: b\n  c\n"} {
		if v, ok := decodeSimple([]byte(doc)); ok {
			t.Errorf("%q: decoded simply to %#v, want it left to the library", doc, v)
		}
	}
}

// FuzzDecodeFast holds decodeSimple and decodeFast to the library's
// decoding: whatever either decodes, the library decodes without an error
// to the same value.
func FuzzDecodeFast(f *testing.F) {
	for _, doc := range decodeSeeds {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, way := range []struct {
			name   string
			decode func([]byte) (any, bool)
		}{{"simply", decodeSimple}, {"fast", decodeFast}} {
			got, ok := way.decode(data)
			if !ok {
				continue
			}
			want, err := decodeReference(data)
			if err != nil {
				t.Fatalf("%q: decoded %s to %#v where the library fails: %v", data, way.name, got, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: decoded %s to %#v, the library to %#v", data, way.name, got, want)
			}
		}
	})
}

// BenchmarkDecodeDocument decodes a ConfigMap and a Deployment the three
// ways, in the same run:
//
//	go test -run '^$' -bench DecodeDocument -benchmem ./config/manifest/
func BenchmarkDecodeDocument(b *testing.B) {
	for _, doc := range []struct{ name, yaml string }{{"configmap", decodeSeeds[1]}, {"deployment", decodeSeeds[3]}} {
		data := []byte(doc.yaml)
		b.Run(doc.name+"/simple", func(b *testing.B) {
			for b.Loop() {
				if _, ok := decodeSimple(data); !ok {
					b.Fatal("not decoded simply")
				}
			}
		})
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

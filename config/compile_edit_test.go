package config

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// editBodies are stored source bodies of every shape the compile meets:
// plain says whether the edit is written from the plain members.
var editBodies = []struct {
	name, doc string
	plain     bool
}{
	{"configmap", `{"apiVersion":"v1","data":{"key":"value-1"},"kind":"ConfigMap","metadata":{"name":"cm","namespace":"relaunch"}}`, true},
	{"cluster-scoped", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns"}}`, true},
	{"labels and annotations", `{"kind":"ConfigMap","metadata":{"annotations":{"a":"1","driftwatch.io/prune":"enabled","z":"2"},"labels":{"app.kubernetes.io/managed-by":"someone","b":"","zz":"3"},"name":"a"}}`, true},
	{"empty labels and annotations", `{"kind":"ConfigMap","metadata":{"annotations":{},"labels":{},"name":"a"}}`, true},
	{"server fields and status", `{"kind":"ConfigMap","metadata":{"creationTimestamp":null,"deletionGracePeriodSeconds":30,"generation":3,"managedFields":[{"manager":"kubectl"}],"name":"a","resourceVersion":"12","selfLink":"/x","uid":"u"},"status":{"phase":"x"}}`, true},
	{"keys around the written ones", `{"metadata":{"a":"1","finalizers":["x"],"generateName":"g","name":"n","namespace":"old","ownerReferences":[],"zzz":{}}}`, true},
	{"deployment", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"progressDeadlineSeconds":120,"replicas":2,"template":{"spec":{"containers":[{"args":["-v",true,null,-3,123456789012345678],"name":"c"}]}}}}`, true},
	{"deadline negative", `{"kind":"Deployment","metadata":{"name":"d"},"spec":{"progressDeadlineSeconds":-5}}`, true},
	{"deadline zero", `{"kind":"Deployment","metadata":{"name":"d"},"spec":{"progressDeadlineSeconds":0}}`, true},
	{"deadline a string", `{"kind":"Deployment","metadata":{"name":"d"},"spec":{"progressDeadlineSeconds":"120"}}`, true},
	{"spec a list", `{"kind":"Deployment","metadata":{"name":"d"},"spec":[1]}`, true},
	{"deadline a float", `{"kind":"Deployment","metadata":{"name":"d"},"spec":{"progressDeadlineSeconds":1.5}}`, false},
	{"keys out of order", `{"metadata":{"name":"a"},"kind":"ConfigMap"}`, false},
	{"white space", `{"kind": "ConfigMap","metadata":{"name":"a"}}`, false},
	{"an escape", `{"data":{"k":"a\"b"},"metadata":{"name":"a"}}`, false},
	{"an HTML character", `{"data":{"k":"<b>"},"metadata":{"name":"a"}}`, false},
	{"not ASCII", `{"data":{"k":"grün"},"metadata":{"name":"a"}}`, false},
	{"19 digits", `{"data":{"k":1234567890123456789},"metadata":{"name":"a"}}`, false},
	{"minus zero", `{"data":{"k":-0},"metadata":{"name":"a"}}`, false},
	{"a leading zero", `{"data":{"k":01},"metadata":{"name":"a"}}`, false},
	{"a duplicate key", `{"metadata":{"name":"a","name":"b"}}`, false},
	{"labels null", `{"metadata":{"labels":null,"name":"a"}}`, false},
	{"a null label", `{"metadata":{"labels":{"x":null},"name":"a"}}`, false},
	{"a number label", `{"metadata":{"labels":{"x":1},"name":"a"}}`, false},
	{"labels a list", `{"metadata":{"labels":["x"],"name":"a"}}`, false},
	{"annotations not strings", `{"metadata":{"annotations":{"n":true},"name":"a"}}`, false},
	{"metadata null", `{"kind":"ConfigMap","metadata":null}`, false},
	{"metadata a string", `{"kind":"ConfigMap","metadata":"x"}`, false},
	{"no metadata", `{"kind":"ConfigMap"}`, false},
}

// testEdits are edits of every shape sourceEdit makes, and some it does
// not (values that need escaping, keys that sort among the object's).
func testEdits() []*metaEdit {
	std := func(ns string, prune, deadline bool) *metaEdit {
		e := &metaEdit{
			namespace: ns,
			labels: sortEntries([]metaEntry{
				{key: "app.kubernetes.io/managed-by", value: "driftwatch"},
				{key: "driftwatch.io/application", value: "cms"},
			}),
			annotations: []metaEntry{
				{key: "driftwatch.io/node-id", value: "c1:relaunch/cm:configmap"},
				{key: "driftwatch.io/hub", value: "hub-1"},
			},
			deadline: deadline,
		}
		if prune {
			e.annotations = append(e.annotations, metaEntry{key: "driftwatch.io/prune", value: "disabled", ifAbsent: true})
		}
		e.annotations = sortEntries(e.annotations)
		return e
	}
	odd := &metaEdit{
		namespace:   "ns <&> ü",
		labels:      sortEntries([]metaEntry{{key: "name", value: "x\"y"}, {key: "a", value: ""}, {key: "zzzz", value: "\u2028"}}),
		annotations: sortEntries([]metaEntry{{key: "z", value: "1", ifAbsent: true}, {key: "b", value: "2", ifAbsent: true}}),
	}
	return []*metaEdit{std("", false, false), std("target", true, true), std("relaunch", false, true), odd}
}

// checkEdit checks that e's plain way, when it takes body, gives the
// decoded way's bytes and deadline, and reports whether it took it.
func checkEdit(t testing.TB, e *metaEdit, body []byte) bool {
	t.Helper()
	got, secs, ok := e.plain(body)
	if !ok {
		return false
	}
	want, wantSecs, err := e.decoded(body)
	if err != nil {
		t.Errorf("the plain way took %s, which does not decode: %v", body, err)
		return true
	}
	if !bytes.Equal(got, want) || secs != wantSecs {
		t.Errorf("edit %+v of %s:\nplain   %s (deadline %d)\ndecoded %s (deadline %d)", *e, body, got, secs, want, wantSecs)
	}
	return true
}

// TestPlainEditMatchesDecoded: for each shape of body and each edit, the
// compile's edit written from the plain members is byte for byte the
// decoded one, and bodies in plain form with a metadata object of string
// labels and annotations take the plain way.
func TestPlainEditMatchesDecoded(t *testing.T) {
	for _, b := range editBodies {
		t.Run(b.name, func(t *testing.T) {
			for _, e := range testEdits() {
				if took := checkEdit(t, e, []byte(b.doc)); took != b.plain {
					t.Errorf("plain way taken: %v, want %v (edit %+v)", took, b.plain, *e)
				}
				out, _, err := e.apply([]byte(b.doc))
				want, _, wantErr := e.decoded([]byte(b.doc))
				if !bytes.Equal(out, want) || (err == nil) != (wantErr == nil) {
					t.Errorf("apply = %s, %v; want %s, %v", out, err, want, wantErr)
				}
			}
		})
	}
}

// TestPlainEditTakesManifests compiles every object of the example
// configs both ways: the same bytes, and most take the plain way (the
// load stores bodies as kubeobj.Marshal writes them).
func TestPlainEditTakesManifests(t *testing.T) {
	var objects, plain int
	files, err := filepath.Glob("examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The demo's kustomize overlays and the hub's own deployment too.
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(t.TempDir(), "own.yaml")
	if err := os.WriteFile(own, []byte(fmt.Sprintf(`clusters: [{id: c1, kubeconfig: /k}, {id: c2, kubeconfig: /k}, {id: c3, kubeconfig: /k}]
sources:
  - {id: staging, kustomize: %[1]s/internal/app/demomanifests/overlays/staging, clusters: [c1]}
  - {id: prod, kustomize: %[1]s/internal/app/demomanifests/overlays/prod, clusters: [c2]}
  - {id: hub, kustomize: %[1]s/deploy/base, clusters: [c3]}
`, repo)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range append(files, own) {
		cfg, err := Load(f, testLoadOptions())
		if err != nil {
			t.Fatal(err)
		}
		for _, cl := range cfg.Clusters {
			ps, err := cfg.placeCluster(cl.Info())
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				body, err := p.obj.dict.Unpack(p.obj.body)
				if err != nil {
					t.Fatal(err)
				}
				objects++
				e := cfg.sourceEdit(p, p.id.String(), nil)
				if checkEdit(t, &e, body) {
					plain++
				}
			}
		}
	}
	t.Logf("%d of %d objects take the plain way", plain, objects)
	if objects < 20 || plain*10 < objects*8 {
		t.Errorf("%d of %d objects take the plain way, want 80%%", plain, objects)
	}
}

// FuzzPlainEdit: whatever body the plain way takes, it gives the decoded
// way's bytes.
func FuzzPlainEdit(f *testing.F) {
	for _, b := range editBodies {
		f.Add([]byte(b.doc), "ns", true)
		f.Add([]byte(b.doc), "", false)
	}
	f.Fuzz(func(t *testing.T, body []byte, ns string, pick bool) {
		for i, e := range testEdits() {
			if pick == (i%2 == 0) {
				e.namespace = ns
			}
			checkEdit(t, e, body)
		}
	})
}

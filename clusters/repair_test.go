package clusters

import (
	"encoding/json"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"slices"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/clusters/drift"
)

func TestRepairPatch(t *testing.T) {
	const test = `{"op":"test","path":"/metadata/resourceVersion","value":"42"}`
	tests := []struct {
		name     string
		pointers []string
		items    []listItem
		want     string
	}{
		{"one key", []string{"/data/drift"}, nil,
			`[` + test + `,{"op":"remove","path":"/data/drift"}]`},
		{"list items from the highest index down", []string{"/spec/template/spec/containers/0/env/2", "/spec/template/spec/containers/0/env/10", "/spec/template/spec/containers/1"}, nil,
			`[` + test + `,` +
				`{"op":"remove","path":"/spec/template/spec/containers/1"},` +
				`{"op":"remove","path":"/spec/template/spec/containers/0/env/10"},` +
				`{"op":"remove","path":"/spec/template/spec/containers/0/env/2"}]`},
		{"nested before its parent", []string{"/a/1", "/a/1/b"}, nil,
			`[` + test + `,{"op":"remove","path":"/a/1/b"},{"op":"remove","path":"/a/1"}]`},
		{"a replaced item: ours added at the end, then the other removed", []string{"/spec/ports/0"},
			[]listItem{{list: "/spec/ports", value: map[string]any{"name": "http", "port": int64(80)}}},
			`[` + test + `,{"op":"add","path":"/spec/ports/-","value":{"name":"http","port":80}},{"op":"remove","path":"/spec/ports/0"}]`},
		{"several removed, one added", []string{"/spec/ports/1", "/spec/ports/3", "/spec/ports/2"},
			[]listItem{{list: "/spec/ports", value: map[string]any{"name": "grpc", "port": int64(9090)}}},
			`[` + test + `,{"op":"add","path":"/spec/ports/-","value":{"name":"grpc","port":9090}},` +
				`{"op":"remove","path":"/spec/ports/3"},{"op":"remove","path":"/spec/ports/2"},{"op":"remove","path":"/spec/ports/1"}]`},
		{"a set item that is an empty string keeps its value", []string{"/spec/tags/0"},
			[]listItem{{list: "/spec/tags", value: ""}},
			`[` + test + `,{"op":"add","path":"/spec/tags/-","value":""},{"op":"remove","path":"/spec/tags/0"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]string(nil), tt.pointers...)
			got, err := repairPatch("42", tt.pointers, tt.items)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("patch =\n%s\nwant\n%s", got, tt.want)
			}
			if strings.Join(in, ",") != strings.Join(tt.pointers, ",") {
				t.Fatal("repairPatch reordered its input")
			}
		})
	}
}

func TestValueAt(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{
		"ports": []any{map[string]any{"port": int64(80)}},
		"a/b~c": "escaped",
	}}
	tests := []struct {
		pointer string
		want    any
		ok      bool
	}{
		{"/spec/ports/0/port", int64(80), true},
		{"/spec/a~1b~0c", "escaped", true},
		{"/spec/ports/1", nil, false},
		{"/spec/ports/x", nil, false},
		{"/spec/ports/-1", nil, false},
		{"/spec/none", nil, false},
		{"/spec/a~1b~0c/deeper", nil, false},
		{"spec", nil, false},
	}
	for _, tt := range tests {
		got, ok := valueAt(obj, tt.pointer)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("valueAt(%q) = %v, %v; want %v, %v", tt.pointer, got, ok, tt.want, tt.ok)
		}
	}
}

// TestReplacedEntryPatch: the drift engine's fields of a fresh read give a
// repair's edits; the patch built from them, applied to the live object
// by the JSON patch library the apiserver uses, leaves the lists in sync
// with desired: what validation sees (only the patch's result) is neither
// an empty list nor one with two entries of one name, and the apply that
// follows has nothing left to add or remove there.
func TestReplacedEntryPatch(t *testing.T) {
	port := func(name string, port, target int64) map[string]any {
		return map[string]any{"name": name, "port": port, "targetPort": target, "protocol": "TCP"}
	}
	service := func(ports ...any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": "web", "namespace": "shop", "resourceVersion": "42",
				"labels": map[string]any{kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy}},
			"spec": map[string]any{"selector": map[string]any{"app": "web"}, "ports": ports},
		}}
	}
	deployment := func(containers ...any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "shop", "resourceVersion": "42",
				"labels": map[string]any{kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy}},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": containers}}},
		}}
	}
	ctr := func(name string, env ...string) map[string]any {
		c := map[string]any{"name": name, "image": "x"}
		var vars []any
		for _, e := range env {
			vars = append(vars, map[string]any{"name": e, "value": "1"})
		}
		if vars != nil {
			c["env"] = vars
		}
		return c
	}
	tests := []struct {
		name          string
		desired, live *unstructured.Unstructured
		remove        []string
		add           []string // lists
		inSync        bool     // after the patch alone
	}{
		{name: "the only port replaced",
			desired: service(port("http", 80, 8080)), live: service(port("http", 81, 8080)),
			remove: []string{"/spec/ports/0"}, add: []string{"/spec/ports"}, inSync: true},
		{name: "one of two ports replaced",
			desired: service(port("http", 80, 8080), port("grpc", 9090, 9090)),
			live:    service(port("http", 81, 8080), port("grpc", 9090, 9090)),
			remove:  []string{"/spec/ports/0"}, add: []string{"/spec/ports"}, inSync: true},
		{name: "the second port replaced and two added",
			desired: service(port("http", 80, 8080), port("grpc", 9090, 9090)),
			live:    service(port("debug", 2345, 2345), port("http", 80, 8080), port("grpc", 9091, 9090), port("admin", 8081, 8081)),
			remove:  []string{"/spec/ports/0", "/spec/ports/2", "/spec/ports/3"}, add: []string{"/spec/ports"}, inSync: true},
		{name: "a port added: nothing to add",
			desired: service(port("http", 80, 8080)), live: service(port("http", 80, 8080), port("debug", 2345, 2345)),
			remove: []string{"/spec/ports/1"}, inSync: true},
		{name: "a port of ours removed, none added: left to the apply",
			desired: service(port("http", 80, 8080), port("grpc", 9090, 9090)), live: service(port("http", 80, 8080))},
		{name: "our only container replaced",
			desired: deployment(ctr("app")), live: deployment(ctr("other")),
			remove: []string{"/spec/template/spec/containers/0"}, add: []string{"/spec/template/spec/containers"}, inSync: true},
		{name: "an env var renamed in the second container, live containers in another order",
			desired: deployment(ctr("app"), ctr("sidecar", "A", "B")), live: deployment(ctr("sidecar", "A", "C"), ctr("app")),
			remove: []string{"/spec/template/spec/containers/0/env/1"}, add: []string{"/spec/template/spec/containers/0/env"}, inSync: true},
		{name: "a container added and an env var renamed in ours after it",
			desired: deployment(ctr("app", "A")), live: deployment(ctr("debug"), ctr("app", "B")),
			remove: []string{"/spec/template/spec/containers/0", "/spec/template/spec/containers/1/env/0"},
			add:    []string{"/spec/template/spec/containers/1/env"}, inSync: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := drift.Classify(tt.desired, tt.live, "")
			if d.InSync() {
				t.Fatal("no drift")
			}
			remove, items, err := repairEdits(d.Fields, tt.desired.Object)
			if err != nil {
				t.Fatal(err)
			}
			var lists []string
			for _, it := range items {
				lists = append(lists, it.list)
			}
			slices.Sort(remove)
			if !slices.Equal(remove, tt.remove) || !slices.Equal(lists, tt.add) {
				t.Fatalf("edits: remove %v, add to %v; want remove %v, add to %v (drift %s)", remove, lists, tt.remove, tt.add, d.Summary())
			}
			if len(remove) == 0 {
				return
			}
			patch, err := repairPatch("42", remove, items)
			if err != nil {
				t.Fatal(err)
			}
			live, err := json.Marshal(tt.live.Object)
			if err != nil {
				t.Fatal(err)
			}
			p, err := jsonpatch.DecodePatch(patch)
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Apply(live)
			if err != nil {
				t.Fatalf("patch %s does not apply: %v", patch, err)
			}
			var patched unstructured.Unstructured
			if err := patched.UnmarshalJSON(out); err != nil {
				t.Fatal(err)
			}
			after := drift.Classify(tt.desired, &patched, "")
			if after.InSync() != tt.inSync {
				t.Fatalf("after the patch %s: %s", patch, after.Summary())
			}
			// A stale read: the test op refuses the patch.
			if _, err := p.Apply([]byte(strings.Replace(string(live), `"resourceVersion":"42"`, `"resourceVersion":"43"`, 1))); err == nil {
				t.Fatal("the patch applied to another resourceVersion")
			}
		})
	}
}

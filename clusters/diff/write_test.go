package diff

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"strings"
	"testing"
	"time"

	goldenfile "github.com/driftwatch/driftwatch/internal/golden"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/driftwatch/driftwatch/clusters/drift"
	"github.com/driftwatch/driftwatch/hub"
)

// golden compares got with testdata/<name> (see internal/golden).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, name, got)
}

func configMap(id string, data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "web", "namespace": "shop",
			"labels":      map[string]any{kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy, "app": "web"},
			"annotations": map[string]any{kubeobj.NodeIDAnnotation: id}},
		"data": data,
	}}
}

func deployment(replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop",
			"labels": map[string]any{kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy, "app": "web"}},
		"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "app", "image": "nginx:1.27",
					"env": []any{map[string]any{"name": "MODE", "value": "prod"}},
				}}},
			},
		},
	}}
}

// live returns u as the apiserver would show it, after edit.
func live(u *unstructured.Unstructured, edit func(m map[string]any)) *unstructured.Unstructured {
	l := u.DeepCopy()
	md := l.Object["metadata"].(map[string]any)
	md["resourceVersion"] = "42"
	md["uid"] = "0a1b"
	l.Object["status"] = map[string]any{"observedGeneration": int64(1)}
	if edit != nil {
		edit(l.Object)
	}
	return l
}

func mustUnified(t *testing.T, desired, live *unstructured.Unstructured) string {
	t.Helper()
	d, err := Unified(desired, live)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// fixedReport is a report with one object of each outcome.
func fixedReport(t *testing.T) *Report {
	at := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	id := func(s string) hub.NodeID {
		n, err := hub.ParseNodeID(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	cm := configMap("prod-eu:shop/web:configmap", map[string]any{"a": "1", "b": "2"})
	cmUS := configMap("prod-us:shop/web:configmap", map[string]any{"a": "1", "b": "2"})
	cmLive := live(cm, func(m map[string]any) { m["data"].(map[string]any)["drift"] = "x" })
	dep := deployment(2)
	depLive := live(dep, func(m map[string]any) {
		m["spec"].(map[string]any)["replicas"] = int64(5)
		m["spec"].(map[string]any)["progressDeadlineSeconds"] = int64(600)
	})
	return &Report{
		At: at,
		Objects: []Object{
			{ID: id("prod-eu:shop/web:configmap"), Application: "web", Class: hub.DriftAdded,
				Fields:      []hub.FieldDiff{{Path: "data.drift", Desired: "<none>", Actual: "x", Added: true, Pointer: "/data/drift"}},
				Attribution: &hub.Attribution{Manager: "kubectl-edit", Operation: "Update", At: at.Add(-2 * time.Minute), Fields: []string{"data.drift"}},
				Diff:        mustUnified(t, cm, cmLive)},
			{ID: id("prod-eu:shop/web:deployment"), Application: "web", Class: hub.DriftModified,
				Fields:      []hub.FieldDiff{{Path: "spec.replicas", Desired: "2", Actual: "5"}},
				Attribution: &hub.Attribution{Manager: "kubectl-scale", Operation: "Update", At: at.Add(-90 * time.Second), Fields: []string{"spec.replicas"}},
				Diff:        mustUnified(t, dep, depLive)},
			{ID: id("prod-eu:shop/web:service"), Application: "web", Class: hub.DriftNone},
			{ID: id("prod-us:shop/web:configmap"), Application: "web", Class: hub.DriftMissing, Diff: mustUnified(t, cmUS, nil)},
			{ID: id("prod-us:shop/web:deployment"), Application: "web",
				Err: errors.New(`cluster "prod-us": forbidden: cannot get deployments web in namespace "shop" (RBAC)`)},
		},
		Unreachable: []ClusterError{{Cluster: "staging", Objects: 3,
			Err: errors.New(`cluster "staging": cannot reach the apiserver to probe /readyz: dial tcp 127.0.0.1:1: connect: connection refused`)}},
		Unauthorized: []ClusterError{{Cluster: "edge", Objects: 2,
			Err: errors.New(`cluster "edge": unauthorized: the apiserver rejected the kubeconfig's credentials while trying to probe /readyz`)}},
	}
}

func TestWriteGolden(t *testing.T) {
	r := fixedReport(t)
	var text, js bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.txt.golden", text.Bytes())
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json.golden", js.Bytes())
	var back map[string]any
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("WriteJSON wrote invalid JSON: %v", err)
	}

	// A source not checked: a line, and the summary says so.
	notChecked := &Report{At: r.At, Objects: []Object{r.Objects[2]}, NotChecked: []NotChecked{{Source: "clusterAPI source mgmt", Reason: "not diffed"}}}
	text.Reset()
	if err := notChecked.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if got, want := text.String(), "not checked clusterAPI source mgmt: not diffed\nsummary: 1 object on 1 cluster: all in sync; 1 source not checked\n"; got != want {
		t.Errorf("a source not checked: text %q, want %q", got, want)
	}

	// In sync: no diff, only the summary.
	sync := &Report{At: r.At, Objects: []Object{r.Objects[2]}}
	text.Reset()
	if err := sync.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if got, want := text.String(), "summary: 1 object on 1 cluster: all in sync\n"; got != want {
		t.Errorf("in sync text %q, want %q", got, want)
	}
	js.Reset()
	if err := (&Report{At: r.At}).WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"objects": []`) || !strings.Contains(js.String(), `"unreachable": []`) || !strings.Contains(js.String(), `"unauthorized": []`) {
		t.Errorf("empty report: want empty lists, not null:\n%s", js.String())
	}
}

func TestExitCode(t *testing.T) {
	r := fixedReport(t)
	inSync, modified, missing, failed := r.Objects[2], r.Objects[1], r.Objects[3], r.Objects[4]
	down, refused := r.Unreachable, r.Unauthorized
	refusedRepair := modified
	refusedRepair.WouldFail = errors.New("denied by policy")
	tests := []struct {
		name                      string
		objects                   []Object
		unreachable, unauthorized []ClusterError
		want                      int
	}{
		{"nothing", nil, nil, nil, ExitInSync},
		{"in sync", []Object{inSync}, nil, nil, ExitInSync},
		{"modified", []Object{inSync, modified}, nil, nil, ExitDrift},
		{"missing", []Object{missing}, nil, nil, ExitDrift},
		{"unreachable", []Object{inSync}, down, nil, ExitUnreachable},
		{"unreachable wins over drift", []Object{modified}, down, nil, ExitUnreachable},
		{"an object not checked wins over drift", []Object{modified, failed}, nil, nil, ExitUnreachable},
		{"unauthorized", []Object{inSync}, nil, refused, ExitUnauthorized},
		{"unauthorized wins over unreachable and drift", []Object{modified, failed}, down, refused, ExitUnauthorized},
		{"a source not checked", []Object{inSync}, nil, nil, ExitUnreachable},
		{"a source not checked, nothing else", nil, nil, nil, ExitUnreachable},
		{"a source not checked wins over drift", []Object{modified}, nil, nil, ExitUnreachable},
		{"unauthorized wins over a source not checked", []Object{inSync}, nil, refused, ExitUnauthorized},
		{"a repair a dry run refused", []Object{inSync, refusedRepair}, nil, nil, ExitWouldFail},
		{"a repair refused wins over drift, in either order", []Object{modified, refusedRepair, missing}, nil, nil, ExitWouldFail},
		{"unreachable wins over a repair refused", []Object{refusedRepair}, down, nil, ExitUnreachable},
		{"unauthorized wins over a repair refused", []Object{refusedRepair}, nil, refused, ExitUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := &Report{Objects: tt.objects, Unreachable: tt.unreachable, Unauthorized: tt.unauthorized}
			if strings.Contains(tt.name, "a source not checked") {
				rep.NotChecked = []NotChecked{{Source: "clusterAPI source mgmt", Reason: "not diffed"}}
			}
			if got := rep.ExitCode(); got != tt.want {
				t.Errorf("ExitCode = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestUnified: only managed fields appear; equal objects give no diff.
func TestUnified(t *testing.T) {
	dep := deployment(2)
	if d := mustUnified(t, dep, live(dep, nil)); d != "" {
		t.Errorf("in sync: diff %q, want none", d)
	}
	d := mustUnified(t, dep, live(dep, func(m map[string]any) { m["spec"].(map[string]any)["replicas"] = int64(5) }))
	for _, want := range []string{"-  replicas: 2\n", "+  replicas: 5\n"} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
	for _, never := range []string{"resourceVersion", "uid", "status", "observedGeneration"} {
		if strings.Contains(d, never) {
			t.Errorf("diff shows %s, which driftwatch does not manage:\n%s", never, d)
		}
	}
	gone := strings.Split(strings.TrimSuffix(mustUnified(t, dep, nil), "\n"), "\n")
	if !strings.HasPrefix(gone[0], "@@ -1,") || !strings.HasSuffix(gone[0], " +0,0 @@") {
		t.Errorf("missing: hunk header %q, want @@ -1,N +0,0 @@", gone[0])
	}
	for _, l := range gone[1:] {
		if !strings.HasPrefix(l, "-") {
			t.Errorf("missing: line %q is not a removal", l)
		}
	}
}

// TestUnifiedShowsAnyLiveValue: a live value holding characters YAML does
// not take raw (DEL, C1 controls, NEL) is a diff like any other, with
// those characters escaped; it used to fail the object's report with
// "control characters are not allowed".
func TestUnifiedShowsAnyLiveValue(t *testing.T) {
	dep := deployment(2)
	d := mustUnified(t, dep, live(dep, func(m map[string]any) {
		c := m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		c["image"] = "nginx\x7f\u0085\u009b[2J"
	}))
	if !strings.Contains(d, "+        image: \"nginx\\x7F\\N\\x9B[2J\"\n") {
		t.Errorf("diff lacks the escaped image:\n%s", d)
	}
	for _, raw := range []string{"\x7f", "\u0085", "\u009b"} {
		if strings.Contains(d, raw) {
			t.Errorf("diff holds %q raw:\n%s", raw, d)
		}
	}
}

// pipelineTypes is the structured-merge-diff schema of a custom resource
// whose stages are a list of maps keyed by name, as a cluster publishes it
// for a CRD with x-kubernetes-list-type map.
const pipelineTypes = `types:
- name: pipeline
  map:
    fields:
    - {name: apiVersion, type: {scalar: string}}
    - {name: kind, type: {scalar: string}}
    - name: spec
      type:
        map:
          fields:
          - name: stages
            type:
              list:
                elementType: {namedType: stage}
                elementRelationship: associative
                keys: [name]
- name: stage
  map:
    fields:
    - {name: name, type: {scalar: string}}
    - {name: image, type: {scalar: string}}
    - {name: retries, type: {scalar: numeric}}
`

// TestUnifiedWith: along a custom resource's schema a keyed list is
// matched by key, so the diff shows the stage someone added and nothing of
// the others' order or server defaults; along the built-in schema the
// output is Unified's.
func TestUnifiedWith(t *testing.T) {
	parser, err := typed.NewParser(pipelineTypes)
	if err != nil {
		t.Fatal(err)
	}
	s := drift.NewSchema(parser.Type("pipeline"))
	stage := func(name string, extra ...any) map[string]any {
		m := map[string]any{"name": name, "image": "golang:1.26"}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return m
	}
	desired := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Pipeline",
		"metadata": map[string]any{"name": "ci", "namespace": "shop"},
		"spec":     map[string]any{"stages": []any{stage("build"), stage("test")}},
	}}
	got := live(desired, func(m map[string]any) {
		m["spec"].(map[string]any)["stages"] = []any{stage("test", "retries", int64(3)), stage("build", "retries", int64(3)), stage("lint", "retries", int64(3))}
	})
	d, err := UnifiedWith(desired, got, s)
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	for l := range strings.Lines(d) {
		if strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-") {
			changed = append(changed, strings.TrimSuffix(l, "\n"))
		}
	}
	if want := []string{"+  - image: golang:1.26", "+    name: lint", "+    retries: 3"}; strings.Join(changed, "\n") != strings.Join(want, "\n") {
		t.Errorf("changed lines %q, want only the added stage %q:\n%s", changed, want, d)
	}
	if plain := mustUnified(t, desired, got); plain == d {
		t.Errorf("without the schema the diff is the same:\n%s", d)
	}

	dep := deployment(2)
	depLive := live(dep, func(m map[string]any) { m["spec"].(map[string]any)["replicas"] = int64(5) })
	builtin, ok := drift.BuiltinSchema(dep.GroupVersionKind())
	if !ok {
		t.Fatal("no built-in Deployment schema")
	}
	if with, err := UnifiedWith(dep, depLive, builtin); err != nil || with != mustUnified(t, dep, depLive) {
		t.Errorf("built-in schema: %q (%v), want Unified's", with, err)
	}
}

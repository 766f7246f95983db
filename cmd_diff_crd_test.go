package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// pipelineCRD is a custom resource whose stages are a list of maps keyed by
// name (x-kubernetes-list-type map), each stage's retries defaulted by the
// apiserver.
const pipelineCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: pipelines.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: pipelines, singular: pipeline, kind: Pipeline}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              stages:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    image: {type: string}
                    retries: {type: integer, default: 3}
`

// TestDiffCustomResourceSchema runs `driftwatch diff` on a custom resource
// whose CRD makes a list keyed by name: diff classifies and renders it
// with the schema the cluster publishes, as the hub does. A stage added by
// hand (with the other stages reordered and an ignored field changed) is
// "added" and the unified diff shows that stage alone: no reordered
// stages, no server defaults of the stages we declare, the ignored field
// with its live value on both sides. A reordering of the keyed list alone
// is not drift (exit 0), as the hub's DetectDrift says.
func TestDiffCustomResourceSchema(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	const ns = "diffcrd"
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	if err := os.Mkdir(manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"a-namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n",
		"b-crd.yaml":       pipelineCRD,
		"c-pipeline.yaml": `apiVersion: example.com/v1
kind: Pipeline
metadata: {name: ci}
spec:
  stages:
  - {name: build, image: "golang:1.26", retries: 1}
  - {name: test, image: "golang:1.26"}
`,
	} {
		if err := os.WriteFile(filepath.Join(manifests, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "driftwatch.yaml")
	src := fmt.Sprintf(`hub:
  id: diff-crd
clusters:
  - {id: %s, kubeconfig: %s}
sources:
  - id: ci
    path: manifests
    clusters: [%s]
    namespace: %s
    ignore:
      - {name: tuning, paths: ["spec.stages[*].retries"], kinds: [Pipeline.example.com]}
`, lc.Name, lc.Kubeconfig, lc.Name, ns)
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	specs := config.Compile(cfg)
	pipeline := hub.NewNodeID(lc.Name, ns, "ci", "pipeline.example.com")
	var pipelineSpec hub.NodeSpec
	for _, s := range specs {
		if s.ID == pipeline {
			pipelineSpec = s
		}
	}
	if pipelineSpec.ID != pipeline {
		t.Fatalf("no %s among the compiled objects", pipeline)
	}

	// Create every object as the hub does: a server-side apply by the
	// driftwatch field manager, the Pipeline once its CRD is served.
	cc := app.ClusterConfigs(cfg, nil)[0]
	m, release, err := clusters.Connect(t.Context(), cc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	others := slices.DeleteFunc(slices.Clone(specs), func(s hub.NodeSpec) bool { return s.ID == pipeline })
	for _, s := range others {
		if _, err := m.Repair(t.Context(), s, hub.State{Fresh: true}, hub.Drift{Class: hub.DriftMissing}); err != nil {
			t.Fatalf("apply %s: %v", s.ID, err)
		}
	}
	// The Pipeline is applied once its CRD is established.
	testwait.For(t, 30*time.Second, "the Pipeline applied", func() error {
		_, err := m.Repair(t.Context(), pipelineSpec, hub.State{Fresh: true}, hub.Drift{Class: hub.DriftMissing})
		return err
	})

	// The apiserver publishes a new CRD's schema in its OpenAPI v3 a
	// moment after the CRD is established; the test is about a published
	// schema, so it waits for it.
	dc := discovery.NewDiscoveryClientForConfigOrDie(lc.RESTConfig())
	testwait.For(t, 30*time.Second, "the cluster to publish the Pipeline schema", func() error {
		paths, err := dc.OpenAPIV3().Paths()
		if err != nil {
			return err
		}
		gv, ok := paths["apis/example.com/v1"]
		if !ok {
			return errors.New("no apis/example.com/v1 path")
		}
		b, err := gv.Schema("application/json")
		if err != nil {
			return err
		}
		return testwait.Check(bytes.Contains(b, []byte("x-kubernetes-list-map-keys")), "the schema lacks the list-map keys")
	})

	diff := func(t *testing.T, wantCode int, args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		err := run(t.Context(), append([]string{"diff", "-f", path}, args...), func(string) string { return "" }, &out, &errOut)
		if code := exitCode(err, &errOut); code != wantCode {
			t.Fatalf("diff %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, wantCode, &out, &errOut)
		}
		return out.String()
	}
	// hubDrift is the hub's classification (its backend's DetectDrift).
	hubDrift := func(t *testing.T) hub.Drift {
		t.Helper()
		st, err := m.ReadState(t.Context(), pipelineSpec, true)
		if err != nil {
			t.Fatal(err)
		}
		d, err := m.DetectDrift(t.Context(), pipelineSpec, st)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	diff(t, 0, "--application", "ci")

	pipelines := dynamic.NewForConfigOrDie(lc.RESTConfig()).
		Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "pipelines"}).Namespace(ns)
	edit := func(t *testing.T, stages string) {
		t.Helper()
		if _, err := pipelines.Patch(t.Context(), "ci", types.MergePatchType, []byte(`{"spec":{"stages":`+stages+`}}`),
			metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatal(err)
		}
	}

	// A stage added by hand, the others reordered, build's retries (an
	// ignored field) changed.
	edit(t, `[{"name":"test","image":"golang:1.26"},{"name":"build","image":"golang:1.26","retries":5},{"name":"lint","image":"golangci/golangci-lint:v2"}]`)
	out := diff(t, 1)
	for _, want := range []string{
		"--- desired " + pipeline.String() + "\n",
		"+++ live " + pipeline.String() + " (added, changed by kubectl-edit",
		"ignored " + pipeline.String() + " spec.stages[build].retries: 1 -> 5, ignored (rule tuning",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	var changed []string
	for l := range strings.Lines(out) {
		if (strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-")) && !strings.HasPrefix(l, "+++ ") && !strings.HasPrefix(l, "--- ") {
			changed = append(changed, strings.TrimSuffix(l, "\n"))
		}
	}
	if want := []string{"+  - image: golangci/golangci-lint:v2", "+    name: lint", "+    retries: 3"}; !slices.Equal(changed, want) {
		t.Errorf("changed lines:\n%s\nwant only the added stage:\n%s\noutput:\n%s", strings.Join(changed, "\n"), strings.Join(want, "\n"), out)
	}
	var rep struct {
		Objects []struct {
			NodeID  string `json:"nodeId"`
			Class   string `json:"class"`
			Fields  []struct{ Path string }
			Ignored []struct{ Path string }
		} `json:"objects"`
	}
	js := diff(t, 1, "-o", "json")
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("json: %v\n%s", err, js)
	}
	d := hubDrift(t)
	if d.Class != hub.DriftAdded {
		t.Errorf("the hub classifies %s", d.Summary())
	}
	for _, o := range rep.Objects {
		if o.NodeID != pipeline.String() {
			if o.Class != string(hub.DriftNone) {
				t.Errorf("%s: %s", o.NodeID, o.Class)
			}
			continue
		}
		var fields, ignored, hubFields, hubIgnored []string
		for _, f := range o.Fields {
			fields = append(fields, f.Path)
		}
		for _, f := range o.Ignored {
			ignored = append(ignored, f.Path)
		}
		for _, f := range d.Fields {
			hubFields = append(hubFields, f.Path)
		}
		for _, f := range d.Ignored {
			hubIgnored = append(hubIgnored, f.Path)
		}
		if o.Class != string(d.Class) || !slices.Equal(fields, hubFields) || !slices.Equal(ignored, hubIgnored) ||
			!slices.Equal(fields, []string{"spec.stages[lint]"}) {
			t.Errorf("diff: %s %q ignored %q; hub: %s %q ignored %q; want added spec.stages[lint]",
				o.Class, fields, ignored, d.Class, hubFields, hubIgnored)
		}
	}

	// The stages we declare, reordered: not drift, for diff and the hub.
	edit(t, `[{"name":"test","image":"golang:1.26"},{"name":"build","image":"golang:1.26","retries":1}]`)
	if out := diff(t, 0); strings.Contains(out, "--- desired") {
		t.Errorf("reordered stages shown as drift:\n%s", out)
	}
	if d := hubDrift(t); !d.InSync() {
		t.Errorf("the hub classifies the reordered stages %s", d.Summary())
	}
}

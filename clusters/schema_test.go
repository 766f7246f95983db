package clusters

import (
	"context"
	"errors"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/openapi/openapitest"
	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/clusters/drift"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// fakeOpenAPIDiscovery is a discovery client that only serves OpenAPI v3.
type fakeOpenAPIDiscovery struct {
	discovery.DiscoveryInterface
	client openapi.Client
}

func (f fakeOpenAPIDiscovery) OpenAPIV3() openapi.Client { return f.client }

// countingClient counts the Paths requests of an openapi.Client.
type countingClient struct {
	openapi.Client
	mu    sync.Mutex
	paths int
}

func (c *countingClient) Paths() (map[string]openapi.GroupVersion, error) {
	c.mu.Lock()
	c.paths++
	c.mu.Unlock()
	return c.Client.Paths()
}

// widgetV3 is the OpenAPI v3 document of the group-version example.com/v1
// in the shape an apiserver serves it for the CRD in
// testdata/widget-crd.yaml (the CR's schema, its kind extension, and the
// ObjectMeta it refers to, cut down).
const widgetV3 = `{
  "openapi": "3.0.0",
  "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
  "paths": {},
  "components": {"schemas": {
    "com.example.v1.Widget": {
      "type": "object",
      "x-kubernetes-group-version-kind": [{"group": "example.com", "kind": "Widget", "version": "v1"}],
      "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]},
        "spec": {"type": "object", "properties": {
          "replicas": {"type": "integer"},
          "listeners": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"],
            "items": {"type": "object", "required": ["port"], "properties": {
              "port": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}, "name": {"type": "string"}}}},
          "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
          "args": {"type": "array", "items": {"type": "string"}},
          "selector": {"type": "object", "additionalProperties": {"type": "string"}},
          "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
      }
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
      "type": "object",
      "properties": {
        "name": {"type": "string"},
        "namespace": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string", "default": ""}}
      }
    }
  }}
}`

var widgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}

func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// widgets returns a desired Widget and its live copy with a listener
// someone added (and the protocol the apiserver defaulted).
func widgets() (desired, live *unstructured.Unstructured) {
	desired = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "schema", "labels": map[string]any{kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy}},
		"spec": map[string]any{
			"listeners": []any{map[string]any{"port": int64(80), "name": "http"}},
			"tags":      []any{"a"},
		},
	}}
	live = desired.DeepCopy()
	spec := live.Object["spec"].(map[string]any)
	spec["listeners"] = []any{
		map[string]any{"port": int64(80), "name": "http", "protocol": "TCP"},
		map[string]any{"port": int64(443), "protocol": "TCP"},
	}
	return desired, live
}

// TestSchemaCacheBuiltin reads built-in kinds' schemas from OpenAPI v3
// documents captured from a real apiserver (client-go's openapitest): they
// classify as the embedded schema does, and each document is fetched once.
func TestSchemaCacheBuiltin(t *testing.T) {
	client := &countingClient{Client: openapitest.NewEmbeddedFileClient()}
	c := newSchemaCache(fakeOpenAPIDiscovery{client: client}, testLog(t))
	ctx := t.Context()
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "apps", Version: "v1", Kind: "StatefulSet"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "batch", Version: "v1", Kind: "CronJob"},
		{Version: "v1", Kind: "Service"},
		{Version: "v1", Kind: "ConfigMap"},
	} {
		s, err := c.For(ctx, gvk)
		if err != nil || !s.Known() {
			t.Fatalf("%v: schema known %v, err %v", gvk, s.Known(), err)
		}
	}
	if client.paths != 1 {
		t.Errorf("paths fetched %d times, want 1", client.paths)
	}
	sts, _ := c.For(ctx, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"})
	desired := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": "db", "labels": map[string]any{kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy}},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "db", "image": "postgres:17", "ports": []any{map[string]any{"containerPort": int64(5432)}}},
		}}}},
	}}
	live := desired.DeepCopy()
	live.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"] = []any{
		map[string]any{"name": "db", "image": "postgres:17", "imagePullPolicy": "IfNotPresent",
			"ports": []any{map[string]any{"containerPort": int64(5432), "protocol": "TCP"}},
			"env":   []any{map[string]any{"name": "DEBUG", "value": "1"}}},
	}
	got, err := drift.ClassifyWith(desired, live, "", drift.Ignore{}, sts)
	if err != nil {
		t.Fatal(err)
	}
	want := drift.Classify(desired, live, "")
	if got.Class != hub.DriftAdded || len(got.Fields) != 1 || got.Fields[0].Path != "spec.template.spec.containers[db].env[DEBUG]" {
		t.Fatalf("drift = %s %v, want the env var added", got.Class, got.Fields)
	}
	if got.Summary() != want.Summary() {
		t.Errorf("cluster schema: %s; built-in: %s", got.Summary(), want.Summary())
	}
}

// TestSchemaCacheCustomResource: a CRD's kind unknown to the cluster is
// an error wrapping errNoSchema (and the zero schema); once the CRD's
// group-version is served, Invalidate (or time) brings its schema, and an
// item added to its associative list is drift.
func TestSchemaCacheCustomResource(t *testing.T) {
	client := openapitest.NewFakeClient()
	c := newSchemaCache(fakeOpenAPIDiscovery{client: client}, testLog(t))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	ctx := t.Context()
	s, err := c.For(ctx, widgetGVK)
	if !errors.Is(err, errNoSchema) || s.Known() {
		t.Fatalf("before the CRD: known %v, err %v; want errNoSchema", s.Known(), err)
	}
	client.PathsMap["apis/example.com/v1"] = openapitest.FakeGroupVersion{GVSpec: []byte(widgetV3)}
	if _, err := c.For(ctx, widgetGVK); !errors.Is(err, errNoSchema) {
		t.Fatalf("within the refetch interval: err %v, want errNoSchema", err)
	}
	now = now.Add(schemaRefetchAfter)
	if s, err = c.For(ctx, widgetGVK); err != nil || !s.Known() {
		t.Fatalf("after the refetch interval: known %v, err %v", s.Known(), err)
	}
	// A second kind of the same group-version appears: Invalidate
	// brings it at once.
	if _, err := c.For(ctx, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}); !errors.Is(err, errNoSchema) {
		t.Fatalf("Gadget: err %v, want errNoSchema", err)
	}
	c.Invalidate()
	if s, err = c.For(ctx, widgetGVK); err != nil || !s.Known() {
		t.Fatalf("after Invalidate: known %v, err %v", s.Known(), err)
	}
	desired, live := widgets()
	d, _ := drift.ClassifyWith(desired, live, "", drift.Ignore{}, s)
	if d.Class != hub.DriftAdded || len(d.Fields) != 1 || d.Fields[0].Path != "spec.listeners[443/TCP]" || d.Fields[0].Pointer != "/spec/listeners/1" {
		t.Fatalf("drift = %s %v, want listener 443/TCP added", d.Class, d.Fields)
	}
}

// TestSchemaCacheUnreachable: when the cluster cannot serve its schemas a
// built-in kind gets the embedded schema, a custom resource an error that
// is not errNoSchema.
func TestSchemaCacheUnreachable(t *testing.T) {
	boom := errors.New("connection refused")
	c := newSchemaCache(fakeOpenAPIDiscovery{client: &openapitest.FakeClient{ForcedErr: boom}}, testLog(t))
	s, err := c.For(t.Context(), schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	if err != nil || !s.Known() {
		t.Fatalf("Deployment: known %v, err %v; want the built-in schema", s.Known(), err)
	}
	s, err = c.For(t.Context(), widgetGVK)
	if !errors.Is(err, boom) || errors.Is(err, errNoSchema) || s.Known() {
		t.Fatalf("Widget: known %v, err %v; want the fetch error", s.Known(), err)
	}
	// A broken document: the same.
	client := openapitest.NewFakeClient()
	client.PathsMap["apis/example.com/v1"] = openapitest.FakeGroupVersion{GVSpec: []byte("{")}
	c = newSchemaCache(fakeOpenAPIDiscovery{client: client}, testLog(t))
	if _, err := c.For(t.Context(), widgetGVK); err == nil {
		t.Fatal("broken document: want an error")
	}
	// A cancelled context waiting for another fetch.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	c.sem <- struct{}{}
	if _, err := c.lookup(ctx, widgetGVK); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: err %v", err)
	}
	<-c.sem
}

// TestSchemaCacheConcurrent asks for schemas from many goroutines while
// another invalidates (run with -race).
func TestSchemaCacheConcurrent(t *testing.T) {
	client := &countingClient{Client: openapitest.NewEmbeddedFileClient()}
	c := newSchemaCache(fakeOpenAPIDiscovery{client: client}, testLog(t))
	kinds := []schema.GroupVersionKind{
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "batch", Version: "v1", Kind: "Job"},
		{Version: "v1", Kind: "Service"},
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				if i == 0 && j%5 == 0 {
					c.Invalidate()
				}
				s, err := c.For(t.Context(), kinds[(i+j)%len(kinds)])
				if err != nil || !s.Known() {
					t.Errorf("known %v, err %v", s.Known(), err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestSchemaCacheOnARealControlPlane creates the Widget CRD on a real
// apiserver, reads its schema through the cache (after Invalidate) and
// classifies a listener someone added as drift; the cluster's StatefulSet
// schema matches the built-in one.
func TestSchemaCacheOnARealControlPlane(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	cfg := lc.RESTConfig()
	ctx := t.Context()
	dyn := dynamic.NewForConfigOrDie(cfg)
	raw, err := os.ReadFile("testdata/widget-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd unstructured.Unstructured
	if err := yaml.Unmarshal(raw, &crd.Object); err != nil {
		t.Fatal(err)
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	c := newSchemaCache(kubernetes.NewForConfigOrDie(cfg).Discovery(), testLog(t))

	// Before the CRD: no schema, the zero one.
	if s, err := c.For(ctx, widgetGVK); !errors.Is(err, errNoSchema) || s.Known() {
		t.Fatalf("before the CRD: known %v, err %v", s.Known(), err)
	}
	if _, err := crds.Create(ctx, &crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The apiserver publishes the CRD's OpenAPI a moment after it is
	// established.
	var s drift.Schema
	testwait.For(t, 30*time.Second, "the widget schema", func() error {
		c.Invalidate()
		if s, err = c.For(ctx, widgetGVK); err != nil && !errors.Is(err, errNoSchema) {
			return testwait.Stop(err)
		}
		return err
	})

	// Apply a Widget, add a listener as someone else would, classify.
	const ns = "schema"
	createNamespace(t, kubernetes.NewForConfigOrDie(cfg), ns)
	desired, _ := widgets()
	widgetsRes := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace(ns)
	var live *unstructured.Unstructured
	testwait.For(t, 30*time.Second, "the widget applied", func() error { // the CR endpoint may lag the OpenAPI
		live, err = widgetsRes.Apply(ctx, "w", desired, metav1.ApplyOptions{FieldManager: kubeobj.FieldManager, Force: true})
		return err
	})
	if d, _ := drift.ClassifyWith(desired, live, "", drift.Ignore{}, s); !d.InSync() {
		t.Fatalf("after apply: %s", d.Summary())
	}
	patch := `{"spec":{"listeners":[{"port":80,"name":"http"},{"port":443,"protocol":"TCP","name":"tls"}]}}`
	live, err = widgetsRes.Patch(ctx, "w", "application/merge-patch+json", []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := drift.ClassifyWith(desired, live, "", drift.Ignore{}, s)
	var paths []string
	for _, f := range d.Fields {
		paths = append(paths, fmt.Sprintf("%s@%s", f.Path, f.Pointer))
	}
	if d.Class != hub.DriftAdded || !slices.Equal(paths, []string{"spec.listeners[443/TCP]@/spec/listeners/1"}) {
		t.Fatalf("drift = %s %q, want listener 443/TCP added", d.Class, paths)
	}
	// managedFields attribute it to the patch.
	var owners []drift.FieldOwner
	for _, e := range live.GetManagedFields() {
		ps, err := drift.FieldsV1Paths(e.FieldsV1.GetRawBytes())
		if err != nil {
			t.Fatal(err)
		}
		owners = append(owners, drift.FieldOwner{Manager: e.Manager, Operation: string(e.Operation), Time: e.Time.Time, Fields: ps})
	}
	if a := drift.Attribute(d, owners, kubeobj.FieldManager); a == nil || a.Manager != "kubectl-edit" {
		t.Fatalf("attribution = %+v, want kubectl-edit", a)
	}
	// Without the cluster's schema the added listener is not seen.
	if d, _ := drift.ClassifyWith(desired, live, "", drift.Ignore{}, drift.Schema{}); d.Class == hub.DriftAdded {
		t.Errorf("zero schema: %s", d.Summary())
	}

	// The cluster's StatefulSet schema classifies as the built-in one.
	sts, err := c.For(ctx, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"})
	if err != nil || !sts.Known() {
		t.Fatalf("StatefulSet: known %v, err %v", sts.Known(), err)
	}
	stsDesired := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": "db", "namespace": ns, "labels": map[string]any{kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy}},
		"spec": map[string]any{
			"serviceName": "db",
			"selector":    map[string]any{"matchLabels": map[string]any{"app": "db"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "db"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "db", "image": "postgres:17",
					"ports": []any{map[string]any{"containerPort": int64(5432)}}}}},
			},
			"volumeClaimTemplates": []any{map[string]any{"metadata": map[string]any{"name": "data"},
				"spec": map[string]any{"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}}}},
		},
	}}
	stsRes := dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}).Namespace(ns)
	stsLive, err := stsRes.Apply(ctx, "db", stsDesired, metav1.ApplyOptions{FieldManager: kubeobj.FieldManager, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := drift.ClassifyWith(stsDesired, stsLive, "", drift.Ignore{}, sts); !d.InSync() {
		t.Fatalf("StatefulSet after apply (server defaults in the claim template): %s", d.Summary())
	}
	envPatch := `[{"op":"add","path":"/spec/template/spec/containers/0/env","value":[{"name":"DEBUG","value":"1"}]}]`
	stsLive, err = stsRes.Patch(ctx, "db", "application/json-patch+json", []byte(envPatch), metav1.PatchOptions{FieldManager: "kubectl-set"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := drift.ClassifyWith(stsDesired, stsLive, "", drift.Ignore{}, sts)
	want := drift.Classify(stsDesired, stsLive, "")
	if got.Class != hub.DriftAdded || got.Summary() != want.Summary() {
		t.Fatalf("StatefulSet env added: cluster schema %s, built-in %s", got.Summary(), want.Summary())
	}
}

// TestManagerSchemaFor: SchemaFor resolves a schema as the hub's drift
// detection does: built-in kinds without asking the cluster, a custom
// resource from the cluster's document (fetched once for many calls), the
// zero schema and no error when the cluster cannot serve it, and
// errNotConnected before the manager connected.
func TestManagerSchemaFor(t *testing.T) {
	ctx := t.Context()
	m := newManager(ClusterConfig{ID: "c1"}, newRecordingSink(), testLog(t), HealthOptions{}, nil)
	if _, err := m.SchemaFor(ctx, widgetGVK); !errors.Is(err, errNotConnected) {
		t.Fatalf("before connecting: err %v, want errNotConnected", err)
	}
	fake := openapitest.NewFakeClient()
	fake.PathsMap["apis/example.com/v1"] = openapitest.FakeGroupVersion{GVSpec: []byte(widgetV3)}
	client := &countingClient{Client: fake}
	m.schemas = newSchemaCache(fakeOpenAPIDiscovery{client: client}, testLog(t))
	if s, err := m.SchemaFor(ctx, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}); err != nil || !s.Known() || client.paths != 0 {
		t.Fatalf("Deployment: known %v, err %v, paths fetched %d; want the built-in schema, no fetch", s.Known(), err, client.paths)
	}
	for range 3 {
		if s, err := m.SchemaFor(ctx, widgetGVK); err != nil || !s.Known() {
			t.Fatalf("Widget: known %v, err %v", s.Known(), err)
		}
	}
	if client.paths != 1 {
		t.Errorf("paths fetched %d times, want 1", client.paths)
	}
	// A kind the cluster publishes no schema of, and a cluster that cannot
	// answer: compared without a schema, as the hub does.
	if s, err := m.SchemaFor(ctx, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}); err != nil || s.Known() {
		t.Errorf("Gadget: known %v, err %v; want the zero schema, no error", s.Known(), err)
	}
	m.schemas = newSchemaCache(fakeOpenAPIDiscovery{client: &openapitest.FakeClient{ForcedErr: errors.New("connection refused")}}, testLog(t))
	if s, err := m.SchemaFor(ctx, widgetGVK); err != nil || s.Known() {
		t.Errorf("unreachable: known %v, err %v; want the zero schema, no error", s.Known(), err)
	}
}

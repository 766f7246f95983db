package hub

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func desiredDeployment() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": map[string]any{
			"name": "web", "namespace": "shop",
			"labels":      map[string]any{ManagedByLabel: "driftwatch", "app": "web"},
			"annotations": map[string]any{NodeIDAnnotation: "c1:shop/web:deployment"},
		},
		"spec": map[string]any{
			"replicas": int64(3),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec": map[string]any{
					"containers": []any{map[string]any{
						"name":      "app",
						"image":     "nginx:1",
						"ports":     []any{map[string]any{"name": "http", "containerPort": int64(8080), "protocol": "TCP"}},
						"env":       []any{map[string]any{"name": "MODE", "value": "prod"}},
						"resources": map[string]any{"limits": map[string]any{"cpu": "500m"}},
					}},
				},
			},
		},
	}}
}

// live returns a copy of the desired object as the apiserver would return
// it: with defaults, status and foreign labels added.
func live(mutate func(m map[string]any)) *unstructured.Unstructured {
	u := desiredDeployment().DeepCopy()
	md := u.Object["metadata"].(map[string]any)
	md["resourceVersion"] = "42"
	md["labels"].(map[string]any)["team"] = "other"
	md["annotations"].(map[string]any)["deployment.kubernetes.io/revision"] = "1"
	spec := u.Object["spec"].(map[string]any)
	spec["progressDeadlineSeconds"] = int64(600)
	c := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	c["imagePullPolicy"] = "IfNotPresent"
	c["resources"] = map[string]any{"limits": map[string]any{"cpu": "0.5"}}
	u.Object["status"] = map[string]any{"replicas": int64(1)}
	if mutate != nil {
		mutate(u.Object)
	}
	return u
}

func container(m map[string]any) map[string]any {
	return m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name   string
		actual *unstructured.Unstructured
		class  DriftClass
		fields []string
	}{
		{name: "in sync with defaults, status and foreign labels", actual: live(nil), class: DriftNone},
		{name: "missing", actual: nil, class: DriftMissing},
		{name: "scaled", actual: live(func(m map[string]any) { m["spec"].(map[string]any)["replicas"] = int64(1) }),
			class: DriftModified, fields: []string{"spec.replicas: 3 -> 1"}},
		{name: "image changed", actual: live(func(m map[string]any) { container(m)["image"] = "evil:2" }),
			class: DriftModified, fields: []string{"spec.template.spec.containers[app].image: nginx:1 -> evil:2"}},
		{name: "env var added", actual: live(func(m map[string]any) {
			c := container(m)
			c["env"] = append(c["env"].([]any), map[string]any{"name": "DEBUG", "value": "true"})
		}), class: DriftAdded, fields: []string{"+spec.template.spec.containers[app].env[DEBUG]={name: DEBUG, value: true}"}},
		{name: "container added", actual: live(func(m map[string]any) {
			cs := m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			cs["containers"] = append(cs["containers"].([]any), map[string]any{"name": "sidecar", "image": "x"})
		}), class: DriftAdded, fields: []string{"+spec.template.spec.containers[sidecar]={image: x, name: sidecar}"}},
		{name: "port added", actual: live(func(m map[string]any) {
			c := container(m)
			c["ports"] = append(c["ports"].([]any), map[string]any{"containerPort": int64(9090), "protocol": "TCP"})
		}), class: DriftAdded, fields: []string{"+spec.template.spec.containers[app].ports[9090/TCP]={containerPort: 9090, protocol: TCP}"}},
		{name: "env value edited and var added", actual: live(func(m map[string]any) {
			c := container(m)
			c["env"] = []any{map[string]any{"name": "MODE", "value": "dev"}, map[string]any{"name": "X", "value": "1"}}
		}), class: DriftModified, fields: []string{
			"spec.template.spec.containers[app].env[MODE].value: prod -> dev",
			"+spec.template.spec.containers[app].env[X]={name: X, value: 1}"}},
		{name: "label value changed", actual: live(func(m map[string]any) {
			m["metadata"].(map[string]any)["labels"].(map[string]any)["app"] = "other"
		}), class: DriftModified, fields: []string{"metadata.labels.app: web -> other"}},
		{name: "unlabelled", actual: live(func(m map[string]any) {
			delete(m["metadata"].(map[string]any)["labels"].(map[string]any), ManagedByLabel)
		}), class: DriftUnlabelled, fields: []string{"metadata.labels." + ManagedByLabel + ": driftwatch -> <none>"}},
		{name: "deleting", actual: live(func(m map[string]any) {
			m["metadata"].(map[string]any)["deletionTimestamp"] = "2026-01-01T00:00:00Z"
		}), class: DriftDeleting},
		{name: "quantity changed", actual: live(func(m map[string]any) {
			container(m)["resources"] = map[string]any{"limits": map[string]any{"cpu": "2"}}
		}), class: DriftModified, fields: []string{"spec.template.spec.containers[app].resources.limits.cpu: 500m -> 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Classify(desiredDeployment(), tt.actual, "driftwatch")
			if d.Class != tt.class {
				t.Fatalf("class = %s, want %s (fields %v)", d.Class, tt.class, d.Fields)
			}
			var got []string
			for _, f := range d.Fields {
				got = append(got, f.String())
			}
			if strings.Join(got, "\n") != strings.Join(tt.fields, "\n") {
				t.Fatalf("fields =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.fields, "\n"))
			}
		})
	}
}

func TestClassifyConfigMapAddedKey(t *testing.T) {
	desired := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": "n", "labels": map[string]any{ManagedByLabel: "driftwatch"}},
		"data":     map[string]any{"a": "1"},
	}}
	actual := desired.DeepCopy()
	actual.Object["data"] = map[string]any{"a": "1", "drift": "yes"}
	d := Classify(desired, actual, "")
	if d.Class != DriftAdded || len(d.Fields) != 1 || d.Fields[0].Path != "data.drift" || d.Fields[0].Pointer != "/data/drift" {
		t.Fatalf("drift = %+v", d)
	}
}

func TestAddedPointers(t *testing.T) {
	actual := live(func(m map[string]any) {
		c := container(m)
		c["env"] = append(c["env"].([]any), map[string]any{"name": "DEBUG", "value": "true"})
	})
	d := Classify(desiredDeployment(), actual, "driftwatch")
	if len(d.Fields) != 1 || d.Fields[0].Pointer != "/spec/template/spec/containers/0/env/1" {
		t.Fatalf("fields = %+v", d.Fields)
	}
}

func TestFieldsV1Paths(t *testing.T) {
	raw := `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:env":{"k:{\"name\":\"DEBUG\"}":{".":{},"f:name":{},"f:value":{}}},"f:ports":{"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{}}}}}}}}}`
	got, err := FieldsV1Paths([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"metadata.labels.app",
		"spec.replicas",
		"spec.template.spec.containers[app]",
		"spec.template.spec.containers[app].env[DEBUG]",
		"spec.template.spec.containers[app].env[DEBUG].name",
		"spec.template.spec.containers[app].env[DEBUG].value",
		"spec.template.spec.containers[app].image",
		"spec.template.spec.containers[app].ports[8080/TCP]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("paths =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := FieldsV1Paths([]byte("{")); err == nil {
		t.Fatal("want an error for bad JSON")
	}
}

func TestAttribute(t *testing.T) {
	d := Drift{Class: DriftModified, Fields: []FieldDiff{{Path: "spec.replicas"}}}
	owners := []FieldOwner{
		{Manager: FieldManager, Fields: []string{"spec.replicas"}},
		{Manager: "kubectl-edit", Operation: "Update", Fields: []string{"metadata.labels.x"}},
		{Manager: "kubectl-scale", Operation: "Update", Fields: []string{"spec.replicas"}},
	}
	a := attribute(d, owners)
	if a == nil || a.Manager != "kubectl-scale" {
		t.Fatalf("attribution = %+v", a)
	}
	if attribute(Drift{Class: DriftMissing}, owners) != nil {
		t.Fatal("missing objects have no owners to attribute")
	}
}

func BenchmarkClassify(b *testing.B) {
	desired := desiredDeployment()
	actual := live(func(m map[string]any) { m["spec"].(map[string]any)["replicas"] = int64(1) })
	inSync := live(nil)
	b.Run("drifted", func(b *testing.B) {
		for b.Loop() {
			Classify(desired, actual, "driftwatch")
		}
	})
	b.Run("in-sync", func(b *testing.B) {
		for b.Loop() {
			Classify(desired, inSync, "driftwatch")
		}
	})
}

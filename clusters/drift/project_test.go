package drift

import (
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/hub"
)

// TestProject: the projection of the live object equals desired's own
// projection exactly when Classify finds no drift, and otherwise holds the
// live values and added entries Classify reports.
func TestProject(t *testing.T) {
	// get reads a value at a path of map keys and list indexes.
	get := func(m map[string]any, path ...any) any {
		var v any = m
		for _, p := range path {
			switch k := p.(type) {
			case string:
				mm, _ := v.(map[string]any)
				v = mm[k]
			case int:
				l, _ := v.([]any)
				if k >= len(l) {
					return nil
				}
				v = l[k]
			}
		}
		return v
	}
	ctr := []any{"spec", "template", "spec", "containers", 0}
	at := func(extra ...any) []any { return append(append([]any(nil), ctr...), extra...) }
	tests := []struct {
		name    string
		desired *unstructured.Unstructured
		live    *unstructured.Unstructured
		class   hub.DriftClass
		// want are values the projection must hold, by path.
		want map[string]struct {
			path  []any
			value any
		}
	}{
		{name: "in sync: defaults, status, foreign metadata, 500m as 0.5, 3 as 3.0",
			desired: desiredDeployment(), live: liveDeployment(nil), class: hub.DriftNone},
		{name: "extra volume is added", desired: desiredDeployment(), live: liveDeployment(func(m map[string]any) {
			ps := podSpec(m)
			ps["volumes"] = append(ps["volumes"].([]any), map[string]any{"name": "cache", "emptyDir": map[string]any{}})
		}), class: hub.DriftAdded,
			want: map[string]struct {
				path  []any
				value any
			}{"volume": {[]any{"spec", "template", "spec", "volumes", 1, "name"}, "cache"}}},
		{name: "scaled", desired: desiredDeployment(),
			live:  liveDeployment(func(m map[string]any) { m["spec"].(map[string]any)["replicas"] = int64(1) }),
			class: hub.DriftModified,
			want: map[string]struct {
				path  []any
				value any
			}{"replicas": {[]any{"spec", "replicas"}, int64(1)}}},
		{name: "image removed", desired: desiredDeployment(),
			live:  liveDeployment(func(m map[string]any) { delete(container(m), "image") }),
			class: hub.DriftModified,
			want: map[string]struct {
				path  []any
				value any
			}{"image": {at("image"), nil}}},
		{name: "added env var, container and port", desired: desiredDeployment(),
			live: liveDeployment(func(m map[string]any) {
				c := container(m)
				c["env"] = append(c["env"].([]any), map[string]any{"name": "DEBUG", "value": "1"})
				c["ports"] = append(c["ports"].([]any), map[string]any{"containerPort": int64(9090), "protocol": "TCP"})
				ps := podSpec(m)
				ps["containers"] = append(ps["containers"].([]any), map[string]any{"name": "sidecar", "image": "busybox"})
			}),
			class: hub.DriftAdded,
			want: map[string]struct {
				path  []any
				value any
			}{
				"env":     {at("env", 1, "name"), "DEBUG"},
				"port":    {at("ports", 1, "containerPort"), int64(9090)},
				"sidecar": {[]any{"spec", "template", "spec", "containers", 1, "image"}, "busybox"},
			}},
		{name: "valueFrom next to value", desired: withEnv(map[string]any{"name": "MODE", "value": "prod"}),
			live: liveEnv(map[string]any{"name": "MODE", "value": "prod",
				"valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}}),
			class: hub.DriftAdded,
			want: map[string]struct {
				path  []any
				value any
			}{"valueFrom": {at("env", 0, "valueFrom", "fieldRef", "fieldPath"), "metadata.name"}}},
		{name: "added ConfigMap key", desired: desiredConfigMap(),
			live:  liveConfigMap(func(m map[string]any) { m["data"].(map[string]any)["drift"] = "x" }),
			class: hub.DriftAdded,
			want: map[string]struct {
				path  []any
				value any
			}{"drift": {[]any{"data", "drift"}, "x"}, "a": {[]any{"data", "a"}, "1"}}},
		{name: "label removed", desired: desiredConfigMap(),
			live:  liveConfigMap(func(m map[string]any) { delete(labels(m), kubeobj.ManagedByLabel) }),
			class: hub.DriftUnlabelled,
			want: map[string]struct {
				path  []any
				value any
			}{"labels": {[]any{"metadata", "labels"}, nil}, "name": {[]any{"metadata", "name"}, "c"}}},
		{name: "atomic list of another length", desired: desiredDeployment(),
			live:  liveDeployment(func(m map[string]any) { container(m)["args"] = []any{"--port"} }),
			class: hub.DriftModified,
			want: map[string]struct {
				path  []any
				value any
			}{"args": {at("args"), []any{"--port"}}}},
		{name: "service port defaults", desired: desiredService(), live: liveService(nil), class: hub.DriftNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.desired, tt.live, "").Class; got != tt.class {
				t.Fatalf("Classify: %s, want %s", got, tt.class)
			}
			own := Project(tt.desired, tt.desired)
			before := tt.live.DeepCopy()
			got := Project(tt.desired, tt.live)
			if !reflect.DeepEqual(tt.live, before) {
				t.Error("Project modified the live object")
			}
			if same := reflect.DeepEqual(got, own); same != (tt.class == hub.DriftNone) {
				t.Errorf("projections equal: %v, want %v\n live: %v\n own:  %v", same, tt.class == hub.DriftNone, got, own)
			}
			if _, ok := got["status"]; ok {
				t.Error("status projected")
			}
			if md := got["metadata"].(map[string]any); md["resourceVersion"] != nil || md["uid"] != nil {
				t.Errorf("metadata not ours projected: %v", md)
			}
			for name, w := range tt.want {
				if v := get(got, w.path...); !reflect.DeepEqual(v, w.value) {
					t.Errorf("%s: %v = %#v, want %#v", name, w.path, v, w.value)
				}
			}
		})
	}
	if Project(desiredDeployment(), nil) != nil {
		t.Error("Project of a missing object: want nil")
	}
	// The projection shares nothing with the live object.
	live := liveConfigMap(func(m map[string]any) { m["data"].(map[string]any)["drift"] = "x" })
	p := Project(desiredConfigMap(), live)
	p["data"].(map[string]any)["drift"] = "changed"
	if live.Object["data"].(map[string]any)["drift"] != "x" {
		t.Error("the projection shares a map with the live object")
	}
}

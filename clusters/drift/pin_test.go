package drift

import (
	"reflect"
	"testing"
)

func TestPin(t *testing.T) {
	desired := func() map[string]any {
		return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{
			"replicas": int64(3),
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "app", "image": "nginx:1"},
			}}},
		}}
	}
	live := map[string]any{"spec": map[string]any{
		"replicas": int64(7),
		"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "istio", "image": "proxy:1"},
			map[string]any{"name": "app", "image": "nginx:2"},
		}}},
	}}
	tests := []struct {
		name    string
		fields  [][]string
		want    func(m map[string]any)
		changed bool
	}{
		{name: "scalar", fields: [][]string{{"spec", "replicas"}}, changed: true,
			want: func(m map[string]any) { m["spec"].(map[string]any)["replicas"] = int64(7) }},
		{name: "keyed list item field", fields: [][]string{{"spec", "template", "spec", "containers", "app", "image"}}, changed: true,
			want: func(m map[string]any) {
				m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"] = "nginx:2"
			}},
		{name: "added entry desired does not have", fields: [][]string{{"spec", "template", "spec", "containers", "istio"}}},
		{name: "gone from live: dropped", fields: [][]string{{"spec", "paused"}, {"spec", "replicas", "x"}}},
		{name: "field live lost", fields: [][]string{{"spec", "template"}}, changed: true,
			want: func(m map[string]any) {
				m["spec"].(map[string]any)["template"] = live["spec"].(map[string]any)["template"]
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, want := desired(), desired()
			if tt.want != nil {
				tt.want(want)
			}
			if changed := Pin(got, live, tt.fields); changed != tt.changed {
				t.Errorf("changed = %v, want %v", changed, tt.changed)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
	// A field live no longer has is dropped from desired.
	d := desired()
	if !Pin(d, map[string]any{"spec": map[string]any{}}, [][]string{{"spec", "replicas"}}) {
		t.Error("want changed")
	}
	if _, ok := d["spec"].(map[string]any)["replicas"]; ok {
		t.Error("replicas kept, want dropped")
	}
}

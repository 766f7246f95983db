package drift

import (
	"strings"
	"testing"
)

func TestFieldsV1Paths(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    []string
		wantErr string
	}{
		{
			name: "driftwatch's apply of a Deployment",
			raw:  `{"f:metadata":{"f:annotations":{"f:driftwatch.io/node-id":{}},"f:labels":{"f:app":{},"f:app.kubernetes.io/managed-by":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}}}}}}}}`,
			want: []string{
				"metadata.annotations.driftwatch.io/node-id",
				"metadata.labels.app",
				"metadata.labels.app.kubernetes.io/managed-by",
				"spec.replicas",
				"spec.selector",
				"spec.template.metadata.labels.app",
				"spec.template.spec.containers[app]",
				"spec.template.spec.containers[app].image",
				"spec.template.spec.containers[app].name",
				"spec.template.spec.containers[app].ports[8080/TCP]",
				"spec.template.spec.containers[app].ports[8080/TCP].containerPort",
				"spec.template.spec.containers[app].ports[8080/TCP].protocol",
			},
		},
		{
			name: "kubectl edit adding an env var",
			raw:  `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:env":{".":{},"k:{\"name\":\"DEBUG\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{}}}}}}}`,
			want: []string{
				"spec.template.spec.containers[app].env",
				"spec.template.spec.containers[app].env[DEBUG]",
				"spec.template.spec.containers[app].env[DEBUG].name",
				"spec.template.spec.containers[app].env[DEBUG].value",
				"spec.template.spec.containers[app].image",
			},
		},
		{
			name: "controller status update with conditions",
			raw:  `{"f:metadata":{"f:annotations":{".":{},"f:deployment.kubernetes.io/revision":{}}},"f:status":{"f:conditions":{".":{},"k:{\"type\":\"Available\"}":{".":{},"f:status":{}}},"f:readyReplicas":{}}}`,
			want: []string{
				"metadata.annotations",
				"metadata.annotations.deployment.kubernetes.io/revision",
				"status.conditions",
				"status.conditions[Available]",
				"status.conditions[Available].status",
				"status.readyReplicas",
			},
		},
		{
			name: "Service ports keyed by port and protocol",
			raw:  `{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:targetPort":{}}},"f:selector":{"f:app":{}}}}`,
			want: []string{"spec.ports[80/TCP]", "spec.ports[80/TCP].targetPort", "spec.selector.app"},
		},
		{
			name: "set items by value, atomic items by index, bare names",
			raw:  `{"f:metadata":{"f:finalizers":{"v:\"example.com/hold\"":{},"v:3":{},"v:2.5":{},"v:null":{}}},"f:spec":{"f:args":{"i:0":{}}},"plain":{}}`,
			want: []string{
				"metadata.finalizers[2.5]",
				"metadata.finalizers[3]",
				"metadata.finalizers[example.com/hold]",
				"metadata.finalizers[null]",
				"plain",
				"spec.args[0]",
			},
		},
		{name: "empty document", raw: `{}`, want: nil},
		{name: "root dot only", raw: `{".":{}}`, want: nil},
		{name: "bad JSON", raw: `{`, wantErr: "fieldsV1:"},
		{name: "bad key", raw: `{"f:spec":{"f:ports":{"k:{port":{}}}}`, wantErr: "fieldsV1 key k:{port"},
		{name: "bad value", raw: `{"f:metadata":{"f:finalizers":{"v:nope":{}}}}`, wantErr: "fieldsV1 value v:nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FieldsV1Paths([]byte(tt.raw))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("paths =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestKeyString(t *testing.T) {
	tests := []struct {
		key  map[string]any
		want string
	}{
		{map[string]any{"name": "app"}, "app"},
		{map[string]any{"protocol": "TCP", "containerPort": float64(8080)}, "8080/TCP"},
		{map[string]any{"port": int64(80), "protocol": "UDP"}, "80/UDP"},
		{map[string]any{"weight": 0.5, "x": nil, "on": true}, "true/0.5/null"},
		{map[string]any{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := KeyString(tt.key); got != tt.want {
				t.Fatalf("KeyString(%v) = %q, want %q", tt.key, got, tt.want)
			}
		})
	}
}

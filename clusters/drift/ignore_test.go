package drift

import (
	"errors"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/hub"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{in: "/spec/replicas", want: []string{"spec", "replicas"}},
		{in: "/spec/template/spec/containers/*/image", want: []string{"spec", "template", "spec", "containers", "*", "image"}},
		{in: "/metadata/annotations/cert-manager.io~1issuer", want: []string{"metadata", "annotations", "cert-manager.io/issuer"}},
		{in: "/a~0b", want: []string{"a~b"}},
		{in: "spec.replicas", want: []string{"spec", "replicas"}},
		{in: "spec.template.spec.containers[app].image", want: []string{"spec", "template", "spec", "containers", "app", "image"}},
		{in: "spec.template.spec.containers[*].env[DEBUG]", want: []string{"spec", "template", "spec", "containers", "*", "env", "DEBUG"}},
		{in: "spec.ports[80/TCP]", want: []string{"spec", "ports", "80/TCP"}},
		{in: "metadata.annotations.cert-manager.io/issuer", want: []string{"metadata", "annotations", "cert-manager.io/issuer"}},
		{in: "spec.template.metadata.labels.app.kubernetes.io/name", want: []string{"spec", "template", "metadata", "labels", "app.kubernetes.io/name"}},
		{in: "", err: true},
		{in: "/", err: true},
		{in: "/spec//replicas", err: true},
		{in: "/a~2", err: true},
		{in: "spec.", err: true},
		{in: "spec..replicas", err: true},
		{in: "containers[app", err: true},
		{in: "containers[]", err: true},
		{in: "containers[app]image", err: true},
		{in: "containers]", err: true},
	}
	for _, tt := range tests {
		got, err := ParsePath(tt.in)
		if (err != nil) != tt.err {
			t.Errorf("ParsePath(%q) error = %v, want error %v", tt.in, err, tt.err)
			continue
		}
		if !tt.err && !slices.Equal(got, tt.want) {
			t.Errorf("ParsePath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMatchPath(t *testing.T) {
	tests := []struct {
		rule, field []string
		want        bool
	}{
		{[]string{"spec", "replicas"}, []string{"spec", "replicas"}, true},
		{[]string{"spec"}, []string{"spec", "replicas"}, true},
		{[]string{"spec", "replicas"}, []string{"spec"}, false},
		{[]string{"spec", "replicas"}, []string{"spec", "paused"}, false},
		{[]string{"spec", "c", "*", "image"}, []string{"spec", "c", "app", "image"}, true},
		{[]string{"spec", "c", "*", "image"}, []string{"spec", "c", "app", "args"}, false},
		{[]string{"spec", "c", "*", "image"}, []string{"spec", "c", "sidecar"}, false},
		{[]string{"*"}, []string{"data", "k"}, true},
	}
	for _, tt := range tests {
		if got := MatchPath(tt.rule, tt.field); got != tt.want {
			t.Errorf("MatchPath(%q, %q) = %v, want %v", tt.rule, tt.field, got, tt.want)
		}
	}
}

func TestCurrentOwner(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	owners := []FieldOwner{
		{Manager: kubeobj.FieldManager, Time: t0.Add(time.Hour), Fields: []string{"spec.replicas", "spec.template.spec.containers[app].image"}},
		{Manager: "autoscaler", Time: t0, Fields: []string{"spec.replicas"}},
		{Manager: "webhook", Time: t0, Fields: []string{"spec.template.spec.containers[istio]", "spec.template.spec.containers[istio].image"}},
		{Manager: "kubectl-edit", Time: t0.Add(time.Minute), Fields: []string{"spec.template.spec.containers[app]"}},
	}
	tests := []struct{ path, self, want string }{
		{"spec.replicas", kubeobj.FieldManager, "autoscaler"},
		{"spec.template.spec.containers[istio]", kubeobj.FieldManager, "webhook"},
		// Owning the item entry does not own the fields inside it.
		{"spec.template.spec.containers[app].image", kubeobj.FieldManager, ""},
		{"spec.paused", kubeobj.FieldManager, ""},
		// Another hub's field manager (here the legacy name, seen by a
		// hub with an id of its own) is someone else.
		{"spec.replicas", "driftwatch-hub-a", kubeobj.FieldManager},
	}
	for _, tt := range tests {
		if got := CurrentOwner(tt.path, owners, tt.self); got != tt.want {
			t.Errorf("CurrentOwner(%q, self %q) = %q, want %q", tt.path, tt.self, got, tt.want)
		}
	}
}

func mustPaths(t *testing.T, ps ...string) [][]string {
	t.Helper()
	var out [][]string
	for _, p := range ps {
		s, err := ParsePath(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestClassifyIgnoring(t *testing.T) {
	scaled := liveDeployment(func(m map[string]any) { m["spec"].(map[string]any)["replicas"] = int64(5) })
	scaledAndImage := liveDeployment(func(m map[string]any) {
		m["spec"].(map[string]any)["replicas"] = int64(5)
		container(m)["image"] = "nginx:2"
	})
	sidecar := liveDeployment(func(m map[string]any) {
		ps := podSpec(m)
		ps["containers"] = append(ps["containers"].([]any), map[string]any{"name": "istio", "image": "proxy:1"})
	})
	annotated := liveDeployment(func(m map[string]any) {
		m["metadata"].(map[string]any)["annotations"].(map[string]any)[kubeobj.NodeIDAnnotation] = "other"
	})
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	autoscaler := []FieldOwner{{Manager: "autoscaler", Time: t0, Fields: []string{"spec.replicas"}}}
	tests := []struct {
		name        string
		live        func() *unstructured.Unstructured
		rules       []hub.IgnoreRule
		owners      []FieldOwner
		ownersErr   error
		wantClass   hub.DriftClass
		wantFields  []string
		wantIgnored []string // "path rule manager"
		wantCalls   int
	}{
		{name: "path rule", live: scaled.DeepCopy,
			rules:     []hub.IgnoreRule{{Name: "replicas", Paths: mustPaths(t, "/spec/replicas")}},
			wantClass: hub.DriftNone, wantIgnored: []string{"spec.replicas replicas "}},
		{name: "path rule in classifier form, other drift stays", live: scaledAndImage.DeepCopy,
			rules:     []hub.IgnoreRule{{Name: "r", Paths: mustPaths(t, "spec.replicas")}},
			wantClass: hub.DriftModified, wantFields: []string{"spec.template.spec.containers[app].image"},
			wantIgnored: []string{"spec.replicas r "}},
		{name: "wildcard item", live: scaledAndImage.DeepCopy,
			rules:     []hub.IgnoreRule{{Name: "images", Paths: mustPaths(t, "/spec/template/spec/containers/*/image")}},
			wantClass: hub.DriftModified, wantFields: []string{"spec.replicas"},
			wantIgnored: []string{"spec.template.spec.containers[app].image images "}},
		{name: "added sidecar by name", live: sidecar.DeepCopy,
			rules:     []hub.IgnoreRule{{Name: "mesh", Paths: mustPaths(t, "/spec/template/spec/containers/istio")}},
			wantClass: hub.DriftNone, wantIgnored: []string{"spec.template.spec.containers[istio] mesh "}},
		{name: "annotation key with dots and a slash", live: annotated.DeepCopy,
			rules:     []hub.IgnoreRule{{Name: "a", Paths: mustPaths(t, "/metadata/annotations/driftwatch.io~1node-id")}},
			wantClass: hub.DriftNone, wantIgnored: []string{"metadata.annotations." + kubeobj.NodeIDAnnotation + " a "}},
		{name: "manager rule: owner matches", live: scaled.DeepCopy, owners: autoscaler,
			rules:     []hub.IgnoreRule{{Name: "hpa", Managers: []string{"autoscaler"}}},
			wantClass: hub.DriftNone, wantIgnored: []string{"spec.replicas hpa autoscaler"}, wantCalls: 1},
		{name: "manager rule: other owner", live: scaled.DeepCopy,
			owners:    []FieldOwner{{Manager: "kubectl-scale", Time: t0, Fields: []string{"spec.replicas"}}},
			rules:     []hub.IgnoreRule{{Name: "hpa", Managers: []string{"autoscaler"}}},
			wantClass: hub.DriftModified, wantFields: []string{"spec.replicas"}, wantCalls: 1},
		{name: "manager and path: both must hold", live: scaledAndImage.DeepCopy,
			owners:    []FieldOwner{{Manager: "autoscaler", Time: t0, Fields: []string{"spec.replicas", "spec.template.spec.containers[app].image"}}},
			rules:     []hub.IgnoreRule{{Name: "hpa", Managers: []string{"autoscaler"}, Paths: mustPaths(t, "/spec/replicas")}},
			wantClass: hub.DriftModified, wantFields: []string{"spec.template.spec.containers[app].image"},
			wantIgnored: []string{"spec.replicas hpa autoscaler"}, wantCalls: 1},
		{name: "owners not read when no manager rule is reached", live: scaled.DeepCopy,
			rules:     []hub.IgnoreRule{{Name: "hpa", Managers: []string{"autoscaler"}, Paths: mustPaths(t, "/spec/paused")}},
			wantClass: hub.DriftModified, wantFields: []string{"spec.replicas"}},
		{name: "owners error: manager rules match nothing", live: scaled.DeepCopy, ownersErr: errors.New("boom"),
			rules:     []hub.IgnoreRule{{Name: "hpa", Managers: []string{"autoscaler"}}},
			wantClass: hub.DriftModified, wantFields: []string{"spec.replicas"}, wantCalls: 1},
		{name: "no rules", live: scaled.DeepCopy,
			wantClass: hub.DriftModified, wantFields: []string{"spec.replicas"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			ig := Ignore{Rules: tt.rules, Owners: func() ([]FieldOwner, error) {
				calls++
				return tt.owners, tt.ownersErr
			}}
			d, err := ClassifyIgnoring(desiredDeployment(), tt.live(), "", ig)
			if (err != nil) != (tt.ownersErr != nil) {
				t.Fatalf("err = %v, want %v", err, tt.ownersErr)
			}
			if d.Class != tt.wantClass {
				t.Errorf("class = %s, want %s (%s)", d.Class, tt.wantClass, d.Summary())
			}
			var fields []string
			for _, f := range d.Fields {
				fields = append(fields, f.Path)
			}
			if !slices.Equal(fields, tt.wantFields) {
				t.Errorf("fields = %q, want %q", fields, tt.wantFields)
			}
			var ignored []string
			for _, f := range d.Ignored {
				ignored = append(ignored, f.Path+" "+f.Rule+" "+f.Manager)
			}
			if !slices.Equal(ignored, tt.wantIgnored) {
				t.Errorf("ignored = %q, want %q", ignored, tt.wantIgnored)
			}
			if calls != tt.wantCalls {
				t.Errorf("owners read %d times, want %d", calls, tt.wantCalls)
			}
		})
	}
}

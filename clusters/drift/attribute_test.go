package drift

import (
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

func TestAttribute(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	scaled := hub.Drift{Class: hub.DriftModified, Fields: []hub.FieldDiff{{Path: "spec.replicas"}}}
	image := hub.Drift{Class: hub.DriftModified, Fields: []hub.FieldDiff{{Path: "spec.template.spec.containers[app].image"}}}
	envAdded := hub.Drift{Class: hub.DriftAdded, Fields: []hub.FieldDiff{{Path: "spec.template.spec.containers[app].env[DEBUG]", Added: true}}}
	keyAdded := hub.Drift{Class: hub.DriftAdded, Fields: []hub.FieldDiff{{Path: "data.drift", Added: true}}}
	twoFields := hub.Drift{Class: hub.DriftModified, Fields: []hub.FieldDiff{{Path: "spec.replicas"}, {Path: "metadata.labels.app"}}}
	missingKey := hub.Drift{Class: hub.DriftModified, Fields: []hub.FieldDiff{{Path: "data"}}}
	tests := []struct {
		name    string
		d       hub.Drift
		owners  []FieldOwner
		self    string // the hub's own field manager; "" means kubeobj.FieldManager
		manager string // "" means nil
		fields  []string
	}{
		{name: "the manager owning the field",
			d: scaled,
			owners: []FieldOwner{
				{Manager: "kubectl-edit", Operation: "Update", Time: t0, Fields: []string{"metadata.labels.x"}},
				{Manager: "kubectl-scale", Operation: "Update", Time: t0, Fields: []string{"spec.replicas"}},
			},
			manager: "kubectl-scale", fields: []string{"spec.replicas"}},
		{name: "driftwatch itself is ignored",
			d: scaled,
			owners: []FieldOwner{
				{Manager: kubeobj.FieldManager, Operation: "Apply", Time: t0.Add(time.Hour), Fields: []string{"spec.replicas"}},
				{Manager: "kubectl-scale", Operation: "Update", Time: t0, Fields: []string{"spec.replicas"}},
			},
			manager: "kubectl-scale", fields: []string{"spec.replicas"}},
		{name: "only driftwatch owns it",
			d:      scaled,
			owners: []FieldOwner{{Manager: kubeobj.FieldManager, Time: t0, Fields: []string{"spec.replicas"}}}},
		{name: "latest manager wins",
			d: image,
			owners: []FieldOwner{
				{Manager: "kubectl-edit", Operation: "Update", Time: t0, Fields: []string{"spec.template.spec.containers[app].image"}},
				{Manager: "kubectl-set", Operation: "Update", Time: t0.Add(time.Minute), Fields: []string{"spec.template.spec.containers[app].image"}},
				{Manager: "old-tool", Operation: "Update", Time: t0.Add(-time.Minute), Fields: []string{"spec.template.spec.containers[app].image"}},
			},
			manager: "kubectl-set", fields: []string{"spec.template.spec.containers[app].image"}},
		{name: "an added entry matches the fields inside it",
			d: envAdded,
			owners: []FieldOwner{{Manager: "kubectl-edit", Operation: "Update", Time: t0, Fields: []string{
				"spec.template.spec.containers[app].env[DEBUG].name",
				"spec.template.spec.containers[app].env[DEBUG].value",
			}}},
			manager: "kubectl-edit", fields: []string{"spec.template.spec.containers[app].env[DEBUG]"}},
		{name: "a drifted field inside an owned entry",
			d:       hub.Drift{Class: hub.DriftModified, Fields: []hub.FieldDiff{{Path: "spec.template.spec.containers[app].env[MODE].value"}}},
			owners:  []FieldOwner{{Manager: "kubectl-edit", Time: t0, Fields: []string{"spec.template.spec.containers[app].env[MODE]"}}},
			manager: "kubectl-edit", fields: []string{"spec.template.spec.containers[app].env[MODE].value"}},
		{name: "a list entry inside a drifted field",
			d:       missingKey,
			owners:  []FieldOwner{{Manager: "kubectl-patch", Time: t0, Fields: []string{"data.a"}}},
			manager: "kubectl-patch", fields: []string{"data"}},
		{name: "a ConfigMap key added by kubectl patch",
			d:       keyAdded,
			owners:  []FieldOwner{{Manager: "kubectl-patch", Operation: "Update", Time: t0, Fields: []string{"data.drift"}}},
			manager: "kubectl-patch", fields: []string{"data.drift"}},
		{name: "a prefix that is not a path boundary does not match",
			d:      scaled,
			owners: []FieldOwner{{Manager: "other", Time: t0, Fields: []string{"spec.replicasX", "spec.replica"}}}},
		{name: "every drifted field the manager owns is listed",
			d:       twoFields,
			owners:  []FieldOwner{{Manager: "kubectl-edit", Time: t0, Fields: []string{"metadata.labels.app", "spec.replicas"}}},
			manager: "kubectl-edit", fields: []string{"spec.replicas", "metadata.labels.app"}},
		{name: "missing objects have no fields to attribute",
			d:      hub.Drift{Class: hub.DriftMissing},
			owners: []FieldOwner{{Manager: "kubectl-scale", Time: t0, Fields: []string{"spec.replicas"}}}},
		{name: "no owners", d: scaled},
		{name: "another hub's field manager is someone else",
			d: scaled,
			owners: []FieldOwner{
				{Manager: "driftwatch-hub-b", Operation: "Apply", Time: t0.Add(time.Hour), Fields: []string{"spec.replicas"}},
				{Manager: "kubectl-scale", Operation: "Update", Time: t0, Fields: []string{"spec.replicas"}},
			},
			manager: "driftwatch-hub-b", fields: []string{"spec.replicas"}},
		{name: "a hub with its own id ignores only its own manager",
			d:    scaled,
			self: "driftwatch-hub-a",
			owners: []FieldOwner{
				{Manager: "driftwatch-hub-a", Operation: "Apply", Time: t0.Add(2 * time.Hour), Fields: []string{"spec.replicas"}},
				{Manager: kubeobj.FieldManager, Operation: "Apply", Time: t0.Add(time.Hour), Fields: []string{"spec.replicas"}},
			},
			manager: kubeobj.FieldManager, fields: []string{"spec.replicas"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			self := tt.self
			if self == "" {
				self = kubeobj.FieldManager
			}
			a := Attribute(tt.d, tt.owners, self)
			if tt.manager == "" {
				if a != nil {
					t.Fatalf("attribution = %+v, want nil", a)
				}
				return
			}
			if a == nil || a.Manager != tt.manager {
				t.Fatalf("attribution = %+v, want manager %s", a, tt.manager)
			}
			if strings.Join(a.Fields, ",") != strings.Join(tt.fields, ",") {
				t.Fatalf("fields = %v, want %v", a.Fields, tt.fields)
			}
			var want FieldOwner
			for _, o := range tt.owners {
				if o.Manager == tt.manager {
					want = o
				}
			}
			if a.Operation != want.Operation || !a.At.Equal(want.Time) {
				t.Fatalf("attribution = %+v, want operation %q at %v", a, want.Operation, want.Time)
			}
		})
	}
}

// TestOwnsAny: an owned path covers a drifted path when it is the same
// field, lies inside it (a field or a list entry), or holds it; a sibling
// that merely shares a prefix does not.
func TestOwnsAny(t *testing.T) {
	for _, tc := range []struct {
		owned []string
		f     string
		want  bool
	}{
		{[]string{"spec.replicas"}, "spec.replicas", true},
		{[]string{"metadata.labels", "spec.replicas"}, "spec.replicas", true},
		{[]string{`spec.template.spec.containers[name="app"].image`}, "spec.template.spec.containers", true},
		{[]string{"spec.template"}, `spec.template.spec.containers[name="app"].image`, true},
		{[]string{"spec.replicasMax"}, "spec.replicas", false},
		{[]string{"spec.replicas"}, "spec.replicasMax", false},
		{nil, "spec.replicas", false},
	} {
		if got := OwnsAny(tc.owned, tc.f); got != tc.want {
			t.Errorf("OwnsAny(%q, %q) = %v, want %v", tc.owned, tc.f, got, tc.want)
		}
	}
}

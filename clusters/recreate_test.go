package clusters

import (
	"errors"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driftwatch/driftwatch/hub"
)

// TestImmutableFields: the apiserver's refusals of an in-place change, as
// its validation words them for built-in kinds and custom resources, are
// told from every other invalid write, with the fields they name.
func TestImmutableFields(t *testing.T) {
	invalid := func(errs ...*field.Error) error {
		return apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web", errs)
	}
	tests := []struct {
		name   string
		err    error
		fields []string
		ok     bool
	}{
		{"selector", invalid(field.Invalid(field.NewPath("spec", "selector"), "x", "field is immutable")), []string{"spec.selector"}, true},
		{"job template", invalid(field.Invalid(field.NewPath("spec", "template"), "x", "field is immutable")), []string{"spec.template"}, true},
		{"statefulset spec", invalid(field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")), []string{"spec"}, true},
		{"pvc spec", invalid(field.Forbidden(field.NewPath("spec"), "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims")), []string{"spec"}, true},
		{"custom resource rule", invalid(field.Invalid(field.NewPath("spec", "size"), 3, "Value is immutable")), []string{"spec.size"}, true},
		{"service cluster IP", invalid(field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), "10.0.0.1", "may not change once set")), []string{"spec.clusterIPs[0]"}, true},
		{"pod", invalid(field.Forbidden(field.NewPath("spec"), "pod updates may not change fields other than `spec.containers[*].image`")), []string{"spec"}, true},
		{"two fields", invalid(field.Invalid(field.NewPath("spec", "selector"), "x", "field is immutable"), field.Invalid(field.NewPath("spec", "template"), "x", "field is immutable")), []string{"spec.selector", "spec.template"}, true},
		{"another invalid value", invalid(field.Invalid(field.NewPath("spec", "replicas"), -1, "must be greater than or equal to 0")), nil, false},
		{"required", invalid(field.Required(field.NewPath("spec", "selector"), "")), nil, false},
		{"conflict", apierrors.NewConflict(schema.GroupResource{Resource: "deployments"}, "web", errors.New("changed")), nil, false},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "deployments"}, "web", errors.New("field is immutable")), nil, false},
		{"plain", errors.New("field is immutable"), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Manager{cfg: ClusterConfig{ID: "c1"}}
			// As Repair sees it: a backend error around the client's.
			fields, ok := immutableFields(m.callError("apply", hub.NodeSpec{ID: hub.NewNodeID("c1", "shop", "web", hub.KindDeployment), Namespace: "shop", Name: "web", Kind: hub.KindDeployment}, tt.err))
			if ok != tt.ok || !slices.Equal(fields, tt.fields) {
				t.Errorf("immutableFields = %v, %v; want %v, %v", fields, ok, tt.fields, tt.ok)
			}
		})
	}
}

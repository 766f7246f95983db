package kubeobj

import (
	"strings"
	"testing"

	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driftwatch/driftwatch/hub"
)

// TestFieldManagerFor: the default id keeps the field manager hubs always
// had; any other id gets its own, which the apiserver accepts even for the
// longest hub id (a DNS label of 63 bytes), and which is told from
// everything that is not a hub's.
func TestFieldManagerFor(t *testing.T) {
	long := strings.Repeat("h", 63)
	for _, tt := range []struct{ id, want string }{
		{"", "driftwatch"},
		{hub.DefaultHubID, "driftwatch"},
		{"hub-a", "driftwatch-hub-a"},
		{long, "driftwatch-" + long},
	} {
		got := FieldManagerFor(tt.id)
		if got != tt.want {
			t.Errorf("FieldManagerFor(%q) = %q, want %q", tt.id, got, tt.want)
		}
		if errs := metavalidation.ValidateFieldManager(got, field.NewPath("fieldManager")); len(errs) > 0 {
			t.Errorf("FieldManagerFor(%q) = %q: the apiserver refuses it: %v", tt.id, got, errs)
		}
		if !IsHubFieldManager(got) {
			t.Errorf("IsHubFieldManager(%q) = false", got)
		}
	}
	for _, m := range []string{"", "kubectl-edit", "driftwatch-", "driftwatchx", "drift-generator"} {
		if IsHubFieldManager(m) {
			t.Errorf("IsHubFieldManager(%q) = true", m)
		}
	}
}

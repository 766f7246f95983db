package config

import (
	"testing"

	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
)

func TestApplyOrder(t *testing.T) {
	for _, tc := range []struct {
		gk   k8sschema.GroupKind
		want uint8
	}{
		{k8sschema.GroupKind{Kind: "Namespace"}, 0},
		{k8sschema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, 0},
		{k8sschema.GroupKind{Group: "apps", Kind: "StatefulSet"}, 1},
		{k8sschema.GroupKind{Kind: "ConfigMap"}, 1},
		{k8sschema.GroupKind{Group: "example.com", Kind: "Namespace"}, 1},
		{k8sschema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}, 2},
	} {
		if got := applyOrder(tc.gk); got != tc.want {
			t.Errorf("applyOrder(%v) = %d, want %d", tc.gk, got, tc.want)
		}
	}
}

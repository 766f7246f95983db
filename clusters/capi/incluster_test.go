package capi

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// nopHandler ignores discoveries.
type nopHandler struct{}

func (nopHandler) ClusterUp(Discovered) {}
func (nopHandler) ClusterGone(string)   {}

// TestInClusterSource: a source with InCluster reaches its management
// cluster through the Pod's service account, so outside a Pod Run fails
// naming the source, whatever Kubeconfig says.
func TestInClusterSource(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	d, err := New(Source{Name: "mgmt", InCluster: true, Kubeconfig: "/nonexistent/kubeconfig"}, nopHandler{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = d.Run(t.Context())
	if err == nil || !errors.Is(err, rest.ErrNotInCluster) || !strings.Contains(err.Error(), `"mgmt"`) {
		t.Errorf("Run outside a Pod: err %v, want rest.ErrNotInCluster naming the source", err)
	}
}

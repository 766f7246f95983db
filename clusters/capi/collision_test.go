package capi

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// callLog records the handler's calls as lines.
type callLog struct{ calls []string }

func (l *callLog) ClusterUp(d Discovered) {
	if d.Err != nil {
		if c, ok := errors.AsType[*IDCollisionError](d.Err); ok {
			l.calls = append(l.calls, "up "+d.ID+" collision "+c.Source+" "+strings.Join(c.Clusters, ","))
			return
		}
		l.calls = append(l.calls, "up "+d.ID+" error")
		return
	}
	l.calls = append(l.calls, "up "+d.ID+" "+d.Namespace+"/"+d.Name)
}

func (l *callLog) ClusterGone(id string) { l.calls = append(l.calls, "gone "+id) }

// provisionedCluster is a v1beta2 Cluster object whose control plane is
// initialized.
func provisionedCluster(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": clusterv1.GroupVersion.String(), "kind": "Cluster",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"status":   map[string]any{"phase": "Provisioned", "initialization": map[string]any{"controlPlaneInitialized": true}},
	}}
}

const goodKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: w, cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: Y2E=}}]
users: [{name: w, user: {token: t}}]
contexts: [{name: w, context: {cluster: w, user: w}}]
current-context: w
`

func kubeconfigSecret(ns, cluster string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster + "-kubeconfig"},
		Data: map[string][]byte{"value": []byte(goodKubeconfig)}}
}

// TestIDCollision: Cluster objects fleet-x/y and fleet/x-y both map to
// fleet-x-y under the default template. Neither silently replaces the
// other: while both exist the id is reported with an *IDCollisionError
// naming both (the one up before is reported gone first, so no connection
// keeps serving the id), whatever the order they arrive in; once one is
// left it is reported up.
func TestIDCollision(t *testing.T) {
	type step struct {
		key     string
		present bool // false: the Cluster is deleted
		noSec   bool // the kubeconfig secret is missing
		want    []string
	}
	const collision = "up fleet-x-y collision mgmt fleet-x/y,fleet/x-y"
	tests := []struct {
		name      string
		template  string
		steps     []step
		wantKnown []string
	}{
		{name: "second arrives, then each leaves",
			steps: []step{
				{key: "fleet-x/y", present: true, want: []string{"up fleet-x-y fleet-x/y"}},
				{key: "fleet/x-y", present: true, want: []string{"gone fleet-x-y", collision}},
				{key: "fleet-x/y", present: true, want: nil},
				{key: "fleet/x-y", present: true, want: nil},
				{key: "fleet-x/y", present: false, want: []string{"up fleet-x-y fleet/x-y"}},
				{key: "fleet/x-y", present: false, want: []string{"gone fleet-x-y"}},
			}},
		{name: "the other order ends the same",
			steps: []step{
				{key: "fleet/x-y", present: true, want: []string{"up fleet-x-y fleet/x-y"}},
				{key: "fleet-x/y", present: true, want: []string{"gone fleet-x-y", collision}},
			},
			wantKnown: []string{"fleet-x-y"}},
		{name: "a first cluster with a broken secret is let go too",
			steps: []step{
				{key: "fleet-x/y", present: true, want: []string{"up fleet-x-y fleet-x/y"}},
				{key: "fleet-x/y", present: true, noSec: true, want: []string{"up fleet-x-y error"}},
				{key: "fleet/x-y", present: true, want: []string{"gone fleet-x-y", collision}},
			},
			wantKnown: []string{"fleet-x-y"}},
		{name: "three claimants, one leaves, still a collision", template: "{{.Name}}",
			steps: []step{
				{key: "a/web", present: true, want: []string{"up web a/web"}},
				{key: "b/web", present: true, want: []string{"gone web", "up web collision mgmt a/web,b/web"}},
				{key: "c/web", present: true, want: []string{"up web collision mgmt a/web,b/web,c/web"}},
				{key: "a/web", present: false, want: []string{"up web collision mgmt b/web,c/web"}},
				{key: "c/web", present: false, want: []string{"up web b/web"}},
			},
			wantKnown: []string{"web"}},
		{name: "an unprovisioned claimant does not collide",
			steps: []step{
				{key: "fleet-x/y", present: true, want: []string{"up fleet-x-y fleet-x/y"}},
				{key: "other/z", present: true, want: []string{"up other-z other/z"}},
			},
			wantKnown: []string{"fleet-x-y", "other-z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &callLog{}
			d, err := New(Source{Name: "mgmt", IDTemplate: tt.template}, log, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				log.calls = nil
				var cl *unstructured.Unstructured
				var sec *corev1.Secret
				if s.present {
					ns, name, _ := strings.Cut(s.key, "/")
					cl = provisionedCluster(ns, name)
					if !s.noSec {
						sec = kubeconfigSecret(ns, name)
					}
				}
				d.sync(s.key, clusterv1.GroupVersion.Version, cl, sec)
				if !slices.Equal(log.calls, s.want) {
					t.Fatalf("step %d (%s present=%v): calls %q, want %q", i, s.key, s.present, log.calls, s.want)
				}
			}
			if tt.wantKnown != nil {
				if got := d.Known(); !slices.Equal(got, tt.wantKnown) {
					t.Errorf("Known() = %q, want %q", got, tt.wantKnown)
				}
			}
		})
	}
}

// TestIDCollisionError names the id, the source and every Cluster object.
func TestIDCollisionError(t *testing.T) {
	err := &IDCollisionError{ID: "fleet-x-y", Source: "mgmt", Clusters: []string{"fleet-x/y", "fleet/x-y"}}
	want := `cluster id "fleet-x-y" is claimed by 2 Cluster objects of clusterAPI source "mgmt" (fleet-x/y, fleet/x-y): none of them is managed until one is left (delete or rename the others, or change idTemplate)`
	if err.Error() != want {
		t.Errorf("Error() = %q\nwant      %q", err.Error(), want)
	}
}

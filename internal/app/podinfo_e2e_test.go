package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// TestPublicProjectOnThreeClusters: a real public project, podinfo
// (config/manifest/testdata/podinfo, Apache-2.0), as its users would run
// it: its kustomize base under one overlay per environment, and its Helm
// chart with values per environment, on three clusters each labelled with
// its own environment. Every object is applied and in sync, each cluster
// has its overlay's and its values' settings, and drift on both sources'
// objects is repaired: a Deployment deleted, a port added to a Service, and
// both port numbers of a Service rewritten by hand (each of our entries
// replaced by one with its name: removing the others before the apply
// would leave no port, which the apiserver refuses).
func TestPublicProjectOnThreeClusters(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 3})
	base, err := filepath.Abs("../../config/manifest/testdata/podinfo/kustomize")
	if err != nil {
		t.Fatal(err)
	}
	chart, err := filepath.Abs("../../config/manifest/testdata/podinfo/charts/podinfo")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The overlays sit beside a copy of the project's base, as in a
	// repository (kustomize refuses absolute resource paths).
	if err := os.CopyFS(filepath.Join(dir, "base"), os.DirFS(base)); err != nil {
		t.Fatal(err)
	}
	envs := []string{"dev", "staging", "prod"}
	for _, env := range envs {
		overlay := filepath.Join(dir, "overlays", env)
		if err := os.MkdirAll(overlay, 0o755); err != nil {
			t.Fatal(err)
		}
		kust := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../base
labels:
  - pairs: {environment: %s}
patches:
  - target: {kind: Deployment, name: podinfo}
    patch: |
      - {op: replace, path: /spec/template/spec/containers/0/env/0/value, value: "%s"}
`, env, env)
		if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kust), 0o600); err != nil {
			t.Fatal(err)
		}
		values := fmt.Sprintf("replicaCount: %d\nui: {message: %q}\n", len(env), "hello from "+env)
		if err := os.WriteFile(filepath.Join(dir, "values-"+env+".yaml"), []byte(values), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "hub:\n  id: e2e\n  workers: 4\nclusters:\n")
	for i, lc := range set.Clusters {
		fmt.Fprintf(&b, "  - {id: %s, kubeconfig: %s, labels: {env: %s}}\n", lc.Name, lc.Kubeconfig, envs[i])
	}
	fmt.Fprintf(&b, `sources:
  - id: podinfo
    kustomize: overlays/${cluster.labels.env}
    selector: env
    namespace: podinfo
  - id: podinfo-chart
    helm:
      chart: %s
      releaseName: frontend
      kubeVersion: "1.37.2"
      namespace: frontend
      valuesFiles: ["values-${cluster.labels.env}.yaml"]
    selector: env
`, chart)
	path := filepath.Join(dir, "driftwatch.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startApp(t, path, nil)
	s := a.waitSnap(t, 90*time.Second, "podinfo's objects in sync on every cluster", func(s *hub.Snapshot) bool {
		if len(s.Nodes) < 3*5 {
			return false
		}
		for _, n := range s.Nodes {
			if n.Status != hub.StatusInSync && n.Status != hub.StatusRepaired {
				return false
			}
		}
		return true
	})
	t.Logf("%d objects in sync on 3 clusters", len(s.Nodes))
	ctx := t.Context()
	c := func(i int) kubernetes.Interface { return kubernetes.NewForConfigOrDie(set.Clusters[i].RESTConfig()) }
	for i, env := range envs {
		d, err := c(i).AppsV1().Deployments("podinfo").Get(ctx, "podinfo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Spec.Template.Spec.Containers[0].Env[0].Value; got != env || d.Labels["environment"] != env {
			t.Errorf("cluster %d: podinfo env %q, label %q: want its overlay's %q", i, got, d.Labels["environment"], env)
		}
		f, err := c(i).AppsV1().Deployments("frontend").Get(ctx, "frontend-podinfo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *f.Spec.Replicas != int32(len(env)) {
			t.Errorf("cluster %d: chart replicas %d, want %d from values-%s.yaml", i, *f.Spec.Replicas, len(env), env)
		}
	}
	// Drift on both sources' objects.
	t0 := time.Now()
	if err := c(0).AppsV1().Deployments("podinfo").Delete(ctx, "podinfo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c(2).CoreV1().Services("frontend").Patch(ctx, "frontend-podinfo", types.StrategicMergePatchType,
		[]byte(`{"spec":{"ports":[{"name":"debug","port":2345,"protocol":"TCP"}]}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	// Both ports of the kustomize Service renumbered by hand (kubectl patch
	// --type=json, replace); the test ops pin which entry is which.
	if _, err := c(1).CoreV1().Services("podinfo").Patch(ctx, "podinfo", types.JSONPatchType,
		[]byte(`[{"op":"test","path":"/spec/ports/0/name","value":"http"},{"op":"replace","path":"/spec/ports/0/port","value":9897},`+
			`{"op":"test","path":"/spec/ports/1/name","value":"grpc"},{"op":"replace","path":"/spec/ports/1/port","value":9998}]`),
		metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
		t.Fatal(err)
	}
	a.waitSnap(t, 30*time.Second, "the kustomize Deployment recreated",
		repairedAfter(hub.NewNodeID(set.Clusters[0].Name, "podinfo", "podinfo", hub.KindDeployment), t0))
	a.waitSnap(t, 30*time.Second, "the chart's Service repaired",
		repairedAfter(hub.NewNodeID(set.Clusters[2].Name, "frontend", "frontend-podinfo", hub.KindService), t0))
	a.waitSnap(t, 30*time.Second, "the kustomize Service's replaced ports repaired",
		repairedAfter(hub.NewNodeID(set.Clusters[1].Name, "podinfo", "podinfo", hub.KindService), t0))
	svc, err := c(1).CoreV1().Services("podinfo").Get(ctx, "podinfo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ports := map[string]int32{}
	for _, p := range svc.Spec.Ports {
		ports[p.Name] = p.Port
	}
	if len(svc.Spec.Ports) != 2 || ports["http"] != 9898 || ports["grpc"] != 9999 {
		t.Fatalf("podinfo Service ports after the repair: %v, want http 9898 and grpc 9999", svc.Spec.Ports)
	}
	svc, err = c(2).CoreV1().Services("frontend").Get(ctx, "frontend-podinfo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range svc.Spec.Ports {
		if p.Name == "debug" {
			t.Fatalf("frontend Service ports after the repair: %v, the added port is still there", svc.Spec.Ports)
		}
	}
}

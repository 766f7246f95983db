package config

import (
	"reflect"
	"testing"

	"github.com/driftwatch/driftwatch/hub"
)

func TestCompileIgnoreRules(t *testing.T) {
	cfg := mustParse(t, `hub:
  ignore:
    - paths: ["/metadata/annotations/cert-manager.io~1issuer"]
clusters:
  - id: a
    kubeconfig: /k
  - id: b
    kubeconfig: /k
applications:
  - id: web
    namespace: shop
    clusters: [a, b]
    image: nginx
    port: 80
    ignore:
      - name: autoscaler
        managers: [kube-controller-manager]
        paths: [spec.replicas]
        kinds: [Deployment]
  - id: plain
    namespace: shop
    clusters: [a]
    image: nginx
`)
	want := []hub.IgnoreRule{
		{Name: "paths /metadata/annotations/cert-manager.io~1issuer", Paths: [][]string{{"metadata", "annotations", "cert-manager.io/issuer"}}},
		{Name: "autoscaler", Paths: [][]string{{"spec", "replicas"}}, Managers: []string{"kube-controller-manager"}, Kinds: []hub.Kind{hub.KindDeployment}},
	}
	specs := Compile(cfg)
	var web []hub.NodeSpec
	for _, s := range specs {
		if s.Application == "web" {
			web = append(web, s)
		}
		if s.Ignore == nil {
			t.Fatalf("%s: no ignore set (the hub has a rule)", s.ID)
		}
	}
	if len(web) != 4 {
		t.Fatalf("web specs = %d, want 4", len(web))
	}
	if !reflect.DeepEqual(web[0].Ignore.Rules, want) {
		t.Errorf("rules = %+v, want %+v", web[0].Ignore.Rules, want)
	}
	if got := web[0].Ignore.For(hub.KindService); len(got) != 1 {
		t.Errorf("rules for a Service = %+v, want the hub's only", got)
	}
	// The same rules compile to the same key; other rules to another.
	plain := cfg.IgnoreFor(cfg.Applications[1])
	if plain.Key == web[0].Ignore.Key || plain.Key != cfg.IgnoreFor(cfg.Applications[1]).Key {
		t.Errorf("keys: plain %q, web %q: want different, and stable", plain.Key, web[0].Ignore.Key)
	}
	if (&Config{}).IgnoreFor(Application{}) != nil {
		t.Error("no rules: want a nil set")
	}
}

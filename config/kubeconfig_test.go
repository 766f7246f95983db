package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/hub"
)

// TestKubeconfigForms checks the three ways a cluster or a Cluster API
// source is reached: a kubeconfig file, the default kubeconfig with a
// context (Kubeconfig ""), or in-cluster.
func TestKubeconfigForms(t *testing.T) {
	cfg := mustParse(t, `clusters:
  - id: file
    kubeconfig: ~/.kube/prod.yaml
  - id: file-context
    kubeconfig: ~/.kube/prod.yaml
    context: admin
  - id: default
    context: prod-eu
  - id: default-other
    context: prod-us
  - id: self
    inCluster: true
  - id: not-in-cluster
    kubeconfig: /k
    inCluster: false
clusterAPI:
  - name: mgmt
    context: mgmt-admin
  - name: mgmt-fleet-b
    context: mgmt-admin
    namespaces: [fleet-b]
  - name: local
    inCluster: true
  - name: local-gold
    inCluster: true
    selector: tier=gold
`)
	var got []Cluster
	for _, cl := range cfg.Clusters {
		got = append(got, Cluster{ID: cl.ID, Kubeconfig: cl.Kubeconfig, Context: cl.Context, InCluster: cl.InCluster})
	}
	want := []Cluster{
		{ID: "file", Kubeconfig: "/home/ops/.kube/prod.yaml"},
		{ID: "file-context", Kubeconfig: "/home/ops/.kube/prod.yaml", Context: "admin"},
		{ID: "default", Context: "prod-eu"},
		{ID: "default-other", Context: "prod-us"},
		{ID: "self", InCluster: true},
		{ID: "not-in-cluster", Kubeconfig: "/k"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("clusters =\n%+v\nwant\n%+v", got, want)
	}
	// Several sources may watch one management cluster.
	wantSources := []ClusterAPISource{
		{Name: "mgmt", Context: "mgmt-admin", IDTemplate: DefaultIDTemplate, Policy: hub.PolicyRepair},
		{Name: "mgmt-fleet-b", Context: "mgmt-admin", Namespaces: []string{"fleet-b"}, IDTemplate: DefaultIDTemplate, Policy: hub.PolicyRepair},
		{Name: "local", InCluster: true, IDTemplate: DefaultIDTemplate, Policy: hub.PolicyRepair},
		{Name: "local-gold", InCluster: true, Selector: "tier=gold", IDTemplate: DefaultIDTemplate, Policy: hub.PolicyRepair},
	}
	if !reflect.DeepEqual(cfg.ClusterAPI, wantSources) {
		t.Errorf("clusterAPI =\n%+v\nwant\n%+v", cfg.ClusterAPI, wantSources)
	}
}

// TestKubeconfigFormErrors checks every invalid combination of kubeconfig,
// context and inCluster, each reported at its line and column.
func TestKubeconfigFormErrors(t *testing.T) {
	const ctxRequired = "required without kubeconfig: name the context of $KUBECONFIG or ~/.kube/config to use (or set kubeconfig, or inCluster: true)"
	const ctxEmpty = "must not be empty without kubeconfig: name the context of $KUBECONFIG or ~/.kube/config to use"
	inCluster := func(line int) string {
		return fmt.Sprintf("must be left out with inCluster: true (line %d), which uses the service account of the hub's Pod", line)
	}
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"no kubeconfig, no context", "clusters:\n  - id: a\n    labels: {env: prod}\n",
			[]string{"config.yaml:2:5: clusters[0].context: " + ctxRequired}},
		{"no kubeconfig, flow style", "clusters: [{id: a}]\n",
			[]string{"config.yaml:1:12: clusters[0].context: " + ctxRequired}},
		{"no kubeconfig, empty context", "clusters:\n  - id: a\n    context: \"\"\n",
			[]string{"config.yaml:3:14: clusters[0].context: " + ctxEmpty}},
		{"no kubeconfig, null context", "clusters:\n  - id: a\n    context:\n",
			[]string{"config.yaml:3:5: clusters[0].context: " + ctxEmpty}},
		{"no kubeconfig, context not a string", "clusters:\n  - id: a\n    context: [prod]\n",
			[]string{"config.yaml:3:14: clusters[0].context: want a string, got a list"}},
		{"empty context with a kubeconfig is its current context", "clusters:\n  - id: a\n    kubeconfig: /k\n    context: \"\"\n", nil},
		{"invalid kubeconfig does not ask for a context", "clusters:\n  - id: a\n    kubeconfig: ${UNSET}/k\n",
			[]string{"config.yaml:3:17: clusters[0].kubeconfig: environment variable UNSET is not set"}},
		{"in-cluster with kubeconfig and context", "clusters:\n  - id: a\n    kubeconfig: /k\n    context: prod\n    inCluster: true\n",
			[]string{
				"config.yaml:3:17: clusters[0].kubeconfig: " + inCluster(5),
				"config.yaml:4:14: clusters[0].context: " + inCluster(5),
			}},
		{"in-cluster with a null kubeconfig", "clusters:\n  - id: a\n    inCluster: true\n    kubeconfig:\n",
			[]string{
				"config.yaml:4:5: clusters[0].kubeconfig: must not be empty",
				"config.yaml:4:5: clusters[0].kubeconfig: " + inCluster(3),
			}},
		{"inCluster not a bool", "clusters:\n  - id: a\n    inCluster: yes\n",
			[]string{`config.yaml:3:16: clusters[0].inCluster: want true or false, got "yes"`}},
		{"inCluster false needs a kubeconfig or context", "clusters:\n  - id: a\n    inCluster: false\n",
			[]string{"config.yaml:2:5: clusters[0].context: " + ctxRequired}},
		{"misspelt inCluster", "clusters:\n  - id: a\n    incluster: true\n    kubeconfig: /k\n",
			[]string{`config.yaml:3:5: clusters[0].incluster: unknown field (did you mean "inCluster"?)`}},
		{"same context of the default kubeconfig twice", `clusters:
  - id: a
    context: prod
  - id: b
    kubeconfig: /k
    context: prod
  - id: c
    context: prod
  - id: d
    context: prod
`, []string{
			`config.yaml:8:14: clusters[2].context: context "prod" of the default kubeconfig ($KUBECONFIG or ~/.kube/config) also reaches clusters[0] (line 3): the same cluster twice`,
			`config.yaml:10:14: clusters[3].context: context "prod" of the default kubeconfig ($KUBECONFIG or ~/.kube/config) also reaches clusters[0] (line 3): the same cluster twice`,
		}},
		{"in-cluster twice", "clusters:\n  - id: a\n    inCluster: true\n  - {id: b, inCluster: true}\n",
			[]string{"config.yaml:4:24: clusters[1].inCluster: inCluster: true also reaches clusters[0] (line 3): the same cluster twice"}},
		{"source without kubeconfig or context", "clusterAPI:\n  - name: m\n",
			[]string{"config.yaml:2:5: clusterAPI[0].context: " + ctxRequired}},
		{"in-cluster source with a context", "clusterAPI:\n  - name: m\n    inCluster: true\n    context: admin\n",
			[]string{"config.yaml:4:14: clusterAPI[0].context: " + inCluster(3)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want == nil {
				mustParse(t, tt.src)
				return
			}
			var got []string
			for _, e := range parseErrors(t, tt.src) {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

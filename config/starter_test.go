package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/driftwatch/driftwatch/hub"
)

// starterKubeconfig returns a kubeconfig with the given contexts.
func starterKubeconfig(contexts ...string) *clientcmdapi.Config {
	kc := clientcmdapi.NewConfig()
	for _, c := range contexts {
		kc.Clusters[c] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443"}
		kc.AuthInfos[c] = &clientcmdapi.AuthInfo{Token: "t"}
		kc.Contexts[c] = &clientcmdapi.Context{Cluster: c, AuthInfo: c}
	}
	if len(contexts) > 0 {
		kc.CurrentContext = contexts[0]
	}
	return kc
}

// threeContexts are context names as EKS, kind and a hand-written
// kubeconfig spell them.
var threeContexts = []string{"arn:aws:eks:eu-west-1:123:cluster/prod", "kind-dev", "Staging_1"}

// TestStarter: the starter config of a kubeconfig loads without errors,
// yields one cluster per context with that context, and an application on
// all of them; golden files hold the output.
func TestStarter(t *testing.T) {
	type cluster struct{ id, kubeconfig, context string }
	tests := []struct {
		name   string
		kc     *clientcmdapi.Config
		opts   StarterOptions
		golden string
		want   []cluster
	}{
		{name: "three contexts, default kubeconfig", kc: starterKubeconfig(threeContexts...),
			golden: "starter/three-contexts.golden",
			want: []cluster{
				{"arn-aws-eks-eu-west-1-123-cluster-prod", "", "arn:aws:eks:eu-west-1:123:cluster/prod"},
				{"kind-dev", "", "kind-dev"},
				{"staging-1", "", "Staging_1"},
			}},
		{name: "chosen contexts, in the order given, from a kubeconfig file",
			kc:     starterKubeconfig(threeContexts...),
			opts:   StarterOptions{KubeconfigPath: "/home/ops/.kube/fleet.yaml", Contexts: []string{"kind-dev", "Staging_1", "kind-dev"}},
			golden: "starter/kubeconfig-path.golden",
			want: []cluster{
				{"kind-dev", "/home/ops/.kube/fleet.yaml", "kind-dev"},
				{"staging-1", "/home/ops/.kube/fleet.yaml", "Staging_1"},
			}},
		{name: "ids deduplicated, odd names quoted",
			kc: starterKubeconfig("Staging_1", "staging-1", "STAGING.1", "true", "@@@", "1.2",
				"gke_project-with-a-rather-long-name_europe-west1-b_cluster-with-a-long-name-too"),
			want: []cluster{
				{"1-2", "", "1.2"},
				{"cluster", "", "@@@"},
				{"gke-project-with-a-rather-long-name-europe-west1-b-cluster-with", "", "gke_project-with-a-rather-long-name_europe-west1-b_cluster-with-a-long-name-too"},
				{"staging-1", "", "staging-1"},
				{"staging-1-2", "", "STAGING.1"},
				{"staging-1-3", "", "Staging_1"},
				{"true", "", "true"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Starter(tt.kc, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if tt.golden != "" {
				golden(t, tt.golden, out)
			}
			path := filepath.Join(t.TempDir(), "driftwatch.yaml")
			if err := os.WriteFile(path, out, 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(path, LoadOptions{Getenv: func(string) string { return "" }, HomeDir: "/home/ops"})
			if err != nil {
				t.Fatalf("Load rejects the starter config: %v\n%s", err, out)
			}
			var got []cluster
			for _, c := range cfg.Clusters {
				got = append(got, cluster{c.ID, c.Kubeconfig, c.Context})
				if c.InCluster {
					t.Errorf("cluster %s is in-cluster", c.ID)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("clusters\n%q\nwant\n%q", got, tt.want)
			}
			if len(cfg.Applications) != 1 || cfg.Applications[0].ID != StarterApplication {
				t.Fatalf("applications %+v, want the example", cfg.Applications)
			}
			// The example starts in warn (its comment says so), and the
			// commented workers are those the hub would run.
			if p := cfg.Applications[0].Policy; p != hub.PolicyWarn || !strings.Contains(string(out), "It starts in warn") {
				t.Errorf("the example's policy is %q, want warn with a comment", p)
			}
			if want := fmt.Sprintf("\n  # workers: %d ", cfg.Workers()); !strings.Contains(string(out), want) {
				t.Errorf("the starter lacks %q, the workers of its %d clusters", want, len(cfg.Clusters))
			}
			if n := len(cfg.TargetClusters(cfg.Applications[0])); n != len(tt.want) {
				t.Errorf("the example targets %d clusters, want all %d", n, len(tt.want))
			}
			// A Deployment, a Service and a ConfigMap per cluster.
			if n := len(Compile(cfg)); n != 3*len(tt.want) {
				t.Errorf("compiles to %d objects, want %d", n, 3*len(tt.want))
			}
			// Its commented notifications are valid once uncommented.
			var on []string
			uncommenting := false
			for _, l := range strings.Split(string(out), "\n") {
				uncommenting = uncommenting && strings.HasPrefix(l, "#") || l == "# notifications:"
				if uncommenting {
					l = strings.TrimPrefix(l, "# ")
				}
				on = append(on, l)
			}
			if err := os.WriteFile(path, []byte(strings.Join(on, "\n")), 0o600); err != nil {
				t.Fatal(err)
			}
			env := func(k string) string { return map[string]string{"SLACK_WEBHOOK_URL": "https://hooks.example.com/x"}[k] }
			cfg, err = Load(path, LoadOptions{Getenv: env, HomeDir: "/home/ops"})
			if err != nil {
				t.Fatalf("the starter's notifications, uncommented: %v", err)
			}
			if n := cfg.Notifications; n.KubernetesEvents == nil || len(n.Webhooks) != 1 {
				t.Errorf("the starter's notifications, uncommented: %+v", n)
			}
		})
	}
}

func TestStarterErrors(t *testing.T) {
	tests := []struct {
		name string
		kc   *clientcmdapi.Config
		opts StarterOptions
		want []string
	}{
		{"unknown contexts", starterKubeconfig(threeContexts...), StarterOptions{Contexts: []string{"kind-dev", "prod", "kind-prod"}},
			[]string{`contexts "prod", "kind-prod" not in the kubeconfig`, "(contexts: arn:aws:eks:eu-west-1:123:cluster/prod, kind-dev, Staging_1)"}},
		{"one unknown context", starterKubeconfig("a"), StarterOptions{Contexts: []string{"b"}}, []string{`context "b" not in the kubeconfig (contexts: a)`}},
		{"empty context list", starterKubeconfig("a"), StarterOptions{Contexts: []string{}}, []string{"no context given"}},
		{"no contexts", starterKubeconfig(), StarterOptions{}, []string{"no contexts"}},
		{"nil kubeconfig", nil, StarterOptions{}, []string{"no contexts"}},
		{"empty context name", starterKubeconfig("a"), StarterOptions{Contexts: []string{""}}, []string{`context "" not in the kubeconfig`}},
		{"path with $", starterKubeconfig("a"), StarterOptions{KubeconfigPath: "/srv/$HOME/kc"}, []string{`"/srv/$HOME/kc"`, "environment variable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Starter(tt.kc, tt.opts)
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestYAMLScalar(t *testing.T) {
	tests := map[string]string{
		"kind-dev":      "kind-dev",
		"Staging_1":     "Staging_1",
		"/home/ops/kc":  "/home/ops/kc",
		"~/.kube/fleet": "~/.kube/fleet",
		"~":             `"~"`,
		"arn:aws:x":     `"arn:aws:x"`,
		"yes":           `"yes"`,
		"1.2":           `"1.2"`,
		"a b":           `"a b"`,
		"#x":            `"#x"`,
	}
	for in, want := range tests {
		if got := yamlScalar(in); got != want {
			t.Errorf("yamlScalar(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestStarterClusterID(t *testing.T) {
	tests := map[string]string{
		"arn:aws:eks:eu-west-1:123:cluster/prod": "arn-aws-eks-eu-west-1-123-cluster-prod",
		"kind-dev":                               "kind-dev",
		"Staging_1":                              "staging-1",
		"--a--b--":                               "a-b",
		"":                                       "cluster",
		"ünïcode":                                "n-code",
		strings.Repeat("a", 62) + "-b":           strings.Repeat("a", 62),
	}
	for in, want := range tests {
		if got := StarterClusterID(in); got != want {
			t.Errorf("StarterClusterID(%q) = %q, want %q", in, got, want)
		}
	}
}

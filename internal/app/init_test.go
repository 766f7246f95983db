package app

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/driftwatch/driftwatch/config"
)

// initKubeconfig writes a kubeconfig with these contexts and returns its
// path.
func initKubeconfig(t *testing.T, contexts ...string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	for _, c := range contexts {
		kc.Clusters[c] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443"}
		kc.AuthInfos[c] = &clientcmdapi.AuthInfo{Token: "t"}
		kc.Contexts[c] = &clientcmdapi.Context{Cluster: c, AuthInfo: c}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// exampleSources copies the example manifests of config/examples/sources
// into dir/name.
func exampleSources(t *testing.T, example, dir string) {
	t.Helper()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "config", "examples", "sources", example))); err != nil {
		t.Fatal(err)
	}
}

// TestInitFrom: init --from renders the folder once and reports its
// objects by kind, writes the source's path relative to the output
// file, and the written config loads; what it cannot guess or use it
// says; a folder that does not render fails naming it, and --namespace
// needs --from and a DNS label.
func TestInitFrom(t *testing.T) {
	kubeconfig := initKubeconfig(t, "kind-dev", "prod-eu", "minikube")
	work := t.TempDir()
	exampleSources(t, "kustomize", filepath.Join(work, "deploy"))
	if err := os.Rename(filepath.Join(work, "deploy", "overlays", "production"), filepath.Join(work, "deploy", "overlays", "prod")); err != nil {
		t.Fatal(err)
	}
	exampleSources(t, "platform", filepath.Join(work, "platform"))
	if err := os.Mkdir(filepath.Join(work, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	run := func(t *testing.T, o InitOptions) (string, string, error) {
		t.Helper()
		var out, errOut bytes.Buffer
		o.Kubeconfig = kubeconfig
		err := Init(t.Context(), o, Env{Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errOut})
		return out.String(), errOut.String(), err
	}

	t.Run("overlays, written to a file", func(t *testing.T) {
		if err := os.MkdirAll("conf", 0o755); err != nil {
			t.Fatal(err)
		}
		_, errOut, err := run(t, InitOptions{From: "./deploy", OutputFile: "conf/driftwatch.yaml", Force: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{
			"driftwatch: deploy/overlays/dev (kustomize overlays): 7 objects: 2 Service, 1 ConfigMap, 1 CronJob, 1 Deployment, 1 HorizontalPodAutoscaler, 1 StatefulSet\n",
			"deploy/overlays/prod (kustomize overlays): 7 objects",
			"deploy/overlays/staging (kustomize overlays): 7 objects",
			"context minikube: no overlay guessed from the name: set the cluster's env label to one of dev, prod, staging",
			"starter config written to conf/driftwatch.yaml",
		} {
			if !strings.Contains(errOut, w) {
				t.Errorf("stderr lacks %q:\n%s", w, errOut)
			}
		}
		written, err := os.ReadFile("conf/driftwatch.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if want := `kustomize: "../deploy/overlays/${cluster.labels.env}"`; !strings.Contains(string(written), want) {
			t.Errorf("the config lacks %s:\n%s", want, written)
		}
		t.Chdir(t.TempDir())
		cfg, err := config.Load(filepath.Join(work, "conf", "driftwatch.yaml"), config.LoadOptions{Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatalf("the written config does not load: %v\n%s", err, written)
		}
		labels := map[string]string{}
		for _, c := range cfg.Clusters {
			labels[c.ID] = c.Labels["env"]
		}
		if want := map[string]string{"kind-dev": "dev", "prod-eu": "prod", "minikube": ""}; !maps.Equal(labels, want) {
			t.Errorf("env labels %v, want %v", labels, want)
		}
		if len(cfg.Sources) != 1 || cfg.Sources[0].ID != "deploy" || len(config.Compile(cfg)) != 14 {
			t.Errorf("sources %+v, want deploy on two clusters", cfg.Sources)
		}
	})
	t.Run("plain files, printed", func(t *testing.T) {
		out, errOut, err := run(t, InitOptions{From: "platform", Contexts: []string{"kind-dev"}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "    path: platform\n") || !strings.Contains(out, "# namespace: default") {
			t.Errorf("starter:\n%s", out)
		}
		if want := "platform: 2 namespaced objects set no namespace: they go to default (pass --namespace)"; !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
		out, _, err = run(t, InitOptions{From: "platform", Contexts: []string{"kind-dev"}, Namespace: "backups"})
		if err != nil || !strings.Contains(out, "    namespace: backups ") {
			t.Errorf("--namespace backups: %v\n%s", err, out)
		}
	})
	t.Run("namespace left out", func(t *testing.T) {
		out, errOut, err := run(t, InitOptions{From: "deploy/overlays/dev", Namespace: "web"})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, "namespace: web") || !strings.Contains(errOut, "--namespace web left out: every namespaced object of deploy/overlays/dev sets its namespace") {
			t.Errorf("stdout:\n%s\nstderr:\n%s", out, errOut)
		}
	})
	t.Run("errors", func(t *testing.T) {
		tests := []struct {
			name  string
			o     InitOptions
			usage bool
			want  string
		}{
			{"empty folder", InitOptions{From: "empty"}, false, "init: --from empty: empty folder"},
			{"missing folder", InitOptions{From: "nope"}, false, "init: --from nope: no such file or directory"},
			{"namespace alone", InitOptions{Namespace: "web"}, true, "init: --namespace web: it is the namespace of the --from manifests: pass --from too"},
			{"namespace not a label", InitOptions{From: "platform", Namespace: "Web_1"}, true, `init: --namespace "Web_1": `},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				out, _, err := run(t, tt.o)
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %v, want %q", err, tt.want)
				}
				var exit *ExitError
				if isUsage := errors.As(err, &exit) && exit.Code == 2; isUsage != tt.usage {
					t.Errorf("usage error: %v, want %v", isUsage, tt.usage)
				}
				if out != "" {
					t.Errorf("printed a config:\n%s", out)
				}
			})
		}
	})
}

// TestInitStarterPath: the source's path is relative to the output
// file's folder, as given when printed, and absolute when given so.
func TestInitStarterPath(t *testing.T) {
	t.Chdir(t.TempDir())
	tests := []struct{ from, output, want string }{
		{"./deploy", "", "deploy"},
		{"./deploy", "-", "deploy"},
		{"deploy", "driftwatch.yaml", "deploy"},
		{"deploy", "conf/driftwatch.yaml", "../deploy"},
		{"conf/deploy/", "conf/driftwatch.yaml", "deploy"},
		{"/srv/deploy", "conf/driftwatch.yaml", "/srv/deploy"},
	}
	for _, tt := range tests {
		got, err := starterPath(tt.from, tt.output)
		if err != nil || got != filepath.FromSlash(tt.want) {
			t.Errorf("starterPath(%q, %q) = %q, %v; want %q", tt.from, tt.output, got, err, tt.want)
		}
	}
}

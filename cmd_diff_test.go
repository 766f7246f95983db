package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// TestDiffExitCodes runs `driftwatch diff` on a real control plane: 0 in
// sync, 1 with a drift (the unified diff names the NodeID and the field
// manager that changed it, also in JSON), 2 for a bad config or filter, 3
// with a cluster unreachable, 4 with a cluster that refuses the
// credentials (a wrong token: 401).
func TestDiffExitCodes(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	ns := "diffcmd"
	path := e2eConfig(t, set, ns, "", "api", "worker")
	cfg, err := config.Load(path, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Create every object as the hub does: a server-side apply by the
	// driftwatch field manager.
	for _, cc := range app.ClusterConfigs(cfg, nil) {
		m, release, err := clusters.Connect(t.Context(), cc, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range config.Compile(cfg) {
			if _, err := m.Repair(t.Context(), s, hub.State{Fresh: true}, hub.Drift{Class: hub.DriftMissing}); err != nil {
				t.Fatalf("apply %s: %v", s.ID, err)
			}
		}
		release()
	}
	diff := func(t *testing.T, wantCode int, args ...string) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		err := run(t.Context(), append([]string{"diff"}, args...), func(string) string { return "" }, &out, &errOut)
		if code := exitCode(err, &errOut); code != wantCode {
			t.Fatalf("diff %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, wantCode, &out, &errOut)
		}
		return out.String(), errOut.String()
	}

	out, _ := diff(t, 0, "-f", path)
	if !strings.Contains(out, "3 objects") {
		t.Errorf("in sync: %s", out)
	}

	c := kubernetes.NewForConfigOrDie(set.Clusters[0].RESTConfig())
	if _, err := c.AppsV1().Deployments(ns).Patch(t.Context(), "web", types.MergePatchType, []byte(`{"spec":{"replicas":7}}`),
		metav1.PatchOptions{FieldManager: "kubectl-scale"}); err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("c1:%s/web:deployment", ns)
	out, _ = diff(t, 1, "-f", path)
	for _, want := range []string{"--- desired " + id, "+++ live " + id, "kubectl-scale", "replicas: 7"} {
		if !strings.Contains(out, want) {
			t.Errorf("drift: the output lacks %q:\n%s", want, out)
		}
	}
	out, _ = diff(t, 1, "-f", path, "-o", "json", "--application", "web")
	var rep struct {
		ExitCode int `json:"exitCode"`
		Objects  []struct {
			NodeID string `json:"nodeId"`
			Class  string `json:"class"`
		} `json:"objects"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	drifted := 0
	for _, o := range rep.Objects {
		if o.Class != string(hub.DriftNone) {
			drifted++
			if o.NodeID != id {
				t.Errorf("json: %s drifted", o.NodeID)
			}
		}
	}
	if rep.ExitCode != 1 || drifted != 1 {
		t.Errorf("json: exit code %d, %d drifted:\n%s", rep.ExitCode, drifted, out)
	}

	// --context keeps the clusters reached through it (here the
	// kubeconfig's current context, the config naming none); -o yaml is
	// the JSON report as YAML; -f - reads the config from stdin.
	lkc, err := clientcmd.LoadFromFile(set.Clusters[0].Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	out, _ = diff(t, 1, "-f", path, "--context", lkc.CurrentContext, "-o", "yaml")
	if !strings.Contains(out, "exitCode: 1\n") || !strings.Contains(out, "nodeId: "+id+"\n") {
		t.Errorf("--context, -o yaml:\n%s", out)
	}
	if _, errOut := diff(t, 2, "-f", path, "--context", "nope"); !strings.Contains(errOut, `--context "nope": no cluster of the config is reached through it (contexts: `+lkc.CurrentContext+")") {
		t.Errorf("unknown context: %s", errOut)
	}
	cfgData, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var stdinOut bytes.Buffer
	err = execute(t.Context(), []string{"diff", "-f", "-"}, &cliEnv{getenv: func(string) string { return "" }, stdin: bytes.NewReader(cfgData), stdout: &stdinOut, stderr: io.Discard})
	if code := exitCode(err, io.Discard); code != 1 || !strings.Contains(stdinOut.String(), "--- desired "+id) {
		t.Errorf("-f -: exit %d:\n%s", code, &stdinOut)
	}

	_, errOut := diff(t, 2, "-f", path, "--cluster", "nope")
	if !strings.Contains(errOut, `unknown cluster "nope"`) {
		t.Errorf("unknown cluster: %s", errOut)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("clusters: []\napplications: nope\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	diff(t, 2, "-f", bad)
	diff(t, 2, "-f", filepath.Join(t.TempDir(), "none.yaml"))

	// A second cluster whose apiserver does not answer.
	kc, err := clientcmd.LoadFromFile(set.Clusters[0].Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range kc.Clusters {
		cl.Server = "https://127.0.0.1:1"
	}
	deadKC := filepath.Join(t.TempDir(), "dead.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, deadKC); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	withDead := strings.Replace(string(src), "applications:\n",
		"  - id: dead\n    kubeconfig: "+deadKC+"\n    labels: {env: prod}\napplications:\n", 1)
	deadPath := filepath.Join(t.TempDir(), "dead.yaml")
	if err := os.WriteFile(deadPath, []byte(withDead), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ = diff(t, 3, "-f", deadPath)
	if !strings.Contains(out, "unreachable dead") {
		t.Errorf("unreachable: %s", out)
	}

	// A cluster whose token the apiserver does not know: 4, also when
	// another one is unreachable.
	kc, err = clientcmd.LoadFromFile(set.Clusters[0].Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range kc.AuthInfos {
		u.Token = "expired-" + u.Token
	}
	staleKC := filepath.Join(t.TempDir(), "stale.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, staleKC); err != nil {
		t.Fatal(err)
	}
	stale := "  - id: stale\n    kubeconfig: " + staleKC + "\n    labels: {env: prod}\napplications:\n"
	for _, tc := range []struct{ name, src string }{{"stale", string(src)}, {"stale-and-dead", withDead}} {
		p := filepath.Join(t.TempDir(), tc.name+".yaml")
		if err := os.WriteFile(p, []byte(strings.Replace(tc.src, "applications:\n", stale, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		out, _ = diff(t, 4, "-f", p)
		for _, want := range []string{`unauthorized stale: cluster "stale": unauthorized`, "credentials", "1 cluster unauthorized"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: the output lacks %q:\n%s", tc.name, want, out)
			}
		}
		if strings.Contains(out, "unreachable stale") {
			t.Errorf("%s: the cluster with the wrong token is called unreachable:\n%s", tc.name, out)
		}
		out, _ = diff(t, 4, "-f", p, "-o", "json")
		var rep struct {
			ExitCode     int `json:"exitCode"`
			Unauthorized []struct {
				Cluster string `json:"cluster"`
			} `json:"unauthorized"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("json: %v\n%s", err, out)
		}
		if rep.ExitCode != 4 || len(rep.Unauthorized) != 1 || rep.Unauthorized[0].Cluster != "stale" {
			t.Errorf("%s: json: exit code %d, unauthorized %v; want 4 and [stale]", tc.name, rep.ExitCode, rep.Unauthorized)
		}
	}
}

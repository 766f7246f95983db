package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const exampleConfig = "config/examples/multi-cluster.yaml"

// testEnv is a hermetic environment: HOME decides where ~ points.
func testEnv(k string) string {
	return map[string]string{"HOME": "/home/ops"}[k]
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	badSrc := `clusters:
  - id: prod-eu
    kubeconfig: ~/.kube/prod.yaml
applications:
  - id: inventory
    namespace: casehub
    clusters: [prod-us]
    image: nginx
    replicas: three
`
	if err := os.WriteFile(bad, []byte(badSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(empty, []byte("hub:\n  id: lonely\nclusters: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string // substrings of stdout
		wantErr  []string // substrings of stderr
		emptyOut bool
	}{
		{
			name:     "plan",
			args:     []string{"check", "-f", exampleConfig, "--skip-kubeconfigs"},
			wantCode: 0,
			wantOut: []string{
				"hub example-hub",
				"managedBy:           driftwatch",
				"resync:              5m0s",
				"pruneLimit:          50\n",
				"stateFile:           /home/ops/.local/state/driftwatch/example-hub.db (default)\n",
				"cluster prod-eu\n",
				"kubeconfig: /home/ops/.kube/prod-eu.yaml",
				"context:    prod-eu",
				"context:    (the kubeconfig's current context)",
				"namespaces: casehub, web (from the applications)",
				"labels:     env=prod, region=eu",
				"qps/burst:  fixed 20/40",
				"prod-eu:casehub/billing:deployment",
				"prod-us:casehub/canary:deployment     canary     warn",
				"cluster staging\n",
				"staging:web/web:service",
				"\nclusterAPI source mgmt\n" +
					"  kubeconfig:   /home/ops/.kube/mgmt.yaml\n" +
					"  context:      mgmt-admin\n" +
					"  namespaces:   fleet\n" +
					"  selector:     tier=gold\n" +
					"  labels:       env=prod, source=capi\n" +
					"  id template:  {{.Namespace}}-{{.Name}}\n" +
					"  policy:       repair\n" +
					"  applications: inventory, fleet-agent (on the source's labels alone)\n" +
					"  clusters:     discovered at runtime\n",
				"3 clusters, 1 clusterAPI source, 5 applications, 13 objects",
			},
		},
		{
			name:     "plan explicit",
			args:     []string{"check", "-o", "plan", "-f", exampleConfig, "--skip-kubeconfigs"},
			wantCode: 0,
			wantOut:  []string{"cluster prod-us\n"},
		},
		{
			name:     "yaml",
			args:     []string{"check", "-f", exampleConfig, "-o", "yaml", "--skip-kubeconfigs"},
			wantCode: 0,
			wantOut:  []string{"# prod-eu:casehub/billing:configmap\napiVersion: v1\n", "kind: Deployment", "driftwatch.io/node-id: staging:web/web:service"},
		},
		{
			name:     "yaml shows secretEnv as secretKeyRef",
			args:     []string{"check", "-f", exampleConfig, "-o", "yaml", "--skip-kubeconfigs"},
			wantCode: 0,
			wantOut: []string{"        - name: DB_PASSWORD\n" +
				"          valueFrom:\n" +
				"            secretKeyRef:\n" +
				"              key: password\n" +
				"              name: billing-db\n" +
				"        - name: DB_HOST\n"},
		},
		{
			name:     "json",
			args:     []string{"check", "-f", exampleConfig, "-o", "json", "--skip-kubeconfigs"},
			wantCode: 0,
			wantOut:  []string{"{\n  \"apiVersion\": \"v1\",\n  \"items\": [\n", "\"kind\": \"List\"", "\"driftwatch.io/node-id\": \"staging:web/web:service\""},
		},
		{
			name:     "invalid config",
			args:     []string{"check", "-f", bad},
			wantCode: 1,
			emptyOut: true,
			wantErr: []string{
				bad + `:7:16: applications[0].clusters[0]: unknown cluster "prod-us" (did you mean "prod-eu"?)`,
				bad + `:9:15: applications[0].replicas: want an integer, got "three"`,
			},
		},
		{
			name:     "no clusters",
			args:     []string{"check", "-f", empty},
			wantCode: 1,
			emptyOut: true,
			wantErr:  []string{empty + ":3:11: clusters: at least one cluster or clusterAPI source is required"},
		},
		{
			name:     "missing file",
			args:     []string{"check", "-f", filepath.Join(dir, "nope.yaml")},
			wantCode: 1,
			emptyOut: true,
			wantErr:  []string{"driftwatch: read config: open ", "no such file"},
		},
		{name: "no file flag", args: []string{"check"}, wantCode: 2, emptyOut: true, wantErr: []string{"driftwatch: check: -f FILE is required"}},
		{name: "bad flag", args: []string{"check", "-x"}, wantCode: 2, emptyOut: true, wantErr: []string{"driftwatch: check: unknown shorthand flag: 'x' in -x (see driftwatch check --help)\n"}},
		{name: "bad output", args: []string{"check", "-f", exampleConfig, "-o", "xml"}, wantCode: 2, emptyOut: true, wantErr: []string{`driftwatch: check: -o "xml": want text, json or yaml`}},
		{name: "stray argument", args: []string{"check", exampleConfig}, wantCode: 2, emptyOut: true, wantErr: []string{"unexpected argument"}},
		{name: "help", args: []string{"check", "-h"}, wantCode: 0, wantOut: []string{"Usage:\n  driftwatch check -f FILE [-o text|json|yaml]"}},
		{name: "listed in usage", args: []string{"help"}, wantCode: 0, wantOut: []string{"check       Validate a config and print its plan", "driftwatch check -f"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), tt.args, testEnv, &stdout, &stderr)
			code := exitCode(err, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, &stdout, &stderr)
			}
			for _, s := range tt.wantOut {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, &stdout)
				}
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr lacks %q:\n%s", s, &stderr)
				}
			}
			if tt.emptyOut && stdout.Len() > 0 {
				t.Errorf("stdout = %q, want empty", &stdout)
			}
		})
	}
}

// TestCheckClusterAPIOnly checks the plan of a config whose clusters are all
// discovered at runtime.
func TestCheckClusterAPIOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	kubeconfig := filepath.Join(dir, "mgmt.yaml")
	src := `clusterAPI:
  - name: mgmt
    kubeconfig: mgmt.yaml
  - name: dr
    kubeconfig: ~/.kube/dr.yaml
    namespaces: [fleet-b, fleet-a]
    labels: {site: dr}
    idTemplate: "dr-{{.Name}}"
    policy: warn
applications:
  - id: agent
    namespace: fleet-system
    selector: site=dr
    image: nginx
  - id: later
    namespace: ns
    selector: tier=gold
    image: nginx
`
	for name, data := range map[string]string{path: src, kubeconfig: "apiVersion: v1\nkind: Config\n"} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"check", "-f", path, "--skip-kubeconfigs"}, testEnv, &stdout, &stderr)
	if code := exitCode(err, &stderr); code != 0 {
		t.Fatalf("exit code = %d: %s", code, &stderr)
	}
	_, plan, _ := strings.Cut(stdout.String(), "\n\n") // after the hub settings
	want := `clusterAPI source mgmt
  kubeconfig:   ` + kubeconfig + `
  context:      (the kubeconfig's current context)
  namespaces:   (all)
  selector:     (every Cluster object)
  labels:       (none)
  id template:  {{.Namespace}}-{{.Name}}
  policy:       repair
  applications: (none on the source's labels alone)
  clusters:     discovered at runtime

clusterAPI source dr
  kubeconfig:   /home/ops/.kube/dr.yaml
  context:      (the kubeconfig's current context)
  namespaces:   fleet-a, fleet-b
  selector:     (every Cluster object)
  labels:       site=dr
  id template:  dr-{{.Name}}
  policy:       warn
  applications: agent (on the source's labels alone)
  clusters:     discovered at runtime

0 clusters, 2 clusterAPI sources, 2 applications, 0 objects
`
	if plan != want {
		t.Errorf("plan:\n%s\nwant:\n%s", plan, want)
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr = %q, want nothing", &stderr)
	}
}

// TestCheckInvalidListsEveryError checks that every config error gets a line
// on stderr and nothing else is printed for them.
func TestCheckInvalidListsEveryError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	src := "hub:\n  resync: soon\n  policy: fix\nclusters:\n  - kubeconfig: k\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"check", "-f", path}, testEnv, &stdout, &stderr)
	if code := exitCode(err, &stderr); code != 1 {
		t.Fatalf("exit code = %d, want 1", code)
	}
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	want := []string{
		path + ":2:11: hub.resync: invalid duration \"soon\": want a Go duration such as 90s or 5m",
		path + ":3:11: hub.policy: invalid policy \"fix\": want repair or warn",
		path + ":5:5: clusters[0].id: required field is missing",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("stderr lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// TestCheckYAMLObjects checks that -o yaml prints every compiled object as
// its own document, sorted by NodeID.
func TestCheckYAMLObjects(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"check", "-f", exampleConfig, "-o", "yaml", "--skip-kubeconfigs"}, testEnv, &stdout, &stderr)
	if code := exitCode(err, &stderr); code != 0 {
		t.Fatalf("exit code = %d: %s", code, &stderr)
	}
	docs := strings.Split(stdout.String(), "\n---\n")
	if len(docs) != 13 {
		t.Fatalf("got %d documents, want 13", len(docs))
	}
	var ids []string
	for _, d := range docs {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
				Labels      map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(d), &obj); err != nil {
			t.Fatalf("document does not parse: %v\n%s", err, d)
		}
		id := obj.Metadata.Annotations["driftwatch.io/node-id"]
		if !strings.HasPrefix(d, "# "+id+"\n") {
			t.Errorf("document for %s does not start with its NodeID comment", id)
		}
		if obj.Metadata.Labels["app.kubernetes.io/managed-by"] != "driftwatch" || obj.Kind == "" {
			t.Errorf("document %s lacks kind or the managed-by label", id)
		}
		ids = append(ids, id)
	}
	if !slices.IsSorted(ids) {
		t.Errorf("documents not sorted by NodeID: %v", ids)
	}
}

// TestCheckWarnsManagesNothing: a valid config that would manage nothing on
// a cluster passes (exit 0) with a loud warning on stderr for each such
// cluster, in both output formats.
func TestCheckWarnsManagesNothing(t *testing.T) {
	dir := t.TempDir()
	noApps := filepath.Join(dir, "no-apps.yaml")
	unused := filepath.Join(dir, "unused.yaml")
	fine := filepath.Join(dir, "fine.yaml")
	files := map[string]string{
		noApps: "clusters:\n  - id: prod-eu\n    kubeconfig: /dev/null\napplications: []\n",
		unused: `clusters:
  - id: prod-eu
    kubeconfig: /dev/null
    labels: {env: prod}
  - id: staging
    kubeconfig: /dev/null
    labels: {env: staging}
applications:
  - id: web
    namespace: web
    selector: env=prod
    image: nginx
`,
		fine: "clusters:\n  - id: prod-eu\n    kubeconfig: /dev/null\napplications:\n  - {id: web, namespace: web, clusters: [prod-eu], image: nginx}\n",
	}
	for name, src := range files {
		if err := os.WriteFile(name, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		args []string
		want []string // stderr lines
	}{
		{"no applications", []string{"check", "-f", noApps}, []string{
			"driftwatch: WARNING: no applications: this config manages nothing on any cluster; " +
				"a running hub given this file would prune every object it manages there (refused without --allow-prune)",
		}},
		{"no applications yaml", []string{"check", "-f", noApps, "-o", "yaml"}, []string{
			"driftwatch: WARNING: no applications: this config manages nothing on any cluster; " +
				"a running hub given this file would prune every object it manages there (refused without --allow-prune)",
		}},
		{"cluster not targeted", []string{"check", "-f", unused}, []string{
			`driftwatch: WARNING: cluster "staging": no application targets it: this config manages nothing there; ` +
				"a running hub given this file would prune every object it manages there (refused without --allow-prune)",
		}},
		{"every cluster targeted", []string{"check", "-f", fine}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), append(tt.args, "--skip-kubeconfigs"), testEnv, &stdout, &stderr)
			if code := exitCode(err, &stderr); code != 0 {
				t.Fatalf("exit code = %d, want 0: %s", code, &stderr)
			}
			var got []string
			if s := strings.TrimSuffix(stderr.String(), "\n"); s != "" {
				got = strings.Split(s, "\n")
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("stderr lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if !slices.Contains(tt.args, "yaml") && !strings.Contains(stdout.String(), "cluster prod-eu\n") {
				t.Errorf("the plan was not printed:\n%s", &stdout)
			}
		})
	}
}

// TestCheckStateFile: the plan shows the state file the hub would use: the
// configured one, the default under XDG_STATE_HOME or HOME, none; with no
// default folder check warns (and still exits 0).
func TestCheckStateFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, hubSection string) string {
		p := filepath.Join(dir, name)
		src := hubSection + "clusters:\n  - id: a\n    kubeconfig: /dev/null\napplications:\n  - {id: web, namespace: web, clusters: [a], image: nginx}\n"
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := write("plain.yaml", "hub: {id: edge}\n")
	tests := []struct {
		name    string
		path    string
		env     map[string]string
		want    string
		wantErr string
	}{
		{"default under XDG_STATE_HOME", plain, map[string]string{"XDG_STATE_HOME": "/var/state", "HOME": "/home/ops"},
			"stateFile:           /var/state/driftwatch/edge.db (default)\n", ""},
		{"default under HOME", plain, map[string]string{"HOME": "/home/ops"},
			"stateFile:           /home/ops/.local/state/driftwatch/edge.db (default)\n", ""},
		{"configured", write("set.yaml", "hub: {id: edge, stateFile: state/edge.db, pruneLimit: 7}\n"), nil,
			"stateFile:           " + filepath.Join(dir, "state/edge.db") + "\n", ""},
		{"none", write("none.yaml", "hub: {stateFile: none}\n"), nil,
			"stateFile:           none (pauses, holds and what was applied are forgotten at exit)\n", ""},
		{"no default folder", plain, nil, "stateFile:           (no default path: set hub.stateFile)\n",
			"driftwatch: warning: hub.stateFile: no default state file (neither XDG_STATE_HOME nor HOME is an absolute folder)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), []string{"check", "-f", tt.path, "--skip-kubeconfigs"}, func(k string) string { return tt.env[k] }, &stdout, &stderr)
			if code := exitCode(err, &stderr); code != 0 {
				t.Fatalf("exit code = %d: %s", code, &stderr)
			}
			if !strings.Contains(stdout.String(), tt.want) {
				t.Errorf("plan lacks %q:\n%s", tt.want, &stdout)
			}
			if !strings.Contains(stderr.String(), tt.wantErr) || (tt.wantErr == "") != (stderr.Len() == 0) {
				t.Errorf("stderr = %q, want %q", &stderr, tt.wantErr)
			}
		})
	}
}

// TestCheckKubeconfigForms: the plan shows how each cluster and source is
// reached: the default kubeconfig with its context, or in-cluster.
func TestCheckKubeconfigForms(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	src := `clusters:
  - id: prod-eu
    context: prod-eu
  - id: self
    inCluster: true
clusterAPI:
  - name: mgmt
    context: mgmt-admin
  - name: local
    inCluster: true
applications:
  - {id: web, namespace: web, clusters: [prod-eu, self], image: nginx}
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"check", "-f", path, "--skip-kubeconfigs"}, testEnv, &stdout, &stderr)
	if code := exitCode(err, &stderr); code != 0 {
		t.Fatalf("exit code = %d: %s", code, &stderr)
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr = %q, want nothing", &stderr)
	}
	for _, want := range []string{
		"\ncluster prod-eu\n" +
			"  kubeconfig: $KUBECONFIG/~/.kube/config\n" +
			"  context:    prod-eu\n" +
			"  namespaces: web (from the applications)\n",
		"\ncluster self\n" +
			"  kubeconfig: in-cluster (the service account of the hub's Pod)\n" +
			"  namespaces: web (from the applications)\n",
		"\nclusterAPI source mgmt\n" +
			"  kubeconfig:   $KUBECONFIG/~/.kube/config\n" +
			"  context:      mgmt-admin\n" +
			"  namespaces:   (all)\n",
		"\nclusterAPI source local\n" +
			"  kubeconfig:   in-cluster (the service account of the hub's Pod)\n" +
			"  namespaces:   (all)\n",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("plan lacks\n%s\nplan:\n%s", want, &stdout)
		}
	}
}

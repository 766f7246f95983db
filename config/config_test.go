package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/driftwatch/driftwatch/hub"
)

const examplePath = "examples/multi-cluster.yaml"

// mustParse parses a valid config.
func mustParse(t *testing.T, src string) *Config {
	t.Helper()
	cfg, err := Parse("/srv/driftwatch/config.yaml", []byte(src), testOptions())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return cfg
}

func loadExample(t *testing.T) *Config {
	t.Helper()
	cfg, err := Load(examplePath, testOptions())
	if err != nil {
		t.Fatalf("Load(%s): %v", examplePath, err)
	}
	return cfg
}

func TestExampleLoads(t *testing.T) {
	cfg := loadExample(t)
	if got := len(cfg.Clusters); got != 3 {
		t.Errorf("clusters = %d, want 3", got)
	}
	if cfg.Path != examplePath {
		t.Errorf("Path = %q, want %q", cfg.Path, examplePath)
	}
	ids := func(cls []Cluster) []string {
		var out []string
		for _, c := range cls {
			out = append(out, c.ID)
		}
		return out
	}
	if got, want := ids(cfg.Clusters), []string{"prod-eu", "prod-us", "staging"}; !slices.Equal(got, want) {
		t.Errorf("cluster ids = %v, want %v", got, want)
	}
	for _, cl := range cfg.Clusters {
		if want := filepath.Join("/home/ops/.kube", cl.ID+".yaml"); cl.Kubeconfig != want {
			t.Errorf("cluster %s kubeconfig = %q, want %q", cl.ID, cl.Kubeconfig, want)
		}
	}
	wantSources := []ClusterAPISource{{
		Name: "mgmt", Kubeconfig: "/home/ops/.kube/mgmt.yaml", Context: "mgmt-admin", Namespaces: []string{"fleet"},
		Selector: "tier=gold", Labels: map[string]string{"env": "prod", "source": "capi"},
		IDTemplate: "{{.Namespace}}-{{.Name}}", Policy: hub.PolicyRepair,
	}}
	if !reflect.DeepEqual(cfg.ClusterAPI, wantSources) {
		t.Errorf("ClusterAPI = %+v, want %+v", cfg.ClusterAPI, wantSources)
	}
}

// TestClusterAPIOnly checks that a config may have clusterAPI sources and no
// clusters, and the sources' defaults.
func TestClusterAPIOnly(t *testing.T) {
	cfg := mustParse(t, `hub:
  policy: warn
clusterAPI:
  - name: mgmt
    kubeconfig: ${KUBE_DIR}/mgmt.yaml
  - name: other
    kubeconfig: kubeconfigs/other.yaml
    context: admin
    namespaces: [fleet-b, fleet-a]
    selector: "tier in (gold, silver)"
    labels: {env: prod}
    idTemplate: "capi-{{.Name}}"
    policy: repair
  - name: all-namespaces
    kubeconfig: /k
    namespaces: []
applications:
  - id: x
    namespace: ns
    selector: env=prod
    image: nginx
`)
	if len(cfg.Clusters) != 0 {
		t.Errorf("Clusters = %+v, want none", cfg.Clusters)
	}
	want := []ClusterAPISource{
		{Name: "mgmt", Kubeconfig: "/etc/kube/mgmt.yaml", IDTemplate: DefaultIDTemplate, Policy: hub.PolicyWarn},
		{
			Name: "other", Kubeconfig: "/srv/driftwatch/kubeconfigs/other.yaml", Context: "admin",
			Namespaces: []string{"fleet-a", "fleet-b"}, Selector: "tier in (gold, silver)",
			Labels: map[string]string{"env": "prod"}, IDTemplate: "capi-{{.Name}}", Policy: hub.PolicyRepair,
		},
		{Name: "all-namespaces", Kubeconfig: "/k", IDTemplate: DefaultIDTemplate, Policy: hub.PolicyWarn},
	}
	if !reflect.DeepEqual(cfg.ClusterAPI, want) {
		t.Errorf("ClusterAPI =\n%+v\nwant\n%+v", cfg.ClusterAPI, want)
	}
	if specs := Compile(cfg); len(specs) != 0 {
		t.Errorf("Compile = %d specs, want none (no cluster in the file)", len(specs))
	}
	info := cfg.ClusterAPI[1].Info("capi-a", nil)
	if got := mustCompileCluster(t, cfg, info); len(got) != 1 || got[0].ID.String() != "capi-a:ns/x:deployment" || got[0].Policy != hub.PolicyRepair {
		t.Errorf("CompileCluster(discovered) = %+v, want the Deployment of x with the source's policy", got)
	}
}

// TestClusterAPISelectors checks that with clusterAPI sources a selector
// need not match a cluster of the file (discovered clusters may match it),
// while without them it must, and that listed clusters must always be in
// the file.
func TestClusterAPISelectors(t *testing.T) {
	const clusters = `clusters:
  - id: a
    kubeconfig: /k
    labels: {env: prod}
`
	const source = `clusterAPI:
  - name: mgmt
    kubeconfig: /k
    labels: {source: capi}
`
	const apps = `applications:
  - id: x
    namespace: ns
    selector: %s
    image: nginx
`
	tests := []struct {
		name      string
		sources   bool
		selector  string
		wantError string // "" when the config is valid
	}{
		{"static match", false, "env=prod", ""},
		{"no match without sources", false, "env=staging", `applications[0].selector: selector "env=staging" matches no cluster`},
		{"no match with sources", true, "env=staging", ""},
		{"source labels match", true, "source=capi", ""},
		{"matches neither static nor source labels", true, "team=core", ""},
		{"invalid selector with sources", true, `"env in (prod"`, `applications[0].selector: invalid selector`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := clusters
			if tt.sources {
				src += source
			}
			src += fmt.Sprintf(apps, tt.selector)
			_, err := Parse("config.yaml", []byte(src), testOptions())
			switch {
			case tt.wantError == "" && err != nil:
				t.Errorf("Parse: %v", err)
			case tt.wantError != "" && (err == nil || !strings.Contains(err.Error(), tt.wantError)):
				t.Errorf("Parse error = %v, want one with %q", err, tt.wantError)
			}
		})
	}
}

func TestClusterAPISourceInfo(t *testing.T) {
	src := ClusterAPISource{Name: "mgmt", Labels: map[string]string{"env": "prod", "source": "capi"}, Policy: hub.PolicyWarn}
	clusterLabels := map[string]string{"env": "dev", "tier": "gold"}
	got := src.Info("fleet-a", clusterLabels)
	want := ClusterInfo{ID: "fleet-a", Labels: map[string]string{"env": "prod", "source": "capi", "tier": "gold"}, Policy: hub.PolicyWarn}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Info = %+v, want %+v (the source's labels win)", got, want)
	}
	if want := map[string]string{"env": "dev", "tier": "gold"}; !reflect.DeepEqual(clusterLabels, want) {
		t.Errorf("Info changed the cluster's labels to %v", clusterLabels)
	}
	if want := map[string]string{"env": "prod", "source": "capi"}; !reflect.DeepEqual(src.Labels, want) {
		t.Errorf("Info changed the source's labels to %v", src.Labels)
	}
	got.Labels["x"] = "y"
	if _, ok := src.Labels["x"]; ok {
		t.Error("Info's labels share the source's map")
	}
	if got := (ClusterAPISource{}).Info("b", nil); !reflect.DeepEqual(got, ClusterInfo{ID: "b"}) {
		t.Errorf("Info without labels = %+v, want only the id", got)
	}
	if got := (ClusterAPISource{}).Info("c", map[string]string{"k": "v"}); !reflect.DeepEqual(got.Labels, map[string]string{"k": "v"}) {
		t.Errorf("Info labels = %v, want the cluster's", got.Labels)
	}
}

func TestDefaults(t *testing.T) {
	cfg := mustParse(t, `clusters:
  - id: a
    kubeconfig: /k
  - id: b
    kubeconfig: /k
    policy: warn
    qps: 7.5
    burst: 9
applications:
  - id: x
    namespace: ns
    clusters: [a]
    image: nginx
`)
	// QPS and Burst unset (0): the adaptive rate limit.
	wantHub := Hub{
		ID: "driftwatch", ManagedBy: "driftwatch", Resync: 5 * time.Minute, Policy: hub.PolicyRepair,
		Workers: 0, DecommissionTimeout: 2 * time.Minute, PruneLimit: 50,
	}
	if !reflect.DeepEqual(cfg.Hub, wantHub) {
		t.Errorf("Hub = %+v, want %+v", cfg.Hub, wantHub)
	}
	wantClusters := []Cluster{
		{ID: "a", Kubeconfig: "/k", Policy: hub.PolicyRepair},
		{ID: "b", Kubeconfig: "/k", Policy: hub.PolicyWarn, QPS: 7.5, Burst: 9},
	}
	if !reflect.DeepEqual(cfg.Clusters, wantClusters) {
		t.Errorf("Clusters = %+v, want %+v", cfg.Clusters, wantClusters)
	}
	wantApp := Application{ID: "x", Namespace: "ns", Clusters: []string{"a"}, Image: "nginx", Replicas: 1}
	if !reflect.DeepEqual(cfg.Applications[0], wantApp) {
		t.Errorf("Application = %+v, want %+v", cfg.Applications[0], wantApp)
	}
}

// TestRateLimitInheritance: a cluster takes each of qps and burst from its
// own entry, else from the hub; one left out everywhere stays 0 (unset:
// adaptive when both are, else the clusters package's default).
func TestRateLimitInheritance(t *testing.T) {
	cfg := mustParse(t, `hub:
  qps: 200
clusters:
  - id: a
    kubeconfig: /k
  - id: b
    kubeconfig: /k
    burst: 40
  - id: c
    kubeconfig: /k
    qps: 20
    burst: 30
applications:
  - id: x
    namespace: ns
    clusters: [a]
    image: nginx
`)
	if cfg.Hub.QPS != 200 || cfg.Hub.Burst != 0 {
		t.Errorf("hub qps/burst = %g/%d, want 200/0", cfg.Hub.QPS, cfg.Hub.Burst)
	}
	want := map[string][2]float64{"a": {200, 0}, "b": {200, 40}, "c": {20, 30}}
	for _, cl := range cfg.Clusters {
		if got := [2]float64{float64(cl.QPS), float64(cl.Burst)}; got != want[cl.ID] {
			t.Errorf("cluster %s qps/burst = %v, want %v", cl.ID, got, want[cl.ID])
		}
	}
}

func TestHubSettings(t *testing.T) {
	cfg := mustParse(t, `hub:
  id: my-hub
  managedBy: drift-hub
  resync: 90s
  policy: warn
  qps: 20
  burst: 30
  workers: 8
  decommissionTimeout: 1m30s
  pruneLimit: 200
  stateFile: ~/state/hub.db
clusters:
  - id: a
    kubeconfig: /k
`)
	want := Hub{ID: "my-hub", ManagedBy: "drift-hub", Resync: 90 * time.Second, Policy: hub.PolicyWarn,
		QPS: 20, Burst: 30, Workers: 8, DecommissionTimeout: 90 * time.Second, PruneLimit: 200, StateFile: "/home/ops/state/hub.db"}
	if !reflect.DeepEqual(cfg.Hub, want) {
		t.Errorf("Hub = %+v, want %+v", cfg.Hub, want)
	}
}

func TestKubeconfigExpansion(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"~/.kube/prod.yaml", "/home/ops/.kube/prod.yaml"},
		{"~", "/home/ops"},
		{"${KUBE_DIR}/${CLUSTER}.yaml", "/etc/kube/prod-eu.yaml"},
		{"$KUBE_DIR/x", "/etc/kube/x"},
		{"kubeconfigs/prod.yaml", "/srv/driftwatch/kubeconfigs/prod.yaml"},
		{"../kube/./prod.yaml", "/srv/kube/prod.yaml"},
		{"/abs/path.yaml", "/abs/path.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			cfg := mustParse(t, "clusters:\n  - id: a\n    kubeconfig: \""+tt.in+"\"\n")
			if got := cfg.Clusters[0].Kubeconfig; got != tt.want {
				t.Errorf("Kubeconfig = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStateFile: hub.stateFile is expanded like a kubeconfig path, except
// for the word none, which turns durable state off.
func TestStateFile(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", ""},
		{"none", StateFileNone},
		{"~/.local/state/dw.db", "/home/ops/.local/state/dw.db"},
		{"${KUBE_DIR}/${CLUSTER}.db", "/etc/kube/prod-eu.db"},
		{"state/hub.db", "/srv/driftwatch/state/hub.db"},
		{"/var/lib/driftwatch/hub.db", "/var/lib/driftwatch/hub.db"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			src := "clusters:\n  - id: a\n    kubeconfig: /k\n"
			if tt.in != "" {
				src = "hub:\n  stateFile: \"" + tt.in + "\"\n" + src
			}
			cfg := mustParse(t, src)
			if got := cfg.Hub.StateFile; got != tt.want {
				t.Errorf("StateFile = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), testOptions())
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load error = %v, want fs.ErrNotExist", err)
	}
	var list ErrorList
	if errors.As(err, &list) {
		t.Errorf("a read error is not an ErrorList")
	}
}

func TestLoadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dw.yaml")
	src := "clusters:\n  - id: a\n    kubeconfig: kc.yaml\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(filepath.Dir(path), "kc.yaml"); cfg.Clusters[0].Kubeconfig != want {
		t.Errorf("Kubeconfig = %q, want %q (relative to the config file)", cfg.Clusters[0].Kubeconfig, want)
	}
	if err := os.WriteFile(path, []byte("clusters: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path, LoadOptions{})
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 1 || list[0].File != path || list[0].Line != 1 {
		t.Fatalf("Load error = %#v, want one ErrorList entry in %s at line 1", err, path)
	}
}

func TestScalarsAsStrings(t *testing.T) {
	cfg := mustParse(t, `clusters:
  - id: a
    kubeconfig: /k
    labels: {version: 1.10, enabled: true, n: 3}
applications:
  - id: x
    namespace: ns
    clusters: [a]
    image: nginx
    env: {WORKERS: 4, DEBUG: false, EMPTY: }
    config:
      app.properties: |
        a=1
        b=2
`)
	if got, want := cfg.Clusters[0].Labels, map[string]string{"version": "1.10", "enabled": "true", "n": "3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("labels = %v, want %v", got, want)
	}
	a := cfg.Applications[0]
	if got, want := a.Env, map[string]string{"WORKERS": "4", "DEBUG": "false", "EMPTY": ""}; !reflect.DeepEqual(got, want) {
		t.Errorf("env = %v, want %v", got, want)
	}
	if got, want := a.Config["app.properties"], "a=1\nb=2\n"; got != want {
		t.Errorf("config = %q, want %q", got, want)
	}
}

func TestSecretEnv(t *testing.T) {
	cfg := mustParse(t, `clusters:
  - id: a
    kubeconfig: /k
applications:
  - id: x
    namespace: ns
    clusters: [a]
    image: nginx
    env: {MODE: production}
    secretEnv:
      DB_PASSWORD: db-credentials/password
      API.TOKEN: api.tokens.v2/.token_2-b
  - id: y
    namespace: ns
    clusters: [a]
    image: nginx
    secretEnv: {}
`)
	want := map[string]SecretKeyRef{
		"DB_PASSWORD": {Name: "db-credentials", Key: "password"},
		"API.TOKEN":   {Name: "api.tokens.v2", Key: ".token_2-b"},
	}
	if got := cfg.Applications[0].SecretEnv; !reflect.DeepEqual(got, want) {
		t.Errorf("SecretEnv = %v, want %v", got, want)
	}
	if got, want := cfg.Applications[0].Env, map[string]string{"MODE": "production"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Env = %v, want %v", got, want)
	}
	if got := want["DB_PASSWORD"].String(); got != "db-credentials/password" {
		t.Errorf("String() = %q", got)
	}
	if got := cfg.Applications[1].SecretEnv; len(got) != 0 {
		t.Errorf("empty secretEnv = %v", got)
	}
}

func TestAliasesAndMergeKeys(t *testing.T) {
	cfg := mustParse(t, `clusters:
  - id: a
    kubeconfig: /k
    labels: &prod {env: prod}
  - id: b
    kubeconfig: /k
    labels: *prod
applications:
  - &base
    id: x
    namespace: ns
    selector: env=prod
    image: nginx
    replicas: 2
  - <<: *base
    id: y
    replicas: 5
`)
	if got := cfg.Clusters[1].Labels["env"]; got != "prod" {
		t.Errorf("aliased label = %q, want prod", got)
	}
	y := cfg.Applications[1]
	if y.ID != "y" || y.Namespace != "ns" || y.Image != "nginx" || y.Replicas != 5 || y.Selector != "env=prod" {
		t.Errorf("merged application = %+v", y)
	}
}

func TestServiceDefaults(t *testing.T) {
	tests := []struct {
		name string
		app  string
		want *Service
	}{
		{name: "none", app: "", want: nil},
		{name: "port only", app: "port: 8080", want: &Service{Port: 8080, TargetPort: 8080, Type: corev1.ServiceTypeClusterIP}},
		{name: "service port", app: "port: 8080\n    service: {port: 80}", want: &Service{Port: 80, TargetPort: 8080, Type: corev1.ServiceTypeClusterIP}},
		{name: "no app port", app: "service: {port: 80, type: NodePort}", want: &Service{Port: 80, TargetPort: 80, Type: corev1.ServiceTypeNodePort}},
		{name: "empty service", app: "port: 9000\n    service: {}", want: &Service{Port: 9000, TargetPort: 9000, Type: corev1.ServiceTypeClusterIP}},
		{name: "all set", app: "port: 8080\n    service: {port: 443, targetPort: 8443, type: LoadBalancer}", want: &Service{Port: 443, TargetPort: 8443, Type: corev1.ServiceTypeLoadBalancer}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustParse(t, "clusters:\n  - id: a\n    kubeconfig: /k\napplications:\n  - id: x\n    namespace: ns\n    clusters: [a]\n    image: nginx\n    "+tt.app+"\n")
			if got := cfg.Applications[0].Service; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Service = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestResourcesCanonical(t *testing.T) {
	cfg := mustParse(t, `clusters:
  - id: a
    kubeconfig: /k
applications:
  - id: x
    namespace: ns
    clusters: [a]
    image: nginx
    resources:
      requests: {cpu: "0.5", memory: 1.5Gi, ephemeral-storage: 1000Mi}
      limits: {cpu: 1000m, memory: 2048Mi, example.com/gpu: 1, hugepages-2Mi: 64Mi}
`)
	r := cfg.Applications[0].Resources
	wantReq := map[string]string{"cpu": "500m", "memory": "1536Mi", "ephemeral-storage": "1000Mi"}
	wantLim := map[string]string{"cpu": "1", "memory": "2Gi", "example.com/gpu": "1", "hugepages-2Mi": "64Mi"}
	if !reflect.DeepEqual(r.Requests, wantReq) || !reflect.DeepEqual(r.Limits, wantLim) {
		t.Errorf("Resources = %+v, want requests %v limits %v", r, wantReq, wantLim)
	}
}

func TestTargetsAndNamespaces(t *testing.T) {
	cfg := loadExample(t)
	app := func(id string) Application {
		for _, a := range cfg.Applications {
			if a.ID == id {
				return a
			}
		}
		t.Fatalf("no application %q", id)
		return Application{}
	}
	targets := func(id string) []string {
		var out []string
		for _, c := range cfg.TargetClusters(app(id)) {
			out = append(out, c.ID)
		}
		return out
	}
	appIDs := func(info ClusterInfo) []string {
		var out []string
		for _, a := range cfg.AppsFor(info) {
			out = append(out, a.ID)
		}
		return out
	}
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"targets inventory (selector)", targets("inventory"), []string{"prod-eu", "prod-us"}},
		{"targets billing (list)", targets("billing"), []string{"prod-eu"}},
		{"targets web (selector)", targets("web"), []string{"prod-eu", "staging"}},
		{"targets canary (list, file order)", targets("canary"), []string{"prod-us", "staging"}},
		{"namespaces derived", cfg.Namespaces("prod-eu"), []string{"casehub", "web"}},
		{"namespaces derived dedup", cfg.Namespaces("prod-us"), []string{"casehub"}},
		{"namespaces explicit", cfg.Namespaces("staging"), []string{"casehub", "web"}},
		{"namespaces unknown cluster", cfg.Namespaces("nowhere"), nil},
		{"apps for file cluster", appIDs(mustCluster(t, cfg, "prod-us").Info()), []string{"inventory", "canary"}},
		{"apps for discovered prod cluster", appIDs(ClusterInfo{ID: "capi-1", Labels: map[string]string{"env": "prod", "region": "ap"}}), []string{"inventory"}},
		{"apps for discovered eu cluster", appIDs(ClusterInfo{ID: "capi-2", Labels: map[string]string{"region": "eu"}}), []string{"web"}},
		{"apps for unlabelled cluster", appIDs(ClusterInfo{ID: "capi-3"}), nil},
		{"namespaces for discovered", cfg.NamespacesFor(ClusterInfo{ID: "capi-1", Labels: map[string]string{"env": "prod"}}), []string{"casehub"}},
		{"apps for cluster of the mgmt source", appIDs(cfg.ClusterAPI[0].Info("fleet-a", map[string]string{"region": "ap"})), []string{"inventory", "fleet-agent"}},
		{"namespaces for cluster of the mgmt source", cfg.NamespacesFor(cfg.ClusterAPI[0].Info("fleet-a", nil)), []string{"casehub", "fleet-system"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !slices.Equal(tt.got, tt.want) {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func mustCluster(t *testing.T, cfg *Config, id string) Cluster {
	t.Helper()
	cl, ok := cfg.Cluster(id)
	if !ok {
		t.Fatalf("no cluster %q", id)
	}
	return cl
}

func TestPolicyFor(t *testing.T) {
	tests := []struct {
		name    string
		app     hub.Policy
		cluster hub.Policy
		hub     hub.Policy
		want    hub.Policy
	}{
		{"hub", "", "", hub.PolicyRepair, hub.PolicyRepair},
		{"hub warn", "", "", hub.PolicyWarn, hub.PolicyWarn},
		{"cluster over hub", "", hub.PolicyWarn, hub.PolicyRepair, hub.PolicyWarn},
		{"application over cluster", hub.PolicyRepair, hub.PolicyWarn, hub.PolicyWarn, hub.PolicyRepair},
		{"unset hub", "", "", "", hub.PolicyRepair},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &Config{Hub: Hub{Policy: tt.hub}}
			got := cfg.PolicyFor(Application{Policy: tt.app}, ClusterInfo{Policy: tt.cluster})
			if got != tt.want {
				t.Errorf("PolicyFor = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseDeterministic(t *testing.T) {
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Parse(examplePath, data, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse(examplePath, data, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("two parses of the same file differ")
	}
}

func TestWorkers(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want int
	}{
		{Config{}, MinWorkers},
		{Config{Clusters: make([]Cluster, 3)}, 12},
		{Config{Clusters: make([]Cluster, 3), Terraform: make([]Workspace, 1), ClusterAPI: make([]ClusterAPISource, 1)}, 20},
		{Config{Clusters: make([]Cluster, 250)}, MaxAutoWorkers},
		{Config{Hub: Hub{Workers: 2}, Clusters: make([]Cluster, 250)}, 2},
	} {
		if got := tc.cfg.Workers(); got != tc.want {
			t.Errorf("%d clusters, %d workspaces, %d capi, hub.workers %d: Workers() = %d, want %d",
				len(tc.cfg.Clusters), len(tc.cfg.Terraform), len(tc.cfg.ClusterAPI), tc.cfg.Hub.Workers, got, tc.want)
		}
	}
}

package config

import (
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/config/manifest"
	"github.com/driftwatch/driftwatch/hub"
)

// sourcesConfig parses src as testdata/config.yaml, so source paths are
// relative to testdata.
func sourcesConfig(t *testing.T, src string) *Config {
	t.Helper()
	cfg, err := Parse("testdata/config.yaml", []byte(src), testOptions())
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	return cfg
}

// specsByID indexes specs by NodeID string.
func specsByID(specs []hub.NodeSpec) map[string]hub.NodeSpec {
	out := make(map[string]hub.NodeSpec, len(specs))
	for _, s := range specs {
		out[s.ID.String()] = s
	}
	return out
}

// objectOf decodes a spec's body.
func objectOf(t *testing.T, s hub.NodeSpec) *unstructured.Unstructured {
	t.Helper()
	o, err := kubeobj.Object(s)
	if err != nil || o == nil {
		t.Fatalf("%s: body: %v", s.ID, err)
	}
	return o
}

func nested(t *testing.T, o *unstructured.Unstructured, path ...string) any {
	t.Helper()
	v, _, err := unstructured.NestedFieldNoCopy(o.Object, path...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSourcesExample compiles examples/sources.yaml: each cluster gets
// the overlay and the values of its env label, every distinct variant is
// rendered once, and the watch learns the namespaces and kinds.
func TestSourcesExample(t *testing.T) {
	cfg, err := Load("examples/sources.yaml", testLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	specs := specsByID(Compile(cfg))
	for id, want := range map[string]any{
		"dev:shop/web:horizontalpodautoscaler.autoscaling":        int64(2),
		"staging:shop/web:horizontalpodautoscaler.autoscaling":    int64(4),
		"production:shop/web:horizontalpodautoscaler.autoscaling": int64(10),
	} {
		s, ok := specs[id]
		if !ok {
			t.Fatalf("no %s", id)
		}
		if got := nested(t, objectOf(t, s), "spec", "maxReplicas"); got != want {
			t.Errorf("%s maxReplicas = %v, want %v", id, got, want)
		}
	}
	if got := nested(t, objectOf(t, specs["production:shop/db:statefulset.apps"]), "spec", "replicas"); got != int64(3) {
		t.Errorf("production db replicas = %v, want 3", got)
	}
	if got := nested(t, objectOf(t, specs["dev:shop/report:cronjob.batch"]), "spec", "suspend"); got != true {
		t.Errorf("dev report suspend = %v, want true", got)
	}
	if got := nested(t, objectOf(t, specs["staging:shop/web:deployment"]), "spec", "template", "spec", "containers"); !strings.Contains(fmt.Sprint(got), "nginx:1.28") {
		t.Errorf("staging web containers = %v, want nginx:1.28", got)
	}
	// The chart: values file per env, inline values last, not on dev.
	prod := objectOf(t, specs["production:cache/cache:deployment"])
	if got := fmt.Sprint(nested(t, prod, "spec", "template", "spec", "containers")); !strings.Contains(got, "512mb") || !strings.Contains(got, "redis:7.4-alpine") {
		t.Errorf("production cache containers = %s", got)
	}
	if got := nested(t, prod, "spec", "replicas"); got != int64(3) {
		t.Errorf("production cache replicas = %v", got)
	}
	if _, ok := specs["dev:cache/cache:deployment"]; ok {
		t.Error("the cache's selector leaves dev out")
	}
	for id, want := range map[string]hub.Policy{
		"production:cache/cache:service": hub.PolicyWarn,   // the source's
		"production:shop/web:service":    hub.PolicyRepair, // the hub's
		"staging:shop/web:service":       hub.PolicyWarn,   // the cluster's
	} {
		if got := specs[id].Policy; got != want {
			t.Errorf("%s policy = %s, want %s", id, got, want)
		}
	}
	if s := specs["dev:platform/nightly:backup.example.com"]; s.Ignore == nil || len(s.Ignore.For(s.Kind)) != 1 {
		t.Errorf("the Backup's ignore rule does not apply to it: %+v", s.Ignore)
	}
	if s := specs["dev:shop/web:configmap"]; len(s.Ignore.For(s.Kind)) != 0 {
		t.Errorf("a Deployment rule applies to a ConfigMap")
	}
	// Rendered once per distinct request: 3 overlays, 1 folder, 2 values
	// files.
	if n := len(cfg.sources.renders); n != 6 {
		t.Errorf("%d renderings, want 6", n)
	}

	if got, want := cfg.Namespaces("dev"), []string{"platform", "shop"}; !slices.Equal(got, want) {
		t.Errorf("Namespaces(dev) = %v, want %v", got, want)
	}
	if got, want := cfg.Namespaces("production"), []string{"cache", "platform", "shop"}; !slices.Equal(got, want) {
		t.Errorf("Namespaces(production) = %v, want %v", got, want)
	}
	var kinds []string
	for _, k := range cfg.Kinds("production") {
		kinds = append(kinds, k.String())
	}
	want := []string{
		"/v1, Kind=ConfigMap", "/v1, Kind=Namespace", "/v1, Kind=PersistentVolumeClaim", "/v1, Kind=Service",
		"apiextensions.k8s.io/v1, Kind=CustomResourceDefinition", "apps/v1, Kind=Deployment", "apps/v1, Kind=StatefulSet",
		"autoscaling/v2, Kind=HorizontalPodAutoscaler", "batch/v1, Kind=CronJob", "example.com/v1, Kind=Backup",
		"rbac.authorization.k8s.io/v1, Kind=ClusterRole",
	}
	if !slices.Equal(kinds, want) {
		t.Errorf("Kinds(production):\n got %q\nwant %q", kinds, want)
	}
}

// TestSourceBodies checks what the compiler does to a source's objects.
func TestSourceBodies(t *testing.T) {
	src := `hub: {id: h1, managedBy: fleet}
clusters: [{id: a, kubeconfig: /k}]
sources:
  - id: plain
    path: sources/plain
    clusters: [a]
    namespace: team
  - id: custom
    path: sources/custom
    clusters: [a]
    progressDeadlineSeconds: 90
`
	specs := specsByID(Compile(sourcesConfig(t, src)))
	var ids []string
	for id := range specs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	want := []string{
		"a:default/w1:widget.other.example.com", // no CRD: namespaced, and the source has no namespace
		"a:g1:gadget.example.com",               // cluster-scoped, as its CRD says: namespace dropped
		"a:gadgets.example.com:customresourcedefinition.apiextensions.k8s.io",
		"a:other/data:persistentvolumeclaim", // its own namespace
		"a:reader:clusterrole.rbac.authorization.k8s.io",
		"a:team/kept:configmap", // the source's namespace
		"a:team:namespace",
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("NodeIDs:\n got %q\nwant %q", ids, want)
	}
	for id, s := range specs {
		o := objectOf(t, s)
		if got := o.GetLabels()[kubeobj.ManagedByLabel]; got != "fleet" {
			t.Errorf("%s managed-by = %q", id, got)
		}
		if got := o.GetLabels()[kubeobj.ApplicationLabel]; got != s.Application || s.Application == "" {
			t.Errorf("%s application label = %q, spec %q", id, got, s.Application)
		}
		if a := o.GetAnnotations(); a[kubeobj.NodeIDAnnotation] != id || a[kubeobj.HubAnnotation] != "h1" {
			t.Errorf("%s annotations = %v", id, a)
		}
		if o.GetNamespace() != s.ID.Namespace() || s.Namespace != s.ID.Namespace() {
			t.Errorf("%s namespace = %q, spec %q", id, o.GetNamespace(), s.Namespace)
		}
		if s.Hash == "" || s.Kind != s.ID.Kind || s.Name != o.GetName() {
			t.Errorf("%s spec = %+v", id, s)
		}
	}
	prune := func(id string) string { return objectOf(t, specs[id]).GetAnnotations()[PruneAnnotation] }
	for id, want := range map[string]string{
		"a:team:namespace":                   PruneDisabled,
		"a:other/data:persistentvolumeclaim": PruneDisabled,
		"a:gadgets.example.com:customresourcedefinition.apiextensions.k8s.io": PruneDisabled,
		"a:team/kept:configmap":                          PruneDisabled, // set by the manifest
		"a:reader:clusterrole.rbac.authorization.k8s.io": "",
	} {
		if got := prune(id); got != want {
			t.Errorf("%s prune annotation = %q, want %q", id, got, want)
		}
	}
	pvc := objectOf(t, specs["a:other/data:persistentvolumeclaim"])
	for _, f := range [][]string{{"status"}, {"metadata", "uid"}, {"metadata", "resourceVersion"}, {"metadata", "creationTimestamp"}, {"metadata", "managedFields"}} {
		if _, found, _ := unstructured.NestedFieldNoCopy(pvc.Object, f...); found {
			t.Errorf("the PVC keeps %v", f)
		}
	}
	if got := specs["a:g1:gadget.example.com"].ProgressDeadline.Seconds(); got != 90 {
		t.Errorf("progress deadline = %vs, want the source's 90", got)
	}
	if got := specs["a:team:namespace"].ProgressDeadline; got != DefaultProgressDeadline {
		t.Errorf("progress deadline = %v, want the default", got)
	}

	for id, s := range specs {
		if a, ok := objectOf(t, s).GetAnnotations()[kubeobj.RecreateAnnotation]; ok {
			t.Errorf("%s: recreate annotation %q without the source's recreate", id, a)
		}
	}
	// Recreation allowed by the source: on every object, the guarded
	// kinds too (their disabled pruning keeps them from being recreated).
	specs = specsByID(Compile(sourcesConfig(t, `clusters: [{id: a, kubeconfig: /k}]
sources:
  - {id: plain, path: sources/plain, clusters: [a], recreate: true}
`)))
	if len(specs) == 0 {
		t.Fatal("no objects")
	}
	for id, s := range specs {
		if a := objectOf(t, s).GetAnnotations()[kubeobj.RecreateAnnotation]; a != kubeobj.RecreateEnabled {
			t.Errorf("%s recreate annotation = %q with recreate: true", id, a)
		}
	}

	// Pruning enabled by the source.
	specs = specsByID(Compile(sourcesConfig(t, `clusters: [{id: a, kubeconfig: /k}]
sources:
  - {id: plain, path: sources/plain, clusters: [a], prune: {namespaces: true, persistentVolumeClaims: true}}
`)))
	for id, s := range specs {
		if a := objectOf(t, s).GetAnnotations()[PruneAnnotation]; (a != "") != (id == "a:default/kept:configmap") {
			t.Errorf("%s prune annotation = %q with pruning enabled", id, a)
		}
	}
	// A Deployment's own progress deadline.
	specs = specsByID(Compile(sourcesConfig(t, `clusters: [{id: a, kubeconfig: /k}]
sources: [{id: one, path: sources/dup, clusters: [a]}]
`)))
	if got := specs["a:shop/web:deployment"].ProgressDeadline.Seconds(); got != 30 {
		t.Errorf("progress deadline = %vs, want the Deployment's 30", got)
	}
}

// TestSourceErrors: every problem of a source is a config error at its
// field, with the manifest's file and line where the renderer says it.
func TestSourceErrors(t *testing.T) {
	const clusters = "clusters:\n  - {id: a, kubeconfig: /k, labels: {env: dev}}\n  - {id: b, kubeconfig: /k}\n"
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"bad id", clusters + "sources:\n  - {id: Bad_Id, path: sources/plain, clusters: [a]}\n",
			[]string{`testdata/config.yaml:5:10: sources[0].id: invalid name "Bad_Id"`}},
		{"two renderers", clusters + "sources:\n  - {id: s, path: sources/plain, kustomize: sources/k, clusters: [a]}\n",
			[]string{"testdata/config.yaml:5:45: sources[0].kustomize: set one of path, kustomize or helm, not several (sources[0].path is set at line 5)"}},
		{"no renderer", clusters + "sources:\n  - {id: s, clusters: [a]}\n",
			[]string{"testdata/config.yaml:5:5: sources[0]: one of path, kustomize or helm is required"}},
		{"unknown field", clusters + "sources:\n  - {id: s, kustomise: x, clusters: [a]}\n",
			[]string{`testdata/config.yaml:5:13: sources[0].kustomise: unknown field (did you mean "kustomize"?)`, "sources[0]: one of path, kustomize or helm is required"}},
		{"label missing", clusters + "sources:\n  - id: s\n    kustomize: sources/${cluster.labels.env}\n    clusters: [a, b]\n",
			[]string{`testdata/config.yaml:6:16: sources[0].kustomize: cluster "b" has no label "env" (${cluster.labels.env})`,
				"testdata/config.yaml:6:16: sources[0].kustomize: sources/dev: must build at directory"}},
		{"label missing in values files", clusters + "sources:\n  - id: s\n    helm: {chart: sources/mini, valuesFiles: [\"v-${cluster.labels.env}.yaml\"]}\n    clusters: [b]\n",
			[]string{`sources[0].helm.valuesFiles[0]: cluster "b" has no label "env" (${cluster.labels.env})`}},
		{"unknown variable", clusters + "sources:\n  - {id: s, path: 'x/${cluster.name}/${HOME}', clusters: [a]}\n",
			[]string{`sources[0].path: ${cluster.name}: unknown variable "cluster.name": want ${cluster.id} or ${cluster.labels.KEY}`,
				`sources[0].path: ${HOME}: unknown variable "HOME"`}},
		{"plain file error", clusters + "sources:\n  - {id: s, path: sources/broken, clusters: [a]}\n",
			[]string{"testdata/config.yaml:5:19: sources[0].path: sources/broken: x.yaml:5: document of apiVersion v1 has no kind"}},
		{"duplicate object across sources", clusters + "sources:\n  - {id: one, path: sources/dup, clusters: [a]}\n  - {id: two, path: sources/dup/web.yaml, selector: env}\n",
			[]string{`testdata/config.yaml:6:21: sources[1].path: Deployment shop/web on cluster "a" is in source "one" (web.yaml:1) and in source "two" (web.yaml:1)`}},
		{"duplicate object with an application", clusters + "applications: [{id: web, namespace: shop, image: nginx, clusters: [a]}]\nsources:\n  - {id: one, path: sources/dup, clusters: [a]}\n",
			[]string{`sources[0].path: Deployment shop/web on cluster "a" is in application "web" and in source "one" (web.yaml:1)`}},
		{"duplicate ids", clusters + "applications: [{id: web, namespace: shop, image: nginx, clusters: [a]}]\nsources:\n  - {id: web, path: sources/plain, clusters: [b]}\n  - {id: web, path: sources/custom, clusters: [b]}\n",
			[]string{`testdata/config.yaml:6:10: sources[0].id: source id "web" is also an application id (applications[0].id at line 4): ids must differ`,
				`testdata/config.yaml:7:10: sources[1].id: duplicate source id "web" (first at line 6)`}},
		{"targets", clusters + "sources:\n  - {id: s, path: sources/plain, clusters: [a, c, a]}\n  - {id: t, path: sources/plain, selector: env=prod}\n  - {id: u, path: sources/plain}\n",
			[]string{`sources[0].clusters[1]: unknown cluster "c"`, `sources[0].clusters[2]: cluster "a" is listed twice`,
				`sources[1].selector: selector "env=prod" matches no cluster`, "sources[2]: one of clusters or selector is required"}},
		{"not managed namespace", "clusters: [{id: a, kubeconfig: /k, namespaces: [team]}]\nsources:\n  - {id: s, path: sources/plain, clusters: [a], namespace: team}\n",
			[]string{`sources[0].path: namespace "other" of PersistentVolumeClaim other/data (objects.yaml:6) is not managed on cluster "a" (clusters[0].namespaces: team)`}},
		{"helm values", clusters + "sources:\n  - id: s\n    helm: {chart: sources/mini, values: [a], kubeVersion: one}\n    clusters: [a]\n",
			[]string{"sources[0].helm.values: want a mapping", `sources[0].helm.kubeVersion: invalid Kubernetes version "one"`}},
		{"helm render error", clusters + "sources:\n  - {id: s, helm: {chart: sources/plain}, clusters: [a]}\n",
			[]string{"sources[0].helm: sources/plain: load chart: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("testdata/config.yaml", []byte(tt.src), testOptions())
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("errors:\n%v\nwant one containing %q", err, w)
				}
			}
		})
	}
}

// TestCompileClusterDiscovered: the sources of a discovered cluster are
// rendered when it is compiled, from its labels.
func TestCompileClusterDiscovered(t *testing.T) {
	cfg, err := Parse("examples/sources.yaml", []byte(`clusters: [{id: dev, kubeconfig: /k, labels: {env: dev}}]
clusterAPI: [{name: mgmt, kubeconfig: /k}]
sources:
  - id: shop
    kustomize: sources/kustomize/overlays/${cluster.labels.env}
    selector: env
`), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	before := len(cfg.sources.renders)
	info := cfg.ClusterAPI[0].Info("fleet-1", map[string]string{"env": "production"})
	specs, err := CompileCluster(cfg, info)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 7 || len(cfg.sources.renders) != before+1 {
		t.Errorf("%d specs, %d renderings (was %d)", len(specs), len(cfg.sources.renders), before)
	}
	if _, err := CompileCluster(cfg, info); err != nil || len(cfg.sources.renders) != before+1 {
		t.Errorf("a second compile renders again: %d renderings, %v", len(cfg.sources.renders), err)
	}
	if got := cfg.NamespacesFor(info); !slices.Equal(got, []string{"shop"}) {
		t.Errorf("NamespacesFor = %v", got)
	}
	if got := cfg.KindsFor(info); !slices.Contains(got, k8sschema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "CronJob"}) {
		t.Errorf("KindsFor = %v", got)
	}

	// An overlay that does not exist, and a cluster the selector matches
	// whatever its labels... say what is wrong.
	_, err = CompileCluster(cfg, cfg.ClusterAPI[0].Info("fleet-2", map[string]string{"env": "qa"}))
	if err == nil || !strings.Contains(err.Error(), `cluster "fleet-2": source "shop": sources/kustomize/overlays/qa: `) {
		t.Errorf("unknown overlay: %v", err)
	}
	// In parallel: each cluster's own result in order, the discovered
	// ones rendered once, and the first failing cluster's error in the
	// order given, not the first to fail.
	prod, qa := info, cfg.ClusterAPI[0].Info("fleet-2", map[string]string{"env": "qa"})
	all, err := CompileClusters(cfg, []ClusterInfo{cfg.Clusters[0].Info(), prod, prod})
	if err != nil || len(all) != 3 || !reflect.DeepEqual(all[1], specs) || !reflect.DeepEqual(all[2], specs) {
		t.Fatalf("CompileClusters = %d results, %v", len(all), err)
	}
	if want := mustCompileCluster(t, cfg, cfg.Clusters[0].Info()); !reflect.DeepEqual(all[0], want) {
		t.Error("CompileClusters differs from CompileCluster on the file's cluster")
	}
	checkOutline(t, cfg, []ClusterInfo{cfg.Clusters[0].Info(), prod, prod}, all)
	uat := cfg.ClusterAPI[0].Info("fleet-3", map[string]string{"env": "uat"})
	if _, err := CompileClusters(cfg, []ClusterInfo{prod, qa, uat}); err == nil || !strings.Contains(err.Error(), `cluster "fleet-2"`) {
		t.Errorf("CompileClusters with a failing cluster: %v", err)
	}
	if _, err := OutlineClusters(cfg, []ClusterInfo{prod, qa, uat}); err == nil || !strings.Contains(err.Error(), `cluster "fleet-2"`) {
		t.Errorf("OutlineClusters with a failing cluster: %v", err)
	}
	if got := cfg.NamespacesFor(cfg.ClusterAPI[0].Info("fleet-2", map[string]string{"env": "qa"})); len(got) != 0 {
		t.Errorf("NamespacesFor a broken variant = %v", got)
	}
}

// TestSourceFaultsIsolated: under IsolateSources a source that cannot be
// used is a fault of that source, with the same positioned message as the
// error check prints, left out of the desired state, while the other
// sources and the applications compile; without it nothing changes (see
// TestSourceErrors).
func TestSourceFaultsIsolated(t *testing.T) {
	const head = "clusters:\n  - {id: a, kubeconfig: /k, labels: {env: dev}}\n  - {id: b, kubeconfig: /k}\n" +
		"applications: [{id: app, namespace: shop, image: nginx, clusters: [a]}]\nsources:\n  - {id: good, path: sources/custom, clusters: [a, b]}\n"
	tests := []struct {
		name, src, bad, want string
	}{
		{"plain file error", "  - {id: bad, path: sources/broken, clusters: [a]}\n", "bad",
			"testdata/config.yaml:7:21: sources[1].path: sources/broken: x.yaml:5: document of apiVersion v1 has no kind"},
		{"label missing", "  - id: bad\n    kustomize: sources/${cluster.labels.env}\n    clusters: [b]\n", "bad",
			`sources[1].kustomize: cluster "b" has no label "env" (${cluster.labels.env})`},
		{"helm render error", "  - {id: bad, helm: {chart: sources/plain}, clusters: [a]}\n", "bad",
			"sources[1].helm: sources/plain: load chart: "},
		{"duplicate object across sources", "  - {id: one, path: sources/dup, clusters: [a]}\n  - {id: two, path: sources/dup/web.yaml, clusters: [a]}\n", "two",
			`sources[2].path: Deployment shop/web on cluster "a" is in source "one" (web.yaml:1) and in source "two" (web.yaml:1)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := head + tt.src
			if _, err := Parse("testdata/config.yaml", []byte(src), testOptions()); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("without IsolateSources: %v, want an error containing %q", err, tt.want)
			}
			opts := testOptions()
			opts.IsolateSources = true
			cfg, err := Parse("testdata/config.yaml", []byte(src), opts)
			if err != nil {
				t.Fatalf("with IsolateSources: %v", err)
			}
			faults := cfg.SourceFaults()
			if len(faults) != 1 || faults[tt.bad] == nil {
				t.Fatalf("faults %v, want one of source %q", faults, tt.bad)
			}
			if !strings.Contains(faults[tt.bad].Error(), tt.want) {
				t.Errorf("fault:\n%v\nwant one containing %q", faults[tt.bad], tt.want)
			}
			apps := map[string]int{}
			for _, s := range Compile(cfg) {
				apps[s.Application]++
			}
			if apps[tt.bad] != 0 || apps["good"] == 0 || apps["app"] == 0 {
				t.Errorf("compiled objects by application %v: want the good source's and the application's, none of %q", apps, tt.bad)
			}
			if tt.bad == "two" && apps["one"] == 0 {
				t.Errorf("compiled objects by application %v: the first of the duplicates stays", apps)
			}
			if spec, err := CompileCluster(cfg, ClusterInfo{ID: "c", Labels: map[string]string{"env": "dev"}}); err != nil {
				t.Errorf("CompileCluster: %v", err)
			} else {
				for _, s := range spec {
					if s.Application == tt.bad {
						t.Errorf("CompileCluster compiled %s of the failing source", s.ID)
					}
				}
			}
		})
	}
}

// TestHelmSandboxFaultsOnlyItsSource loads a config whose Helm source's
// template writes text in a loop three values lists deep (a 12 KB chart
// that grows a process's heap past 3 GiB in 9 s): with the hub's load
// options, the chart renders in a sandbox that dies at its memory limit,
// the source is a fault naming its chart and the limit, and the other
// source and the application compile.
func TestHelmSandboxFaultsOnlyItsSource(t *testing.T) {
	chart := t.TempDir()
	var vals strings.Builder
	vals.WriteString("items:\n")
	for range 3000 {
		vals.WriteString("- 1\n")
	}
	for name, text := range map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: bomb\nversion: 0.1.0\n",
		"values.yaml":       vals.String(),
		"templates/cm.yaml": "{{- range .Values.items }}{{- range $.Values.items }}{{- range $.Values.items }}xxxxxxxxxxxxxxxx{{ end }}{{ end }}{{ end }}\n",
	} {
		if err := os.MkdirAll(filepath.Join(chart, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(chart, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := "clusters:\n  - {id: a, kubeconfig: /k}\n" +
		"applications: [{id: app, namespace: shop, image: nginx, clusters: [a]}]\nsources:\n  - {id: good, path: sources/custom, clusters: [a]}\n" +
		"  - {id: bomb, helm: {chart: " + chart + "}, clusters: [a]}\n"
	opts := testOptions()
	opts.IsolateSources = true
	sb := manifest.Self()
	sb.MemoryLimit = 256 << 20
	opts.RenderSandbox = sb
	cfg, err := Parse("testdata/config.yaml", []byte(src), opts)
	if err != nil {
		t.Fatal(err)
	}
	faults := cfg.SourceFaults()
	if len(faults) != 1 || faults["bomb"] == nil || !strings.Contains(faults["bomb"].Error(), "helm chart "+chart+": rendering needed more than 256 MiB of memory: stopped") {
		t.Fatalf("faults %v, want the bomb source's memory limit", faults)
	}
	apps := map[string]int{}
	for _, s := range Compile(cfg) {
		apps[s.Application]++
	}
	if apps["bomb"] != 0 || apps["good"] == 0 || apps["app"] == 0 {
		t.Errorf("compiled objects by application %v: want the good source's and the application's, none of the bomb's", apps)
	}
}

// TestKustomizeSandboxFaultsOnlyItsSource: a source of 34 small
// kustomizations including one another four times over, eight deep
// (16,384 objects, minutes of kustomize's CPU), builds in the sandbox,
// which stops it at its timeout: the source is a fault naming the
// kustomization and the limit, and the other source compiles.
func TestKustomizeSandboxFaultsOnlyItsSource(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"base/kustomization.yaml": "resources: [cm.yaml]\n",
		"base/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
	}
	const fanout, levels = 4, 8
	for l := range levels {
		for j := range fanout {
			res := []string{"../base"}
			if l < levels-1 {
				res = res[:0]
				for k := range fanout {
					res = append(res, fmt.Sprintf("../l%d-%d", l+1, k))
				}
			}
			files[fmt.Sprintf("l%d-%d/kustomization.yaml", l, j)] = fmt.Sprintf("resources: [%s]\nnamePrefix: p%d-\n", strings.Join(res, ", "), j)
		}
	}
	for name, text := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	k := filepath.Join(dir, "l0-0")
	src := "clusters:\n  - {id: a, kubeconfig: /k}\nsources:\n  - {id: good, path: sources/custom, clusters: [a]}\n" +
		"  - {id: many, kustomize: " + k + ", clusters: [a]}\n"
	opts := testOptions()
	opts.IsolateSources = true
	sb := manifest.Self()
	sb.Timeout = 2 * time.Second
	opts.RenderSandbox = sb
	cfg, err := Parse("testdata/config.yaml", []byte(src), opts)
	if err != nil {
		t.Fatal(err)
	}
	faults := cfg.SourceFaults()
	if len(faults) != 1 || faults["many"] == nil || !strings.Contains(faults["many"].Error(), "kustomization "+k+": rendering took longer than 2s: stopped") {
		t.Fatalf("faults %v, want the many source's timeout", faults)
	}
	if len(Compile(cfg)) == 0 {
		t.Error("the good source compiled nothing")
	}
}

package config

import (
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/hub"
)

// renderSpecs prints specs as multi-document YAML with their NodeSpec fields
// in a leading comment.
func renderSpecs(t *testing.T, specs []hub.NodeSpec) []byte {
	t.Helper()
	var b strings.Builder
	for i, s := range specs {
		y, err := yaml.Marshal(desiredOf(t, s).Object)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, "# %s app=%s tenancy=%q policy=%s progressDeadline=%s\n# hash=%s\n",
			s.ID, s.Application, s.Tenancy, s.Policy, s.ProgressDeadline, s.Hash)
		b.Write(y)
	}
	return []byte(b.String())
}

func TestCompileExampleGolden(t *testing.T) {
	cfg := loadExample(t)
	golden(t, "compile/multi-cluster.golden", renderSpecs(t, Compile(cfg)))
}

func TestCompileDeterministic(t *testing.T) {
	cfg := loadExample(t)
	a, b := Compile(cfg), Compile(loadExample(t))
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two compiles of the same config differ")
	}
	ids := make([]string, len(a))
	for i, s := range a {
		ids[i] = s.ID.String()
	}
	if !slices.IsSorted(ids) {
		t.Errorf("specs not sorted by NodeID: %v", ids)
	}
	if len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Errorf("duplicate NodeIDs: %v", ids)
	}
	// Compile is the union of CompileCluster over the file's clusters.
	var union []hub.NodeSpec
	for _, cl := range cfg.Clusters {
		union = append(union, mustCompileCluster(t, cfg, cl.Info())...)
	}
	sortSpecs(union)
	if !reflect.DeepEqual(a, union) {
		t.Error("Compile differs from the union of CompileCluster")
	}
}

func TestOutlineClusters(t *testing.T) {
	cfg := loadExample(t)
	infos := cfg.ClusterInfos()
	compiled, err := CompileClusters(cfg, infos)
	if err != nil {
		t.Fatal(err)
	}
	checkOutline(t, cfg, infos, compiled)
}

// checkOutline checks that OutlineClusters gives compiled (CompileClusters
// of infos) without the applications' bodies and hashes, and with the
// source objects' bodies.
func checkOutline(t *testing.T, cfg *Config, infos []ClusterInfo, compiled [][]hub.NodeSpec) {
	t.Helper()
	outlined, err := OutlineClusters(cfg, infos)
	if err != nil {
		t.Fatal(err)
	}
	if len(outlined) != len(compiled) {
		t.Fatalf("OutlineClusters = %d clusters, want %d", len(outlined), len(compiled))
	}
	apps := map[string]bool{}
	for _, a := range cfg.Applications {
		apps[a.ID] = true
	}
	bare := 0
	for i := range compiled {
		if len(outlined[i]) != len(compiled[i]) {
			t.Fatalf("cluster %s: %d specs outlined, %d compiled", infos[i].ID, len(outlined[i]), len(compiled[i]))
		}
		for j, want := range compiled[i] {
			got := outlined[i][j]
			if got.Body == nil {
				bare++
				if got.Hash != "" {
					t.Errorf("%s: a hash without a body", got.ID)
				}
				want.Body, want.Hash = nil, ""
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s outlined:\n%+v\nwant\n%+v", got.ID, got, want)
			}
			// An application's object has no body; a source's has its own.
			if fromApp := apps[want.Application]; fromApp != (got.Body == nil) {
				t.Errorf("%s: outlined body %d bytes, from an application: %v", got.ID, len(got.Body), fromApp)
			}
		}
	}
	if len(cfg.Applications) > 0 && bare == 0 {
		t.Error("no application object outlined")
	}
}

func TestCompileInvariants(t *testing.T) {
	cfg := loadExample(t)
	specs := Compile(cfg)
	if len(specs) == 0 {
		t.Fatal("no specs")
	}
	for _, s := range specs {
		t.Run(s.ID.String(), func(t *testing.T) {
			o := desiredOf(t, s)
			if got := o.GetLabels()[kubeobj.ManagedByLabel]; got != cfg.Hub.ManagedBy {
				t.Errorf("managed-by label = %q, want %q", got, cfg.Hub.ManagedBy)
			}
			if got := o.GetAnnotations()[kubeobj.NodeIDAnnotation]; got != s.ID.String() {
				t.Errorf("node-id annotation = %q, want %q", got, s.ID)
			}
			if got := o.GetAnnotations()[kubeobj.HubAnnotation]; got != cfg.Hub.ID {
				t.Errorf("hub annotation = %q, want the hub id %q", got, cfg.Hub.ID)
			}
			if id, err := hub.ParseNodeID(s.ID.String()); err != nil || id != s.ID {
				t.Errorf("NodeID %v does not round-trip: %v, %v", s.ID, id, err)
			}
			if got := o.GetLabels()[kubeobj.AppLabel]; got != s.Application {
				t.Errorf("app label = %q, want %q", got, s.Application)
			}
			if o.GetName() != s.Name || o.GetNamespace() != s.Namespace || s.ID != hub.NewNodeID(s.ID.Cluster, s.Namespace, s.Name, s.Kind) {
				t.Errorf("spec location %s/%s %s does not match its object or id", s.Namespace, s.Name, s.Kind)
			}
			if strings.ToLower(o.GetKind()) != string(s.Kind) || o.GetAPIVersion() == "" {
				t.Errorf("apiVersion/kind = %q/%q for %s", o.GetAPIVersion(), o.GetKind(), s.Kind)
			}
			if s.Hash != hashBody(s.Body) || len(s.Hash) != 64 {
				t.Errorf("Hash = %q, want the body's sha256", s.Hash)
			}
			// The body round-trips: decoding and encoding again gives the
			// same bytes, so the hash is the object's.
			if again := kubeobj.MustEncodeBody(o); string(again) != string(s.Body) {
				t.Errorf("body does not round-trip:\n%s\n%s", s.Body, again)
			}
			checkNoArtefacts(t, "", o.Object)
			if _, ok := o.Object["status"]; ok {
				t.Error("object has a status")
			}
			if s.Kind == hub.KindDeployment {
				if s.ProgressDeadline <= 0 {
					t.Errorf("deployment ProgressDeadline = %v", s.ProgressDeadline)
				}
			} else if s.ProgressDeadline != 0 {
				t.Errorf("%s ProgressDeadline = %v, want 0", s.Kind, s.ProgressDeadline)
			}
		})
	}
}

// checkNoArtefacts fails on conversion leftovers: nulls, empty maps or
// lists, creationTimestamp.
func checkNoArtefacts(t *testing.T, path string, v any) {
	t.Helper()
	switch x := v.(type) {
	case nil:
		t.Errorf("%s is null", path)
	case map[string]any:
		if len(x) == 0 {
			t.Errorf("%s is an empty map", path)
		}
		for k, e := range x {
			if k == "creationTimestamp" {
				t.Errorf("%s.creationTimestamp is set", path)
			}
			checkNoArtefacts(t, path+"."+k, e)
		}
	case []any:
		if len(x) == 0 {
			t.Errorf("%s is an empty list", path)
		}
		for i, e := range x {
			checkNoArtefacts(t, fmt.Sprintf("%s[%d]", path, i), e)
		}
	case string, int64, bool:
	default:
		t.Errorf("%s has unexpected type %T", path, v)
	}
}

func TestServiceSelectorIsMinimal(t *testing.T) {
	cfg := loadExample(t)
	n := 0
	for _, s := range Compile(cfg) {
		if s.Kind != hub.KindService {
			continue
		}
		n++
		sel, _, err := unstructured.NestedStringMap(desiredOf(t, s).Object, "spec", "selector")
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{kubeobj.AppLabel: s.Application}; !maps.Equal(sel, want) {
			t.Errorf("%s selector = %v, want %v", s.ID, sel, want)
		}
		if len(desiredOf(t, s).GetLabels()) <= len(sel) {
			t.Errorf("%s: test needs objects with more labels than the selector", s.ID)
		}
	}
	if n == 0 {
		t.Fatal("the example compiles no Service")
	}
}

// appObjects compiles a one-application config on cluster a and returns its
// objects by kind.
func appObjects(t *testing.T, hubSection, app string) map[hub.Kind]hub.NodeSpec {
	t.Helper()
	cfg := mustParse(t, hubSection+"clusters:\n  - id: a\n    kubeconfig: /k\napplications:\n  - id: x\n    namespace: ns\n    clusters: [a]\n    image: nginx\n"+app)
	out := map[hub.Kind]hub.NodeSpec{}
	for _, s := range Compile(cfg) {
		out[s.Kind] = s
	}
	return out
}

func TestCompileShapes(t *testing.T) {
	tests := []struct {
		name  string
		hub   string
		app   string
		kinds []hub.Kind
		check func(t *testing.T, objs map[hub.Kind]hub.NodeSpec)
	}{
		{
			name:  "deployment only",
			kinds: []hub.Kind{hub.KindDeployment},
			check: func(t *testing.T, objs map[hub.Kind]hub.NodeSpec) {
				d := objs[hub.KindDeployment]
				wantNested(t, desiredOf(t, d), int64(1), "spec", "replicas")
				wantAbsent(t, desiredOf(t, d), "spec", "progressDeadlineSeconds")
				wantAbsent(t, desiredOf(t, d), "spec", "template", "metadata", "annotations")
				wantAbsent(t, desiredOf(t, d), "spec", "strategy")
				if d.ProgressDeadline != 600*time.Second {
					t.Errorf("ProgressDeadline = %v, want Kubernetes' default 600s", d.ProgressDeadline)
				}
				c := container(t, d)
				for _, f := range []string{"ports", "env", "envFrom", "resources"} {
					if _, ok := c[f]; ok {
						t.Errorf("container has %s", f)
					}
				}
			},
		},
		{
			name:  "config data",
			app:   "    config: {b: \"2\", a: \"1\"}\n    env: {Z: z, A: a, M: m}\n    replicas: 0\n",
			kinds: []hub.Kind{hub.KindDeployment, hub.KindConfigMap},
			check: func(t *testing.T, objs map[hub.Kind]hub.NodeSpec) {
				d := objs[hub.KindDeployment]
				wantNested(t, desiredOf(t, d), int64(0), "spec", "replicas")
				hash, _, _ := unstructured.NestedString(desiredOf(t, d).Object, "spec", "template", "metadata", "annotations", kubeobj.ConfigHashAnnotation)
				if hash != configHash(map[string]string{"a": "1", "b": "2"}) || len(hash) != configHashLen {
					t.Errorf("config hash = %q", hash)
				}
				c := container(t, d)
				env := c["env"].([]any)
				var names []string
				for _, e := range env {
					names = append(names, e.(map[string]any)["name"].(string))
				}
				if !slices.Equal(names, []string{"A", "M", "Z"}) {
					t.Errorf("env order = %v, want sorted", names)
				}
				ref := c["envFrom"].([]any)[0].(map[string]any)["configMapRef"].(map[string]any)["name"]
				if ref != "x" {
					t.Errorf("envFrom configMapRef = %v", ref)
				}
				cm := objs[hub.KindConfigMap]
				data, _, _ := unstructured.NestedStringMap(desiredOf(t, cm).Object, "data")
				if !maps.Equal(data, map[string]string{"a": "1", "b": "2"}) {
					t.Errorf("ConfigMap data = %v", data)
				}
			},
		},
		{
			name: "secret env: secretKeyRef entries first, then plain ones, each sorted",
			app: "    secretEnv: {DB_PASSWORD: db-credentials/password, API_TOKEN: api.tokens/token-v2}\n" +
				"    env: {MODE: production, DATABASE_URL: \"postgres://app:$(DB_PASSWORD)@db/app\"}\n",
			kinds: []hub.Kind{hub.KindDeployment},
			check: func(t *testing.T, objs map[hub.Kind]hub.NodeSpec) {
				want := []any{
					map[string]any{"name": "API_TOKEN", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "api.tokens", "key": "token-v2"}}},
					map[string]any{"name": "DB_PASSWORD", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "db-credentials", "key": "password"}}},
					map[string]any{"name": "DATABASE_URL", "value": "postgres://app:$(DB_PASSWORD)@db/app"},
					map[string]any{"name": "MODE", "value": "production"},
				}
				if got := container(t, objs[hub.KindDeployment])["env"]; !reflect.DeepEqual(got, want) {
					t.Errorf("env =\n%v\nwant\n%v", got, want)
				}
			},
		},
		{
			name:  "tenancy, labels, annotations",
			hub:   "hub: {id: fleet-hub, managedBy: fleet}\n",
			app:   "    tenancy: \"acme:eu\"\n    labels: {team: core}\n    annotations: {example.com/owner: me}\n    port: 8080\n",
			kinds: []hub.Kind{hub.KindDeployment, hub.KindService},
			check: func(t *testing.T, objs map[hub.Kind]hub.NodeSpec) {
				for kind, s := range objs {
					wantLabels := map[string]string{
						kubeobj.ManagedByLabel: "fleet", kubeobj.AppLabel: "x", kubeobj.ApplicationLabel: "x",
						kubeobj.TenancyLabel: "acme.eu", "team": "core",
					}
					if got := desiredOf(t, s).GetLabels(); !maps.Equal(got, wantLabels) {
						t.Errorf("%s labels = %v, want %v", kind, got, wantLabels)
					}
					wantAnn := map[string]string{kubeobj.NodeIDAnnotation: s.ID.String(), kubeobj.HubAnnotation: "fleet-hub", kubeobj.TenancyLabel: "acme:eu", "example.com/owner": "me"}
					if got := desiredOf(t, s).GetAnnotations(); !maps.Equal(got, wantAnn) {
						t.Errorf("%s annotations = %v, want %v", kind, got, wantAnn)
					}
					if s.Tenancy != "acme:eu" {
						t.Errorf("%s Tenancy = %q", kind, s.Tenancy)
					}
				}
				d := objs[hub.KindDeployment]
				sel, _, _ := unstructured.NestedStringMap(desiredOf(t, d).Object, "spec", "selector", "matchLabels")
				if !maps.Equal(sel, map[string]string{"app": "x"}) {
					t.Errorf("matchLabels = %v", sel)
				}
				pod, _, _ := unstructured.NestedStringMap(desiredOf(t, d).Object, "spec", "template", "metadata", "labels")
				if !maps.Equal(pod, map[string]string{"app": "x", "team": "core"}) {
					t.Errorf("pod labels = %v", pod)
				}
			},
		},
		{
			name:  "service and deadline",
			app:   "    port: 8080\n    service: {port: 80, type: NodePort}\n    progressDeadlineSeconds: 30\n    nodeSelector: {disk: ssd}\n",
			kinds: []hub.Kind{hub.KindDeployment, hub.KindService},
			check: func(t *testing.T, objs map[hub.Kind]hub.NodeSpec) {
				d := objs[hub.KindDeployment]
				wantNested(t, desiredOf(t, d), int64(30), "spec", "progressDeadlineSeconds")
				wantNested(t, desiredOf(t, d), "ssd", "spec", "template", "spec", "nodeSelector", "disk")
				if d.ProgressDeadline != 30*time.Second {
					t.Errorf("ProgressDeadline = %v", d.ProgressDeadline)
				}
				port := container(t, d)["ports"].([]any)[0]
				if want := map[string]any{"name": "http", "containerPort": int64(8080), "protocol": "TCP"}; !reflect.DeepEqual(port, want) {
					t.Errorf("container port = %v, want %v", port, want)
				}
				s := objs[hub.KindService]
				sp, _, _ := unstructured.NestedSlice(desiredOf(t, s).Object, "spec", "ports")
				if want := []any{map[string]any{"name": "http", "port": int64(80), "targetPort": int64(8080), "protocol": "TCP"}}; !reflect.DeepEqual(sp, want) {
					t.Errorf("service ports = %v, want %v", sp, want)
				}
				wantNested(t, desiredOf(t, s), "NodePort", "spec", "type")
			},
		},
		{
			name:  "resources canonical",
			app:   "    resources: {requests: {cpu: \"0.25\", memory: 65536Ki}, limits: {cpu: 2000m}}\n",
			kinds: []hub.Kind{hub.KindDeployment},
			check: func(t *testing.T, objs map[hub.Kind]hub.NodeSpec) {
				r := container(t, objs[hub.KindDeployment])["resources"]
				want := map[string]any{
					"requests": map[string]any{"cpu": "250m", "memory": "64Mi"},
					"limits":   map[string]any{"cpu": "2"},
				}
				if !reflect.DeepEqual(r, want) {
					t.Errorf("resources = %v, want %v", r, want)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := appObjects(t, tt.hub, tt.app)
			got := slices.Sorted(maps.Keys(objs))
			want := slices.Sorted(slices.Values(tt.kinds))
			if !slices.Equal(got, want) {
				t.Fatalf("kinds = %v, want %v", got, want)
			}
			for _, s := range objs {
				checkNoArtefacts(t, s.ID.String(), desiredOf(t, s).Object)
			}
			tt.check(t, objs)
		})
	}
}

func container(t *testing.T, d hub.NodeSpec) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(desiredOf(t, d).Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("containers = %v, want one", cs)
	}
	c := cs[0].(map[string]any)
	if c["name"] != ContainerName || c["image"] != "nginx" {
		t.Errorf("container name/image = %v/%v", c["name"], c["image"])
	}
	return c
}

func wantNested(t *testing.T, u *unstructured.Unstructured, want any, fields ...string) {
	t.Helper()
	got, ok, err := unstructured.NestedFieldNoCopy(u.Object, fields...)
	if err != nil || !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v (found %v), want %#v", strings.Join(fields, "."), got, ok, want)
	}
}

func wantAbsent(t *testing.T, u *unstructured.Unstructured, fields ...string) {
	t.Helper()
	if v, ok, _ := unstructured.NestedFieldNoCopy(u.Object, fields...); ok {
		t.Errorf("%s = %#v, want absent", strings.Join(fields, "."), v)
	}
}

func TestCompileDiscoveredCluster(t *testing.T) {
	cfg := loadExample(t)
	tests := []struct {
		name string
		info ClusterInfo
		want map[string]hub.Policy
	}{
		{
			name: "prod cluster, hub policy",
			info: ClusterInfo{ID: "capi-prod-1", Labels: map[string]string{"env": "prod", "region": "ap"}},
			want: map[string]hub.Policy{
				"capi-prod-1:casehub/inventory:deployment": hub.PolicyRepair,
				"capi-prod-1:casehub/inventory:service":    hub.PolicyRepair,
			},
		},
		{
			name: "eu cluster with warn policy",
			info: ClusterInfo{ID: "capi-eu", Labels: map[string]string{"region": "eu"}, Policy: hub.PolicyWarn},
			want: map[string]hub.Policy{
				"capi-eu:web/web:deployment": hub.PolicyWarn,
				"capi-eu:web/web:service":    hub.PolicyWarn,
			},
		},
		{
			name: "named in an application's list",
			info: ClusterInfo{ID: "staging", Policy: hub.PolicyRepair},
			want: map[string]hub.Policy{"staging:casehub/canary:deployment": hub.PolicyWarn},
		},
		{name: "matches nothing", info: ClusterInfo{ID: "lab", Labels: map[string]string{"env": "lab"}}, want: map[string]hub.Policy{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]hub.Policy{}
			for _, s := range mustCompileCluster(t, cfg, tt.info) {
				got[s.ID.String()] = s.Policy
				if s.ID.Cluster != tt.info.ID {
					t.Errorf("%s is not on cluster %s", s.ID, tt.info.ID)
				}
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("CompileCluster = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHashTracksChanges(t *testing.T) {
	base := appObjects(t, "", "    config: {a: \"1\"}\n")
	changed := appObjects(t, "", "    config: {a: \"2\"}\n")
	for _, k := range []hub.Kind{hub.KindDeployment, hub.KindConfigMap} {
		if base[k].Hash == changed[k].Hash {
			t.Errorf("%s hash did not change with the config data", k)
		}
	}
	again := appObjects(t, "", "    config: {a: \"1\"}\n")
	if base[hub.KindDeployment].Hash != again[hub.KindDeployment].Hash {
		t.Error("hash is not stable")
	}
}

// desiredOf decodes a compiled spec's desired object.
func desiredOf(t *testing.T, s hub.NodeSpec) *unstructured.Unstructured {
	t.Helper()
	u, err := kubeobj.Object(s)
	if err != nil || u == nil {
		t.Fatalf("%s: desired object: %v (nil %t)", s.ID, err, u == nil)
	}
	return u
}

// mustCompileCluster is CompileCluster, failing the test on an error.
func mustCompileCluster(t testing.TB, cfg *Config, info ClusterInfo) []hub.NodeSpec {
	t.Helper()
	specs, err := CompileCluster(cfg, info)
	if err != nil {
		t.Fatal(err)
	}
	return specs
}

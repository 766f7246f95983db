package config

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/driftwatch/driftwatch/hub"
)

// schemaTypes returns the struct types of the file's schema: Config and
// every struct type its tagged fields lead to (through slices and
// pointers), plus the document types of fields whose public type has no
// tags of its own.
func schemaTypes(t *testing.T) []reflect.Type {
	t.Helper()
	out := []reflect.Type{reflect.TypeFor[execAllowlistEntry]()}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		if slices.Contains(out, typ) {
			return
		}
		out = append(out, typ)
		for i := range typ.NumField() {
			sf := typ.Field(i)
			if !sf.IsExported() || sf.Tag.Get("yaml") == "-" {
				continue
			}
			ft := sf.Type
			for ft.Kind() == reflect.Slice || ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && ft.PkgPath() == typ.PkgPath() {
				walk(ft)
			}
		}
	}
	walk(reflect.TypeFor[Config]())
	return out
}

// TestSchemaTags fails when a field of the public config types has no yaml
// tag (so it would be neither a known key nor read), or a malformed one,
// and checks that the schema covers every section of the file.
func TestSchemaTags(t *testing.T) {
	types := schemaTypes(t)
	var names []string
	for _, typ := range types {
		names = append(names, typ.Name())
		if _, err := buildSchema(typ); err != nil {
			t.Error(err)
		}
	}
	for _, want := range []string{"Config", "Hub", "Cluster", "ClusterAPISource", "Application", "Service", "Resources"} {
		if !slices.Contains(names, want) {
			t.Errorf("schema types %v lack %s", names, want)
		}
	}
	// A document type stands for a public type without tags: they must
	// have the same fields.
	doc, pub := reflect.TypeFor[execAllowlistEntry](), reflect.TypeFor[clientcmdapi.AllowlistEntry]()
	if got, want := exportedFields(doc), exportedFields(pub); !slices.Equal(got, want) {
		t.Errorf("%s has fields %v, %s has %v: add the missing ones to both", doc, got, pub, want)
	}
}

func exportedFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if t.Field(i).IsExported() {
			out = append(out, t.Field(i).Name)
		}
	}
	return out
}

// TestSchemaRejectsBadTags checks buildSchema's own errors.
func TestSchemaRejectsBadTags(t *testing.T) {
	tests := []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[struct{ A string }](), "has no yaml tag"},
		{reflect.TypeFor[struct {
			A string `yaml:"Bad"`
		}](), "not lowerCamelCase"},
		{reflect.TypeFor[struct {
			A string `yaml:"a"`
			B string `yaml:"a"`
		}](), `yaml key "a" is also`},
		{reflect.TypeFor[struct {
			A int `yaml:"a,min=x"`
		}](), "invalid syntax"},
		{reflect.TypeFor[struct {
			A int `yaml:"a,optional"`
		}](), `unknown option "optional"`},
	}
	for _, tt := range tests {
		_, err := buildSchema(tt.typ)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("buildSchema(%s) = %v, want an error containing %q", tt.typ, err, tt.want)
		}
	}
}

// frame places one mapping of a schema type in an otherwise valid config
// and gets the decoded struct back.
type frame struct {
	base []string                        // the entries that make the mapping valid
	drop map[string][]string             // entries of base to leave out when a key is set
	wrap func(mapping string) string     // the whole config around the mapping
	get  func(cfg *Config) reflect.Value // the decoded struct
}

// samples are values for the keys whose type alone does not give a valid
// value that differs from the default (see sampleValue).
var samples = map[string]string{
	"Config.hub":                     "{id: other}",
	"Hub.coordination":               "{namespace: ns}",
	"Config.clusters":                "[{id: c, kubeconfig: /k}, {id: d, kubeconfig: /k}]",
	"Config.clusterAPI":              "[{name: m, kubeconfig: /k}]",
	"Config.applications":            "[{id: a, namespace: ns, image: i, clusters: [c]}]",
	"ClusterAPISource.execAllowlist": "[{command: /usr/bin/true}]",
	"Application.clusters":           "[c, d]",
	"Application.selector":           "env",
	"Application.secretEnv":          "{S: secret/key}",
	"Application.service":            "{port: 80}",
	"Application.resources":          "{requests: {cpu: 1}}",
	"Service.type":                   "NodePort",
	"Resources.requests":             "{cpu: 1}",
	"Resources.limits":               "{cpu: 1}",
	"Hub.ignore":                     "[{paths: [/spec/replicas]}]",
	"Application.ignore":             "[{managers: [hpa]}]",
	"IgnoreRule.kinds":               "[Deployment]",
	"Config.notifications":           "{webhooks: [{name: w, url: 'https://h/x'}]}",
	"Notifications.webhooks":         "[{name: w, url: 'https://h/x'}]",
	"Webhook.url":                    "'https://other/y'",
	"Webhook.format":                 "slack",
	"Webhook.events":                 "[stuck]",
	"Webhook.classes":                "[missing]",
	"Webhook.minSeverity":            "critical",
	"Notifications.kubernetesEvents": "{events: [stuck]}",
	"KubernetesEvents.events":        "[stuck]",
	"KubernetesEvents.classes":       "[missing]",
	"KubernetesEvents.minSeverity":   "critical",
	"Config.terraform":               "[{id: w, dir: /w}]",
	"Workspace.dir":                  "/other",
	"Workspace.binary":               "terraform",
	"Workspace.targets":              "[local_file.a]",
}

// sampleValue returns a valid value for a key of type t that differs from
// the defaults, or "" when there is none.
func sampleValue(t reflect.Type, f schemaField) string {
	switch {
	case t == policyType:
		return string(hub.PolicyWarn)
	case t == durationType:
		return "7s"
	case t.Kind() == reflect.String:
		return "x"
	case t.Kind() == reflect.Bool:
		return "true"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		return fmt.Sprint(f.min + 2)
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "7.5"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return "[x]"
	case t.Kind() == reflect.Map && t.Elem().Kind() == reflect.String:
		return "{k: v}"
	}
	return ""
}

// TestSchemaFieldsAreRead is the reverse of TestSchemaTags: for every key
// of every schema type, setting it in the file changes the field it is the
// tag of, so no key is known but dropped, or read into another field. A
// new key of a plain type needs nothing here; one whose type alone gives
// no valid value needs an entry in samples.
func TestSchemaFieldsAreRead(t *testing.T) {
	const clusters = "clusters: [{id: c, kubeconfig: /k, labels: {env: x}}, {id: d, kubeconfig: /k}]\n"
	const app = "{id: a, namespace: ns, image: i, clusters: [c]"
	frames := map[reflect.Type]frame{
		reflect.TypeFor[Config](): {
			base: []string{"clusters: [{id: c, kubeconfig: /k}]"},
			wrap: func(m string) string { return m },
			get:  func(cfg *Config) reflect.Value { return reflect.ValueOf(*cfg) },
		},
		reflect.TypeFor[Hub](): {
			wrap: func(m string) string { return "hub: " + m + "\n" + clusters },
			get:  func(cfg *Config) reflect.Value { return reflect.ValueOf(cfg.Hub) },
		},
		reflect.TypeFor[Coordination](): {
			base: []string{"namespace: ns", "kubeconfig: /k"},
			wrap: func(m string) string { return "hub: {coordination: " + m + "}\n" + clusters },
			get:  func(cfg *Config) reflect.Value { return reflect.ValueOf(*cfg.Hub.Coordination) },
		},
		reflect.TypeFor[Cluster](): {
			base: []string{"id: c", "context: ctx"},
			drop: map[string][]string{"inCluster": {"context"}},
			wrap: func(m string) string { return "clusters: [" + m + "]\n" },
			get:  func(cfg *Config) reflect.Value { return reflect.ValueOf(cfg.Clusters[0]) },
		},
		reflect.TypeFor[ClusterAPISource](): {
			base: []string{"name: m", "context: ctx"},
			drop: map[string][]string{"inCluster": {"context"}},
			wrap: func(m string) string { return "clusterAPI: [" + m + "]\n" },
			get:  func(cfg *Config) reflect.Value { return reflect.ValueOf(cfg.ClusterAPI[0]) },
		},
		reflect.TypeFor[execAllowlistEntry](): {
			base: []string{"command: /bin/true"},
			wrap: func(m string) string {
				return "clusterAPI: [{name: m, kubeconfig: /k, execAllowlist: [" + m + "]}]\n"
			},
			get: func(cfg *Config) reflect.Value { return reflect.ValueOf(cfg.ClusterAPI[0].ExecAllowlist[0]) },
		},
		reflect.TypeFor[Application](): {
			base: []string{"id: a", "namespace: ns", "image: i", "clusters: [c]"},
			drop: map[string][]string{"selector": {"clusters"}},
			wrap: func(m string) string { return clusters + "applications: [" + m + "]\n" },
			get:  func(cfg *Config) reflect.Value { return reflect.ValueOf(cfg.Applications[0]) },
		},
		reflect.TypeFor[Service](): {
			base: []string{"port: 80"},
			wrap: func(m string) string { return clusters + "applications: [" + app + ", service: " + m + "}]\n" },
			get:  func(cfg *Config) reflect.Value { return reflect.ValueOf(*cfg.Applications[0].Service) },
		},
		reflect.TypeFor[IgnoreRule](): {
			base: []string{"managers: [m]"},
			wrap: func(m string) string { return clusters + "applications: [" + app + ", ignore: [" + m + "]}]\n" },
			get:  func(cfg *Config) reflect.Value { return reflect.ValueOf(cfg.Applications[0].Ignore[0]) },
		},
		reflect.TypeFor[Notifications](): {
			wrap: func(m string) string { return clusters + "notifications: " + m + "\n" },
			get:  func(cfg *Config) reflect.Value { return reflect.ValueOf(cfg.Notifications) },
		},
		reflect.TypeFor[Webhook](): {
			base: []string{"name: w", "url: 'https://h/x'"},
			wrap: func(m string) string { return clusters + "notifications: {webhooks: [" + m + "]}\n" },
			get:  func(cfg *Config) reflect.Value { return reflect.ValueOf(cfg.Notifications.Webhooks[0]) },
		},
		reflect.TypeFor[KubernetesEvents](): {
			wrap: func(m string) string { return clusters + "notifications: {kubernetesEvents: " + m + "}\n" },
			get:  func(cfg *Config) reflect.Value { return reflect.ValueOf(*cfg.Notifications.KubernetesEvents) },
		},
		reflect.TypeFor[Workspace](): {
			base: []string{"id: w", "dir: /w"},
			wrap: func(m string) string { return "terraform: [" + m + "]\n" },
			get:  func(cfg *Config) reflect.Value { return reflect.ValueOf(cfg.Terraform[0]) },
		},
		reflect.TypeFor[Resources](): {
			wrap: func(m string) string { return clusters + "applications: [" + app + ", resources: " + m + "}]\n" },
			get:  func(cfg *Config) reflect.Value { return reflect.ValueOf(cfg.Applications[0].Resources) },
		},
	}
	// Sources render when the config is parsed: they name the example's
	// files by absolute path (the configs are parsed as /srv/config.yaml).
	ex, err := filepath.Abs("examples/sources")
	if err != nil {
		t.Fatal(err)
	}
	platform, chart := ex+"/platform", ex+"/charts/cache"
	const srcClusters = "clusters: [{id: c, kubeconfig: /k, labels: {env: dev}}, {id: d, kubeconfig: /k, labels: {env: staging}}]\n"
	sourceSamples := map[string]string{
		"Config.sources":                 "[{id: s, path: " + platform + ", clusters: [c]}]",
		"Source.path":                    ex + "/platform/rbac.json",
		"Source.kustomize":               "'" + ex + "/kustomize/overlays/${cluster.labels.env}'",
		"Source.helm":                    "{chart: " + chart + "}",
		"Source.clusters":                "[c, d]",
		"Source.selector":                "env",
		"Source.ignore":                  "[{managers: [hpa]}]",
		"Source.prune":                   "{namespaces: true}",
		"HelmChart.chart":                "other",
		"HelmChart.repo":                 "'oci://registry.example.com/charts'",
		"HelmChart.version":              "'~1.2'",
		"HelmChart.interval":             "30s",
		"HelmChart.auth":                 "{usernameFile: u, passwordFile: p}",
		"HelmChart.values":               "{replicas: 2}",
		"HelmChart.valuesFiles":          "[" + ex + "/cache-values/values-dev.yaml]",
		"HelmChart.kubeVersion":          "'1.30.1'",
		"HelmChart.namespace":            "other",
		"HelmChart.releaseName":          "other",
		"Source.namespace":               "other",
		"SourcePrune.namespaces":         "true",
		"Source.id":                      "other",
		"Source.policy":                  "warn",
		"Source.progressDeadlineSeconds": "30",
	}
	frames[reflect.TypeFor[Source]()] = frame{
		base: []string{"id: s", "path: " + platform, "clusters: [c]"},
		drop: map[string][]string{"kustomize": {"path"}, "helm": {"path"}, "selector": {"clusters"}, "git": {"path"}},
		wrap: func(m string) string {
			if strings.Contains(m, "git: ") {
				m = strings.Replace(m, "{", "{path: platform, ", 1) // inside the checkout
			}
			return srcClusters + "sources: [" + m + "]\n"
		},
		get: func(cfg *Config) reflect.Value { return reflect.ValueOf(cfg.Sources[0]) },
	}
	// The chart comes from a repository (the fields that need repo are
	// read only with it); ChartPull below serves testdata's mini chart.
	frames[reflect.TypeFor[HelmChart]()] = frame{
		base: []string{"chart: mini", "repo: 'https://charts.example.com'"},
		wrap: func(m string) string { return srcClusters + "sources: [{id: s, clusters: [c], helm: " + m + "}]\n" },
		get:  func(cfg *Config) reflect.Value { return reflect.ValueOf(*cfg.Sources[0].Helm) },
	}
	frames[reflect.TypeFor[HelmAuth]()] = frame{
		base: []string{"usernameFile: u", "passwordFile: p"},
		wrap: func(m string) string {
			return srcClusters + "sources: [{id: s, clusters: [c], helm: {chart: mini, repo: 'https://charts.example.com', auth: " + m + "}}]\n"
		},
		get: func(cfg *Config) reflect.Value { return reflect.ValueOf(cfg.Sources[0].Helm.Auth) },
	}
	// Git sources render from a checkout: the examples' folder stands in
	// for one.
	const gitRepo = "url: 'https://h/r.git'"
	gitWrap := func(section string) func(string) string {
		return func(m string) string {
			return srcClusters + "sources: [{id: s, clusters: [c], path: platform, git: {" + gitRepo + ", " + section + ": " + m + "}}]\n"
		}
	}
	frames[reflect.TypeFor[GitSource]()] = frame{
		base: []string{gitRepo},
		wrap: func(m string) string {
			return srcClusters + "sources: [{id: s, clusters: [c], path: platform, git: " + m + "}]\n"
		},
		get: func(cfg *Config) reflect.Value { return reflect.ValueOf(*cfg.Sources[0].Git) },
	}
	frames[reflect.TypeFor[GitAuth]()] = frame{
		wrap: gitWrap("auth"),
		get:  func(cfg *Config) reflect.Value { return reflect.ValueOf(cfg.Sources[0].Git.Auth) },
	}
	frames[reflect.TypeFor[GitVerify]()] = frame{
		base: []string{"keysFile: k"},
		wrap: gitWrap("verify"),
		get:  func(cfg *Config) reflect.Value { return reflect.ValueOf(*cfg.Sources[0].Git.Verify) },
	}
	sourceSamples["Source.git"] = "{" + gitRepo + "}"
	sourceSamples["GitSource.url"] = "'https://h/other.git'"
	sourceSamples["GitSource.interval"] = "30s"
	sourceSamples["GitSource.auth"] = "{tokenFile: t}"
	sourceSamples["GitSource.verify"] = "{keysFile: k}"
	sourceSamples["GitVerify.keysFile"] = "other"
	opts := testOptions()
	opts.GitCheckout = func(Hub, string, GitSource) (GitCheckout, error) {
		return GitCheckout{Dir: ex, Commit: strings.Repeat("a", 40)}, nil
	}
	mini, err := filepath.Abs("testdata/sources/mini")
	if err != nil {
		t.Fatal(err)
	}
	opts.ChartPull = func(Hub, string, HelmChart) (GitCheckout, error) {
		return GitCheckout{Dir: filepath.Dir(mini), Archive: mini, Commit: "0.1.0@sha256:" + strings.Repeat("a", 64), Ref: "0.1.0"}, nil
	}
	frames[reflect.TypeFor[SourcePrune]()] = frame{
		wrap: func(m string) string {
			return srcClusters + "sources: [{id: s, clusters: [c], path: " + platform + ", prune: " + m + "}]\n"
		},
		get: func(cfg *Config) reflect.Value { return reflect.ValueOf(cfg.Sources[0].Prune) },
	}
	for _, typ := range schemaTypes(t) {
		fr, ok := frames[typ]
		if !ok {
			t.Errorf("no frame for schema type %s: add one to this test", typ)
			continue
		}
		for _, f := range (&walker{}).schemaOf(typ).fields {
			sf := typ.Field(f.index)
			name := typ.Name() + "." + f.name
			t.Run(name, func(t *testing.T) {
				value, ok := samples[name]
				if v, isSource := sourceSamples[name]; isSource {
					value, ok = v, true
				}
				if !ok {
					value = sampleValue(sf.Type, f)
				}
				if value == "" {
					t.Fatalf("no sample value for %s (%s): add one to samples", name, sf.Type)
				}
				decode := func(set bool) reflect.Value {
					var entries []string
					for _, e := range fr.base {
						k, _, _ := strings.Cut(e, ":")
						if !set || k != f.name && !slices.Contains(fr.drop[f.name], k) {
							entries = append(entries, e)
						}
					}
					if set {
						entries = append(entries, f.name+": "+value)
					}
					src := fr.wrap("{" + strings.Join(entries, ", ") + "}")
					cfg, err := Parse("/srv/config.yaml", []byte(src), opts)
					if err != nil {
						t.Fatalf("config:\n%s\nerrors:\n%v", src, err)
					}
					return fr.get(cfg)
				}
				without, with := decode(false), decode(true)
				// A document type's fields have the public type's names.
				got := with.FieldByName(sf.Name)
				if !got.IsValid() {
					t.Fatalf("%s has no field %s", with.Type(), sf.Name)
				}
				if reflect.DeepEqual(without.FieldByName(sf.Name).Interface(), got.Interface()) {
					t.Errorf("setting %s: %s leaves %s.%s at %v: the key is known but not read into its field",
						f.name, value, typ.Name(), sf.Name, got)
				}
			})
		}
	}
}

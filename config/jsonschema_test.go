package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Where the generated files are committed, from this package's folder.
const (
	schemaFile    = "../docs/config.schema.json"
	referenceFile = "../docs/configuration.md"
)

// TestGeneratedDocs: the committed schema and reference are what the code
// generates now.
func TestGeneratedDocs(t *testing.T) {
	schema, reference, err := GenerateDocs(os.DirFS("."))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		want []byte
	}{{schemaFile, schema}, {referenceFile, reference}} {
		got, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, f.want) {
			t.Errorf("%s is out of step with the config types: run go generate ./config", f.path)
		}
	}
	if !json.Valid(schema) {
		t.Error("the schema is not valid JSON")
	}
	// The descriptions speak of keys and values, not Go names.
	if m := regexp.MustCompile(`\b(hub\.)?(Default|Min)[A-Z]\w*`).Find(reference); m != nil {
		t.Errorf("the reference names the Go constant %s: add it to docConstants", m)
	}
}

// compileSchema compiles the generated schema.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	data, _, err := GenerateDocs(os.DirFS("."))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaURL, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(SchemaURL)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// validateYAML validates a YAML config against the schema, as
// yaml-language-server does: converted to JSON first.
func validateYAML(s *jsonschema.Schema, data []byte) error {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return err
	}
	j, err := json.Marshal(v)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// testLoadOptions expand nothing from the machine running the tests.
func testLoadOptions() LoadOptions {
	return LoadOptions{Getenv: func(string) string { return "" }, HomeDir: "/home/test"}
}

// exampleConfigs are the example configs of the repository, which start
// with the schema modeline.
func exampleConfigs(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, glob := range []string{"examples/*.yaml", "../deploy/*/driftwatch.yaml", "../deploy/overlays/*/driftwatch.yaml"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 4 {
		t.Fatalf("only %d example configs: %v", len(files), files)
	}
	return files
}

// TestSchemaAcceptsExamples: every example config of the repository, and
// the starter config, is valid for the schema and for Parse, and starts
// with the modeline: the examples' points at docs/config.schema.json.
func TestSchemaAcceptsExamples(t *testing.T) {
	s := compileSchema(t)
	configs := map[string][]byte{}
	for _, f := range exampleConfigs(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		configs[f] = data
	}
	for _, opts := range []StarterOptions{{}, {KubeconfigPath: "/home/test/.kube/fleet.yaml"}} {
		data, err := Starter(starterKubeconfig(threeContexts...), opts)
		if err != nil {
			t.Fatal(err)
		}
		configs[fmt.Sprintf("starter %+v", opts)] = data
	}
	for name, data := range configs {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse(name, data, testLoadOptions()); err != nil {
				t.Errorf("Parse: %v", err)
			}
			if err := validateYAML(s, data); err != nil {
				t.Errorf("schema: %v", err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			target, ok := strings.CutPrefix(first, "# yaml-language-server: $schema=")
			switch {
			case !ok:
				t.Errorf("first line %q: want the yaml-language-server modeline", first)
			case strings.HasPrefix(name, "starter"):
				if first != SchemaModeline {
					t.Errorf("first line %q, want %q", first, SchemaModeline)
				}
			case filepath.Join(filepath.Dir(name), target) != filepath.Clean(schemaFile):
				t.Errorf("the modeline points at %s, not at %s", target, schemaFile)
			}
		})
	}
}

// TestSchemaRejects: configs that Parse refuses for a value of the wrong
// shape are refused by the schema too.
func TestSchemaRejects(t *testing.T) {
	s := compileSchema(t)
	const base = "clusters: [{id: c1, kubeconfig: /kc}]\n"
	app := func(fields string) string {
		return base + "applications: [{id: web, namespace: web, clusters: [c1], image: nginx, " + fields + "}]\n"
	}
	tests := []struct{ name, config string }{
		{"unknown top-level key", base + "hubb: {id: x}\n"},
		{"unknown key in a cluster", "clusters: [{id: c1, kubeconfig: /kc, contxt: x}]\n"},
		{"unknown key in an application", app("replica: 2")},
		{"unknown key in a webhook", base + "notifications: {webhooks: [{name: w, url: https://x, retries: 3}]}\n"},
		{"wrong type: replicas", app("replicas: three")},
		{"wrong type: clusters", "clusters: {id: c1}\n"},
		{"wrong type: labels", "clusters: [{id: c1, kubeconfig: /kc, labels: [env]}]\n"},
		{"wrong type: inCluster", "clusters: [{id: c1, inCluster: yes please}]\n"},
		{"wrong type: resync without a unit", base + "hub: {resync: 300}\n"},
		{"bad enum: hub policy", base + "hub: {policy: fix}\n"},
		{"bad enum: application policy", app("policy: repaired")},
		{"bad enum: service type", app("service: {port: 80, type: ExternalName}")},
		{"bad enum: webhook format", base + "notifications: {webhooks: [{name: w, url: https://x, format: xml}]}\n"},
		{"bad enum: webhook event", base + "notifications: {webhooks: [{name: w, url: https://x, events: [drift]}]}\n"},
		{"missing required: image", base + "applications: [{id: web, namespace: web, clusters: [c1]}]\n"},
		{"out of range: port", app("port: 70000")},
		{"null kubeconfig", "clusters: [{id: c1, kubeconfig: }]\n"},
		{"bad secret reference", app("secretEnv: {DB_PASSWORD: password}")},
		{"bad id", "clusters: [{id: Prod_EU, kubeconfig: /kc}]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse("bad.yaml", []byte(tt.config), testLoadOptions()); err == nil {
				t.Errorf("Parse accepts:\n%s", tt.config)
			}
			if err := validateYAML(s, []byte(tt.config)); err == nil {
				t.Errorf("the schema accepts:\n%s", tt.config)
			}
		})
	}
}

// TestSchemaAgreesWithDecoder: for every key of the schema, values that
// break its type, null, its enum, pattern, range or item rules, and an
// unknown key inside it are refused by the schema exactly when Parse
// reports a problem at that key (or under it). The base configs hold every
// section; they are valid for both.
func TestSchemaAgreesWithDecoder(t *testing.T) {
	s := compileSchema(t)
	data, _, err := GenerateDocs(os.DirFS("."))
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	ignore := []any{map[string]any{"paths": []any{"/spec/replicas"}, "kinds": []any{"Deployment"}}}
	bases := []map[string]any{{
		"hub":      map[string]any{"coordination": map[string]any{"namespace": "ns", "kubeconfig": "/kc"}, "ignore": ignore},
		"clusters": []any{map[string]any{"id": "c1", "kubeconfig": "/kc", "context": "c1", "labels": map[string]any{"env": "prod"}}},
		"clusterAPI": []any{map[string]any{"name": "mgmt", "kubeconfig": "/kc", "labels": map[string]any{"env": "prod"},
			"namespaces": []any{"fleet"}, "execAllowlist": []any{map[string]any{"command": "aws"}}}},
		"applications": []any{map[string]any{"id": "web", "namespace": "ns", "clusters": []any{"c1"}, "image": "nginx", "port": 8080,
			"service": map[string]any{"port": 80}, "resources": map[string]any{"requests": map[string]any{"cpu": "1"}},
			"secretEnv": map[string]any{"DB_PASSWORD": "db/password"}, "ignore": ignore}},
		"notifications": map[string]any{"webhooks": []any{map[string]any{"name": "w", "url": "https://example.com/hook",
			"events": []any{"stuck"}, "classes": []any{"modified"}}}},
	}, {
		"clusters":  []any{map[string]any{"id": "c1", "kubeconfig": "/kc"}},
		"terraform": []any{map[string]any{"id": "files", "dir": "/tf", "targets": []any{"local_file.motd"}, "vars": map[string]any{"a": "b"}}},
	}}
	checked := 0
	for _, base := range bases {
		if problems, schemaErr := judge(t, s, base, ""); len(problems) > 0 || schemaErr != nil {
			t.Fatalf("base config refused: %v %v", problems, schemaErr)
		}
		walkSchema(root, base, nil, func(steps []any, prop map[string]any, current any) {
			path := fieldPath(steps)
			for _, m := range mutations(prop, current) {
				if path == "applications[0].selector" && m.value != nil {
					// The base application lists its clusters: a
					// selector too is refused across fields.
					continue
				}
				checked++
				doc := setAt(t, base, steps, m.value)
				problems, schemaErr := judge(t, s, doc, path)
				if (len(problems) > 0) != (schemaErr != nil) {
					v, _ := json.Marshal(m.value)
					t.Errorf("%s = %s (%s): Parse reports %q, the schema %v", path, v, m.name, problems, schemaErr)
				}
			}
		})
	}
	t.Logf("%d mutations checked", checked)
	if checked < 300 {
		t.Errorf("only %d mutations checked", checked)
	}
}

// judge parses doc (JSON is YAML) and validates it; problems are the
// problems Parse reports at path or under it.
func judge(t *testing.T, s *jsonschema.Schema, doc any, path string) (problems []string, schemaErr error) {
	t.Helper()
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("mutated.yaml", data, testLoadOptions()); err != nil {
		var l ErrorList
		if !errors.As(err, &l) {
			t.Fatal(err)
		}
		for _, e := range l {
			if path == "" || e.Field == path || strings.HasPrefix(e.Field, path+".") || strings.HasPrefix(e.Field, path+"[") {
				problems = append(problems, e.Field+": "+e.Msg)
			}
		}
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return problems, s.Validate(inst)
}

// walkSchema calls visit for every key of the object schema sch that doc
// (a value of it) may hold, with its path (keys and list indexes), its
// schema and its value in doc, and descends into the objects doc holds.
func walkSchema(sch map[string]any, doc any, steps []any, visit func(steps []any, prop map[string]any, current any)) {
	obj, _ := doc.(map[string]any)
	props, _ := sch["properties"].(map[string]any)
	for name, p := range props {
		prop := p.(map[string]any)
		at := append(slices.Clone(steps), name)
		visit(at, prop, obj[name])
		switch v := obj[name].(type) {
		case map[string]any:
			walkSchema(prop, v, at, visit)
		case []any:
			if items, ok := prop["items"].(map[string]any); ok && len(v) > 0 {
				walkSchema(items, v[0], append(at, 0), visit)
			}
		}
	}
}

// mutation is a value given to a key.
type mutation struct {
	name  string
	value any
}

// notValid matches none of the schema's patterns.
const notValid = "Not_Valid!"

// mutations are the values that break prop's rules one at a time (and
// null), given its current value.
func mutations(prop map[string]any, current any) []mutation {
	ms := []mutation{{"null", nil}, {"wrong type", wrongType(prop)}}
	if allows(prop, "string") {
		ms = append(ms, mutation{"a word", "bogus"})
	}
	if _, ok := prop["pattern"]; ok {
		ms = append(ms, mutation{"not matching the pattern", notValid})
	}
	if v, ok := prop["minimum"].(float64); ok {
		ms = append(ms, mutation{"below the minimum", int64(v) - 1})
	}
	if v, ok := prop["maximum"].(float64); ok {
		ms = append(ms, mutation{"above the maximum", int64(v) + 1})
	}
	if v, ok := prop["exclusiveMinimum"].(float64); ok {
		ms = append(ms, mutation{"at the exclusive minimum", v})
	}
	if _, ok := prop["minItems"]; ok {
		ms = append(ms, mutation{"too few items", []any{}})
	}
	if items, ok := prop["items"].(map[string]any); ok {
		ms = append(ms, mutation{"a null item", []any{nil}}, mutation{"an item of the wrong type", []any{wrongType(items)}})
		if _, ok := items["enum"]; ok {
			ms = append(ms, mutation{"an item not in the enum", []any{"bogus"}})
		}
		if _, ok := items["pattern"]; ok {
			ms = append(ms, mutation{"an item not matching the pattern", []any{notValid}})
		}
	}
	switch ap := prop["additionalProperties"].(type) {
	case bool:
		if m, ok := current.(map[string]any); ok {
			ms = append(ms, mutation{"an unknown key", merged(m, map[string]any{"bogusKey": 1})})
		}
	case map[string]any:
		ms = append(ms, mutation{"a value of the wrong type", map[string]any{"K": wrongType(ap)}})
		if _, ok := ap["pattern"]; ok {
			ms = append(ms, mutation{"a value not matching the pattern", map[string]any{"K": notValid}})
		}
	}
	return ms
}

// allows reports whether prop allows values of JSON type typ.
func allows(prop map[string]any, typ string) bool {
	switch v := prop["type"].(type) {
	case string:
		return v == typ
	case []any:
		return slices.Contains(v, any(typ))
	}
	return false
}

// wrongType returns a value of a JSON type that prop does not allow.
func wrongType(prop map[string]any) any {
	for _, c := range []struct {
		typ   string
		value any
	}{{"string", "x"}, {"number", 7.5}, {"boolean", true}, {"array", []any{"x"}}, {"object", map[string]any{"k": "v"}}} {
		if !allows(prop, c.typ) {
			return c.value
		}
	}
	panic(fmt.Sprintf("every type allowed: %v", prop["type"]))
}

// setAt returns a copy of doc with the value at steps set to v.
func setAt(t *testing.T, doc any, steps []any, v any) any {
	t.Helper()
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	parent := out
	for _, s := range steps[:len(steps)-1] {
		switch s := s.(type) {
		case string:
			parent = parent.(map[string]any)[s]
		case int:
			parent = parent.([]any)[s]
		}
	}
	switch last := steps[len(steps)-1].(type) {
	case string:
		parent.(map[string]any)[last] = v
	case int:
		parent.([]any)[last] = v
	}
	return out
}

// fieldPath writes steps as the decoder's errors name fields:
// applications[0].service.port.
func fieldPath(steps []any) string {
	var b strings.Builder
	for _, s := range steps {
		switch s := s.(type) {
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s)
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		}
	}
	return b.String()
}

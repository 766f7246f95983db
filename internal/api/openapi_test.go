package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/hub"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
)

// wireTypes are the Go types of every document the API reads or writes,
// each documented in openapi.yaml under components.schemas by its name.
var wireTypes = []any{
	apiv1.Snapshot{}, apiv1.Delta{}, apiv1.Cluster{}, apiv1.Node{}, apiv1.Repair{}, apiv1.Drift{},
	apiv1.FieldDiff{}, apiv1.Attribution{}, apiv1.TimelineEntry{}, apiv1.FeedEntry{}, apiv1.Hold{},
	apiv1.IgnoredField{}, apiv1.Contest{}, apiv1.FailingSource{}, apiv1.GitSource{},
	apiv1.HoldDocument{}, apiv1.HoldList{}, apiv1.NodeDetail{}, apiv1.Replica{}, apiv1.ReplicaList{}, apiv1.Whoami{}, apiv1.OverrideNote{}, apiv1.Error{}, apiv1.ActionStatus{},
	PolicyRequest{}, PauseRequest{}, HoldRequest{},
}

// oaSchema is the part of an OpenAPI schema object the test reads.
type oaSchema struct {
	Type                 string               `json:"type"`
	Format               string               `json:"format"`
	Ref                  string               `json:"$ref"`
	AllOf                []*oaSchema          `json:"allOf"`
	Items                *oaSchema            `json:"items"`
	AdditionalProperties json.RawMessage      `json:"additionalProperties"`
	Properties           map[string]*oaSchema `json:"properties"`
	Required             []string             `json:"required"`
	Description          string               `json:"description"`
	Enum                 []string             `json:"enum"`
}

// ref returns the schema's $ref, directly or as its only allOf.
func (s *oaSchema) ref() string {
	if len(s.AllOf) == 1 {
		return s.AllOf[0].Ref
	}
	return s.Ref
}

func loadOpenAPI(t *testing.T) (doc struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]*oaSchema `json:"schemas"`
	} `json:"components"`
}, raw []byte) {
	t.Helper()
	y, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	raw, err = yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	return doc, raw
}

// jsonField is one field of a wire struct as encoding/json sees it.
type jsonField struct {
	name     string
	optional bool // omitempty or omitzero
	typ      reflect.Type
}

// jsonFields lists a struct's JSON fields, flattening embedded structs.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for f := range t.Fields() {
		tag, hasTag := f.Tag.Lookup("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && !hasTag {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		optional := slices.Contains(strings.Split(opts, ","), "omitempty") || slices.Contains(strings.Split(opts, ","), "omitzero")
		out = append(out, jsonField{name: name, optional: optional, typ: f.Type})
	}
	return out
}

// checkType reports how schema s fails to describe Go type typ ("" when it
// does).
func checkType(typ reflect.Type, s *oaSchema) string {
	durationType := reflect.TypeFor[apiv1.Duration]()
	timeType := reflect.TypeFor[time.Time]()
	switch {
	case typ == durationType:
		if s.ref() != "#/components/schemas/Duration" {
			return "want $ref Duration"
		}
		return ""
	case typ == timeType:
		if s.Type != "string" || s.Format != "date-time" {
			return "want string date-time"
		}
		return ""
	}
	switch typ.Kind() {
	case reflect.Pointer:
		return checkType(typ.Elem(), s)
	case reflect.Struct:
		if want := "#/components/schemas/" + typ.Name(); s.ref() != want {
			return "want $ref " + want
		}
		return ""
	case reflect.String:
		return want(s, "string")
	case reflect.Bool:
		return want(s, "boolean")
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint64:
		return want(s, "integer")
	case reflect.Float64:
		return want(s, "number")
	case reflect.Slice:
		if s.Type != "array" || s.Items == nil {
			return "want array with items"
		}
		if why := checkType(typ.Elem(), s.Items); why != "" {
			return "items: " + why
		}
		return ""
	case reflect.Map:
		if s.Type != "object" || len(s.AdditionalProperties) == 0 {
			return "want object with additionalProperties"
		}
		if typ.Elem().Kind() == reflect.Interface {
			if string(s.AdditionalProperties) != "true" {
				return "want additionalProperties: true"
			}
			return ""
		}
		var ap oaSchema
		if err := json.Unmarshal(s.AdditionalProperties, &ap); err != nil {
			return "additionalProperties: " + err.Error()
		}
		if why := checkType(typ.Elem(), &ap); why != "" {
			return "additionalProperties: " + why
		}
		return ""
	}
	return "no rule for Go type " + typ.String()
}

func want(s *oaSchema, typ string) string {
	if s.Type != typ {
		return "want type " + typ + ", document says " + s.Type
	}
	return ""
}

// TestOpenAPIMatchesWireTypes fails when a wire field is added, removed,
// renamed, retyped or made optional without openapi.yaml saying so, or when
// a documented schema has no wire type.
func TestOpenAPIMatchesWireTypes(t *testing.T) {
	doc, _ := loadOpenAPI(t)
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi = %q, want 3.x", doc.OpenAPI)
	}
	schemas := doc.Components.Schemas
	documented := map[string]bool{"Duration": true}
	for _, v := range wireTypes {
		typ := reflect.TypeOf(v)
		name := typ.Name()
		documented[name] = true
		t.Run(name, func(t *testing.T) {
			s, ok := schemas[name]
			if !ok {
				t.Fatalf("openapi.yaml has no schema %s", name)
			}
			if s.Description == "" {
				t.Errorf("schema %s has no description", name)
			}
			seen := map[string]bool{}
			for _, f := range jsonFields(typ) {
				seen[f.name] = true
				p, ok := s.Properties[f.name]
				if !ok {
					t.Errorf("%s.%s: in the Go type, not in openapi.yaml", name, f.name)
					continue
				}
				if p.Description == "" {
					t.Errorf("%s.%s: no description", name, f.name)
				}
				if why := checkType(f.typ, p); why != "" {
					t.Errorf("%s.%s (%s): %s", name, f.name, f.typ, why)
				}
				if req := slices.Contains(s.Required, f.name); req == f.optional {
					t.Errorf("%s.%s: required in openapi.yaml = %v, but omitempty/omitzero = %v", name, f.name, req, f.optional)
				}
			}
			for p := range s.Properties {
				if !seen[p] {
					t.Errorf("%s.%s: in openapi.yaml, not in the Go type", name, p)
				}
			}
			for _, r := range s.Required {
				if !seen[r] {
					t.Errorf("%s: required %q is not a field", name, r)
				}
			}
		})
	}
	for name := range schemas {
		if !documented[name] {
			t.Errorf("openapi.yaml documents schema %s, which is no wire type (add it to wireTypes or remove it)", name)
		}
	}
}

// TestOpenAPIRoutesAndRefs checks that every route the package's muxes
// register (read from its source) is in the document, and that every $ref
// in it resolves.
// TestOpenAPIClusterStates: the cluster state's enum lists every state
// the hub reports.
func TestOpenAPIClusterStates(t *testing.T) {
	doc, _ := loadOpenAPI(t)
	c, ok := doc.Components.Schemas["Cluster"]
	if !ok || c.Properties["state"] == nil {
		t.Fatal("openapi.yaml has no Cluster.state")
	}
	var want []string
	for _, st := range hub.ClusterStates() {
		want = append(want, string(st))
	}
	if got := c.Properties["state"].Enum; !slices.Equal(got, want) {
		t.Errorf("Cluster.state enum = %v, want %v", got, want)
	}
}

func TestOpenAPIRoutesAndRefs(t *testing.T) {
	doc, raw := loadOpenAPI(t)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	route := regexp.MustCompile(`mux\.Handle(?:Func)?\("([A-Z]+) ([^"]+)"`)
	wildcardRest := regexp.MustCompile(`\{(\w+)\.\.\.\}`)
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range route.FindAllStringSubmatch(string(src), -1) {
			n++
			method, path := strings.ToLower(m[1]), wildcardRest.ReplaceAllString(m[2], "{$1}")
			if _, ok := doc.Paths[path][method]; !ok {
				t.Errorf("%s registers %s %s; openapi.yaml does not document it", f, m[1], path)
			}
		}
	}
	if n < 10 {
		t.Fatalf("found %d routes in the package's source: the pattern no longer matches how routes are registered", n)
	}
	var all any
	if err := json.Unmarshal(raw, &all); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				if !resolves(all, ref) {
					t.Errorf("$ref %q does not resolve", ref)
				}
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(all)
}

// resolves reports whether a local $ref ("#/a/b") names something in doc.
func resolves(doc any, ref string) bool {
	path, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return false
	}
	cur := doc
	for _, seg := range strings.Split(path, "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[seg]; !ok {
			return false
		}
	}
	return true
}

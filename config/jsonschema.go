package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/notify"
)

//go:generate go run ./internal/gendocs

// SchemaURL is where the JSON Schema of the config file is published (the
// repository's docs/config.schema.json); it is the schema's $id.
const SchemaURL = "https://raw.githubusercontent.com/driftwatch/driftwatch/main/docs/config.schema.json"

// SchemaModeline is the comment that points yaml-language-server, and the
// editors built on it, at the schema when it is a config file's first
// line. Starter writes it.
const SchemaModeline = "# yaml-language-server: $schema=" + SchemaURL

// The JSON Schema of the config file and its reference (docs/
// config.schema.json and docs/configuration.md) are generated from the
// types of the file's sections, the decoder's single source of truth (see
// schema.go): the yaml tags give the keys, their order, which are required
// and the integer ranges; the Go types give the value types; the fields'
// doc comments give the descriptions; Parse itself gives the defaults
// (what it fills in for keys left out of a minimal config, see
// probeDefaults); and what the decoder's hooks accept beyond the type,
// where the values are fixed or shaped, is in facets. The schema checks
// each value on its own; `driftwatch check` also checks what spans fields
// and entries (references, duplicates, selectors).

// durationPattern is what a Go duration such as 90s or 1h30m looks like
// (time.ParseDuration), without a sign: the decoder wants it positive.
const durationPattern = `^\+?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`

// dnsLabelPattern is an RFC 1123 label, the form of ids and namespaces.
const dnsLabelPattern = `^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`

// secretKeyRefPattern is a secretEnv value, <secret>/<key>: a DNS
// subdomain and a Secret data key.
const secretKeyRefPattern = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[-._a-zA-Z0-9]+$`

// binaryPattern is a workspace's binary: tofu, terraform, or a path (with
// a '/', or starting with ~ or a $VAR).
const binaryPattern = `^(tofu|terraform|~.*|\$.*|.*/.*)$`

// kindSlugPattern is the kind of an ignore rule: Kind or Kind.group.
const kindSlugPattern = `^[A-Za-z][A-Za-z0-9]*(\.[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)*$`

// urlPattern is a webhook URL: http or https, unless it holds a $VAR.
const urlPattern = `^(https?://[^/?#].*|.*\$.*)$`

// scalarTypes are the JSON types of a YAML scalar: the decoder reads a
// string field from any scalar, as written (`version: 1.10` is "1.10").
func scalarTypes() []string { return []string{"string", "number", "boolean"} }

// jsonSchema is a JSON Schema (draft 2020-12) node, its keywords in the
// order they are written.
type jsonSchema struct {
	Schema               string      `json:"$schema,omitempty"`
	ID                   string      `json:"$id,omitempty"`
	Title                string      `json:"title,omitempty"`
	Description          string      `json:"description,omitempty"`
	Type                 typeList    `json:"type,omitempty"`
	Enum                 []any       `json:"enum,omitempty"`
	Default              any         `json:"default,omitempty"`
	Pattern              string      `json:"pattern,omitempty"`
	Minimum              *int64      `json:"minimum,omitempty"`
	Maximum              *int64      `json:"maximum,omitempty"`
	ExclusiveMinimum     *int64      `json:"exclusiveMinimum,omitempty"`
	MinItems             *int        `json:"minItems,omitempty"`
	Items                *jsonSchema `json:"items,omitempty"`
	Required             []string    `json:"required,omitempty"`
	Properties           properties  `json:"properties,omitempty"`
	AdditionalProperties any         `json:"additionalProperties,omitempty"`

	// kind names the value's type for the reference: "string",
	// "duration", "list of string", ...
	kind string
	// inherited marks a field whose default is another field's value
	// (a cluster's policy is the hub's).
	inherited bool
}

// typeList is the type keyword: one type, or several.
type typeList []string

// MarshalJSON writes one type as a string, several as a list.
func (l typeList) MarshalJSON() ([]byte, error) {
	if len(l) == 1 {
		return marshal(l[0])
	}
	return marshal([]string(l))
}

// property is one key of an object schema.
type property struct {
	name   string
	schema *jsonSchema
}

// properties are an object's keys, in schema order.
type properties []property

// MarshalJSON writes the properties as an object, in order.
func (ps properties) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(p.name)
		if err != nil {
			return nil, err
		}
		v, err := marshal(p.schema)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal is json.Marshal without escaping <, > and &, which descriptions
// hold ("capi:<name>/<namespace>").
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// facet is what a field's decoder hook accepts beyond its Go type.
type facet struct {
	enum     []string // the values, or the list items', are one of these
	pattern  string   // the string values (or items) match this
	nonNull  bool     // an empty value is refused, not read as left out
	minItems int      // a list holds at least this many items
}

// facets are the hooks' rules a schema can say, by "Type.Field". Every
// entry must name a field of the file (GenerateDocs fails otherwise).
func facets() map[string]facet {
	dnsLabel := facet{pattern: dnsLabelPattern}
	return map[string]facet{
		"Hub.ID":                         dnsLabel,
		"Hub.Coordination":               {nonNull: true},
		"Coordination.Kubeconfig":        {nonNull: true},
		"Coordination.Namespace":         dnsLabel,
		"Cluster.ID":                     dnsLabel,
		"Cluster.Kubeconfig":             {nonNull: true},
		"Cluster.Namespaces":             dnsLabel,
		"ClusterAPISource.Name":          dnsLabel,
		"ClusterAPISource.Kubeconfig":    {nonNull: true},
		"ClusterAPISource.Namespaces":    dnsLabel,
		"ClusterAPISource.ExecAllowlist": {nonNull: true, minItems: 1},
		"Application.ID":                 dnsLabel,
		"Application.Namespace":          dnsLabel,
		"Application.Clusters":           {minItems: 1},
		"Service.Type":                   {enum: serviceTypes()},
		"IgnoreRule.Kinds":               {pattern: kindSlugPattern},
		"Source.ID":                      dnsLabel,
		"Source.Path":                    {nonNull: true},
		"Source.Kustomize":               {nonNull: true},
		"Source.Namespace":               dnsLabel,
		"Source.Clusters":                {minItems: 1},
		"HelmChart.ReleaseName":          dnsLabel,
		"HelmChart.Namespace":            dnsLabel,
		"HelmChart.KubeVersion":          {pattern: kubeVersionPattern.String()},
		"Webhook.Name":                   dnsLabel,
		"Webhook.URL":                    {pattern: urlPattern},
		"Webhook.Format":                 {enum: strs([]notify.Format{notify.FormatJSON, notify.FormatSlack})},
		"Webhook.Events":                 {enum: strs(notify.EventTypes())},
		"Webhook.Classes":                {enum: driftClasses()},
		"Webhook.MinSeverity":            {enum: strs(notify.Severities())},
		"KubernetesEvents.Events":        {enum: strs(notify.ObjectEventTypes())},
		"KubernetesEvents.Classes":       {enum: driftClasses()},
		"KubernetesEvents.MinSeverity":   {enum: strs(notify.Severities())},
		"Workspace.ID":                   dnsLabel,
		"Workspace.Binary":               {pattern: binaryPattern, nonNull: true},
		"Workspace.Targets":              {minItems: 1},
	}
}

// defaultsElsewhere are defaults that Parse leaves to the package that
// uses the field (zero in the Config), by "Type.Field".
func defaultsElsewhere() map[string]any {
	return map[string]any{
		"Webhook.PerMinute":          notify.DefaultPerMinute,
		"Webhook.Burst":              notify.DefaultBurst,
		"Webhook.QueueSize":          notify.DefaultQueueSize,
		"Webhook.Timeout":            shortDuration(notify.DefaultTimeout),
		"Webhook.MaxAttempts":        notify.DefaultMaxAttempts,
		"KubernetesEvents.PerMinute": notify.DefaultKubernetesEventsPerMinute,
		"KubernetesEvents.Burst":     notify.DefaultKubernetesEventsBurst,
	}
}

// GenerateDocs returns the JSON Schema of the config file and its
// reference in Markdown (docs/config.schema.json and
// docs/configuration.md), made from this package's types with the doc
// comments read from its Go files in src (the package's folder).
// `go generate ./config` writes them.
func GenerateDocs(src fs.FS) (schema, reference []byte, err error) {
	docs, err := readDocs(src)
	if err != nil {
		return nil, nil, err
	}
	defaults, inherited, err := probeDefaults()
	if err != nil {
		return nil, nil, err
	}
	g := &schemaGen{docs: docs, facets: facets(), defaults: defaults, inherited: inherited, used: map[string]bool{},
		keys: map[string]map[string]string{}, paths: map[string][]string{}, constants: docConstants()}
	g.walkTypes(reflect.TypeFor[Config](), "")
	for k, v := range defaultsElsewhere() {
		g.defaults[k] = v
	}
	root, err := g.object(reflect.TypeFor[Config]())
	if err != nil {
		return nil, nil, err
	}
	for k := range g.facets {
		if !g.used[k] {
			return nil, nil, fmt.Errorf("config: schema facet for %s, which is not a field of the file", k)
		}
	}
	root.Schema = "https://json-schema.org/draft/2020-12/schema"
	root.ID = SchemaURL
	root.Title = "driftwatch configuration"
	root.Description = "The YAML configuration of driftwatch (driftwatch -f FILE, serve, check, diff). " +
		"Generated from the config package; `driftwatch check -f FILE` also checks what spans fields and entries."
	out, err := marshal(root)
	if err != nil {
		return nil, nil, err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, out, "", "  "); err != nil {
		return nil, nil, err
	}
	b.WriteByte('\n')
	// Lists of scalars (types, enums, required keys) on one line.
	schema = scalarList.ReplaceAllFunc(b.Bytes(), func(l []byte) []byte {
		return listSpace.ReplaceAll(bytes.ReplaceAll(l, []byte(",\n"), []byte(", \n")), nil)
	})
	return schema, renderReference(root), nil
}

// schemaGen builds the schema of a struct type and of its fields.
type schemaGen struct {
	docs      map[string]string // "Type" and "Type.Field" -> doc comment
	facets    map[string]facet
	defaults  map[string]any // "Type.Field" -> default, as JSON
	inherited map[string]bool
	used      map[string]bool // the facets used
	// keys are the keys of every struct type of the file, by type name
	// and Go field name; paths the paths of those types' keys (two for a
	// type found in two places, IgnoreRule).
	keys      map[string]map[string]string
	paths     map[string][]string
	constants map[string]string
}

// object returns the schema of struct type t: its fields by their tags,
// unknown keys refused.
func (g *schemaGen) object(t reflect.Type) (*jsonSchema, error) {
	o := &jsonSchema{Type: typeList{"object"}, AdditionalProperties: false, kind: "object"}
	s, err := buildSchema(t)
	if err != nil {
		return nil, err
	}
	for _, f := range s.fields {
		sf := t.Field(f.index)
		key := t.Name() + "." + sf.Name
		fc, ok := g.facets[key]
		if ok {
			g.used[key] = true
		}
		p, err := g.value(sf.Type, f, fc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		if g.docs[key] == "" && ast.IsExported(t.Name()) {
			return nil, fmt.Errorf("config: %s has no doc comment", key)
		}
		p.Description = g.prose(g.docs[key], t, sf.Name)
		if f.required {
			o.Required = append(o.Required, f.name)
		} else if !fc.nonNull {
			p.allowNull()
		}
		if d, ok := g.defaults[key]; ok {
			p.Default = d
		}
		p.inherited = g.inherited[key]
		o.Properties = append(o.Properties, property{f.name, p})
	}
	return o, nil
}

// allowNull lets the value be null, which the decoder reads as the key
// left out.
func (s *jsonSchema) allowNull() {
	s.Type = append(s.Type, "null")
	if s.Enum != nil {
		s.Enum = append(s.Enum, nil)
	}
}

// value returns the schema of a field of type t (or of a list's items),
// with the field's tag f and facet fc.
func (g *schemaGen) value(t reflect.Type, f schemaField, fc facet) (*jsonSchema, error) {
	switch {
	case t == policyType:
		return &jsonSchema{Type: typeList{"string"}, Enum: anys(policies()), kind: oneOf(policies())}, nil
	case t == durationType:
		return &jsonSchema{Type: typeList{"string"}, Pattern: durationPattern, kind: "duration"}, nil
	case t == reflect.TypeFor[SecretKeyRef]():
		return &jsonSchema{Type: typeList{"string"}, Pattern: secretKeyRefPattern, kind: "`<secret>/<key>`"}, nil
	}
	switch t.Kind() {
	case reflect.String:
		if fc.enum != nil {
			return &jsonSchema{Type: typeList{"string"}, Enum: anys(fc.enum), kind: oneOf(fc.enum)}, nil
		}
		return &jsonSchema{Type: scalarTypes(), Pattern: fc.pattern, kind: "string"}, nil
	case reflect.Bool:
		return &jsonSchema{Type: typeList{"boolean"}, kind: "boolean"}, nil
	case reflect.Int, reflect.Int32, reflect.Int64:
		lo, hi := f.min, f.max
		kind := fmt.Sprintf("integer, %d to %d", lo, hi)
		if hi == math.MaxInt32 {
			kind = fmt.Sprintf("integer ≥ %d", lo)
		}
		return &jsonSchema{Type: typeList{"integer"}, Minimum: &lo, Maximum: &hi, kind: kind}, nil
	case reflect.Float32, reflect.Float64:
		zero := int64(0)
		return &jsonSchema{Type: typeList{"number"}, ExclusiveMinimum: &zero, kind: "number > 0"}, nil
	case reflect.Slice:
		elem := t.Elem()
		if elem == reflect.TypeFor[clientcmdapi.AllowlistEntry]() {
			elem = reflect.TypeFor[execAllowlistEntry]()
		}
		items, err := g.value(elem, f, facet{enum: fc.enum, pattern: fc.pattern})
		if err != nil {
			return nil, err
		}
		if elem.Kind() == reflect.Struct && ast.IsExported(elem.Name()) {
			items.Description = g.prose(g.docs[elem.Name()], elem, "")
		}
		s := &jsonSchema{Type: typeList{"array"}, Items: items, kind: "list of " + items.kind}
		if items.kind == "object" {
			s.kind = "list of objects"
		}
		if fc.enum != nil {
			s.kind = "list of " + oneOf(fc.enum)
		}
		if fc.minItems > 0 {
			s.MinItems = &fc.minItems
		}
		return s, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("map key %s: want a string", t.Key())
		}
		v, err := g.value(t.Elem(), f, facet{})
		if err != nil {
			return nil, err
		}
		if t.Elem().Kind() == reflect.String {
			v.allowNull() // a null value reads as ""
		}
		return &jsonSchema{Type: typeList{"object"}, AdditionalProperties: v, kind: "map of " + v.kind}, nil
	case reflect.Pointer:
		return g.value(t.Elem(), f, fc)
	case reflect.Interface:
		return &jsonSchema{kind: "any"}, nil
	case reflect.Struct:
		return g.object(t)
	}
	return nil, fmt.Errorf("type %s has no schema", t)
}

// walkTypes records the keys of struct type t, at path, and of the struct
// types under it.
func (g *schemaGen) walkTypes(t reflect.Type, path string) {
	s, err := buildSchema(t)
	if err != nil {
		return
	}
	if slices.Contains(g.paths[t.Name()], path) {
		return
	}
	g.paths[t.Name()] = append(g.paths[t.Name()], path)
	keys := map[string]string{}
	for _, f := range s.fields {
		sf := t.Field(f.index)
		keys[sf.Name] = f.name
		p, ft := f.name, sf.Type
		if path != "" {
			p = path + "." + f.name
		}
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Slice {
			ft, p = ft.Elem(), p+"[]"
		}
		if ft == reflect.TypeFor[clientcmdapi.AllowlistEntry]() {
			ft = reflect.TypeFor[execAllowlistEntry]()
		}
		if ft.Kind() == reflect.Struct {
			g.walkTypes(ft, p)
		}
	}
	g.keys[t.Name()] = keys
}

// docConstants are the Go constants that doc comments name, with their
// values as the file writes them.
func docConstants() map[string]string {
	return map[string]string{
		"DefaultHubID":               DefaultHubID,
		"kubeobj.DefaultManagedBy":   kubeobj.DefaultManagedBy,
		"kubeobj.ManagedByLabel":     kubeobj.ManagedByLabel,
		"hub.PolicyRepair":           string(hub.PolicyRepair),
		"hub.PolicyWarn":             string(hub.PolicyWarn),
		"DefaultPolicy":              string(DefaultPolicy),
		"DefaultResync":              shortDuration(DefaultResync),
		"DefaultQPS":                 fmt.Sprint(DefaultQPS),
		"DefaultBurst":               fmt.Sprint(DefaultBurst),
		"DefaultDecommissionTimeout": shortDuration(DefaultDecommissionTimeout),
		"DefaultPruneLimit":          fmt.Sprint(DefaultPruneLimit),
		"StateFileNone":              StateFileNone,
		"DefaultLeaseDuration":       shortDuration(DefaultLeaseDuration),
		"MinLeaseDuration":           shortDuration(MinLeaseDuration),
		"DefaultIDTemplate":          DefaultIDTemplate,
		"DefaultTerraformInterval":   shortDuration(DefaultTerraformInterval),
	}
}

// scalarList is a JSON list of strings and nulls as json.Indent writes
// it, one item a line; listSpace is the space around its items.
var (
	scalarList = regexp.MustCompile(`\[\n(\s*("([^"\\]|\\.)*"|null),?\n)+\s*\]`)
	listSpace  = regexp.MustCompile(`\n *`)
)

// identifier is a word or a dotted Go name in a doc comment.
var identifier = regexp.MustCompile(`[A-Za-z][A-Za-z0-9]*(\.[A-Za-z][A-Za-z0-9]*)*`)

// proseWords are Go field names that doc comments also use as words: a
// Service is the Kubernetes kind, a tenancy ID not the key id.
func proseWords() []string { return []string{"Service", "ID"} }

// prose rewrites a doc comment of struct type t, or of its field own, for
// the file's readers: outside `code`, the Go names of t's fields become
// their keys, Type.Field their path, and the constants of docConstants
// their values. A name of one word, own's included, may also be the word
// (URL is "the https URL events are POSTed to"): own's is replaced once,
// the ones of proseWords never.
func (g *schemaGen) prose(text string, t reflect.Type, own string) string {
	keys := g.keys[t.Name()]
	ownDone := false
	name := func(w string) (string, bool) {
		if v, ok := g.constants[w]; ok {
			return v, true
		}
		if typ, field, ok := strings.Cut(w, "."); ok {
			key, ok := g.keys[typ][field]
			if !ok || len(g.paths[typ]) != 1 {
				return "", false
			}
			if p := g.paths[typ][0]; p != "" {
				return p + "." + key, true
			}
			return key, true
		}
		key, ok := keys[w]
		switch {
		case !ok:
			return "", false
		case w == own && !camelCase(w):
			if ownDone {
				return "", false
			}
			ownDone = true
		case w != own && slices.Contains(proseWords(), w):
			return "", false
		}
		return key, true
	}
	parts := strings.Split(text, "`")
	for i := 0; i < len(parts); i += 2 {
		var b strings.Builder
		s, last := parts[i], 0
		for _, m := range identifier.FindAllStringIndex(s, -1) {
			if m[0] > 0 && s[m[0]-1] == '.' {
				continue // .Name in a template
			}
			if v, ok := name(s[m[0]:m[1]]); ok {
				b.WriteString(s[last:m[0]])
				b.WriteString("`" + v + "`")
				last = m[1]
			}
		}
		b.WriteString(s[last:])
		parts[i] = b.String()
	}
	return strings.Join(parts, "`")
}

// camelCase reports whether a Go name has more than one word (PruneLimit),
// so that it is no English word.
func camelCase(w string) bool {
	for i := 1; i < len(w); i++ {
		if w[i-1] >= 'a' && w[i-1] <= 'z' && w[i] >= 'A' && w[i] <= 'Z' {
			return true
		}
	}
	return false
}

// anys converts strings to the values of an enum.
func anys(l []string) []any {
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}

// oneOf names the values of an enum for the reference.
func oneOf(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = "`" + s + "`"
	}
	return strings.Join(q, ", ")
}

// readDocs reads the doc comments of the struct types declared in the Go
// files of src (test files aside) and of their fields, by "Type" and
// "Type.Field". A field without a comment shares the one of the field
// before it, as in "QPS and Burst are ...".
func readDocs(src fs.FS) (map[string]string, error) {
	names, err := fs.Glob(src, "*.go")
	if err != nil {
		return nil, err
	}
	docs := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		data, err := fs.ReadFile(src, name)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, name, data, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				docs[ts.Name.Name] = docText(doc)
				prev := ""
				for _, field := range st.Fields.List {
					text := docText(field.Doc)
					if text == "" {
						text = prev
					}
					prev = text
					for _, n := range field.Names {
						docs[ts.Name.Name+"."+n.Name] = text
					}
				}
			}
		}
	}
	return docs, nil
}

// docText returns a doc comment as paragraphs separated by a blank line,
// each on one line.
func docText(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	var paras []string
	for p := range strings.SplitSeq(strings.TrimSpace(g.Text()), "\n\n") {
		paras = append(paras, strings.Join(strings.Fields(p), " "))
	}
	return strings.Join(paras, "\n\n")
}

// probeDefaults returns the defaults Parse fills in, by "Type.Field", as
// JSON values: for every section, it parses a config that sets only what
// is required, and reads the values of the keys left out. It parses each
// config twice, once with the hub's settings changed and the application's
// port set: a field that follows them is inherited, not defaulted. A zero
// value (but false) is no default: it means unset.
func probeDefaults() (defaults map[string]any, inherited map[string]bool, err error) {
	sections := map[string]any{
		"hub": map[string]any{"coordination": map[string]any{"namespace": "ns", "kubeconfig": "/kubeconfig"},
			"ignore": []any{map[string]any{"paths": []any{"/spec/replicas"}}}},
		"clusters":   []any{map[string]any{"id": "c", "context": "c"}},
		"clusterAPI": []any{map[string]any{"name": "s", "context": "s", "execAllowlist": []any{map[string]any{"command": "aws"}}}},
		"applications": []any{map[string]any{"id": "a", "namespace": "ns", "clusters": []any{"c"}, "image": "i", "port": 8080,
			"service": map[string]any{}, "resources": map[string]any{}, "ignore": []any{map[string]any{"managers": []any{"m"}}}}},
		"notifications": map[string]any{"webhooks": []any{map[string]any{"name": "w", "url": "https://example.com"}}},
	}
	workspaces := map[string]any{"hub": map[string]any{}, "terraform": []any{map[string]any{"id": "t", "dir": "/t"}}}
	changed := func(doc map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range doc {
			out[k] = v
		}
		h, _ := out["hub"].(map[string]any)
		out["hub"] = merged(h, map[string]any{"policy": string(hub.PolicyWarn), "qps": 7, "burst": 7})
		if apps, ok := out["applications"].([]any); ok {
			out["applications"] = []any{merged(apps[0].(map[string]any), map[string]any{"port": 1234})}
		}
		return out
	}
	defaults, inherited = map[string]any{}, map[string]bool{}
	for _, doc := range []map[string]any{sections, workspaces} {
		a, err := parseProbe(doc)
		if err != nil {
			return nil, nil, err
		}
		b, err := parseProbe(changed(doc))
		if err != nil {
			return nil, nil, err
		}
		probeStruct(reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem(), doc, changed(doc), defaults, inherited)
	}
	return defaults, inherited, nil
}

// merged returns a copy of a with the keys of b.
func merged(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// parseProbe parses a probe config (JSON is YAML).
func parseProbe(doc map[string]any) (*Config, error) {
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	cfg, err := Parse("probe.yaml", data, LoadOptions{Getenv: func(string) string { return "" }, HomeDir: "/"})
	if err != nil {
		return nil, fmt.Errorf("config: the defaults probe is refused: %w", err)
	}
	return cfg, nil
}

// probeStruct records the defaults of struct a, parsed from docA, and b,
// parsed from docB (docA with the hub's settings changed): the values of
// the keys docA leaves out, unless they differ in b without docB setting
// them (inherited). It probes the structs under the keys docA sets.
func probeStruct(a, b reflect.Value, docA, docB map[string]any, defaults map[string]any, inherited map[string]bool) {
	t := a.Type()
	s, err := buildSchema(t)
	if err != nil {
		return // a type without tags, read by a hook (execAllowlist)
	}
	for _, f := range s.fields {
		fa, fb := a.Field(f.index), b.Field(f.index)
		key := t.Name() + "." + t.Field(f.index).Name
		subA, inA := docA[f.name]
		subB, inB := docB[f.name]
		if !inA {
			switch {
			case !inB && !reflect.DeepEqual(fa.Interface(), fb.Interface()):
				inherited[key] = true
			case fa.Kind() == reflect.Bool || !fa.IsZero():
				if v, ok := jsonDefault(fa); ok {
					defaults[key] = v
				}
			}
			continue
		}
		for fa.Kind() == reflect.Pointer && !fa.IsNil() && !fb.IsNil() {
			fa, fb = fa.Elem(), fb.Elem()
		}
		switch {
		case fa.Kind() == reflect.Struct:
			ma, _ := subA.(map[string]any)
			mb, _ := subB.(map[string]any)
			probeStruct(fa, fb, ma, mb, defaults, inherited)
		case fa.Kind() == reflect.Slice && fa.Type().Elem().Kind() == reflect.Struct && fa.Len() > 0 && fb.Len() > 0:
			la, _ := subA.([]any)
			lb, _ := subB.([]any)
			if len(la) > 0 && len(lb) > 0 {
				ma, _ := la[0].(map[string]any)
				mb, _ := lb[0].(map[string]any)
				probeStruct(fa.Index(0), fb.Index(0), ma, mb, defaults, inherited)
			}
		}
	}
}

// jsonDefault returns a default value as the file writes it.
func jsonDefault(v reflect.Value) (any, bool) {
	if v.Type() == durationType {
		return shortDuration(time.Duration(v.Int())), true
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), true
	case reflect.Bool:
		return v.Bool(), true
	case reflect.Int, reflect.Int32, reflect.Int64:
		return v.Int(), true
	case reflect.Float32, reflect.Float64:
		return v.Float(), true
	}
	return nil, false
}

// renderReference writes the reference of the config file from its
// schema: one section per top-level key, a table row per field.
func renderReference(root *jsonSchema) []byte {
	var b strings.Builder
	b.WriteString(`<!-- Code generated by go generate ./config from the config package; DO NOT EDIT. -->

# Configuration reference

driftwatch reads one YAML file (` + "`driftwatch -f FILE`, `serve`, `check`, `diff`" + `). This page lists
every key of it, generated from the code that reads it, as is the JSON Schema
[config.schema.json](config.schema.json) (also printed by ` + "`driftwatch config schema`" + `).
Editors that use yaml-language-server check and complete a config whose first
line is

` + "```yaml\n" + SchemaModeline + "\n```" + `

(` + "`driftwatch init`" + ` writes it; a relative path to a copy of the schema works too).
` + "`driftwatch check -f FILE`" + ` validates a config without contacting any cluster,
including what the schema cannot say: references between entries, duplicate
ids, label selectors, Kubernetes names and quantities.

- Keys are case-sensitive; an unknown key is an error (with a did-you-mean hint).
- A key whose value is empty (null) is the same as leaving it out, except where
  the type below does not allow null: required keys, ` + "`kubeconfig`, `binary`,\n  `execAllowlist` and `hub.coordination`" + `.
- A string may be written as a number or a boolean: ` + "`version: 1.10`" + ` is the string "1.10".
- A duration is a Go duration with a unit, more than zero: ` + "`90s`, `5m`, `1h30m`" + `.
- Paths (` + "`kubeconfig`, `stateFile`, `dir`, `varFiles`" + `) expand ` + "`~`" + ` and ` + "`${VAR}`" + `, and a
  relative path is relative to the config file's folder.
- Source paths (` + "`sources[].path`, `kustomize`, `helm.chart`, `helm.valuesFiles`" + `) are relative to the
  config file's folder too, and expand ` + "`${cluster.id}` and `${cluster.labels.KEY}`" + ` for each target
  cluster (not ` + "`~`" + ` nor environment variables).
- Anchors, aliases and merge keys work (` + "`env: &common {...}`, then `env: *common`" + `). Each use of an
  alias counts the nodes of what it names: all of them together may be at most 65,536 plus 16 per
  node of the file (500 applications sharing a 20-key env use 20,000), and merge keys may add at
  most 10,000 entries; past that the file is refused at the alias's line.
- Default "inherited" means the value of another key, as the description says.
`)
	for _, p := range root.Properties {
		fmt.Fprintf(&b, "\n## `%s`\n\n%s\n", p.name, mdText(p.schema.Description))
		if p.schema.Items != nil && p.schema.Items.Description != "" {
			fmt.Fprintf(&b, "\n%s\n", mdText(p.schema.Items.Description))
		}
		b.WriteString("\n| Key | Type | Default | Description |\n|---|---|---|---|\n")
		row(&b, p.name, p.schema, false)
		children(&b, p.name, p.schema)
	}
	return []byte(b.String())
}

// children writes the rows of the keys under s, at path.
func children(b *strings.Builder, path string, s *jsonSchema) {
	if s.Items != nil {
		path += "[]"
		s = s.Items
	}
	for _, p := range s.Properties {
		key := path + "." + p.name
		row(b, key, p.schema, slices.Contains(s.Required, p.name))
		children(b, key, p.schema)
	}
}

// row writes the table row of one key.
func row(b *strings.Builder, key string, s *jsonSchema, required bool) {
	def := ""
	switch {
	case required:
		def = "required"
	case s.inherited:
		def = "inherited"
	case s.Default != nil:
		v, _ := marshal(s.Default)
		def = "`" + strings.Trim(string(v), `"`) + "`"
	}
	kind := s.kind
	if !slices.Contains(s.Type, "null") && !required {
		kind += " (not null)"
	}
	fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", key, cell(kind), def, cell(mdText(s.Description)))
}

// cell escapes the bars of a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// mdText turns doc comment text into Markdown: outside `code`, the
// characters Markdown would take for markup are escaped, and paragraphs
// are joined with a line break.
func mdText(s string) string {
	parts := strings.Split(s, "`")
	for i := 0; i < len(parts); i += 2 {
		parts[i] = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "<", "&lt;", ">", "&gt;").Replace(parts[i])
	}
	return strings.ReplaceAll(strings.Join(parts, "`"), "\n\n", "<br><br>")
}

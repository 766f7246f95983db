// Package manifest renders users' own Kubernetes manifests into objects,
// without any cluster or network access: plain YAML and
// JSON files (a file or a folder of them), a kustomize folder (built with
// sigs.k8s.io/kustomize/api) or a Helm chart (rendered with the Helm SDK,
// as `helm template` does). Every object carries where it came from, so
// that problems can be reported at their file and line.
//
// The input is treated as hostile: files are read up to a size limit, the
// number of objects is bounded, YAML aliases may add a few nodes per byte
// read to a whole Render (aliasBudget), plain files behind symlinks that
// leave the source's folder are refused, kustomize runs without plugins,
// exec or remote resources and reads nothing outside Request.Root, and
// Helm without a cluster (lookup finds nothing) or DNS, its amplifying
// template functions bounded; with Request.Sandbox a chart's templates
// and a kustomize build run in a child process with a time and a memory
// limit (a chart's templates are a program that nothing stops from
// inside, and kustomizations including one another build exponentially
// many objects).
package manifest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/sourcegraph/conc/iter"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// Limits of Render, when a Request leaves its own at zero.
const (
	// DefaultMaxFileSize is the largest file Render reads (a manifest, a
	// values file, a kustomize input) or a renderer may produce (one
	// rendered Helm template): 16 MiB.
	DefaultMaxFileSize = 16 << 20
	// DefaultMaxObjects is the most objects one Render may return.
	DefaultMaxObjects = 10000
)

// Request says what to render: exactly one of Path, Kustomize and Helm.
// Paths are used as given (relative ones from the current folder); the
// config package makes them absolute first.
type Request struct {
	// Path is a manifest file, or a folder read recursively: every .yaml,
	// .yml and .json file in it, in sorted path order. Files may hold
	// several YAML documents; `kind: List` (and any *List kind with items)
	// is expanded; empty documents are skipped.
	Path string
	// Kustomize is a folder holding a kustomization file, built as
	// `kustomize build` does (load restrictions RootOnly, no plugins, no
	// helmCharts, no remote resources).
	Kustomize string
	// Helm is a chart to render.
	Helm *Helm
	// Root, when set, is the folder a kustomize build may read nothing
	// outside of, symlinks resolved: no base, component, resource, patch
	// or generator file (kustomize's RootOnly restriction holds files to
	// their kustomization's folder, not bases to any folder). To the
	// build, what lies outside it does not exist: a reference leading out
	// of it fails as a missing one does, naming the reference and the
	// root, whether something is there or not.
	// The config sets it to a Git source's checkout; "" (local sources)
	// means no bound. Plain folders and Helm charts are held to their own
	// folder whatever Root says.
	Root string
	// MaxFileSize and MaxObjects override DefaultMaxFileSize and
	// DefaultMaxObjects when positive.
	MaxFileSize int64
	MaxObjects  int
	// Sandbox, when set, runs a Helm chart's templates or a kustomize
	// build in a child process with a time and a memory limit (see
	// Sandbox); nil renders in this process. Plain files always render in
	// process: reading them is linear in their size.
	Sandbox *Sandbox `json:"-"`
}

// Helm is a Helm chart to render, client only, as `helm template` does
// without --validate: hooks (objects annotated helm.sh/hook, tests
// included) are left out, as are NOTES.txt and partials (_*.tpl);
// subcharts in charts/ are rendered, and the CRDs in crds/ folders come
// first.
type Helm struct {
	// Chart is the chart's folder or its .tgz archive.
	Chart string
	// ReleaseName is .Release.Name (required).
	ReleaseName string
	// Namespace is .Release.Namespace; "" means "default".
	Namespace string
	// Values are the values given inline; they win over ValuesFiles.
	Values map[string]any
	// ValuesFiles are values files merged in order over the chart's own
	// values.yaml (a later file wins), under Values.
	ValuesFiles []string
	// KubeVersion is .Capabilities.KubeVersion, such as "1.37.2"; ""
	// means the Helm SDK's default.
	KubeVersion string
}

// kind names the kind of source the request renders: "path", "kustomize"
// or "helm"; "" when it names none or several.
func (r Request) kind() string {
	var kinds []string
	if r.Path != "" {
		kinds = append(kinds, "path")
	}
	if r.Kustomize != "" {
		kinds = append(kinds, "kustomize")
	}
	if r.Helm != nil {
		kinds = append(kinds, "helm")
	}
	if len(kinds) != 1 {
		return ""
	}
	return kinds[0]
}

func (r Request) maxFileSize() int64 {
	if r.MaxFileSize > 0 {
		return r.MaxFileSize
	}
	return DefaultMaxFileSize
}

// maxRendered is the most bytes a Helm chart's rendered files may hold
// in all: eight files of the largest size.
func (r Request) maxRendered() int64 { return 8 * r.maxFileSize() }

func (r Request) maxObjects() int {
	if r.MaxObjects > 0 {
		return r.MaxObjects
	}
	return DefaultMaxObjects
}

// Object is one rendered object and where it came from.
type Object struct {
	// Object is the object as rendered; the caller owns it.
	Object *unstructured.Unstructured
	// Origin is where the object came from.
	Origin Origin
}

// Origin is where a rendered object came from, as far as the renderer
// tells: the file, relative to the source's root (a plain file: its own
// name; a folder: the path in it; kustomize: the resource file when the
// kustomization asks for origin annotations, else ""; Helm: the template
// name of its `# Source:` comment, such as mychart/templates/web.yaml),
// and the first line of its YAML document within that file (0 when
// unknown).
type Origin struct {
	File string
	Line int
}

// String returns file:line, file, or "" when nothing is known.
func (o Origin) String() string {
	switch {
	case o.File == "":
		return ""
	case o.Line > 0:
		return fmt.Sprintf("%s:%d", o.File, o.Line)
	}
	return o.File
}

// Error is a problem with one input file or rendered document.
type Error struct {
	// Origin is the file and line the problem is in.
	Origin Origin
	// Msg says what is wrong, lowercase.
	Msg string
}

// Error returns "file:line: message", or the message alone when the
// origin is unknown.
func (e *Error) Error() string {
	if o := e.Origin.String(); o != "" {
		return o + ": " + e.Msg
	}
	return e.Msg
}

// errorAt returns an *Error at o.
func errorAt(o Origin, format string, args ...any) error {
	return &Error{Origin: o, Msg: fmt.Sprintf(format, args...)}
}

// Render renders the request into objects, in the order the source gives
// them: plain files in sorted path order and document order, kustomize in
// its output order, Helm's CRDs then templates in sorted template order.
func Render(ctx context.Context, r Request) ([]Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	switch r.kind() {
	case "path":
		return renderFiles(ctx, r)
	case "kustomize":
		return renderKustomize(ctx, r)
	case "helm":
		return renderHelm(ctx, r)
	}
	return nil, errors.New("want exactly one of path, kustomize and helm")
}

// collector gathers the objects of one Render within its limits.
type collector struct {
	objects []Object
	max     int
	// aliases counts what YAML aliases add to the Render.
	aliases aliasBudget
}

// add appends the object, or fails once there would be more than the
// limit.
func (c *collector) add(o Object) error {
	if len(c.objects) >= c.max {
		return errorAt(o.Origin, "more than %d objects: the limit of one source", c.max)
	}
	c.objects = append(c.objects, o)
	return nil
}

// document is one YAML document of a file: its text, the line its text
// starts on, and the line of its first content (not a blank or comment
// line).
type document struct {
	data        []byte
	start, line int
}

// splitDocuments splits a YAML stream at its `---` and `...` markers.
// A document's content may start on its `---` line (`--- {a: 1}`).
func splitDocuments(data []byte) []document {
	var docs []document
	var cur []byte
	start, first := 1, 0
	flush := func(next int) {
		if first > 0 {
			docs = append(docs, document{data: cur, start: start, line: first})
		}
		cur, start, first = nil, next, 0
	}
	for n := 1; len(data) > 0; n++ {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		trimmed := bytes.TrimRight(line, " \t\r")
		switch {
		case string(trimmed) == "---" || string(trimmed) == "...":
			flush(n + 1)
			continue
		case bytes.HasPrefix(line, []byte("--- ")) || bytes.HasPrefix(line, []byte("---\t")):
			flush(n)
			line = append([]byte("    "), line[4:]...) // keep the columns
		}
		if first == 0 && !blankOrComment(line) {
			first = n
		}
		cur = append(cur, line...)
		cur = append(cur, '\n')
	}
	flush(0)
	return docs
}

// blankOrComment reports whether a YAML line holds nothing but space or
// a comment.
func blankOrComment(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) == 0 || t[0] == '#'
}

// docsPerCore is how many documents a stream needs for decodeYAML to
// decode them on every core.
const docsPerCore = 64

// decodeYAML decodes the documents of a YAML (or JSON) stream read from
// file and adds their objects to c. The documents are decoded on every
// core when there are many (a file of thousands of objects is common: a
// rendered chart, a generated list), each on its own; their objects are
// then added, and the first error is returned, in the file's order, as
// decoding them one after the other does. The nodes the documents'
// aliases add are counted first, against one budget for the whole
// Render (aliasBudget): past it, the document is refused before any is
// decoded.
func (c *collector) decodeYAML(data []byte, file string) error {
	docs := splitDocuments(data)
	c.aliases.read += len(data)
	// late are the documents with aliases go.yaml.in/yaml/v3 does not
	// parse: decoded one at a time and counted then.
	late := make([]bool, len(docs))
	for i, d := range docs {
		if !mayAlias(d.data) {
			continue
		}
		ok, err := c.aliases.countAliases(d.data, Origin{File: file, Line: d.line})
		if err != nil {
			return err
		}
		late[i] = !ok
	}
	decoded := make([]decodedDoc, len(docs))
	decode := func(i int, d *document) {
		if !late[i] {
			decoded[i] = decodeDocument(*d, file)
		}
	}
	if len(docs) >= 2*docsPerCore {
		iter.Iterator[document]{MaxGoroutines: min(runtime.GOMAXPROCS(0), len(docs)/docsPerCore)}.ForEachIdx(docs, decode)
	} else {
		for i := range docs {
			decode(i, &docs[i])
		}
	}
	for i, d := range decoded {
		if late[i] {
			d = decodeDocument(docs[i], file)
			if d.err == nil {
				if err := c.aliases.countValue(d.value, d.origin); err != nil {
					return err
				}
			}
		}
		if d.err != nil {
			return d.err
		}
		if err := c.addValue(d.value, d.origin); err != nil {
			return err
		}
	}
	return nil
}

// decodedDoc is one document decoded: its value (nil for an empty
// document) or why it does not decode.
type decodedDoc struct {
	value  any
	origin Origin
	err    error
}

// decodeDocument decodes one document of file, on its own: decodeSimple's
// way when it can, else decodeFast's, else YAMLToJSON's and the JSON
// decoder's (the same value, and the library's errors).
func decodeDocument(d document, file string) decodedDoc {
	o := Origin{File: file, Line: d.line}
	if v, ok := decodeSimple(d.data); ok {
		return decodedDoc{value: v, origin: o}
	}
	if v, ok := decodeFast(d.data); ok {
		return decodedDoc{value: v, origin: o}
	}
	j, err := yaml.YAMLToJSON(d.data)
	if err != nil {
		return decodedDoc{origin: o, err: errorAt(o, "invalid YAML: %s", yamlMsg(err, d.start))}
	}
	v, err := unmarshalDocument(j, o)
	return decodedDoc{value: v, origin: o, err: err}
}

// yamlMsg shortens a YAML decoder error: it drops the "error converting
// YAML to JSON: yaml:" prefixes and makes its "line N" a line of the file,
// for a document whose text starts on line start.
func yamlMsg(err error, start int) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	return yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
		n, err := strconv.Atoi(strings.TrimPrefix(m, "line "))
		if err != nil {
			return m
		}
		return fmt.Sprintf("line %d", n+start-1)
	})
}

// yamlLine is a line number in a YAML decoder error.
var yamlLine = regexp.MustCompile(`line [0-9]+`)

// decodeJSON decodes one document's JSON at o and adds its objects: none
// for an empty document, the items of a List, else the object.
func (c *collector) decodeJSON(j []byte, o Origin) error {
	v, err := unmarshalDocument(j, o)
	if err != nil {
		return err
	}
	return c.addValue(v, o)
}

// unmarshalDocument decodes one document's JSON at o.
func unmarshalDocument(j []byte, o Origin) (any, error) {
	var v any
	if err := utiljson.Unmarshal(j, &v); err != nil {
		return nil, errorAt(o, "invalid document: %v", err)
	}
	return v, nil
}

// addValue adds the objects of a decoded document at o: none for an empty
// document, the items of a List, else the object.
func (c *collector) addValue(v any, o Origin) error {
	if v == nil {
		return nil // an empty document
	}
	m, ok := v.(map[string]any)
	if !ok {
		return errorAt(o, "want a Kubernetes object (a mapping), got %s", jsonType(v))
	}
	if items, ok := m["items"].([]any); ok && isList(m) {
		for i, it := range items {
			im, ok := it.(map[string]any)
			if !ok {
				return errorAt(o, "%s: items[%d]: want a Kubernetes object (a mapping), got %s", m["kind"], i, jsonType(it))
			}
			if err := c.object(im, o, fmt.Sprintf("%s: items[%d]: ", m["kind"], i)); err != nil {
				return err
			}
		}
		return nil
	}
	return c.object(m, o, "")
}

// isList reports whether m is a list of objects: kind List, or any kind
// ending in List (ConfigMapList).
func isList(m map[string]any) bool {
	k, _ := m["kind"].(string)
	return strings.HasSuffix(k, "List")
}

// object checks one object and adds it; prefix starts its error messages
// (the item of a List).
func (c *collector) object(m map[string]any, o Origin, prefix string) error {
	u := &unstructured.Unstructured{Object: m}
	if err := Check(u); err != nil {
		return errorAt(o, "%s%v", prefix, err)
	}
	return c.add(Object{Object: u, Origin: o})
}

// Check reports what keeps u from being a Kubernetes object driftwatch can
// manage: no apiVersion or kind, no metadata.name (generateName is not
// enough: a managed object has a fixed name), or a namespace that is no
// DNS label.
func Check(u *unstructured.Unstructured) error {
	m := u.Object
	str := func(v any) (string, bool) { s, ok := v.(string); return s, ok && s != "" }
	apiVersion, okAV := str(m["apiVersion"])
	kind, okK := str(m["kind"])
	switch {
	case !okAV && !okK:
		return errors.New("document has no apiVersion and no kind: not a Kubernetes object")
	case !okAV:
		return fmt.Errorf("%s has no apiVersion", kind)
	case !okK:
		return fmt.Errorf("document of apiVersion %s has no kind", apiVersion)
	}
	meta, ok := m["metadata"].(map[string]any)
	if !ok {
		return fmt.Errorf("%s has no metadata", kind)
	}
	name, ok := str(meta["name"])
	switch {
	case !ok && meta["generateName"] != nil:
		return fmt.Errorf("%s has generateName but no metadata.name: a managed object needs a fixed name", kind)
	case !ok:
		return fmt.Errorf("%s has no metadata.name", kind)
	case strings.ContainsAny(name, "/%") || len(name) > content.DNS1123SubdomainMaxLength:
		return fmt.Errorf("%s %q: invalid metadata.name", kind, name)
	}
	if ns, set := meta["namespace"]; set && ns != nil {
		s, ok := ns.(string)
		if !ok {
			return fmt.Errorf("%s %s: metadata.namespace: want a string, got %s", kind, name, jsonType(ns))
		}
		if errs := content.IsDNS1123Label(s); s != "" && len(errs) > 0 {
			return fmt.Errorf("%s %s: invalid metadata.namespace %q: %s", kind, name, s, strings.Join(errs, "; "))
		}
	}
	return nil
}

// jsonType names the JSON type of a decoded value for messages.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return fmt.Sprintf("string %q", x)
	case bool:
		return fmt.Sprintf("boolean %v", x)
	}
	return fmt.Sprintf("number %v", v)
}

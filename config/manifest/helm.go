package manifest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	release "helm.sh/helm/v4/pkg/release/v1"
)

// notesFile is the name of a chart's usage notes, rendered but never an
// object.
const notesFile = "NOTES.txt"

// renderHelm renders r.Helm's chart client-only: no cluster (the lookup
// function finds nothing), no DNS, no values schema references outside
// the chart, and the template functions that could make more than a
// rendered template may hold bounded (boundedEngine).
func renderHelm(ctx context.Context, r Request) ([]Object, error) {
	var out *templated
	var err error
	if r.Sandbox != nil {
		out, err = r.Sandbox.render(ctx, r)
	} else {
		out, err = helmTemplates(ctx, r)
	}
	if err != nil {
		return nil, err
	}
	return collectHelm(r, out)
}

// templated is what the template stage of a Helm render made: the
// chart's CRD files and its rendered templates (NOTES.txt and empty ones
// left out), each within the size limit, in the order they become
// objects.
type templated struct {
	CRDs  []renderedFile `json:"crds,omitempty"`
	Files []renderedFile `json:"files,omitempty"`
}

// renderedFile is one file of a templated chart.
type renderedFile struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// size returns the bytes of text t holds.
func (t *templated) size() int64 {
	var n int64
	for _, f := range t.CRDs {
		n += int64(len(f.Text))
	}
	for _, f := range t.Files {
		n += int64(len(f.Text))
	}
	return n
}

// helmTemplates is the template stage of renderHelm: it loads the chart
// and its values and runs its templates. This is the stage that runs
// the chart's own code, so it is the one a Sandbox runs in a child
// process.
func helmTemplates(ctx context.Context, r Request) (*templated, error) {
	h := r.Helm
	if err := chartutil.ValidateReleaseName(h.ReleaseName); err != nil {
		return nil, fmt.Errorf("release name %q: %w", h.ReleaseName, err)
	}
	// Helm's loader follows symlinks: a chart folder may hold none that
	// leads out of it, as a folder of plain manifests may not.
	if fi, err := os.Stat(h.Chart); err == nil && fi.IsDir() {
		if err := checkLinks(h.Chart); err != nil {
			return nil, fmt.Errorf("chart %s: %w", h.Chart, err)
		}
	}
	loaded, err := loader.Load(h.Chart)
	if err != nil {
		return nil, fmt.Errorf("load chart: %w", unwrapPath(err))
	}
	ch, ok := loaded.(*chartv2.Chart)
	if !ok {
		return nil, fmt.Errorf("load chart: unsupported chart apiVersion (want v1 or v2)")
	}
	vals, err := helmValues(h, r.maxFileSize())
	if err != nil {
		return nil, err
	}
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		return nil, fmt.Errorf("chart dependencies: %w", err)
	}
	caps := common.DefaultCapabilities.Copy()
	if h.KubeVersion != "" {
		kv, err := common.ParseKubeVersion(h.KubeVersion)
		if err != nil {
			return nil, fmt.Errorf("kubeVersion %q: %w", h.KubeVersion, err)
		}
		caps.KubeVersion = *kv
	}
	if kv := ch.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart %s requires kubeVersion %s, incompatible with Kubernetes %s", ch.Name(), kv, caps.KubeVersion.Version)
	}
	ns := h.Namespace
	if ns == "" {
		ns = "default"
	}
	opts := common.ReleaseOptions{Name: h.ReleaseName, Namespace: ns, Revision: 1, IsInstall: true}
	// Schema validation is ours (validateValues), so that a schema
	// cannot make the renderer fetch its references.
	top, err := util.ToRenderValuesWithSchemaValidation(ch, vals, opts, caps, true)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	if v, ok := top["Values"].(common.Values); ok {
		if err := validateValues(ch, v.AsMap()); err != nil {
			return nil, err
		}
	}
	files, err := boundedEngine(ctx, r.maxFileSize()).RenderWithContext(ctx, ch, top)
	if err != nil {
		return nil, err
	}

	out := &templated{}
	for _, crd := range ch.CRDObjects() {
		name := path.Clean(crd.Filename)
		if int64(len(crd.File.Data)) > r.maxFileSize() {
			return nil, errorAt(Origin{File: name}, "file is %d bytes: the limit is %d", len(crd.File.Data), r.maxFileSize())
		}
		out.CRDs = append(out.CRDs, renderedFile{Name: name, Text: string(crd.File.Data)})
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		text := files[name]
		if strings.HasSuffix(name, "/"+notesFile) || strings.TrimSpace(text) == "" {
			continue
		}
		if int64(len(text)) > r.maxFileSize() {
			return nil, errorAt(Origin{File: name}, "rendered to %d bytes: the limit is %d", len(text), r.maxFileSize())
		}
		out.Files = append(out.Files, renderedFile{Name: name, Text: text})
	}
	if n := out.size(); n > r.maxRendered() {
		return nil, fmt.Errorf("chart %s rendered %d bytes in all: the limit is %d", h.Chart, n, r.maxRendered())
	}
	return out, nil
}

// collectHelm decodes a templated chart into objects: its CRDs, then its
// templates' objects less hooks.
func collectHelm(r Request, t *templated) ([]Object, error) {
	c := &collector{max: r.maxObjects()}
	for _, crd := range t.CRDs {
		if err := c.decodeYAML([]byte(crd.Text), crd.Name); err != nil {
			return nil, err
		}
	}
	for _, f := range t.Files {
		before := len(c.objects)
		if err := c.decodeYAML([]byte(f.Text), f.Name); err != nil {
			return nil, err
		}
		// Hooks (tests too) run around installs and upgrades; they are
		// not part of the release's desired state.
		kept := slices.DeleteFunc(c.objects[before:], isHook)
		c.objects = c.objects[:before+len(kept)]
	}
	return c.objects, nil
}

// isHook reports whether a rendered object is a Helm hook or test.
func isHook(o Object) bool {
	_, ok := o.Object.GetAnnotations()[release.HookAnnotation]
	return ok
}

// helmValues merges the values files in order, then the inline values:
// maps merge key by key, anything else is replaced, as helm -f does.
func helmValues(h *Helm, limit int64) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range h.ValuesFiles {
		data, err := readLimited(f, limit)
		if err != nil {
			return nil, fmt.Errorf("values file %s: %w", f, err)
		}
		v, err := common.ReadValues(data)
		if err != nil {
			return nil, fmt.Errorf("values file %s: %s", f, yamlMsg(err, 1))
		}
		out = mergeValues(out, v)
	}
	return mergeValues(out, h.Values), nil
}

// mergeValues merges src into dst (a copy where both hold a map), src
// winning.
func mergeValues(dst, src map[string]any) map[string]any {
	out := maps.Clone(dst)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := out[k].(map[string]any); ok {
				out[k] = mergeValues(dm, sm)
				continue
			}
			out[k] = mergeValues(nil, sm)
			continue
		}
		out[k] = v
	}
	return out
}

// validateValues checks the coalesced values against the chart's
// values.schema.json and its subcharts' (each with its part of the
// values), as Helm does, except that a schema may not refer to anything
// outside itself.
func validateValues(ch *chartv2.Chart, values map[string]any) error {
	var msgs []string
	if len(ch.Schema) > 0 {
		if err := validateSchema(ch.Schema, values); err != nil {
			msgs = append(msgs, fmt.Sprintf("chart %s: values do not match values.schema.json: %v", ch.Name(), err))
		}
	}
	for _, sub := range ch.Dependencies() {
		sv, ok := values[sub.Name()].(map[string]any)
		if !ok {
			continue
		}
		if err := validateValues(sub, sv); err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// validateSchema validates values against one JSON Schema, with no
// loader for references outside it.
func validateSchema(schema []byte, values map[string]any) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return fmt.Errorf("invalid schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	const url = "file:///values.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return fmt.Errorf("invalid schema: %w", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return fmt.Errorf("invalid schema: %w", err)
	}
	return s.Validate(values)
}

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/config/manifest"
)

// Render fixtures: how many objects of each built-in mixed kind they hold
// (ten kinds: 100 objects), and how many times each is rendered.
const (
	renderPerKind = 10
	renderRuns    = 20
)

// renderCost is what rendering one source costs, through
// config/manifest.Render as the config loader calls it.
type renderCost struct {
	// Source is "files", "kustomize", "helm" or "helm, sandboxed" (the
	// chart rendered as the hub renders it: its templates in a child
	// process, manifest.Sandbox).
	Source  string `json:"source"`
	Objects int    `json:"objects"`
	Renders int    `json:"renders"`
	// P50 and Max are the wall time of one render.
	P50 msDuration `json:"p50Ms"`
	Max msDuration `json:"maxMs"`
	// Allocs and Bytes are the heap allocations of one render (mean).
	Allocs uint64 `json:"allocsPerRender"`
	Bytes  uint64 `json:"bytesPerRender"`
}

// renderKinds are the mixed kinds the render fixtures hold: the built-in
// ones (a custom resource renders like any other object).
func renderKinds() []mixedKind {
	var out []mixedKind
	for _, k := range mixedKinds() {
		if k.gvr().Group != widgetGroup {
			out = append(out, k)
		}
	}
	return out
}

// renderSource is one render fixture.
type renderSource struct {
	name string
	req  manifest.Request
}

// writeRenderFixtures writes three sources of the same 100 objects
// (renderPerKind of each built-in mixed kind) under dir and returns their
// requests: a folder of plain files (one multi-document file per kind), a
// kustomize overlay over a base of those files (a namespace, a label and
// a patch, as teams write them), and a Helm chart with one template per
// kind ranging over .Values.count.
func writeRenderFixtures(dir string) ([]renderSource, error) {
	files := map[string]string{}
	var resources []string
	for _, k := range renderKinds() {
		var sb strings.Builder
		for i := range renderPerKind {
			sb.WriteString("---\n")
			sb.WriteString(k.doc(fmt.Sprintf("%s-%03d", k.prefix, i+1), i))
		}
		files[filepath.Join("files", k.prefix+".yaml")] = sb.String()
		files[filepath.Join("kustomize", "base", k.prefix+".yaml")] = sb.String()
		resources = append(resources, k.prefix+".yaml")

		name := fmt.Sprintf(`{{ printf "%%s-%s-%%03d" $.Release.Name $i }}`, k.prefix)
		files[filepath.Join("helm", "templates", k.prefix+".yaml")] =
			"{{- range $i := until (int .Values.count) }}\n---\n" + k.doc(name, 0) + "{{- end }}\n"
	}
	files[filepath.Join("kustomize", "base", "kustomization.yaml")] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " +
		strings.Join(resources, "\n  - ") + "\n"
	files[filepath.Join("kustomize", "overlay", "kustomization.yaml")] = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: bench-render
labels:
  - pairs: {team: bench}
resources:
  - ../base
patches:
  - target: {kind: ConfigMap}
    patch: |-
      - op: add
        path: /data/ENV
        value: staging
`
	files[filepath.Join("helm", "Chart.yaml")] = "apiVersion: v2\nname: bench\nversion: 0.1.0\n"
	files[filepath.Join("helm", "values.yaml")] = fmt.Sprintf("count: %d\n", renderPerKind)
	for p, text := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return nil, fmt.Errorf("render fixtures: %w", err)
		}
		if err := os.WriteFile(full, []byte(text), 0o600); err != nil {
			return nil, fmt.Errorf("render fixtures: %w", err)
		}
	}
	helm := &manifest.Helm{Chart: filepath.Join(dir, "helm"), ReleaseName: "bench", Namespace: "bench-render", KubeVersion: "1.37.2"}
	return []renderSource{
		{name: "files", req: manifest.Request{Path: filepath.Join(dir, "files")}},
		{name: "kustomize", req: manifest.Request{Kustomize: filepath.Join(dir, "kustomize", "overlay")}},
		// As the hub builds a kustomization: in a child process.
		{name: "kustomize, sandboxed", req: manifest.Request{Kustomize: filepath.Join(dir, "kustomize", "overlay"), Sandbox: manifest.Self()}},
		{name: "helm", req: manifest.Request{Helm: helm}},
		// As the hub renders a chart: its templates in a child process.
		{name: "helm, sandboxed", req: manifest.Request{Helm: helm, Sandbox: manifest.Self()}},
	}, nil
}

// measureRender renders src once to warm up (and count its objects), then
// runs times, timing each render and counting the heap allocations of
// all of them.
func measureRender(ctx context.Context, src renderSource, runs int) (renderCost, error) {
	objs, err := manifest.Render(ctx, src.req)
	if err != nil {
		return renderCost{}, fmt.Errorf("render %s: %w", src.name, err)
	}
	c := renderCost{Source: src.name, Objects: len(objs), Renders: runs}
	walls := make([]time.Duration, 0, runs)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		t0 := time.Now()
		if _, err := manifest.Render(ctx, src.req); err != nil {
			return renderCost{}, fmt.Errorf("render %s: %w", src.name, err)
		}
		walls = append(walls, time.Since(t0))
	}
	runtime.ReadMemStats(&after)
	p := Summarize(walls)
	c.P50, c.Max = msDuration(p.P50), msDuration(p.Max)
	c.Allocs = (after.Mallocs - before.Mallocs) / uint64(runs)
	c.Bytes = (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
	return c, nil
}

// renderCosts writes the render fixtures under dir and measures each.
func renderCosts(ctx context.Context, dir string) ([]renderCost, error) {
	srcs, err := writeRenderFixtures(dir)
	if err != nil {
		return nil, err
	}
	out := make([]renderCost, 0, len(srcs))
	for _, s := range srcs {
		c, err := measureRender(ctx, s, renderRuns)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

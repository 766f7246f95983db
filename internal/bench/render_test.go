package bench

import (
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/config/manifest"
)

// TestRenderFixtures: each render fixture renders the same 100 objects of
// ten kinds, the kustomize overlay's namespace, label and patch applied.
func TestRenderFixtures(t *testing.T) {
	srcs, err := writeRenderFixtures(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != 5 {
		t.Fatalf("%d fixtures", len(srcs))
	}
	for _, s := range srcs {
		objs, err := manifest.Render(t.Context(), s.req)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if len(objs) != 10*renderPerKind {
			t.Fatalf("%s: %d objects, want %d", s.name, len(objs), 10*renderPerKind)
		}
		kinds := map[string]int{}
		for _, o := range objs {
			kinds[o.Object.GetKind()]++
		}
		if len(kinds) != 10 {
			t.Errorf("%s: kinds %v", s.name, kinds)
		}
		if strings.HasPrefix(s.name, "kustomize") {
			for _, o := range objs {
				if o.Object.GetNamespace() != "bench-render" || o.Object.GetLabels()["team"] != "bench" {
					t.Fatalf("kustomize: %s %s: namespace %q labels %v", o.Object.GetKind(), o.Object.GetName(), o.Object.GetNamespace(), o.Object.GetLabels())
				}
			}
		}
	}
	c, err := measureRender(t.Context(), srcs[0], 2)
	if err != nil {
		t.Fatal(err)
	}
	if c.Objects != 100 || c.Renders != 2 || c.P50 <= 0 || c.Max < c.P50 || c.Allocs == 0 || c.Bytes == 0 {
		t.Errorf("cost %+v", c)
	}
}

// benchmarkRender reports what one render of the named 100-object fixture
// costs through config/manifest.Render.
func benchmarkRender(b *testing.B, name string) {
	srcs, err := writeRenderFixtures(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range srcs {
		if s.name != name {
			continue
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := manifest.Render(b.Context(), s.req); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	b.Fatalf("no fixture %q", name)
}

// BenchmarkRenderFiles100 renders a folder of plain files holding 100
// objects of ten kinds.
func BenchmarkRenderFiles100(b *testing.B) { benchmarkRender(b, "files") }

// BenchmarkRenderKustomize100 builds a kustomize overlay (namespace, label,
// a patch) over a base of the same 100 objects.
func BenchmarkRenderKustomize100(b *testing.B) { benchmarkRender(b, "kustomize") }

// BenchmarkRenderKustomizeSandboxed100 builds the same overlay as the hub
// does: in a child process (manifest.Sandbox; this test binary is the
// worker, see TestMain).
func BenchmarkRenderKustomizeSandboxed100(b *testing.B) { benchmarkRender(b, "kustomize, sandboxed") }

// BenchmarkRenderHelm100 renders a Helm chart of ten templates, each
// ranging over ten items: the same 100 objects.
func BenchmarkRenderHelm100(b *testing.B) { benchmarkRender(b, "helm") }

// BenchmarkRenderHelmSandboxed100 renders the same chart as the hub does:
// its templates in a child process (manifest.Sandbox; this test binary
// is the worker, see TestMain).
func BenchmarkRenderHelmSandboxed100(b *testing.B) { benchmarkRender(b, "helm, sandboxed") }

package manifest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// aliasDocs is a file of docs small documents, each expanding to about
// width*uses nodes through one anchor: under the YAML library's bound for
// one document, far over it for the file.
func aliasDocs(docs, width, uses int) string {
	var b strings.Builder
	for i := range docs {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%d}\nx: &a [%s]\ny: [%s]\n",
			i, strings.TrimSuffix(strings.Repeat("x,", width), ","), strings.TrimSuffix(strings.Repeat("*a,", uses), ","))
	}
	return b.String()
}

// TestAliasesBoundedPerRender renders a file of many documents whose
// aliases each stay under the YAML library's bound for one document: the
// file is refused at the document that spends the Render's budget, before
// it is decoded, and Render allocates a small multiple of the file (the
// aliases unbounded, 8 documents decode to 480,000 nodes: about 80
// MiB).
func TestAliasesBoundedPerRender(t *testing.T) {
	src := aliasDocs(8, 1000, 60)
	p := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	objs, err := Render(t.Context(), Request{Path: p})
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d-byte file: %d objects, allocated %d KiB, error %v", len(src), len(objs), allocated>>10, err)
	if err == nil || !strings.Contains(err.Error(), "m.yaml:") || !strings.Contains(err.Error(), "YAML aliases expand to more than") {
		t.Errorf("error = %v, want the aliases refused at a document of m.yaml", err)
	}
	if limit := 200 * uint64(len(src)); allocated > limit {
		t.Errorf("Render of a %d KiB file allocated %d MiB (want under %d MiB)", len(src)>>10, allocated>>20, limit>>20)
	}
}

// TestAliasesWithinBudget renders documents that use aliases as
// manifests do (a block of labels or env shared a few times), and a
// chain of aliases that doubles at each step is refused at its document.
func TestAliasesWithinBudget(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"a.yaml": "apiVersion: v1\nkind: List\nitems:\n" +
			"- {apiVersion: v1, kind: ConfigMap, metadata: {name: a, labels: &l {app: web, tier: front}}, data: &d {k: v}}\n" +
			"- {apiVersion: v1, kind: ConfigMap, metadata: {name: b, labels: *l}, data: *d}\n",
	})
	objs, err := Render(t.Context(), Request{Path: dir})
	if err != nil || len(objs) != 2 || objs[1].Object.GetLabels()["tier"] != "front" {
		t.Fatalf("Render: %v %q", err, summary(objs))
	}

	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: laughs}\na0: &a0 [x, x]\n")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d]\n", i, i, i-1, i-1)
	}
	dir = writeTree(t, map[string]string{"laughs.yaml": "# one\n---\n" + b.String()})
	_, err = Render(t.Context(), Request{Path: dir})
	if err == nil || !strings.HasPrefix(err.Error(), "laughs.yaml:3: YAML aliases expand") {
		t.Errorf("a chain of aliases: error = %v, want it refused at laughs.yaml:3", err)
	}
}

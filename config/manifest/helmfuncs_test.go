package manifest

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestHelmAmplifiersBoundedBeforeAllocating renders charts whose
// templates ask sprig's functions for far more than a rendered template
// may hold (repeat: 16 MiB from one byte, with a limit of 1 MiB) or
// longer lists than a template may make: each is refused before the
// string or list is made, and Render allocates under 4 MiB (unbounded,
// from 20 MiB to over a hundred).
func TestHelmAmplifiersBoundedBeforeAllocating(t *testing.T) {
	for name, expr := range map[string]string{
		"repeat":          `"x" | repeat 16777216`,
		"indent":          `"x" | indent 16777216`,
		"replace":         `"xxxxxxxx" | replace "" (repeat 500000 "y")`,
		"regexReplaceAll": `regexReplaceAll "" "xxxxxxxx" (repeat 500000 "y")`,
		"randAlphaNum":    `randAlphaNum 4194304`,
		"until":           `until 4194304 | len`,
		"seq":             `seq 2000000 | len`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{
				"Chart.yaml":         "apiVersion: v2\nname: big\nversion: 0.1.0\n",
				"templates/big.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {x: {{ " + expr + " | quote }}}\n",
			})
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Render(t.Context(), Request{Helm: &Helm{Chart: dir, ReleaseName: "r"}, MaxFileSize: 1 << 20})
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			if err == nil || !strings.Contains(err.Error(), "templates/big.yaml") || !strings.Contains(err.Error(), "the limit") {
				t.Errorf("error = %.300v, want the template refused at its limit", err)
			}
			t.Logf("allocated %d KiB", alloc>>10)
			if alloc > 4<<20 {
				t.Errorf("rendering allocated %d MiB with a 1 MiB limit", alloc>>20)
			}
		})
	}
}

// TestHelmRenderStopsAtDeadline renders a template that loops calling
// until: the loop over until 5000000 is refused at once, and loops within
// the list bound stop at the context's deadline (unbounded, each runs for
// seconds).
func TestHelmRenderStopsAtDeadline(t *testing.T) {
	for name, tpl := range map[string]string{
		"long list":    "{{ range until 5000000 }}{{ end }}",
		"nested loops": "{{ range until 800 }}{{ range until 800 }}{{ until 1 }}{{ end }}{{ end }}",
	} {
		t.Run(name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{
				"Chart.yaml":          "apiVersion: v2\nname: loop\nversion: 0.1.0\n",
				"templates/loop.yaml": tpl + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: loop}\n",
			})
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := Render(ctx, Request{Helm: &Helm{Chart: dir, ReleaseName: "r"}})
			if took := time.Since(start); took > 500*time.Millisecond || err == nil {
				t.Errorf("Render with a 50ms deadline took %v, error %v", took.Round(time.Millisecond), err)
			}
		})
	}
}

// TestHelmBoundedFuncsAsSprig renders the replaced functions within their
// bounds: they give what sprig's give.
func TestHelmBoundedFuncsAsSprig(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: same\nversion: 0.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: same}\ndata:\n" +
			"  repeat: {{ repeat 3 \"ab\" | quote }}\n" +
			"  indent: {{ \"a\\nb\" | indent 2 | quote }}\n" +
			"  nindent: {{ \"a\" | nindent 1 | quote }}\n" +
			"  replace: {{ \"a-b-c\" | replace \"-\" \"+\" | quote }}\n" +
			"  regex: {{ regexReplaceAll \"a(x*)b\" \"-ab-axxb-\" \"${1}W\" | quote }}\n" +
			"  literal: {{ regexReplaceAllLiteral \"a(x*)b\" \"-ab-axxb-\" \"${1}\" | quote }}\n" +
			"  until: {{ until 3 | toString | quote }}\n" +
			"  down: {{ until -2 | toString | quote }}\n" +
			"  step: {{ untilStep 1 10 4 | toString | quote }}\n" +
			"  seq: {{ seq 3 | quote }}\n" +
			"  seq2: {{ seq 5 3 | quote }}\n" +
			"  seq3: {{ seq 0 5 12 | quote }}\n" +
			"  rand: {{ randAlphaNum 5 | len | quote }}\n",
	})
	objs, err := Render(t.Context(), Request{Helm: &Helm{Chart: dir, ReleaseName: "r"}})
	if err != nil {
		t.Fatal(err)
	}
	got := objs[0].Object.Object["data"].(map[string]any)
	want := map[string]string{
		"repeat": "ababab", "indent": "  a\n  b", "nindent": "\n a", "replace": "a+b+c",
		"regex": "-W-xxW-", "literal": "-${1}-${1}-", "until": "[0 1 2]", "down": "[0 -1]",
		"step": "[1 5 9]", "seq": "1 2 3", "seq2": "5 4 3", "seq3": "0 5 10", "rand": "5",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %q, want %q", k, got[k], w)
		}
	}
}

// TestHelmChartSymlinkOutRefused renders a chart whose files/ holds a
// symlink to a file outside the chart (read by .Files.Get): the chart is
// refused, naming the link, and the file is never in an object; a link
// inside the chart is followed.
func TestHelmChartSymlinkOutRefused(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "host-secret")
	if err := os.WriteFile(secret, []byte("TOPSECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := writeTree(t, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: leak\nversion: 0.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: leak}\ndata: {x: {{ .Files.Get \"files/s\" | quote }}}\n",
		"files/real":        "inside",
	})
	if err := os.Symlink(filepath.Join(dir, "files/real"), filepath.Join(dir, "files/s")); err != nil {
		t.Fatal(err)
	}
	objs, err := Render(t.Context(), Request{Helm: &Helm{Chart: dir, ReleaseName: "r"}})
	if err != nil || objs[0].Object.Object["data"].(map[string]any)["x"] != "inside" {
		t.Fatalf("a link inside the chart: %v %q", err, summary(objs))
	}
	os.Remove(filepath.Join(dir, "files/s"))
	if err := os.Symlink(secret, filepath.Join(dir, "files/s")); err != nil {
		t.Fatal(err)
	}
	objs, err = Render(t.Context(), Request{Helm: &Helm{Chart: dir, ReleaseName: "r"}})
	if err == nil || !strings.Contains(err.Error(), "files/s: symlink leading outside the source's folder, or to nothing: refused") {
		t.Errorf("error = %v, objects %v: want the link refused", err, objs)
	}
}

package manifest

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// writeTree writes files (path -> content) under a new temporary folder
// and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// summary lists objects as "Kind namespace/name @origin".
func summary(objs []Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		res := o.Object.GetName()
		if ns := o.Object.GetNamespace(); ns != "" {
			res = ns + "/" + res
		}
		out[i] = o.Object.GetKind() + " " + res + " @" + o.Origin.String()
	}
	return out
}

func TestRenderFiles(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"b.yaml":          "# leading comment\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n---\n---\n# only a comment\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: b\n  namespace: shop\n",
		"a/z.yml":         "--- {apiVersion: v1, kind: Secret, metadata: {name: z}}\n",
		"a.json":          `{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "l1"}}, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "l2"}}]}`,
		"c.yaml":          "apiVersion: v1\nkind: ConfigMapList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\n",
		"README.md":       "not a manifest",
		"notes.txt":       "kind: nothing",
		".hidden/x.yaml":  "kind: broken",
		"empty.yaml":      "",
		"sub/deep/d.yaml": "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: d}\n...\n",
	})
	objs, err := Render(t.Context(), Request{Path: dir})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ConfigMap l1 @a.json:1",
		"Deployment l2 @a.json:1",
		"Secret z @a/z.yml:1",
		"ConfigMap b @b.yaml:2",
		"Service shop/b @b.yaml:9",
		"ConfigMap c @c.yaml:1",
		"CronJob d @sub/deep/d.yaml:1",
	}
	if got := summary(objs); !slices.Equal(got, want) {
		t.Errorf("objects:\n got %q\nwant %q", got, want)
	}

	// One file.
	objs, err = Render(t.Context(), Request{Path: filepath.Join(dir, "b.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(objs); !slices.Equal(got, []string{"ConfigMap b @b.yaml:2", "Service shop/b @b.yaml:9"}) {
		t.Errorf("one file: %q", got)
	}
}

func TestRenderFilesErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		req   func(dir string) Request
		want  string
	}{
		{name: "no kind", files: map[string]string{"x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n\napiVersion: v1\nmetadata: {name: b}\n"},
			want: "x.yaml:6: document of apiVersion v1 has no kind"},
		{name: "no apiVersion", files: map[string]string{"x.yaml": "kind: ConfigMap\nmetadata: {name: a}\n"},
			want: "x.yaml:1: ConfigMap has no apiVersion"},
		{name: "neither", files: map[string]string{"x.yaml": "foo: bar\n"},
			want: "x.yaml:1: document has no apiVersion and no kind: not a Kubernetes object"},
		{name: "no name", files: map[string]string{"x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {labels: {a: b}}\n"},
			want: "x.yaml:1: ConfigMap has no metadata.name"},
		{name: "generateName", files: map[string]string{"x.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: j-}\n"},
			want: "x.yaml:1: Job has generateName but no metadata.name: a managed object needs a fixed name"},
		{name: "list item", files: map[string]string{"x.yaml": "apiVersion: v1\nkind: List\nitems:\n- kind: ConfigMap\n  metadata: {name: a}\n"},
			want: "x.yaml:1: List: items[0]: ConfigMap has no apiVersion"},
		{name: "not a mapping", files: map[string]string{"x.yaml": "- a\n- b\n"},
			want: "x.yaml:1: want a Kubernetes object (a mapping), got a list"},
		{name: "bad namespace", files: map[string]string{"x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: Shop_1}\n"},
			want: `x.yaml:1: ConfigMap a: invalid metadata.namespace "Shop_1"`},
		{name: "yaml syntax", files: map[string]string{"x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n\napiVersion: v1\nkind: [a\n"},
			want: "x.yaml:6: invalid YAML: line 7: did not find expected"},
		{name: "alias bomb", files: map[string]string{"x.yaml": aliasBomb()},
			want: "x.yaml:1: YAML aliases expand to more than"},
		{name: "file too large", files: map[string]string{"x.yaml": strings.Repeat("# padding\n", 20)},
			req:  func(dir string) Request { return Request{Path: dir, MaxFileSize: 100} },
			want: "x.yaml: file is 200 bytes: the limit is 100"},
		{name: "too many objects", files: map[string]string{"x.yaml": strings.Repeat("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n", 3)},
			req:  func(dir string) Request { return Request{Path: dir, MaxObjects: 2} },
			want: "x.yaml:9: more than 2 objects: the limit of one source"},
		{name: "missing", files: map[string]string{},
			req:  func(dir string) Request { return Request{Path: filepath.Join(dir, "nope")} },
			want: "no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, tt.files)
			req := Request{Path: dir}
			if tt.req != nil {
				req = tt.req(dir)
			}
			_, err := Render(t.Context(), req)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// aliasBomb is a "billion laughs" document.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("a: &a [x, x, x, x, x, x, x, x, x, x]\n")
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		b.WriteString(n + ": &" + n + " [")
		for i := range 10 {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*" + prev)
		}
		b.WriteString("]\n")
		prev = n
	}
	return b.String()
}

func TestRenderFilesSymlinks(t *testing.T) {
	outside := writeTree(t, map[string]string{"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"})
	dir := writeTree(t, map[string]string{
		"ok.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n",
		"sub/in.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: in}\n",
		"sub/.keep":    "",
		"other/x.json": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}`,
	})
	if err := os.Symlink(filepath.Join(dir, "sub", "in.yaml"), filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	objs, err := Render(t.Context(), Request{Path: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(objs); !slices.Equal(got, []string{"ConfigMap in @link.yaml:1", "ConfigMap ok @ok.yaml:1", "ConfigMap x @other/x.json:1", "ConfigMap in @sub/in.yaml:1"}) {
		t.Errorf("objects: %q", got)
	}

	if err := os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(dir, "sub", "escape.yaml")); err != nil {
		t.Fatal(err)
	}
	_, err = Render(t.Context(), Request{Path: dir})
	var e *Error
	if !errors.As(err, &e) || e.Origin.File != "sub/escape.yaml" || !strings.Contains(e.Msg, "outside the source's folder") {
		t.Errorf("symlink escape: error = %v", err)
	}
	// A link to nothing fails the same way: the message does not tell
	// whether the file outside exists.
	escaped := err.Error()
	os.Remove(filepath.Join(dir, "sub", "escape.yaml"))
	if err := os.Symlink(filepath.Join(outside, "missing.yaml"), filepath.Join(dir, "sub", "escape.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err = Render(t.Context(), Request{Path: dir}); err == nil || err.Error() != escaped {
		t.Errorf("broken symlink: error = %v, want the escape's: %s", err, escaped)
	}
}

func TestRenderRequestKind(t *testing.T) {
	for _, r := range []Request{{}, {Path: "a", Kustomize: "b"}, {Path: "a", Helm: &Helm{}}} {
		if _, err := Render(t.Context(), r); err == nil || !strings.Contains(err.Error(), "exactly one") {
			t.Errorf("Render(%+v) = %v, want an error", r, err)
		}
	}
}

// kustomizeTree is a base and two overlays.
func kustomizeTree() map[string]string {
	return map[string]string{
		"base/kustomization.yaml": "resources: [deploy.yaml, svc.yaml]\nlabels:\n- pairs: {app: web}\n",
		"base/deploy.yaml":        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers: [{name: web, image: nginx}]\n",
		"base/svc.yaml":           "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n",
		"overlays/dev/kustomization.yaml": "resources: [../../base]\nnamePrefix: dev-\nnamespace: dev\n" +
			"configMapGenerator:\n- name: settings\n  literals: [LEVEL=debug]\n",
		"overlays/prod/kustomization.yaml": "resources: [../../base, ns.yaml]\nnamespace: prod\nbuildMetadata: [originAnnotations]\n" +
			"patches:\n- target: {kind: Deployment}\n  patch: |\n    - op: replace\n      path: /spec/replicas\n      value: 3\n",
		"overlays/prod/ns.yaml":              "apiVersion: v1\nkind: Namespace\nmetadata: {name: prod}\n",
		"overlays/broken/kustomization.yaml": "resources: [missing.yaml]\n",
		"overlays/remote/kustomization.yaml": "resources:\n- ../../base\n- https://github.com/org/repo//deploy?ref=v1\n",
		"overlays/scp/kustomization.yaml":    "components: [git@example.com:org/repo.git]\n",
		"overlays/gh/kustomization.yaml":     "resources: [github.com/org/repo/deploy]\n",
	}
}

func TestRenderKustomize(t *testing.T) {
	dir := writeTree(t, kustomizeTree())
	objs, err := Render(t.Context(), Request{Kustomize: filepath.Join(dir, "overlays/dev")})
	if err != nil {
		t.Fatal(err)
	}
	got := summary(objs)
	if len(got) != 3 || got[0] != "Deployment dev/dev-web @" || got[1] != "Service dev/dev-web @" || !strings.HasPrefix(got[2], "ConfigMap dev/dev-settings-") {
		t.Errorf("dev: %q", got)
	}
	objs, err = Render(t.Context(), Request{Kustomize: filepath.Join(dir, "overlays/prod")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Deployment prod/web @../../base/deploy.yaml", "Service prod/web @../../base/svc.yaml", "Namespace prod @ns.yaml"}
	if got := summary(objs); !slices.Equal(got, want) {
		t.Errorf("prod:\n got %q\nwant %q", got, want)
	}
	if r, _, _ := unstructuredInt(objs[0].Object.Object, "spec", "replicas"); r != 3 {
		t.Errorf("prod replicas = %d, want 3 (the patch)", r)
	}
	if objs[0].Object.GetLabels()["app"] != "web" {
		t.Errorf("labels = %v", objs[0].Object.GetLabels())
	}

	for _, tt := range []struct{ overlay, want string }{
		{"broken", "accumulating resources"},
		{"remote", `remote reference "https://github.com/org/repo//deploy?ref=v1": a source renders local files only`},
		{"scp", `remote reference "git@example.com:org/repo.git"`},
		{"gh", `remote reference "github.com/org/repo/deploy"`},
		{"nope", "must build at directory"},
	} {
		_, err := Render(t.Context(), Request{Kustomize: filepath.Join(dir, "overlays", tt.overlay)})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("overlay %s: error = %v, want it to contain %q", tt.overlay, err, tt.want)
		}
	}

	// A file over the limit is refused before kustomize reads it.
	_, err = Render(t.Context(), Request{Kustomize: filepath.Join(dir, "overlays/dev"), MaxFileSize: 60})
	if err == nil || !strings.Contains(err.Error(), "the limit is 60") {
		t.Errorf("size limit: error = %v", err)
	}
}

func TestIsRemote(t *testing.T) {
	for ref, want := range map[string]bool{
		"../base": false, "deploy.yaml": false, "./a@b/c.yaml": false, "dir/a@b.yaml": false, "": false, "key=file.txt": false,
		"apiVersion: v1\nkind: X\nmetadata: {annotations: {a: https://x, b: me@x/y}}": false,
		"a@b/c.yaml": true, "git@evil.example/org/repo": true, "GITHUB.COM/org/repo?ref=main": true, " git::git@host:repo": true,
		"https://example.com/x.yaml": true, "ssh://git@host/repo": true, "git::https://host/repo": true,
		"github.com/org/repo": true, "git@github.com:org/repo": true, "file:///srv/repo": true,
	} {
		if got := isRemote(ref); got != want {
			t.Errorf("isRemote(%q) = %v, want %v", ref, got, want)
		}
	}
}

// helmChart is a small chart with a subchart, a hook, a test, notes, a
// partial and a CRD.
func helmChart() map[string]string {
	return map[string]string{
		"Chart.yaml":             "apiVersion: v2\nname: shop\nversion: 0.1.0\n",
		"values.yaml":            "replicas: 1\ncolor: blue\nsize: small\nsub: {enabled: true}\n",
		"values.schema.json":     `{"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 1}}}`,
		"prod.yaml":              "replicas: 3\ncolor: red\n",
		"big.yaml":               "size: large\ncolor: green\n",
		"templates/_helpers.tpl": `{{- define "shop.name" -}}{{ .Release.Name }}-shop{{- end -}}`,
		"templates/NOTES.txt":    "Thanks for installing {{ .Release.Name }}\n",
		"templates/web.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ include \"shop.name\" . }}\n  namespace: {{ .Release.Namespace }}\n" +
			"  labels: {color: {{ .Values.color }}, size: {{ .Values.size }}, kube: \"{{ .Capabilities.KubeVersion.Minor }}\"}\nspec:\n  replicas: {{ .Values.replicas }}\n" +
			"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-hook\n  annotations: {helm.sh/hook: pre-install}\n",
		"templates/tests/t.yaml":      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Release.Name }}-test\n  annotations: {\"helm.sh/hook\": test}\n",
		"templates/empty.yaml":        "{{- if false }}\nnothing\n{{- end }}\n",
		"crds/widgets.yaml":           "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec: {group: example.com, scope: Cluster, names: {kind: Widget, plural: widgets}}\n",
		"charts/sub/Chart.yaml":       "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"charts/sub/values.yaml":      "greeting: hello\n",
		"charts/sub/templates/c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}-sub}\ndata: {greeting: {{ .Values.greeting }}}\n",
	}
}

func TestRenderHelm(t *testing.T) {
	dir := writeTree(t, helmChart())
	tests := []struct {
		name   string
		helm   Helm
		want   []string
		labels map[string]string
	}{
		{name: "defaults", helm: Helm{ReleaseName: "cache"},
			want: []string{
				"CustomResourceDefinition widgets.example.com @shop/crds/widgets.yaml:1",
				"ConfigMap cache-sub @shop/charts/sub/templates/c.yaml:1",
				"Deployment default/cache-shop @shop/templates/web.yaml:1",
			},
			labels: map[string]string{"color": "blue", "size": "small", "kube": "20"}},
		{name: "values files in order, inline values last", helm: Helm{ReleaseName: "r", Namespace: "shop",
			ValuesFiles: []string{filepath.Join(dir, "prod.yaml"), filepath.Join(dir, "big.yaml")},
			Values:      map[string]any{"color": "black"}, KubeVersion: "1.37.2"},
			want: []string{
				"CustomResourceDefinition widgets.example.com @shop/crds/widgets.yaml:1",
				"ConfigMap r-sub @shop/charts/sub/templates/c.yaml:1",
				"Deployment shop/r-shop @shop/templates/web.yaml:1",
			},
			labels: map[string]string{"color": "black", "size": "large", "kube": "37"}},
		{name: "subchart disabled by condition", helm: Helm{ReleaseName: "r", Values: map[string]any{"sub": map[string]any{"enabled": false}}},
			want: []string{
				"CustomResourceDefinition widgets.example.com @shop/crds/widgets.yaml:1",
				"ConfigMap r-sub @shop/charts/sub/templates/c.yaml:1", // no condition in Chart.yaml: still rendered
				"Deployment default/r-shop @shop/templates/web.yaml:1",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.helm
			h.Chart = dir
			objs, err := Render(t.Context(), Request{Helm: &h})
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(objs); !slices.Equal(got, tt.want) {
				t.Errorf("objects:\n got %q\nwant %q", got, tt.want)
			}
			if tt.labels != nil {
				if got := objs[len(objs)-1].Object.GetLabels(); !equalMaps(got, tt.labels) {
					t.Errorf("labels = %v, want %v", got, tt.labels)
				}
			}
		})
	}
}

func TestRenderHelmErrors(t *testing.T) {
	files := helmChart()
	files["templates/bad.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.missing.deeper }}\n"
	bad := writeTree(t, files)
	dir := writeTree(t, helmChart())
	tests := []struct {
		name string
		helm Helm
		want string
	}{
		{"template error names the template", Helm{Chart: bad, ReleaseName: "r"}, "shop/templates/bad.yaml:4"},
		{"schema", Helm{Chart: dir, ReleaseName: "r", Values: map[string]any{"replicas": 0}}, "values do not match values.schema.json"},
		{"release name", Helm{Chart: dir, ReleaseName: "Bad_Name"}, `release name "Bad_Name"`},
		{"no chart", Helm{Chart: filepath.Join(dir, "templates"), ReleaseName: "r"}, "load chart"},
		{"values file missing", Helm{Chart: dir, ReleaseName: "r", ValuesFiles: []string{filepath.Join(dir, "nope.yaml")}}, "values file"},
		{"kubeVersion", Helm{Chart: dir, ReleaseName: "r", KubeVersion: "one"}, `kubeVersion "one"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.helm
			_, err := Render(t.Context(), Request{Helm: &h})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestRenderHelmArchive(t *testing.T) {
	dir := writeTree(t, helmChart())
	tgz := filepath.Join(t.TempDir(), "shop-0.1.0.tgz")
	writeTarGz(t, dir, "shop", tgz)
	objs, err := Render(t.Context(), Request{Helm: &Helm{Chart: tgz, ReleaseName: "r"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 3 || objs[2].Object.GetName() != "r-shop" {
		t.Errorf("objects: %q", summary(objs))
	}
}

// writeTarGz archives the folder dir as prefix/... into the file out, as
// helm package does.
func writeTarGz(t *testing.T, dir, prefix, out string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if err := tw.WriteHeader(&tar.Header{Name: prefix + "/" + filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRenderPodinfo renders a real public project's manifests: podinfo's
// kustomize folder and Helm chart (testdata/podinfo, see SOURCE there).
func TestRenderPodinfo(t *testing.T) {
	objs, err := Render(t.Context(), Request{Kustomize: "testdata/podinfo/kustomize"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kindNames(objs), []string{"HorizontalPodAutoscaler podinfo", "Deployment podinfo", "Service podinfo"}; !slices.Equal(got, want) {
		t.Errorf("kustomize: %q, want %q", got, want)
	}

	chart := "testdata/podinfo/charts/podinfo"
	objs, err = Render(t.Context(), Request{Helm: &Helm{Chart: chart, ReleaseName: "podinfo", Namespace: "web", KubeVersion: "1.37.2"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kindNames(objs), []string{"Deployment podinfo", "Service podinfo"}; !slices.Equal(got, want) {
		t.Errorf("helm: %q, want %q (tests and hooks left out)", got, want)
	}
	if objs[0].Origin.File != "podinfo/templates/deployment.yaml" {
		t.Errorf("origin = %v", objs[0].Origin)
	}

	// Its production values and a few switches.
	objs, err = Render(t.Context(), Request{Helm: &Helm{Chart: chart, ReleaseName: "front", Namespace: "web", KubeVersion: "1.37.2",
		ValuesFiles: []string{chart + "/values-prod.yaml"},
		Values:      map[string]any{"redis": map[string]any{"enabled": true}, "hpa": map[string]any{"enabled": true}, "serviceAccount": map[string]any{"enabled": true}}}})
	if err != nil {
		t.Fatal(err)
	}
	got := kindNames(objs)
	for _, want := range []string{"Deployment front-podinfo", "Service front-podinfo", "HorizontalPodAutoscaler front-podinfo",
		"ConfigMap front-podinfo-redis", "Deployment front-podinfo-redis", "Service front-podinfo-redis", "ServiceAccount front-podinfo"} {
		if !slices.Contains(got, want) {
			t.Errorf("helm with values: no %s in %q", want, got)
		}
	}

	// Kubernetes older than the chart's kubeVersion constraint.
	_, err = Render(t.Context(), Request{Helm: &Helm{Chart: chart, ReleaseName: "podinfo", KubeVersion: "1.20.0"}})
	if err == nil || !strings.Contains(err.Error(), "requires kubeVersion >=1.23.0-0") {
		t.Errorf("old Kubernetes: error = %v", err)
	}
}

func kindNames(objs []Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Object.GetKind() + " " + o.Object.GetName()
	}
	return out
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// unstructuredInt reads an integer field.
func unstructuredInt(m map[string]any, path ...string) (int64, bool, error) {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return 0, false, nil
		}
		v = mm[p]
	}
	switch x := v.(type) {
	case int64:
		return x, true, nil
	case float64:
		return int64(x), true, nil
	}
	return 0, false, nil
}

// TestRenderManyDocumentsInParallel: a stream of enough documents is
// decoded on every core, and gives what one core gives: the same objects
// in the file's order (lists, empty documents and comments among them),
// and, when several documents are broken, the first broken one's error.
func TestRenderManyDocumentsInParallel(t *testing.T) {
	var ok, broken strings.Builder
	objects := 0
	for i := range 4 * docsPerCore {
		doc := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d}\ndata: {n: %q}\n", i, fmt.Sprint(i))
		switch i % 50 {
		case 7:
			doc = fmt.Sprintf("kind: ConfigMapList\napiVersion: v1\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: item-%d}}\n", i)
		case 13:
			doc = "# nothing here\n"
			objects--
		}
		objects++
		ok.WriteString("---\n" + doc)
		switch i {
		case 70:
			doc = "apiVersion: v1\nkind: ConfigMap\nmetadata: [not, a, map]\n"
		case 200:
			doc = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n" // invalid YAML
		}
		broken.WriteString("---\n" + doc)
	}
	dir := writeTree(t, map[string]string{"ok.yaml": ok.String(), "broken/broken.yaml": broken.String()})
	render := func(procs int, path string) ([]string, error) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		objs, err := Render(t.Context(), Request{Path: filepath.Join(dir, path)})
		return summary(objs), err
	}
	one, err := render(1, "ok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	four, err := render(4, "ok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(one, four) {
		t.Fatalf("four cores give other objects than one:\n%q\n%q", four, one)
	}
	if want := objects; len(four) != want || four[0] != "ConfigMap cm-0 @ok.yaml:2" || four[7] != "ConfigMap item-7 @ok.yaml:37" {
		t.Errorf("%d objects (want %d), first %q", len(four), want, four[:8])
	}
	_, err1 := render(1, "broken")
	_, err4 := render(4, "broken")
	if err1 == nil || err4 == nil || err1.Error() != err4.Error() || !strings.Contains(err4.Error(), "broken.yaml:") {
		t.Fatalf("errors: one core %v, four cores %v", err1, err4)
	}
	if strings.Contains(err4.Error(), "invalid YAML") {
		t.Errorf("the error is the later document's: %v", err4)
	}
}

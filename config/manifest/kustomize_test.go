package manifest

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestKustomizeRemoteReferencesRunNoGit builds kustomizations whose
// references kustomize takes for Git repositories, in every field that
// leads to its cloner, with a fake git first on PATH that records its
// calls: each is refused as a remote reference, and git never runs.
func TestKustomizeRemoteReferencesRunNoGit(t *testing.T) {
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	script := "#!/bin/sh\necho \"$@\" >> " + calls + "\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, kust := range []string{
		"resources:\n- github.com/evil/repo?ref=main",     // a query with '='
		"resources: ['git@evil.example:org/repo?ref=v1']", // SCP style, with a query
		"resources: [git@evil.example/org/repo]",          // user@host/path
		"resources: [GitHub.com/evil/repo]",
		"resources: ['git::https://evil.example/org/repo']",
		"resources: ['file:///srv/repo']",
		"bases: [git@evil.example/org/repo]",
		"components: [git@evil.example/org/repo]",
		"generators: [git@evil.example/org/repo]",
		"transformers: [git@evil.example/org/repo]",
		"validators: [git@evil.example/org/repo]",
		"configMapGenerator: [{name: c, files: ['k=https://evil.example/x']}]",
	} {
		t.Run(kust, func(t *testing.T) {
			os.Remove(calls)
			dir := writeTree(t, map[string]string{"kustomization.yaml": kust + "\n"})
			// The folder a reference names exists too: kustomize would
			// still clone rather than read it.
			os.MkdirAll(filepath.Join(dir, "git@evil.example/org/repo"), 0o755)
			_, err := Render(t.Context(), Request{Kustomize: dir})
			if got, _ := os.ReadFile(calls); len(got) > 0 {
				t.Errorf("kustomize ran git:\n%s(render error: %v)", strings.TrimSpace(string(got)), err)
			} else if err == nil || !strings.Contains(err.Error(), "remote reference") {
				t.Errorf("error = %v, want a remote reference refused", err)
			}
		})
	}
}

// TestKustomizeLocalReferences renders references that only look like
// remote ones: an '@' after a folder, "./" before a folder with an '@'
// in its name, a key=path file source.
func TestKustomizeLocalReferences(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"kustomization.yaml": "resources: [./team@x/cm.yaml, dir/a@b.yaml]\n" +
			"configMapGenerator: [{name: files, files: [key=dir/a@b.yaml]}]\n",
		"team@x/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n",
		"dir/a@b.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: two}\n",
	})
	objs, err := Render(t.Context(), Request{Kustomize: dir})
	if err != nil || len(objs) != 3 {
		t.Fatalf("Render: %v, %q", err, summary(objs))
	}
}

// TestKustomizeBuiltinConfigsFetchNothing gives kustomize builtin
// generator and transformer configs (in files, inline, and built from a
// folder) whose file fields name an https:// URL, which kustomize's
// loader would fetch: each is refused as a remote reference, and the
// server is never asked.
func TestKustomizeBuiltinConfigsFetchNothing(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched}\n")
	}))
	defer srv.Close()
	url := srv.URL + "/x.yaml"
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: local}\n"
	patch := "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: " + url + "\ntarget: {kind: ConfigMap}\n"
	for name, files := range map[string]map[string]string{
		"patch transformer file": {
			"kustomization.yaml": "resources: [cm.yaml]\ntransformers: [patch.yaml]\n",
			"patch.yaml":         patch,
		},
		"json6902 transformer file": {
			"kustomization.yaml": "resources: [cm.yaml]\ntransformers: [patch.yaml]\n",
			"patch.yaml":         "apiVersion: builtin\nkind: PatchJson6902Transformer\nmetadata: {name: p}\ntarget: {version: v1, kind: ConfigMap, name: local}\npath: " + url + "\n",
		},
		"strategic merge transformer file": {
			"kustomization.yaml": "resources: [cm.yaml]\ntransformers: [patch.yaml]\n",
			"patch.yaml":         "apiVersion: builtin\nkind: PatchStrategicMergeTransformer\nmetadata: {name: p}\npaths: [" + url + "]\n",
		},
		"replacement transformer file": {
			"kustomization.yaml": "resources: [cm.yaml]\ntransformers: [repl.yaml]\n",
			"repl.yaml":          "apiVersion: builtin\nkind: ReplacementTransformer\nmetadata: {name: r}\nreplacements: [{path: '" + url + "'}]\n",
		},
		"configmap generator file": {
			"kustomization.yaml": "generators: [gen.yaml]\n",
			"gen.yaml":           "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: g}\nfiles: [" + url + "]\n",
		},
		"secret generator file, key=url": {
			"kustomization.yaml": "generators: [gen.yaml]\n",
			"gen.yaml":           "apiVersion: builtin\nkind: SecretGenerator\nmetadata: {name: g}\nfiles: ['k=" + url + "']\n",
		},
		"apiVersion spelt with an escape, in a List": {
			"kustomization.yaml": "resources: [cm.yaml]\ntransformers: [patch.yaml]\n",
			"patch.yaml":         "apiVersion: v1\nkind: List\nitems:\n- " + strings.Replace(indent(patch, "  ")[2:], "apiVersion: builtin", `apiVersion: "/b\u0075iltin"`, 1),
		},
		"inline transformer": {
			"kustomization.yaml": "resources: [cm.yaml]\ntransformers:\n- |\n" + indent(patch, "  "),
		},
		"transformers built from a folder": {
			// The folder's own patch writes the URL: no file holds it.
			"kustomization.yaml": "resources: [cm.yaml]\ntransformers: [tdir]\n",
			"tdir/kustomization.yaml": "resources: [patch.yaml]\npatches:\n- target: {kind: PatchTransformer}\n" +
				"  patch: |\n    - {op: replace, path: /path, value: \"" + url + "\"}\n",
			"tdir/patch.yaml": strings.Replace(patch, url, "local.yaml", 1),
		},
	} {
		t.Run(name, func(t *testing.T) {
			files["cm.yaml"] = cm
			dir := writeTree(t, files)
			objs, err := Render(t.Context(), Request{Kustomize: dir})
			if n := hits.Swap(0); n > 0 {
				t.Errorf("kustomize fetched %s %d time(s) (render: %v, %q)", url, n, err, summary(objs))
			}
			if err == nil || !strings.Contains(err.Error(), "remote reference") && !strings.Contains(err.Error(), "folder") {
				t.Errorf("error = %v, want the config refused", err)
			}
		})
	}
}

// TestKustomizeBuiltinCheckLeavesDataAlone renders a generator whose data
// file mentions builtin and holds backslashes without being YAML: the
// check of builtin configs leaves it to kustomize, which reads it.
func TestKustomizeBuiltinCheckLeavesDataAlone(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"kustomization.yaml": "configMapGenerator: [{name: scripts, files: [run.sh]}]\n",
		"run.sh":             "#!/bin/sh\n# uses the builtin echo: {[\n echo \"a\\tb\" \\\n  'c: d: e'\n",
	})
	objs, err := Render(t.Context(), Request{Kustomize: dir})
	if err != nil || len(objs) != 1 {
		t.Fatalf("Render: %v, %q", err, summary(objs))
	}
}

// indent prefixes every line of s.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+prefix) + "\n"
}

// TestKustomizeRootHoldsBases builds kustomizations in a folder laid out
// as a Git checkout beside other folders: with the checkout as the
// request's Root, an overlay reaching a base outside it (as written, or
// through a symlink inside it) fails as if it were not there, naming the
// reference and the root, while an overlay reaching ../../base inside it renders. Without
// a Root (a local source) the same overlay renders what it names.
func TestKustomizeRootHoldsBases(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"checkout/deploy/kustomization.yaml":        "resources: [../../elsewhere]\n",
		"checkout/linked/kustomization.yaml":        "resources: [../link]\n",
		"checkout/base/kustomization.yaml":          "resources: [cm.yaml]\n",
		"checkout/base/cm.yaml":                     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ours}\n",
		"checkout/overlays/prod/kustomization.yaml": "resources: [../../base]\nnamePrefix: prod-\n",
		"elsewhere/kustomization.yaml":              "resources: [secret.yaml]\n",
		"elsewhere/secret.yaml":                     "apiVersion: v1\nkind: Secret\nmetadata: {name: not-yours}\nstringData: {token: s3cr3t}\n",
	})
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), filepath.Join(dir, "checkout/link")); err != nil {
		t.Fatal(err)
	}
	root, err := realPath(filepath.Join(dir, "checkout"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ overlay, ref string }{{"deploy", "../../elsewhere"}, {"linked", "../link"}} {
		objs, err := Render(t.Context(), Request{Kustomize: filepath.Join(root, tt.overlay), Root: root})
		if err == nil {
			t.Errorf("%s: rendered %q from outside the root", tt.overlay, summary(objs))
		} else if msg := err.Error(); !strings.Contains(msg, `'`+tt.ref+`'`) || !strings.Contains(msg, "does not exist in the source's root "+root) {
			t.Errorf("%s: error = %v, want the reference %q and the root named", tt.overlay, err, tt.ref)
		}
	}
	objs, err := Render(t.Context(), Request{Kustomize: filepath.Join(root, "overlays/prod"), Root: root})
	if got := summary(objs); err != nil || !slices.Equal(got, []string{"ConfigMap prod-ours @"}) {
		t.Errorf("overlay inside the root: %v, %q", err, got)
	}
	objs, err = Render(t.Context(), Request{Kustomize: filepath.Join(root, "deploy")})
	if got := summary(objs); err != nil || !slices.Equal(got, []string{"Secret not-yours @"}) {
		t.Errorf("without a root: %v, %q", err, got)
	}
}

// TestKustomizeRootHoldsFiles reads through the file system guard
// itself: a file whose real path is outside the root is refused, one
// inside it is read.
func TestKustomizeRootHoldsFiles(t *testing.T) {
	dir := writeTree(t, map[string]string{"root/in.yaml": "a: 1\n", "out.yaml": "b: 2\n"})
	if err := os.Symlink(filepath.Join(dir, "out.yaml"), filepath.Join(dir, "root/link.yaml")); err != nil {
		t.Fatal(err)
	}
	root, err := realPath(filepath.Join(dir, "root"))
	if err != nil {
		t.Fatal(err)
	}
	g := guardedFS{FileSystem: filesys.MakeFsOnDisk(), limit: 1 << 10, root: root, refused: new(error)}
	if _, err := g.ReadFile(filepath.Join(root, "in.yaml")); err != nil {
		t.Errorf("in.yaml: %v", err)
	}
	for _, p := range []string{filepath.Join(dir, "out.yaml"), filepath.Join(root, "link.yaml"), filepath.Join(root, "../out.yaml")} {
		if _, err := g.ReadFile(p); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "does not exist in the source's root "+root) {
			t.Errorf("%s: error = %v, want it refused as not there", p, err)
		}
		if g.Exists(p) {
			t.Errorf("%s: seen by Exists", p)
		}
	}
	if g.IsDir(dir) || !g.IsDir(root) {
		t.Errorf("IsDir: the folder outside %v, the root %v; want false, true", g.IsDir(dir), g.IsDir(root))
	}
	if err := g.WriteFile(filepath.Join(root, "new.yaml"), nil); err == nil {
		t.Error("WriteFile: a build wrote a file")
	}
}

// TestKustomizeRootTellsNothingOutside: whatever a rooted build names
// outside its root, through every kind of reference and through symlinks
// in the checkout, it fails the same way whether that thing exists or
// not: the errors of two builds that differ only there are the same, so
// a source's author cannot probe the hub's disk.
func TestKustomizeRootTellsNothingOutside(t *testing.T) {
	for _, tc := range []struct{ name, kustomization string }{
		{"base", "resources: [../../outside]\n"},
		{"resource file", "resources: [../../outside/secret.yaml]\n"},
		{"component", "components: [../../outside]\n"},
		{"crd", "crds: [../../outside/secret.yaml]\n"},
		{"configurations", "configurations: [../../outside/secret.yaml]\n"},
		{"patch", "resources: [cm.yaml]\npatches: [{path: ../../outside/secret.yaml}]\n"},
		{"strategic merge patch", "resources: [cm.yaml]\npatchesStrategicMerge: [../../outside/secret.yaml]\n"},
		{"replacement", "resources: [cm.yaml]\nreplacements: [{path: ../../outside/secret.yaml}]\n"},
		{"generator file", "configMapGenerator: [{name: x, files: [../../outside/secret.yaml]}]\n"},
		{"generator env", "configMapGenerator: [{name: x, envs: [../../outside/secret.yaml]}]\n"},
		{"openapi", "resources: [cm.yaml]\nopenapi: {path: ../../outside/secret.yaml}\n"},
		{"absolute", "resources: [ABS/outside/secret.yaml]\n"},
		{"symlink to a folder", "resources: [link-dir]\n"},
		{"symlink to a file", "resources: [link-file]\n"},
		{"symlink as generator file", "configMapGenerator: [{name: x, files: [link-file]}]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errs [2]string
			for i, exists := range []bool{true, false} {
				files := map[string]string{
					"checkout/k/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ours}\n",
				}
				if exists {
					files["outside/kustomization.yaml"] = "resources: [secret.yaml]\n"
					files["outside/secret.yaml"] = "apiVersion: v1\nkind: Secret\nmetadata: {name: not-yours}\nstringData: {token: s3cr3t}\n"
				}
				dir := writeTree(t, files)
				for link, target := range map[string]string{"link-dir": "outside", "link-file": "outside/secret.yaml"} {
					if err := os.Symlink(filepath.Join(dir, target), filepath.Join(dir, "checkout/k", link)); err != nil {
						t.Fatal(err)
					}
				}
				k := strings.ReplaceAll(tc.kustomization, "ABS", dir)
				if err := os.WriteFile(filepath.Join(dir, "checkout/k/kustomization.yaml"), []byte(k), 0o644); err != nil {
					t.Fatal(err)
				}
				root := filepath.Join(dir, "checkout")
				objs, err := Render(t.Context(), Request{Kustomize: filepath.Join(root, "k"), Root: root})
				if err == nil {
					t.Fatalf("exists=%v: rendered %q", exists, summary(objs))
				}
				errs[i] = strings.ReplaceAll(err.Error(), dir, "$DIR")
				if strings.Contains(errs[i], "s3cr3t") {
					t.Errorf("the error quotes the file outside: %s", errs[i])
				}
			}
			if errs[0] != errs[1] {
				t.Errorf("the error tells whether the path outside the root exists:\n exists:  %s\n missing: %s", errs[0], errs[1])
			}
		})
	}
}

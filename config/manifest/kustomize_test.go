package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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

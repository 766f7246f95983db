package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// renderKustomize builds the kustomization in r.Kustomize in process,
// with kustomize's default options (load restrictions RootOnly, plugins
// and helmCharts disabled) over a file system that refuses files larger
// than the limit and kustomizations that name remote resources (which
// kustomize would fetch with git or HTTP).
func renderKustomize(r Request) ([]Object, error) {
	root, err := filepath.Abs(r.Kustomize)
	if err != nil {
		return nil, err
	}
	fsys := guardedFS{FileSystem: filesys.MakeFsOnDisk(), limit: r.maxFileSize(), refused: new(error)}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(fsys, root)
	if err != nil {
		// kustomize takes an unreadable kustomization file for a missing
		// one: the guard's reason is the one to report.
		if *fsys.refused != nil {
			return nil, *fsys.refused
		}
		return nil, err
	}
	c := &collector{max: r.maxObjects()}
	for _, res := range m.Resources() {
		var o Origin
		if origin, err := res.GetOrigin(); err == nil && origin != nil {
			o.File = origin.Path
		}
		j, err := res.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", res.GetKind(), res.GetName(), err)
		}
		if err := c.decodeJSON(j, o); err != nil {
			return nil, err
		}
	}
	return c.objects, nil
}

// guardedFS is the file system kustomize reads: the disk, with a size
// limit per file, and every kustomization file checked for remote
// references before kustomize sees it.
type guardedFS struct {
	filesys.FileSystem
	limit int64
	// refused is the first file the guard refused, and why.
	refused *error
}

// ReadFile reads a file within the limit; a kustomization file that names
// a remote resource is refused.
func (g guardedFS) ReadFile(path string) ([]byte, error) {
	data, err := readLimited(path, g.limit)
	if err == nil && slices.Contains(konfig.RecognizedKustomizationFileNames(), filepath.Base(path)) {
		err = checkLocal(data)
	}
	if err != nil {
		err = fmt.Errorf("%s: %w", path, err)
		if *g.refused == nil && !errors.Is(err, fs.ErrNotExist) {
			*g.refused = err
		}
		return nil, err
	}
	return data, nil
}

// checkLocal refuses a kustomization that names a remote resource, base,
// component or file: kustomize would clone it with git or fetch it over
// HTTP, and a source renders from local files only. A kustomization that
// does not parse is left to kustomize, which reports it.
func checkLocal(data []byte) error {
	var k types.Kustomization
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil
	}
	k.FixKustomization() // bases into resources, env into envs
	refs := slices.Concat(k.Resources, k.Components, k.Crds, k.Configurations,
		k.Generators, k.Transformers, k.Validators, []string{k.OpenAPI["path"]})
	for _, p := range k.Patches {
		refs = append(refs, p.Path)
	}
	//lint:ignore SA1019 kustomize still reads the deprecated patch fields
	for _, p := range k.PatchesJson6902 {
		refs = append(refs, p.Path)
	}
	//lint:ignore SA1019 kustomize still reads the deprecated patch fields
	for _, p := range k.PatchesStrategicMerge {
		if s := string(p); !strings.ContainsAny(s, "\n:") || isRemote(s) {
			refs = append(refs, s)
		}
	}
	for _, r := range k.Replacements {
		refs = append(refs, r.Path)
	}
	for _, g := range k.ConfigMapGenerator {
		refs = append(refs, g.FileSources...)
		refs = append(refs, g.EnvSources...)
	}
	for _, g := range k.SecretGenerator {
		refs = append(refs, g.FileSources...)
		refs = append(refs, g.EnvSources...)
	}
	for _, ref := range refs {
		// A file source may be key=path.
		if _, p, ok := strings.Cut(ref, "="); ok && !strings.Contains(ref, "://") {
			ref = p
		}
		if isRemote(ref) {
			return fmt.Errorf("remote reference %q: a source renders local files only (vendor it next to the kustomization)", ref)
		}
	}
	return nil
}

// isRemote reports whether a kustomization reference is one kustomize
// would fetch: a URL (https://, ssh://, file://...), a go-getter git::
// reference, a GitHub shorthand (github.com/org/repo) or an SCP-style
// git reference (git@host:org/repo).
func isRemote(ref string) bool {
	ref = strings.TrimSpace(ref)
	lower := strings.ToLower(ref)
	switch {
	case ref == "":
		return false
	case strings.Contains(ref, "://"), strings.HasPrefix(lower, "git::"),
		strings.HasPrefix(lower, "github.com/"), strings.HasPrefix(lower, "github.com:"):
		return true
	}
	// user@host:path, before any '/'.
	first, _, _ := strings.Cut(ref, "/")
	at := strings.IndexByte(first, '@')
	return at > 0 && strings.IndexByte(first[at:], ':') > 0
}

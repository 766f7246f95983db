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
)

// renderKustomize builds the kustomization in r.Kustomize in process,
// with kustomize's default options (load restrictions RootOnly, plugins
// and helmCharts disabled) over a file system (guardedFS) that refuses
// files larger than the limit, anything outside r.Root and
// kustomizations that name remote resources (which kustomize would fetch
// with git or HTTP).
func renderKustomize(r Request) ([]Object, error) {
	dir, err := filepath.Abs(r.Kustomize)
	if err != nil {
		return nil, err
	}
	fsys := guardedFS{FileSystem: filesys.MakeFsOnDisk(), limit: r.maxFileSize(), refused: new(error)}
	if r.Root != "" {
		if fsys.root, err = realPath(r.Root); err != nil {
			return nil, fmt.Errorf("root %s: %w", r.Root, err)
		}
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(fsys, dir)
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

// realPath is the absolute path of p with its symlinks resolved.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// guardedFS is the file system kustomize reads: the disk, with a size
// limit per file, nothing read outside root, and every kustomization
// file checked for remote references and references outside root before
// kustomize sees it.
type guardedFS struct {
	filesys.FileSystem
	limit int64
	// root is the real path of the folder kustomize may read in; ""
	// means anywhere (Request.Root).
	root string
	// refused is the first file the guard refused, and why.
	refused *error
}

// ReadFile reads a file within the limit and the root; a kustomization
// file that names a remote resource or a folder outside the root is
// refused.
func (g guardedFS) ReadFile(path string) ([]byte, error) {
	err := g.inRoot(path)
	var data []byte
	if err == nil {
		data, err = readLimited(path, g.limit)
	}
	if err == nil && slices.Contains(konfig.RecognizedKustomizationFileNames(), filepath.Base(path)) {
		err = checkLocal(data, filepath.Dir(path), g.root)
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

// Open opens a file within the root.
func (g guardedFS) Open(path string) (filesys.File, error) {
	if err := g.inRoot(path); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return g.FileSystem.Open(path)
}

// ReadDir lists a folder within the root.
func (g guardedFS) ReadDir(path string) ([]string, error) {
	if err := g.inRoot(path); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return g.FileSystem.ReadDir(path)
}

// inRoot refuses a path whose real path (its symlinks resolved) is
// outside the root. A path that does not exist is left to the caller,
// which fails to read it.
func (g guardedFS) inRoot(path string) error {
	if g.root == "" {
		return nil
	}
	real, err := realPath(path)
	if err != nil {
		return nil
	}
	switch {
	case within(g.root, real):
		return nil
	case real != filepath.Clean(path):
		return fmt.Errorf("leads to %s, outside the source's root %s: refused", real, g.root)
	}
	return fmt.Errorf("outside the source's root %s: refused", g.root)
}

// checkLocal refuses a kustomization (in folder dir) that names a remote
// resource, base, component or file: kustomize would clone it with git or
// fetch it over HTTP, and a source renders from local files only. With a
// root (a real path; "" for none), it also refuses a reference whose real
// path is outside the root, naming the reference as written. It decodes
// the file as kustomize does (types.Kustomization.Unmarshal), so that it
// sees the references kustomize will follow; a kustomization kustomize
// cannot decode is left to kustomize, which reports it and follows
// nothing.
//
// kustomize's loader offers no way to leave the git cloner out (it is in
// an internal package), so this check is the door: every kustomization
// kustomize builds is read through guardedFS.ReadFile first, and one that
// names anything kustomize could take for a repository is refused before
// kustomize sees a single reference of it.
func checkLocal(data []byte, dir, root string) error {
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return nil
	}
	k.FixKustomization() // bases into resources, env into envs
	// Entries of these fields may be inline configs (generators,
	// transformers, validators) or patches: isRemote looks at their start
	// only, where a reference kustomize follows begins.
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
		refs = append(refs, string(p))
	}
	for _, r := range k.Replacements {
		refs = append(refs, r.Path)
	}
	var gens []types.GeneratorArgs
	for _, g := range k.ConfigMapGenerator {
		gens = append(gens, g.GeneratorArgs)
	}
	for _, g := range k.SecretGenerator {
		gens = append(gens, g.GeneratorArgs)
	}
	for _, g := range gens {
		refs = append(refs, g.EnvSources...)
		for _, f := range g.FileSources {
			// A file source may be key=path; nothing else is cut.
			if _, p, ok := strings.Cut(f, "="); ok {
				refs = append(refs, p)
			}
			refs = append(refs, f)
		}
	}
	for _, ref := range refs {
		if isRemote(ref) {
			return fmt.Errorf("remote reference %q: a source renders local files only (vendor it next to the kustomization)", ref)
		}
	}
	if root == "" {
		return nil
	}
	for _, ref := range refs {
		ref = strings.TrimSpace(ref)
		if ref == "" || filepath.IsAbs(ref) {
			continue // kustomize refuses an absolute folder, the root guard an absolute file
		}
		real, err := realPath(filepath.Join(dir, ref))
		if err != nil {
			continue // inline, a key=path file source, or missing: kustomize reports it
		}
		if !within(root, real) {
			return fmt.Errorf("reference %q leads to %s, outside the source's root %s: refused", ref, real, root)
		}
	}
	return nil
}

// isRemote reports whether kustomize could fetch a kustomization
// reference instead of reading it from the disk. It accepts more than
// kustomize's own parser of repository references (git.NewRepoSpecFromURL,
// internal to kustomize) and HTTP files, never less: after any git::
// prefix, a reference starting with a URL scheme (https://, ssh://,
// file://...), with github.com/ or github.com: (any case), or with a
// user@ (user@host:path, user@host/path) is remote. A local folder whose
// name holds an '@' is named ./user@folder.
func isRemote(ref string) bool {
	ref = strings.TrimSpace(ref)
	for {
		rest, ok := cutPrefixFold(ref, "git::")
		if !ok {
			break
		}
		ref = strings.TrimSpace(rest)
	}
	_, gh := cutPrefixFold(ref, "github.com")
	switch {
	case ref == "":
		return false
	case gh && len(ref) > len("github.com") && strings.ContainsRune("/:", rune(ref[len("github.com")])):
		return true
	}
	// scheme://..., user@host...: the scheme or the user is one word at
	// the start (an inline config starts with a key and ':').
	if i := strings.Index(ref, "://"); i > 0 && !strings.ContainsAny(ref[:i], " \t\r\n/:@") {
		return true
	}
	at := strings.IndexByte(ref, '@')
	return at > 0 && !strings.ContainsAny(ref[:at], " \t\r\n/:")
}

// cutPrefixFold is strings.CutPrefix, ignoring case.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

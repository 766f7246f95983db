package manifest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
)

// renderKustomize builds the kustomization in r.Kustomize, with
// kustomize's default options (load restrictions RootOnly, plugins and
// helmCharts disabled) over a file system (guardedFS) that refuses files
// larger than the limit, anything outside r.Root, kustomizations that
// name remote resources (which kustomize would fetch with git or HTTP)
// and builtin generator and transformer configs that name remote files.
// With r.Sandbox the build runs in its worker: a few small
// kustomizations that include one another many times over build a
// number of objects exponential in their depth, which kustomize holds
// in memory and takes minutes to hours of CPU for, before any limit of
// the render can count them.
func renderKustomize(ctx context.Context, r Request) ([]Object, error) {
	var out *kustomized
	var err error
	if r.Sandbox != nil {
		var ans *workerAnswer
		if ans, err = r.Sandbox.run(ctx, r, "kustomization "+r.Kustomize); err == nil {
			out = ans.Kustomized
		}
	} else {
		out, err = kustomizeBuild(r)
	}
	if err != nil {
		return nil, err
	}
	c := &collector{max: r.maxObjects()}
	for _, res := range out.Resources {
		if err := c.decodeJSON(res.JSON, Origin{File: res.File}); err != nil {
			return nil, err
		}
	}
	return c.objects, nil
}

// kustomized is what a kustomize build made: its resources as JSON, in
// order, within the render's limits.
type kustomized struct {
	Resources []builtResource `json:"resources"`
}

// builtResource is one resource of a build and the file it came from.
type builtResource struct {
	File string          `json:"file,omitempty"`
	JSON json.RawMessage `json:"json"`
}

// kustomizeBuild is the build stage of renderKustomize, the one a Sandbox
// runs in its worker: kustomize's own run, and each resource as JSON,
// refused past the render's object count or size.
func kustomizeBuild(r Request) (*kustomized, error) {
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
	if n := m.Size(); n > r.maxObjects() {
		return nil, fmt.Errorf("built %d objects: more than %d objects: the limit of one source", n, r.maxObjects())
	}
	out := &kustomized{Resources: make([]builtResource, 0, m.Size())}
	var size int64
	for _, res := range m.Resources() {
		var b builtResource
		if origin, err := res.GetOrigin(); err == nil && origin != nil {
			b.File = origin.Path
		}
		if b.JSON, err = res.MarshalJSON(); err != nil {
			return nil, fmt.Errorf("%s %s: %w", res.GetKind(), res.GetName(), err)
		}
		if size += int64(len(b.JSON)); size > r.maxRendered() {
			return nil, fmt.Errorf("built objects of more than %d bytes in all: the limit of one render", r.maxRendered())
		}
		out.Resources = append(out.Resources, b)
	}
	return out, nil
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
// limit per file, nothing seen outside root, every kustomization file
// checked for remote references, and every other file checked for
// builtin configs naming remote files, before kustomize sees them. It
// writes nothing: a build only reads.
//
// With a root, every path is judged by its real path (symlinks
// resolved): one that does not lead to something inside the root, for
// whatever reason (missing, outside, a symlink leading out or nowhere),
// gets one answer, fs.ErrNotExist naming the path as kustomize asked for
// it, from every method (read, open, list, IsDir, Exists, Glob, Walk,
// CleanedAbs). So a source's author, who reads the errors of its render,
// learns nothing of what exists outside its checkout.
type guardedFS struct {
	filesys.FileSystem
	limit int64
	// root is the real path of the folder kustomize may read in; ""
	// means anywhere (Request.Root).
	root string
	// refused is the first file the guard refused, and why.
	refused *error
}

// errReadOnly refuses the file system's writes.
var errReadOnly = errors.New("a source's build writes no files: refused")

// ReadFile reads a file within the limit and the root; a kustomization
// file that names a remote resource, or a builtin config that names a
// remote file, is refused.
func (g guardedFS) ReadFile(path string) ([]byte, error) {
	if err := g.inRoot(path); err != nil {
		return nil, err
	}
	data, err := readLimited(path, g.limit)
	if err == nil {
		if slices.Contains(konfig.RecognizedKustomizationFileNames(), filepath.Base(path)) {
			err = checkLocal(data, filepath.Dir(path))
		} else {
			err = checkBuiltinConfigs(data)
		}
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
		return nil, err
	}
	return g.FileSystem.Open(path)
}

// ReadDir lists a folder within the root.
func (g guardedFS) ReadDir(path string) ([]string, error) {
	if err := g.inRoot(path); err != nil {
		return nil, err
	}
	return g.FileSystem.ReadDir(path)
}

// IsDir reports a folder within the root.
func (g guardedFS) IsDir(path string) bool {
	return g.inRoot(path) == nil && g.FileSystem.IsDir(path)
}

// Exists reports a path within the root.
func (g guardedFS) Exists(path string) bool {
	return g.inRoot(path) == nil && g.FileSystem.Exists(path)
}

// Glob returns the matches within the root.
func (g guardedFS) Glob(pattern string) ([]string, error) {
	matches, err := g.FileSystem.Glob(pattern)
	if err != nil || g.root == "" {
		return matches, err
	}
	return slices.DeleteFunc(matches, func(m string) bool { return g.inRoot(m) != nil }), nil
}

// Walk walks a folder within the root; what it meets is read through
// the guard.
func (g guardedFS) Walk(path string, walkFn filepath.WalkFunc) error {
	if err := g.inRoot(path); err != nil {
		return err
	}
	return g.FileSystem.Walk(path, walkFn)
}

// CleanedAbs confirms a path within the root.
func (g guardedFS) CleanedAbs(path string) (filesys.ConfirmedDir, string, error) {
	if err := g.inRoot(path); err != nil {
		return "", "", err
	}
	return g.FileSystem.CleanedAbs(path)
}

// Create refuses: a build writes nothing.
func (guardedFS) Create(path string) (filesys.File, error) { return nil, writeRefused(path) }

// Mkdir refuses: a build writes nothing.
func (guardedFS) Mkdir(path string) error { return writeRefused(path) }

// MkdirAll refuses: a build writes nothing.
func (guardedFS) MkdirAll(path string) error { return writeRefused(path) }

// RemoveAll refuses: a build writes nothing.
func (guardedFS) RemoveAll(path string) error { return writeRefused(path) }

// WriteFile refuses: a build writes nothing.
func (guardedFS) WriteFile(path string, _ []byte) error { return writeRefused(path) }

func writeRefused(path string) error { return fmt.Errorf("%s: %w", path, errReadOnly) }

// inRoot answers fs.ErrNotExist for a path that does not lead to
// something inside the root (see guardedFS), naming the path as given.
func (g guardedFS) inRoot(path string) error {
	if g.root == "" {
		return nil
	}
	if real, err := realPath(path); err == nil && within(g.root, real) {
		return nil
	}
	return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w in the source's root %s", fs.ErrNotExist, g.root)}
}

// checkLocal refuses a kustomization (in folder dir) that names a remote
// resource, base, component or file: kustomize would clone it with git or
// fetch it over HTTP, and a source renders from local files only (what
// lies outside a source's root is left to guardedFS, which shows kustomize
// nothing there). It decodes
// the file as kustomize does (types.Kustomization.Unmarshal), so that it
// sees the references kustomize will follow; a kustomization kustomize
// cannot decode is left to kustomize, which reports it and follows
// nothing.
//
// kustomize's loader offers no way to leave the git cloner or its HTTP
// client out (they are in an internal package), so this check is the
// door: every kustomization kustomize builds is read through
// guardedFS.ReadFile first, and one that names anything kustomize could
// take for a repository or a URL is refused before kustomize sees a
// single reference of it. Generators, transformers and validators are
// configs kustomize reads with the same loader: an inline one is checked
// here (checkBuiltinConfigs), a file when it is read, and a folder is
// refused, since the configs a folder builds may hold a URL that none of
// its files holds (a patch or a replacement may write it).
func checkLocal(data []byte, dir string) error {
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
	for _, f := range []struct {
		field   string
		configs []string
	}{{"generators", k.Generators}, {"transformers", k.Transformers}, {"validators", k.Validators}} {
		field := f.field
		for _, c := range f.configs {
			if err := checkBuiltinConfigs([]byte(c)); err != nil {
				return fmt.Errorf("%s: inline config: %w", field, err)
			}
			if fi, err := os.Stat(filepath.Join(dir, c)); err == nil && fi.IsDir() {
				return fmt.Errorf("%s: %q is a folder: what it builds cannot be checked for remote references (list its config files, or make it a component)", field, c)
			}
		}
	}
	return nil
}

// checkBuiltinConfigs refuses YAML (a file kustomize reads, or an inline
// config of a kustomization) holding a builtin generator or transformer
// config (apiVersion builtin) that names a remote file in a field its
// loader reads, or fetches when it is a URL: the patch transformers' path
// and paths, the generators' files, envs and env, the value-add
// transformer's targetFilePath, the Helm generator's values files and a
// replacement's path. The YAML is read by kustomize's own resource
// factory, lists inlined, so the check sees the configs kustomize will
// configure; YAML the factory cannot read is left alone (kustomize cannot
// read it either: a configMapGenerator's data file, say), and so is YAML
// that cannot spell "builtin" (neither the word nor an escape).
func checkBuiltinConfigs(data []byte) error {
	if !bytes.Contains(data, []byte("builtin")) && bytes.IndexByte(data, '\\') < 0 {
		return nil
	}
	nodes, err := provider.NewDefaultDepProvider().GetResourceFactory().RNodesFromBytes(data)
	if err != nil {
		return nil
	}
	for _, n := range nodes {
		if g, v := resid.ParseGroupVersion(n.GetApiVersion()); g != "" || v != konfig.BuiltinPluginApiVersion {
			continue
		}
		m, err := n.Map()
		if err != nil {
			continue // not a mapping: kustomize configures nothing from it
		}
		var refs []string
		for _, f := range []string{"path", "paths", "files", "envs", "env", "targetFilePath", "valuesFile", "additionalValuesFiles"} {
			refs = append(refs, stringsOf(m[f])...)
		}
		if rs, ok := m["replacements"].([]any); ok {
			for _, r := range rs {
				if rm, ok := r.(map[string]any); ok {
					refs = append(refs, stringsOf(rm["path"])...)
				}
			}
		}
		for _, ref := range refs {
			_, p, _ := strings.Cut(ref, "=") // a file source may be key=path
			if isRemote(ref) || isRemote(p) {
				return fmt.Errorf("builtin %s config: remote reference %q: a source renders local files only (vendor it next to the kustomization)", n.GetKind(), ref)
			}
		}
	}
	return nil
}

// stringsOf returns a string, or the strings of a list.
func stringsOf(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
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

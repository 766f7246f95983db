package manifest

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// manifestExtensions are the file name extensions a folder of plain
// manifests is read for.
func manifestExtensions() []string { return []string{".yaml", ".yml", ".json"} }

// renderFiles reads the plain manifests of r.Path: one file, or every
// manifest file under a folder, in sorted path order.
func renderFiles(ctx context.Context, r Request) ([]Object, error) {
	root, err := filepath.Abs(r.Path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	c := &collector{max: r.maxObjects()}
	if !fi.IsDir() {
		if err := c.readFile(root, filepath.Base(root), r.maxFileSize()); err != nil {
			return nil, err
		}
		return c.objects, nil
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	files, err := manifestFiles(realRoot)
	if err != nil {
		return nil, err
	}
	for _, rel := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := c.readFile(filepath.Join(realRoot, rel), filepath.ToSlash(rel), r.maxFileSize()); err != nil {
			return nil, err
		}
	}
	return c.objects, nil
}

// manifestFiles returns the manifest files under the folder root (a real
// path: its symlinks resolved), relative to it and sorted.
// Files starting with a dot are left out. A symlink is followed when it
// stays inside the folder and names a file; one that leads out of it, or
// to a folder, is refused.
func manifestFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if p != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			fi, err := linkWithin(root, p, rel)
			if err != nil {
				return err
			}
			if fi.IsDir() {
				return errorAt(Origin{File: filepath.ToSlash(rel)}, "symlink to a folder: not followed (name the folder itself)")
			}
		} else if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		if slices.Contains(manifestExtensions(), strings.ToLower(filepath.Ext(p))) {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(files, func(a, b string) int { return strings.Compare(filepath.ToSlash(a), filepath.ToSlash(b)) })
	return files, nil
}

// linkWithin checks the symlink at path (rel in root, a real path) and
// returns what it leads to: a broken link, or one whose target is outside
// root, is refused, with one message that names neither the target nor
// which of the two it is (the folder may be a Git checkout, whose author
// must learn nothing of what exists outside it).
func linkWithin(root, path, rel string) (fs.FileInfo, error) {
	target, err := filepath.EvalSymlinks(path)
	if err != nil || !within(root, target) {
		return nil, errorAt(Origin{File: filepath.ToSlash(rel)}, "symlink leading outside the source's folder, or to nothing: refused")
	}
	return os.Stat(target)
}

// checkLinks refuses a folder (a chart) holding a symlink, at any depth,
// whose target is outside it or that is broken.
func checkLinks(dir string) error {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		_, err = linkWithin(root, p, rel)
		return err
	})
}

// within reports whether path is dir or inside it (both cleaned and
// absolute).
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// readFile reads the manifest file at path (named name in errors) and
// adds its objects.
func (c *collector) readFile(path, name string, limit int64) error {
	data, err := readLimited(path, limit)
	if err != nil {
		return errorAt(Origin{File: name}, "%v", err)
	}
	return c.decodeYAML(data, name)
}

// readLimited reads a file of at most limit bytes; a larger one is
// refused, before it is read when its size is known.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > limit {
		return nil, fmt.Errorf("file is %d bytes: the limit is %d", fi.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, unwrapPath(err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("file is more than %d bytes, the limit", limit)
	}
	return data, nil
}

// unwrapPath drops the path of a *fs.PathError, which the caller names
// already.
func unwrapPath(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

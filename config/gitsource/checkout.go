package gitsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Limits of the checkout that Options do not set.
const (
	maxTreeDepth   = 128  // folders within folders
	maxPathBytes   = 4096 // one path inside the tree
	maxLinkTarget  = 4096 // one symbolic link's target
	maxLinkFollows = 40   // links followed while resolving one path
)

// checkout writes one commit's tree into root.
type checkout struct {
	ctx      context.Context
	st       storer.EncodedObjectStorer
	root     string
	commit   string
	maxBytes int64
	maxFiles int

	bytes int64
	files int
	links []link
}

// link is a symbolic link to create once every file is written.
type link struct {
	rel, target string
}

// run writes c's tree: folders and files first, then symbolic links, then
// checks that every link resolves inside root.
func (co *checkout) run(c *object.Commit) error {
	tree, err := c.Tree()
	if err != nil {
		return fmt.Errorf("commit %s: tree: %w", co.commit, err)
	}
	if err := co.tree(tree, "", 0); err != nil {
		return err
	}
	// No link exists while files are written, so no write can be
	// redirected through one; each link is created with its parent folder
	// checked the same way.
	for _, l := range co.links {
		if err := os.Symlink(l.target, filepath.Join(co.root, filepath.FromSlash(l.rel))); err != nil {
			return fmt.Errorf("commit %s: %s: %w", co.commit, l.rel, err)
		}
	}
	for _, l := range co.links {
		if _, err := SafePath(co.root, l.rel); err != nil {
			return fmt.Errorf("commit %s: %s is a symbolic link to %q, which leads out of the tree: %w", co.commit, l.rel, l.target, ErrUnsafePath)
		}
	}
	return nil
}

// tree writes the entries of t into the folder rel (slash-separated,
// relative to root).
func (co *checkout) tree(t *object.Tree, rel string, depth int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("commit %s: %s: folders nested more than %d deep: %w", co.commit, rel, maxTreeDepth, ErrTooLarge)
	}
	if err := co.ctx.Err(); err != nil {
		return err
	}
	for _, e := range t.Entries {
		if err := validName(e.Name); err != nil {
			return fmt.Errorf("commit %s: %s: entry %q: %w", co.commit, orRoot(rel), e.Name, err)
		}
		p := e.Name
		if rel != "" {
			p = rel + "/" + e.Name
		}
		if len(p) > maxPathBytes {
			return fmt.Errorf("commit %s: a path longer than %d bytes: %w", co.commit, maxPathBytes, ErrTooLarge)
		}
		co.files++
		if co.files > co.maxFiles {
			return fmt.Errorf("commit %s: more than %d files (maxFiles): %w", co.commit, co.maxFiles, ErrTooLarge)
		}
		full := filepath.Join(co.root, filepath.FromSlash(p))
		switch e.Mode {
		case filemode.Dir:
			sub, err := object.GetTree(co.st, e.Hash)
			if err != nil {
				return fmt.Errorf("commit %s: folder %s: %w", co.commit, p, err)
			}
			if err := os.Mkdir(full, 0o755); err != nil {
				return fmt.Errorf("commit %s: %w", co.commit, err)
			}
			if err := co.tree(sub, p, depth+1); err != nil {
				return err
			}
		case filemode.Regular, filemode.Deprecated, filemode.Executable:
			mode := fs.FileMode(0o444)
			if e.Mode == filemode.Executable {
				mode = 0o555
			}
			if err := co.file(p, full, e, mode); err != nil {
				return err
			}
		case filemode.Symlink:
			target, err := co.linkTarget(p, e)
			if err != nil {
				return err
			}
			co.links = append(co.links, link{rel: p, target: target})
		case filemode.Submodule:
			if err := os.Mkdir(full, 0o755); err != nil {
				return fmt.Errorf("commit %s: %w", co.commit, err)
			}
		default:
			return fmt.Errorf("commit %s: %s has the unknown mode %o", co.commit, p, uint32(e.Mode))
		}
	}
	return nil
}

// orRoot names the tree's root folder in errors.
func orRoot(rel string) string {
	if rel == "" {
		return "the root folder"
	}
	return rel
}

// file writes one blob to full, counting its bytes against the limit.
func (co *checkout) file(p, full string, e object.TreeEntry, mode fs.FileMode) error {
	blob, err := object.GetBlob(co.st, e.Hash)
	if err != nil {
		return fmt.Errorf("commit %s: file %s: %w", co.commit, p, err)
	}
	left := co.maxBytes - co.bytes
	if blob.Size > left {
		return fmt.Errorf("commit %s: the files are larger than %d bytes (maxBytes; %s alone has %d): %w", co.commit, co.maxBytes, p, blob.Size, ErrTooLarge)
	}
	rc, err := blob.Reader()
	if err != nil {
		return fmt.Errorf("commit %s: file %s: %w", co.commit, p, err)
	}
	defer rc.Close()
	// O_CREATE|O_EXCL: a name that appears twice in a tree (or twice after
	// case folding) is an error, never an overwrite, and a link at the
	// path is never followed (none exists yet anyway).
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("commit %s: %w", co.commit, err)
	}
	n, err := io.Copy(f, io.LimitReader(rc, left+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	co.bytes += n
	if err != nil {
		return fmt.Errorf("commit %s: file %s: %w", co.commit, p, err)
	}
	if co.bytes > co.maxBytes {
		return fmt.Errorf("commit %s: the files are larger than %d bytes (maxBytes): %w", co.commit, co.maxBytes, ErrTooLarge)
	}
	return nil
}

// linkTarget reads a symbolic link's target and refuses the ones that
// cannot stay inside the tree whatever the rest of it holds.
func (co *checkout) linkTarget(p string, e object.TreeEntry) (string, error) {
	blob, err := object.GetBlob(co.st, e.Hash)
	if err != nil {
		return "", fmt.Errorf("commit %s: link %s: %w", co.commit, p, err)
	}
	if blob.Size > maxLinkTarget {
		return "", fmt.Errorf("commit %s: link %s: a target longer than %d bytes: %w", co.commit, p, maxLinkTarget, ErrTooLarge)
	}
	rc, err := blob.Reader()
	if err != nil {
		return "", fmt.Errorf("commit %s: link %s: %w", co.commit, p, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxLinkTarget+1))
	if err != nil {
		return "", fmt.Errorf("commit %s: link %s: %w", co.commit, p, err)
	}
	target := string(b)
	switch {
	case target == "" || strings.ContainsRune(target, 0) || len(b) > maxLinkTarget:
		return "", fmt.Errorf("commit %s: link %s has an invalid target", co.commit, p)
	case filepath.IsAbs(target) || strings.HasPrefix(target, "/") || strings.HasPrefix(target, `\`):
		return "", fmt.Errorf("commit %s: %s is a symbolic link to the absolute path %q: %w", co.commit, p, target, ErrUnsafePath)
	}
	return target, nil
}

// validName refuses tree entry names that cannot be written safely: "",
// ".", "..", names holding a separator or NUL, and ".git" in any case
// (with the trailing dots and spaces Windows ignores).
func validName(n string) error {
	switch {
	case n == "" || n == "." || n == "..":
		return errors.New("not a file name")
	case strings.ContainsAny(n, "/\\\x00"):
		return errors.New("a name holding a slash, backslash or NUL byte")
	case strings.EqualFold(strings.TrimRight(n, ". "), ".git"):
		return errors.New("a .git entry")
	}
	return nil
}

// SafePath returns the path of rel inside dir, resolving symbolic links
// along the way itself, and refuses it (with ErrUnsafePath) when it leaves
// dir: an absolute rel, ".." above dir, a link with an absolute target, or
// a link leading above dir. rel uses slashes or the system's separator.
// Components that do not exist are taken as written (nothing can redirect
// them). The result names the final file with every link resolved, so it
// can be opened directly; dir must not change meanwhile (a checked-out
// tree never does).
func SafePath(dir, rel string) (string, error) {
	if rel == "" {
		return "", fmt.Errorf("empty path: %w", ErrUnsafePath)
	}
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, `\`) || filepath.VolumeName(rel) != "" {
		return "", fmt.Errorf("%s is an absolute path: %w", rel, ErrUnsafePath)
	}
	if strings.ContainsRune(rel, 0) {
		return "", fmt.Errorf("%q holds a NUL byte: %w", rel, ErrUnsafePath)
	}
	var cur []string // resolved components below dir
	todo := splitPath(rel)
	follows := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return "", fmt.Errorf("%s leads above %s: %w", rel, dir, ErrUnsafePath)
			}
			cur = cur[:len(cur)-1]
			continue
		}
		next := filepath.Join(dir, filepath.Join(cur...), c)
		fi, err := os.Lstat(next)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				cur = append(cur, c)
				continue
			}
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = append(cur, c)
			continue
		}
		follows++
		if follows > maxLinkFollows {
			return "", fmt.Errorf("%s: more than %d symbolic links: %w", rel, maxLinkFollows, ErrUnsafePath)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if target == "" || filepath.IsAbs(target) || strings.HasPrefix(target, "/") || strings.HasPrefix(target, `\`) || filepath.VolumeName(target) != "" {
			return "", fmt.Errorf("%s: %s is a symbolic link to %q, outside %s: %w", rel, filepath.Join(filepath.Join(cur...), c), target, dir, ErrUnsafePath)
		}
		todo = append(splitPath(target), todo...)
	}
	return filepath.Join(dir, filepath.Join(cur...)), nil
}

// splitPath splits p at slashes and the system's separator.
func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == filepath.Separator })
}

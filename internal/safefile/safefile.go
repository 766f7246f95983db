package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Modes of what the package creates.
const (
	// fileMode is the mode of every file the package creates.
	fileMode fs.FileMode = 0o600
	// dirMode is the mode of every folder the package creates.
	dirMode fs.FileMode = 0o700
	// groupOther are the permission bits of group and others.
	groupOther fs.FileMode = 0o077
	// groupOtherRW are the read and write bits of group and others.
	groupOtherRW fs.FileMode = 0o066
	// groupOtherW are the write bits of group and others.
	groupOtherW fs.FileMode = 0o022
)

// symlinkError reports a symbolic link where a file or folder should be. It
// wraps the open error, so that on Unix errors.Is(err, syscall.ELOOP)
// holds.
type symlinkError struct {
	path string
	err  error
}

// Error says which path is a link.
func (e *symlinkError) Error() string {
	return e.path + " is a symbolic link; refusing to follow it"
}

// Unwrap returns the underlying open or Lstat error.
func (e *symlinkError) Unwrap() error { return e.err }

// newSymlinkError reports that path is a symbolic link; cause is the error
// that showed it, or nil when Lstat did.
func newSymlinkError(path string, cause error) error {
	if cause == nil {
		cause = &fs.PathError{Op: "open", Path: path, Err: errLoop}
	}
	return &symlinkError{path: path, err: cause}
}

// MkdirPrivate makes sure dir is a private folder: it creates dir and its
// missing parents with mode 0700 (less the umask). An existing dir must be a
// folder and not a symbolic link, and its mode is never changed: it is
// refused when it belongs to another user or group or others may write to
// it (they could replace our files), and when it is a folder shared by
// design (writable by others, with the sticky bit, like /tmp); the error
// names the folder and its mode. A folder of ours that group or others may
// only read is used as it is (the files in it are 0600).
//
// Existing parents are left as they are, whatever their mode (the user's
// ~/.local/state may well be 0755, /tmp is 1777), and symbolic links among
// them are followed: only dir itself is checked.
func MkdirPrivate(dir string) error {
	if dir == "" {
		return errors.New("create folder: empty path")
	}
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, dirMode); err != nil {
			return fmt.Errorf("create folder %s: %w", dir, err)
		}
	case err != nil:
		return fmt.Errorf("folder %s: %w", dir, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return newSymlinkError(dir, nil)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a folder", dir)
	}
	// Check through a descriptor, so that what is checked is what was
	// opened even if dir is replaced meanwhile.
	f, err := openDirNoFollow(dir)
	if err != nil {
		if isSymlink(dir, err) {
			return newSymlinkError(dir, err)
		}
		return fmt.Errorf("folder %s: %w", dir, err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return fmt.Errorf("folder %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a folder", dir)
	}
	return checkDir(f, dir, fi)
}

// OpenPrivate opens the file at path like os.OpenFile, making sure it is
// private: its folder goes through MkdirPrivate, the file is opened with
// O_NOFOLLOW and O_CLOEXEC added to flag (so a symbolic link at path is
// refused), a file created through O_CREATE gets mode 0600, and an existing
// file whose mode gives group or others any permission is changed to 0600
// through the open descriptor. The path must name a regular file that
// belongs to this user.
func OpenPrivate(path string, flag int) (*os.File, error) {
	if err := MkdirPrivate(filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, err := openNoFollow(path, flag, fileMode)
	if err != nil {
		if isSymlink(path, err) {
			return nil, newSymlinkError(path, err)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if err := checkOwner(path, fi, os.Geteuid()); err != nil {
		_ = f.Close()
		return nil, err
	}
	if checksModes && fi.Mode().Perm()&groupOther != 0 {
		if err := f.Chmod(fileMode); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("%s: tighten mode %04o to %04o: %w", path, fi.Mode().Perm(), fileMode, err)
		}
	}
	return f, nil
}

// WritePrivate replaces the file at path with data atomically: it writes a
// temporary file in the same folder (created with O_EXCL and mode 0600),
// syncs it, renames it over path and syncs the folder, so that path holds
// either the old or the new content, never part of it. The folder goes
// through MkdirPrivate. A symbolic link (or anything but a regular file) at
// path is refused. (The rename would replace a link, not follow it; the
// check is there so that a planted link is reported rather than silently
// removed.)
func WritePrivate(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := MkdirPrivate(dir); err != nil {
		return err
	}
	switch fi, err := os.Lstat(path); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("write %s: %w", path, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return newSymlinkError(path, nil)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", path)
	}
	return Replace(path, data, 0o600)
}

// Replace replaces the file at path with data atomically and gives it mode
// perm: it writes a temporary file in the same folder (created with O_EXCL),
// syncs it, renames it over path and syncs the folder, so that path holds
// either the old or the new content, never part of it. It does not check
// the folder or what is at path: WritePrivate does, for private files.
func Replace(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	// os.CreateTemp opens with O_CREATE|O_EXCL and mode 0600.
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil && perm != 0o600 {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("write %s: sync folder: %w", path, err)
	}
	return nil
}

// ReadPrivate reads the file at path, refusing a symbolic link (opened with
// O_NOFOLLOW), anything but a regular file, and a file that group or others
// may read or write: the error then says to run chmod 600 on it. It does not
// change the file's mode, since a secret others could read must be replaced,
// not just hidden.
func ReadPrivate(path string) ([]byte, error) {
	f, err := openNoFollow(path, os.O_RDONLY, 0)
	if err != nil {
		if isSymlink(path, err) {
			return nil, newSymlinkError(path, err)
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); checksModes && perm&groupOtherRW != 0 {
		return nil, fmt.Errorf("%s can be read or written by group or others (mode %04o): run chmod 600 %s", path, perm, path)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}

//go:build unix

package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checksModes says that file modes and owners mean something here.
const checksModes = true

// errLoop is the error of opening a symbolic link with O_NOFOLLOW.
const errLoop = syscall.ELOOP

// openNoFollow opens path with O_NOFOLLOW and O_CLOEXEC added to flag.
func openNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
}

// openDirNoFollow opens the folder dir for reading, refusing a symbolic
// link.
func openDirNoFollow(dir string) (*os.File, error) {
	return os.OpenFile(dir, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
}

// isSymlink reports whether an open with O_NOFOLLOW failed because path is
// a symbolic link. Linux says ELOOP; some systems use other errors (EMLINK
// on FreeBSD, EFTYPE on NetBSD), so anything else is confirmed with Lstat.
func isSymlink(path string, err error) bool {
	if errors.Is(err, syscall.ELOOP) {
		return true
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return false
	}
	fi, lerr := os.Lstat(path)
	return lerr == nil && fi.Mode()&fs.ModeSymlink != 0
}

// checkDir refuses an existing folder that is not private enough to hold
// our files: one of another user (its owner could replace them), one that
// group or others may write to (they could too), and a folder shared by
// design (writable by others, with the sticky bit, like /tmp). It never
// changes the folder: a folder the user pointed us at (their home, a
// shared data folder) keeps its mode, and one that is readable by group or
// others is fine, since the files are 0600.
func checkDir(_ *os.File, dir string, fi fs.FileInfo) error {
	return dirVerdict(dir, fi, os.Geteuid())
}

// dirVerdict is checkDir for the user euid.
func dirVerdict(dir string, fi fs.FileInfo, euid int) error {
	perm := fi.Mode().Perm()
	if fi.Mode()&fs.ModeSticky != 0 && perm&groupOtherW != 0 {
		return fmt.Errorf("folder %s is shared (mode %04o with the sticky bit): private files need a folder of their own", dir, perm)
	}
	if uid, ok := owner(fi); ok && uid != euid {
		return fmt.Errorf("folder %s belongs to uid %d, not to this user (uid %d; mode %04o): private files need a folder of this user's own", dir, uid, euid, perm)
	}
	if perm&groupOtherW != 0 {
		return fmt.Errorf("folder %s can be written by group or others (mode %04o): they could replace its files; run chmod go-w %s, or use a folder of its own", dir, perm, dir)
	}
	return nil
}

// checkOwner refuses a file that belongs to another user than euid: we
// would write our secrets into a file its owner can read whatever its mode
// (root can open and chmod any file).
func checkOwner(path string, fi fs.FileInfo, euid int) error {
	if uid, ok := owner(fi); ok && uid != euid {
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d); refusing to use it", path, uid, euid)
	}
	return nil
}

// owner returns the uid of fi's owner, when known.
func owner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// syncDir flushes dir's entries (a rename in it) to disk.
func syncDir(dir string) error {
	f, err := openDirNoFollow(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

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

// tightenDir removes group and other permissions from the open folder f
// when it is ours, and refuses it when it is someone else's and group or
// others may write to it.
func tightenDir(f *os.File, dir string, fi fs.FileInfo) error {
	tighten, err := dirVerdict(dir, fi, os.Geteuid())
	if !tighten || err != nil {
		return err
	}
	perm := fi.Mode().Perm()
	if err := f.Chmod(perm &^ groupOther); err != nil {
		return fmt.Errorf("folder %s: tighten mode %04o to %04o: %w", dir, perm, perm&^groupOther, err)
	}
	return nil
}

// dirVerdict decides about folder dir for the user euid: tighten it (ours,
// open to group or others), refuse it (shared by design with the sticky
// bit, like /tmp, which must never be tightened even when root runs us; or
// someone else's and writable by group or others), or leave it as it is.
func dirVerdict(dir string, fi fs.FileInfo, euid int) (tighten bool, err error) {
	perm := fi.Mode().Perm()
	if perm&groupOther == 0 {
		return false, nil
	}
	if fi.Mode()&fs.ModeSticky != 0 && perm&groupOtherW != 0 {
		return false, fmt.Errorf("folder %s is shared (mode %04o with the sticky bit): private files need a folder of their own", dir, perm)
	}
	if uid, ok := owner(fi); ok && uid != euid {
		if perm&groupOtherW != 0 {
			return false, fmt.Errorf("folder %s belongs to uid %d and group or others may write to it (mode %04o); it must be private to this user", dir, uid, perm)
		}
		return false, nil
	}
	return true, nil
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

//go:build !unix

package safefile

import (
	"io/fs"
	"os"
)

// checksModes says that file modes and owners mean nothing here: access is
// governed by the folder's access control lists, which new files inherit.
const checksModes = false

// errLoop is the error wrapped by a symbolic link error.
const errLoop = notFollowed("not following a symbolic link")

// notFollowed is the type of errLoop: systems without Unix error numbers
// have no ELOOP.
type notFollowed string

// Error returns the text.
func (e notFollowed) Error() string { return string(e) }

// openNoFollow opens path after checking with Lstat that it is not a
// symbolic link. Without O_NOFOLLOW the check can race with the open: a link
// created between the two is followed.
func openNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, newSymlinkError(path, nil)
	}
	return os.OpenFile(path, flag, perm)
}

// openDirNoFollow opens the folder dir for reading, after the same racy
// check as openNoFollow.
func openDirNoFollow(dir string) (*os.File, error) {
	return openNoFollow(dir, os.O_RDONLY, 0)
}

// isSymlink reports false: openNoFollow returns its symbolic link error
// ready-made.
func isSymlink(path string, err error) bool { return false }

// checkDir does nothing: folder permissions are access control lists.
func checkDir(f *os.File, dir string, fi fs.FileInfo) error { return nil }

// checkOwner does nothing: files have no Unix owner here.
func checkOwner(path string, fi fs.FileInfo, euid int) error { return nil }

// syncDir does nothing: folders cannot be synced on every system.
func syncDir(dir string) error { return nil }

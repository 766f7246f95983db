//go:build unix

package api

import (
	"os"
	"syscall"
)

// fileOwner returns the uid owning the file, or -1 when it is unknown.
func fileOwner(fi os.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

//go:build !unix

package api

import "os"

// fileOwner returns -1: file owners are not known on this platform.
func fileOwner(os.FileInfo) int { return -1 }

package intent

import (
	"path/filepath"
	"strings"
)

// DefaultPath returns the default state file of hub hubID:
// $XDG_STATE_HOME/driftwatch/<hub-id>.db, or
// $HOME/.local/state/driftwatch/<hub-id>.db when XDG_STATE_HOME is unset or
// not absolute (the XDG base directory specification says to ignore a
// relative one). getenv is os.Getenv or a test's stand-in.
//
// It returns "" when hubID is not a plain file name (empty, containing a path
// separator, "..", or a NUL byte) or when neither variable gives an absolute
// folder; the caller then needs an explicit path. It does not sanitise a bad
// hub id into a good one, since two ids must never share one state file.
func DefaultPath(getenv func(string) string, hubID string) string {
	if hubID == "" || hubID == "." || strings.Contains(hubID, "..") || strings.ContainsAny(hubID, "/\\\x00") {
		return ""
	}
	base := getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(base) {
		home := getenv("HOME")
		if !filepath.IsAbs(home) {
			return ""
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "driftwatch", hubID+".db")
}

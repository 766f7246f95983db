//go:build unix

package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// existingDir makes root/name with exactly perm.
func existingDir(t *testing.T, root, name string, perm os.FileMode) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOpenStatePrivateFolder checks that a missing state folder is made
// private, that an existing one keeps its mode (a stateFile in the user's
// home never changes the home), that one others may write to is refused,
// and that a symbolic link in its place is refused.
func TestOpenStatePrivateFolder(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root string) string // returns the state file
		err   string
		// mode is the folder's mode afterwards.
		mode os.FileMode
	}{
		{name: "new folders are 0700", mode: 0o700,
			setup: func(t *testing.T, root string) string {
				return filepath.Join(root, "state", "driftwatch", "hub.db")
			}},
		{name: "an existing 0755 folder (a home) keeps its mode", mode: 0o755,
			setup: func(t *testing.T, root string) string {
				return filepath.Join(existingDir(t, root, "home", 0o755), "hub.db")
			}},
		{name: "an existing 0750 folder keeps its mode", mode: 0o750,
			setup: func(t *testing.T, root string) string {
				return filepath.Join(existingDir(t, root, "data", 0o750), "hub.db")
			}},
		{name: "a folder others may write to is refused and keeps its mode", mode: 0o777,
			setup: func(t *testing.T, root string) string {
				return filepath.Join(existingDir(t, root, "shared", 0o777), "hub.db")
			},
			err: "state folder: folder %ROOT%/shared can be written by group or others (mode 0777): they could replace its files; run chmod go-w %ROOT%/shared, or use a folder of its own"},
		{name: "a folder the group may write to is refused and keeps its mode", mode: 0o770,
			setup: func(t *testing.T, root string) string {
				return filepath.Join(existingDir(t, root, "team", 0o770), "hub.db")
			},
			err: "state folder: folder %ROOT%/team can be written by group or others (mode 0770)"},
		{name: "a symbolic link as the folder is refused",
			setup: func(t *testing.T, root string) string {
				if err := os.Mkdir(filepath.Join(root, "elsewhere"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(root, "elsewhere"), filepath.Join(root, "driftwatch")); err != nil {
					t.Fatal(err)
				}
				return filepath.Join(root, "driftwatch", "hub.db")
			},
			err: "state folder: " + "%ROOT%/driftwatch is a symbolic link; refusing to follow it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			path := tt.setup(t, root)
			s, err := openState(path)
			if tt.err != "" {
				want := strings.ReplaceAll(tt.err, "%ROOT%", root)
				if err == nil || !strings.HasPrefix(err.Error(), want) {
					t.Fatalf("openState = %v, want %q", err, want)
				}
				if es, _ := os.ReadDir(filepath.Join(root, "elsewhere")); len(es) != 0 {
					t.Errorf("files created through the link: %v", es)
				}
				if tt.mode != 0 {
					if fi, err := os.Lstat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != tt.mode {
						t.Errorf("state folder %v (%v), want mode %04o kept", fi.Mode(), err, tt.mode)
					}
					if _, err := os.Lstat(path); err == nil {
						t.Error("the state file was created")
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("openState: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(filepath.Dir(path))
			if err != nil {
				t.Fatal(err)
			}
			if m := fi.Mode().Perm(); m != tt.mode || !fi.IsDir() {
				t.Errorf("state folder mode %v, want a %04o folder", fi.Mode(), tt.mode)
			}
		})
	}
}

//go:build unix

package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenStatePrivateFolder checks that the state folder is made private
// and that a symbolic link in its place is refused.
func TestOpenStatePrivateFolder(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root string) string // returns the state file
		err   string
	}{
		{name: "new folders are 0700",
			setup: func(t *testing.T, root string) string {
				return filepath.Join(root, "state", "driftwatch", "hub.db")
			}},
		{name: "an existing 0755 folder is tightened",
			setup: func(t *testing.T, root string) string {
				dir := filepath.Join(root, "driftwatch")
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				return filepath.Join(dir, "hub.db")
			}},
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
				if err == nil || err.Error() != want {
					t.Fatalf("openState = %v, want %q", err, want)
				}
				if es, _ := os.ReadDir(filepath.Join(root, "elsewhere")); len(es) != 0 {
					t.Errorf("files created through the link: %v", es)
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
			if m := fi.Mode().Perm(); m != 0o700 || !fi.IsDir() {
				t.Errorf("state folder mode %v, want a 0700 folder", fi.Mode())
			}
		})
	}
}

//go:build unix

package intent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// perm returns the permission bits of path, not following a link.
func perm(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	must(t, err)
	return fi.Mode().Perm()
}

// TestPrivateFiles checks that the state file, its folder and the owner
// sidecar are private, and that a symbolic link planted at any of them is
// refused rather than followed.
func TestPrivateFiles(t *testing.T) {
	const victimData = "not yours"
	tests := []struct {
		name string
		// setup prepares root and returns the state file path.
		setup func(t *testing.T, root string) string
		err   string
		// check runs after Open (and Close when it succeeded).
		check func(t *testing.T, root, path string)
	}{
		{name: "a loose file of an earlier run is tightened, its folder keeps its mode",
			setup: func(t *testing.T, root string) string {
				path := filepath.Join(root, "state", "hub.db")
				must(t, openT(t, path).Close())
				must(t, os.Chmod(path, 0o644))
				must(t, os.Chmod(filepath.Dir(path), 0o755))
				return path
			},
			check: func(t *testing.T, root, path string) {
				if m := perm(t, path); m != 0o600 {
					t.Errorf("state file mode %04o, want 0600", m)
				}
				if m := perm(t, filepath.Dir(path)); m != 0o755 {
					t.Errorf("folder mode %04o, want 0755 (never changed)", m)
				}
			}},
		{name: "a folder others may write to is refused and keeps its mode",
			setup: func(t *testing.T, root string) string {
				dir := filepath.Join(root, "shared")
				must(t, os.Mkdir(dir, 0o700))
				must(t, os.Chmod(dir, 0o777))
				return filepath.Join(dir, "hub.db")
			},
			err: "shared can be written by group or others (mode 0777)",
			check: func(t *testing.T, root, path string) {
				if m := perm(t, filepath.Dir(path)); m != 0o777 {
					t.Errorf("folder mode %04o, want 0777 (never changed)", m)
				}
			}},
		{name: "symbolic link at the state path",
			setup: func(t *testing.T, root string) string {
				must(t, openT(t, filepath.Join(root, "victim.db")).Close())
				path := filepath.Join(root, "hub.db")
				must(t, os.Symlink(filepath.Join(root, "victim.db"), path))
				return path
			},
			err: "hub.db is a symbolic link; refusing to follow it"},
		{name: "dangling symbolic link at the state path",
			setup: func(t *testing.T, root string) string {
				path := filepath.Join(root, "hub.db")
				must(t, os.Symlink(filepath.Join(root, "created.db"), path))
				return path
			},
			err: "hub.db is a symbolic link; refusing to follow it",
			check: func(t *testing.T, root, path string) {
				if _, err := os.Lstat(filepath.Join(root, "created.db")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("link target created: %v", err)
				}
			}},
		{name: "symbolic link as the folder",
			setup: func(t *testing.T, root string) string {
				must(t, os.Mkdir(filepath.Join(root, "elsewhere"), 0o755))
				must(t, os.Symlink(filepath.Join(root, "elsewhere"), filepath.Join(root, "state")))
				return filepath.Join(root, "state", "hub.db")
			},
			err: "state is a symbolic link; refusing to follow it",
			check: func(t *testing.T, root, path string) {
				if es, _ := os.ReadDir(filepath.Join(root, "elsewhere")); len(es) != 0 {
					t.Errorf("files created through the link: %v", es)
				}
			}},
		{name: "symbolic link at the owner sidecar",
			setup: func(t *testing.T, root string) string {
				path := filepath.Join(root, "hub.db")
				must(t, os.WriteFile(filepath.Join(root, "victim"), []byte(victimData), 0o600))
				must(t, os.Symlink(filepath.Join(root, "victim"), path+".owner"))
				return path
			},
			err: "owner file",
			check: func(t *testing.T, root, path string) {
				must(t, os.Remove(path+".owner"))
				must(t, openT(t, path).Close()) // the failed Open released the file
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			path := tt.setup(t, root)
			s, err := Open(path, Options{Timeout: 50 * time.Millisecond})
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("Open = %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("Open = %v, want an error with %q", err, tt.err)
			}
			if err != nil && (errors.Is(err, ErrCorrupt) || errors.Is(err, ErrLocked)) {
				t.Errorf("Open = %v: a link is neither a corrupt nor a locked file", err)
			}
			if err == nil {
				if m := perm(t, path+".owner"); m != 0o600 {
					t.Errorf("owner sidecar mode %04o, want 0600", m)
				}
				must(t, s.Close())
			}
			if b, err := os.ReadFile(filepath.Join(root, "victim")); err == nil && string(b) != victimData {
				t.Errorf("link target holds %q, want it untouched", b)
			}
			if tt.check != nil {
				tt.check(t, root, path)
			}
		})
	}
}

// TestLockedOwnerSymlink checks that a symbolic link planted as the owner
// sidecar is not quoted in the locked error.
func TestLockedOwnerSymlink(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "hub.db")
	openT(t, path)
	must(t, os.WriteFile(filepath.Join(root, "secret"), []byte("the secret"), 0o600))
	must(t, os.Remove(path+".owner"))
	must(t, os.Symlink(filepath.Join(root, "secret"), path+".owner"))
	_, err := Open(path, Options{Timeout: 50 * time.Millisecond})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "owner unknown") || strings.Contains(err.Error(), "the secret") {
		t.Fatalf("Open = %v, want ErrLocked, owner unknown, without the link target's content", err)
	}
	must(t, os.Remove(path+".owner"))
}

//go:build unix

package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mode returns the permission bits of path (not following a link).
func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// mkdir creates dir with exactly perm (whatever the umask).
func mkdir(t *testing.T, dir string, perm fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
}

// writeFile creates path with data and exactly perm.
func writeFile(t *testing.T, path, data string, perm fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}

// symlink makes link point at target.
func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// wantErr checks err against want: "" means no error, else a substring of
// the message.
func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("error = %v, want none", err)
	case want != "" && err == nil:
		t.Fatalf("no error, want one with %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error = %v, want one with %q", err, want)
	}
}

// symlinkMsg is the error text of a refused link at path.
func symlinkMsg(path string) string { return path + " is a symbolic link; refusing to follow it" }

func TestMkdirPrivate(t *testing.T) {
	tests := []struct {
		name string
		// setup prepares root and returns the folder to make.
		setup func(t *testing.T, root string) string
		err   string
		// check runs after MkdirPrivate.
		check func(t *testing.T, root, dir string)
	}{
		{name: "creates the folder and its missing parents 0700",
			setup: func(t *testing.T, root string) string { return filepath.Join(root, "a", "b", "c") },
			check: func(t *testing.T, root, dir string) {
				for _, d := range []string{"a", "a/b", "a/b/c"} {
					if m := mode(t, filepath.Join(root, d)); m != 0o700 {
						t.Errorf("%s mode = %04o, want 0700", d, m)
					}
				}
			}},
		{name: "existing folder of ours 0755 is used as it is, its parent too",
			setup: func(t *testing.T, root string) string {
				mkdir(t, filepath.Join(root, "parent"), 0o755)
				mkdir(t, filepath.Join(root, "parent", "dir"), 0o755)
				return filepath.Join(root, "parent", "dir")
			},
			check: func(t *testing.T, root, dir string) {
				if m := mode(t, dir); m != 0o755 {
					t.Errorf("folder mode = %04o, want 0755 (never changed)", m)
				}
				if m := mode(t, filepath.Join(root, "parent")); m != 0o755 {
					t.Errorf("parent mode = %04o, want 0755 (left as it is)", m)
				}
			}},
		{name: "a folder of ours the group may write to is refused and left as it is",
			setup: func(t *testing.T, root string) string {
				mkdir(t, filepath.Join(root, "dir"), 0o775)
				return filepath.Join(root, "dir")
			},
			err: "dir can be written by group or others (mode 0775): they could replace its files; run chmod go-w ",
			check: func(t *testing.T, root, dir string) {
				if m := mode(t, dir); m != 0o775 {
					t.Errorf("folder mode = %04o, want 0775 (never changed)", m)
				}
			}},
		{name: "a folder of ours others may write to is refused and left as it is",
			setup: func(t *testing.T, root string) string {
				mkdir(t, filepath.Join(root, "dir"), 0o577)
				return filepath.Join(root, "dir")
			},
			err: "dir can be written by group or others (mode 0577)",
			check: func(t *testing.T, root, dir string) {
				if m := mode(t, dir); m != 0o577 {
					t.Errorf("folder mode = %04o, want 0577 (never changed)", m)
				}
			}},
		{name: "private folder unchanged",
			setup: func(t *testing.T, root string) string {
				mkdir(t, filepath.Join(root, "dir"), 0o700)
				return filepath.Join(root, "dir")
			},
			check: func(t *testing.T, root, dir string) {
				if m := mode(t, dir); m != 0o700 {
					t.Errorf("folder mode = %04o, want 0700", m)
				}
			}},
		{name: "symbolic link to a folder is refused and its target untouched",
			setup: func(t *testing.T, root string) string {
				mkdir(t, filepath.Join(root, "target"), 0o755)
				symlink(t, filepath.Join(root, "target"), filepath.Join(root, "dir"))
				return filepath.Join(root, "dir")
			},
			err: " is a symbolic link; refusing to follow it",
			check: func(t *testing.T, root, dir string) {
				if m := mode(t, filepath.Join(root, "target")); m != 0o755 {
					t.Errorf("link target mode = %04o, want 0755 (untouched)", m)
				}
			}},
		{name: "dangling symbolic link is refused and nothing created",
			setup: func(t *testing.T, root string) string {
				symlink(t, filepath.Join(root, "nowhere"), filepath.Join(root, "dir"))
				return filepath.Join(root, "dir")
			},
			err: " is a symbolic link; refusing to follow it",
			check: func(t *testing.T, root, dir string) {
				if _, err := os.Lstat(filepath.Join(root, "nowhere")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("link target exists: %v", err)
				}
			}},
		{name: "symbolic link among the parents is followed",
			setup: func(t *testing.T, root string) string {
				mkdir(t, filepath.Join(root, "real"), 0o755)
				symlink(t, filepath.Join(root, "real"), filepath.Join(root, "home"))
				return filepath.Join(root, "home", "state", "driftwatch")
			},
			check: func(t *testing.T, root, dir string) {
				if m := mode(t, filepath.Join(root, "real", "state", "driftwatch")); m != 0o700 {
					t.Errorf("folder mode = %04o, want 0700", m)
				}
			}},
		{name: "a shared sticky folder like /tmp is refused and left as it is",
			setup: func(t *testing.T, root string) string {
				mkdir(t, filepath.Join(root, "tmp"), fs.ModeSticky|0o777)
				return filepath.Join(root, "tmp")
			},
			err: "tmp is shared (mode 0777 with the sticky bit): private files need a folder of their own",
			check: func(t *testing.T, root, dir string) {
				fi, err := os.Lstat(dir)
				if err != nil {
					t.Fatal(err)
				}
				if m := fi.Mode() & (fs.ModeSticky | fs.ModePerm); m != fs.ModeSticky|0o777 {
					t.Errorf("folder mode = %v, want it untouched", fi.Mode())
				}
			}},
		{name: "a file is not a folder",
			setup: func(t *testing.T, root string) string {
				writeFile(t, filepath.Join(root, "file"), "x", 0o600)
				return filepath.Join(root, "file")
			},
			err: "file is not a folder"},
		{name: "a file as a parent",
			setup: func(t *testing.T, root string) string {
				writeFile(t, filepath.Join(root, "file"), "x", 0o600)
				return filepath.Join(root, "file", "dir")
			},
			err: "not a directory"},
		{name: "empty path",
			setup: func(t *testing.T, root string) string { return "" },
			err:   "empty path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir := tt.setup(t, root)
			err := MkdirPrivate(dir)
			wantErr(t, err, tt.err)
			if strings.Contains(tt.err, "symbolic link") {
				if got := err.Error(); got != symlinkMsg(dir) {
					t.Errorf("error = %q, want %q", got, symlinkMsg(dir))
				}
				if !errors.Is(err, syscall.ELOOP) {
					t.Errorf("error %v does not wrap ELOOP", err)
				}
			}
			if tt.check != nil {
				tt.check(t, root, dir)
			}
		})
	}
}

func TestOpenPrivate(t *testing.T) {
	tests := []struct {
		name  string
		flag  int
		setup func(t *testing.T, root string) string
		err   string
		// data is what the opened file must hold (checked when err is "").
		data  string
		check func(t *testing.T, root, path string)
	}{
		{name: "creates the file 0600 in new 0700 folders",
			flag: os.O_RDWR | os.O_CREATE,
			setup: func(t *testing.T, root string) string {
				return filepath.Join(root, "state", "driftwatch", "hub.db")
			},
			check: func(t *testing.T, root, path string) {
				if m := mode(t, path); m != 0o600 {
					t.Errorf("file mode = %04o, want 0600", m)
				}
				if m := mode(t, filepath.Dir(path)); m != 0o700 {
					t.Errorf("folder mode = %04o, want 0700", m)
				}
			}},
		{name: "existing 0644 file is tightened to 0600 and kept",
			flag: os.O_RDONLY,
			setup: func(t *testing.T, root string) string {
				writeFile(t, filepath.Join(root, "log"), "old", 0o644)
				return filepath.Join(root, "log")
			},
			data: "old",
			check: func(t *testing.T, root, path string) {
				if m := mode(t, path); m != 0o600 {
					t.Errorf("file mode = %04o, want 0600", m)
				}
			}},
		{name: "stricter file is left as it is",
			flag: os.O_RDONLY,
			setup: func(t *testing.T, root string) string {
				writeFile(t, filepath.Join(root, "ro"), "x", 0o400)
				return filepath.Join(root, "ro")
			},
			data: "x",
			check: func(t *testing.T, root, path string) {
				if m := mode(t, path); m != 0o400 {
					t.Errorf("file mode = %04o, want 0400", m)
				}
			}},
		{name: "a folder others may read is used as it is",
			flag: os.O_WRONLY | os.O_CREATE,
			setup: func(t *testing.T, root string) string {
				mkdir(t, filepath.Join(root, "logs"), 0o755)
				return filepath.Join(root, "logs", "tui.log")
			},
			check: func(t *testing.T, root, path string) {
				if m := mode(t, filepath.Dir(path)); m != 0o755 {
					t.Errorf("folder mode = %04o, want 0755 (never changed)", m)
				}
				if m := mode(t, path); m != 0o600 {
					t.Errorf("file mode = %04o, want 0600", m)
				}
			}},
		{name: "a folder others may write to is refused, nothing created",
			flag: os.O_WRONLY | os.O_CREATE,
			setup: func(t *testing.T, root string) string {
				mkdir(t, filepath.Join(root, "logs"), 0o777)
				return filepath.Join(root, "logs", "tui.log")
			},
			err: "logs can be written by group or others (mode 0777)",
			check: func(t *testing.T, root, path string) {
				if m := mode(t, filepath.Dir(path)); m != 0o777 {
					t.Errorf("folder mode = %04o, want 0777 (never changed)", m)
				}
				if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("the file was created: %v", err)
				}
			}},
		{name: "symbolic link to a file is refused, the target untouched",
			flag: os.O_WRONLY | os.O_CREATE | os.O_TRUNC,
			setup: func(t *testing.T, root string) string {
				writeFile(t, filepath.Join(root, "victim"), "keep me", 0o644)
				symlink(t, filepath.Join(root, "victim"), filepath.Join(root, "log"))
				return filepath.Join(root, "log")
			},
			err: "is a symbolic link; refusing to follow it",
			check: func(t *testing.T, root, path string) {
				victim := filepath.Join(root, "victim")
				if b, _ := os.ReadFile(victim); string(b) != "keep me" {
					t.Errorf("link target holds %q, want it untouched", b)
				}
				if m := mode(t, victim); m != 0o644 {
					t.Errorf("link target mode = %04o, want 0644 (untouched)", m)
				}
			}},
		{name: "dangling symbolic link is refused, its target not created",
			flag: os.O_WRONLY | os.O_CREATE,
			setup: func(t *testing.T, root string) string {
				symlink(t, filepath.Join(root, "created-by-us"), filepath.Join(root, "log"))
				return filepath.Join(root, "log")
			},
			err: "is a symbolic link; refusing to follow it",
			check: func(t *testing.T, root, path string) {
				if _, err := os.Lstat(filepath.Join(root, "created-by-us")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("link target exists: %v", err)
				}
			}},
		{name: "symbolic link as the parent folder is refused, nothing written through it",
			flag: os.O_WRONLY | os.O_CREATE,
			setup: func(t *testing.T, root string) string {
				mkdir(t, filepath.Join(root, "elsewhere"), 0o755)
				symlink(t, filepath.Join(root, "elsewhere"), filepath.Join(root, "state"))
				return filepath.Join(root, "state", "hub.db")
			},
			err: "state is a symbolic link; refusing to follow it",
			check: func(t *testing.T, root, path string) {
				if _, err := os.Lstat(filepath.Join(root, "elsewhere", "hub.db")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("file created through the link: %v", err)
				}
				if m := mode(t, filepath.Join(root, "elsewhere")); m != 0o755 {
					t.Errorf("link target mode = %04o, want 0755 (untouched)", m)
				}
			}},
		{name: "a folder at the path",
			flag: os.O_RDONLY,
			setup: func(t *testing.T, root string) string {
				mkdir(t, filepath.Join(root, "dir"), 0o700)
				return filepath.Join(root, "dir")
			},
			err: "dir is not a regular file"},
		{name: "missing file without O_CREATE",
			flag:  os.O_RDONLY,
			setup: func(t *testing.T, root string) string { return filepath.Join(root, "missing") },
			err:   "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			path := tt.setup(t, root)
			f, err := OpenPrivate(path, tt.flag)
			wantErr(t, err, tt.err)
			if err == nil {
				if tt.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
					b := make([]byte, 64)
					n, _ := f.Read(b)
					if got := string(b[:n]); got != tt.data {
						t.Errorf("read %q, want %q", got, tt.data)
					}
				}
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if strings.Contains(tt.err, "symbolic link") && !errors.Is(err, syscall.ELOOP) {
				t.Errorf("error %v does not wrap ELOOP", err)
			}
			if tt.check != nil {
				tt.check(t, root, path)
			}
		})
	}
}

func TestOpenPrivateSymlinkMessage(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "log")
	symlink(t, "/etc/passwd", path)
	_, err := OpenPrivate(path, os.O_WRONLY|os.O_APPEND)
	if err == nil || err.Error() != symlinkMsg(path) {
		t.Fatalf("error = %v, want %q", err, symlinkMsg(path))
	}
}

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWritePrivate(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root string) string
		err   string
		check func(t *testing.T, root, path string)
	}{
		{name: "new file 0600 in a new 0700 folder, no temporary file left",
			setup: func(t *testing.T, root string) string { return filepath.Join(root, "state", "token") }},
		{name: "replaces a 0644 file with a 0600 one",
			setup: func(t *testing.T, root string) string {
				writeFile(t, filepath.Join(root, "token"), "old content, longer than the new", 0o644)
				return filepath.Join(root, "token")
			}},
		{name: "symbolic link at the path is refused, its target untouched",
			setup: func(t *testing.T, root string) string {
				writeFile(t, filepath.Join(root, "victim"), "keep me", 0o644)
				symlink(t, filepath.Join(root, "victim"), filepath.Join(root, "token"))
				return filepath.Join(root, "token")
			},
			err: "token is a symbolic link; refusing to follow it",
			check: func(t *testing.T, root, path string) {
				if b, _ := os.ReadFile(filepath.Join(root, "victim")); string(b) != "keep me" {
					t.Errorf("link target holds %q", b)
				}
				if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
					t.Errorf("the link was replaced: %v", err)
				}
			}},
		{name: "symbolic link as the parent folder is refused",
			setup: func(t *testing.T, root string) string {
				mkdir(t, filepath.Join(root, "elsewhere"), 0o755)
				symlink(t, filepath.Join(root, "elsewhere"), filepath.Join(root, "state"))
				return filepath.Join(root, "state", "token")
			},
			err: "state is a symbolic link; refusing to follow it",
			check: func(t *testing.T, root, path string) {
				if names := entries(t, filepath.Join(root, "elsewhere")); len(names) != 0 {
					t.Errorf("files written through the link: %v", names)
				}
			}},
		{name: "a folder at the path",
			setup: func(t *testing.T, root string) string {
				mkdir(t, filepath.Join(root, "token"), 0o700)
				return filepath.Join(root, "token")
			},
			err: "token is not a regular file"},
	}
	const data = "secret\n"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			path := tt.setup(t, root)
			// A new folder is made 0700; an existing one keeps its mode.
			wantDir := fs.FileMode(0o700)
			if fi, err := os.Lstat(filepath.Dir(path)); err == nil {
				wantDir = fi.Mode().Perm()
			}
			err := WritePrivate(path, []byte(data))
			wantErr(t, err, tt.err)
			if err == nil {
				if b, err := os.ReadFile(path); err != nil || string(b) != data {
					t.Errorf("file holds %q (%v), want %q", b, err, data)
				}
				if m := mode(t, path); m != 0o600 {
					t.Errorf("file mode = %04o, want 0600", m)
				}
				if m := mode(t, filepath.Dir(path)); m != wantDir {
					t.Errorf("folder mode = %04o, want %04o", m, wantDir)
				}
			}
			if names := entries(t, filepath.Dir(path)); len(names) > 1 && tt.check == nil ||
				strings.Contains(strings.Join(names, " "), ".tmp-") {
				t.Errorf("folder holds %v, want no temporary file", names)
			}
			if tt.check != nil {
				tt.check(t, root, path)
			}
		})
	}
}

func TestReadPrivate(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root string) string
		err   string
	}{
		{name: "private file",
			setup: func(t *testing.T, root string) string {
				writeFile(t, filepath.Join(root, "token"), "secret", 0o600)
				return filepath.Join(root, "token")
			}},
		{name: "read-only for the owner",
			setup: func(t *testing.T, root string) string {
				writeFile(t, filepath.Join(root, "token"), "secret", 0o400)
				return filepath.Join(root, "token")
			}},
		{name: "readable by others",
			setup: func(t *testing.T, root string) string {
				writeFile(t, filepath.Join(root, "token"), "secret", 0o644)
				return filepath.Join(root, "token")
			},
			err: "(mode 0644): run chmod 600 "},
		{name: "readable by the group",
			setup: func(t *testing.T, root string) string {
				writeFile(t, filepath.Join(root, "token"), "secret", 0o640)
				return filepath.Join(root, "token")
			},
			err: "(mode 0640): run chmod 600 "},
		{name: "writable by the group",
			setup: func(t *testing.T, root string) string {
				writeFile(t, filepath.Join(root, "token"), "secret", 0o620)
				return filepath.Join(root, "token")
			},
			err: "(mode 0620): run chmod 600 "},
		{name: "symbolic link to a private file",
			setup: func(t *testing.T, root string) string {
				writeFile(t, filepath.Join(root, "real"), "secret", 0o600)
				symlink(t, filepath.Join(root, "real"), filepath.Join(root, "token"))
				return filepath.Join(root, "token")
			},
			err: "token is a symbolic link; refusing to follow it"},
		{name: "a folder",
			setup: func(t *testing.T, root string) string {
				mkdir(t, filepath.Join(root, "token"), 0o700)
				return filepath.Join(root, "token")
			},
			err: "token is not a regular file"},
		{name: "missing",
			setup: func(t *testing.T, root string) string { return filepath.Join(root, "token") },
			err:   "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			path := tt.setup(t, root)
			got, err := ReadPrivate(path)
			wantErr(t, err, tt.err)
			if err == nil && string(got) != "secret" {
				t.Errorf("read %q, want %q", got, "secret")
			}
			if strings.Contains(tt.err, "chmod") {
				if !strings.HasSuffix(err.Error(), "chmod 600 "+path) {
					t.Errorf("error = %v, want it to end with chmod 600 %s", err, path)
				}
				if m := mode(t, path); m&0o077 == 0 {
					t.Errorf("ReadPrivate changed the mode to %04o", m)
				}
			}
		})
	}
}

// fakeInfo is a FileInfo with a mode and an owner.
type fakeInfo struct {
	mode fs.FileMode
	uid  uint32
}

func (f fakeInfo) Name() string       { return "x" }
func (f fakeInfo) Size() int64        { return 0 }
func (f fakeInfo) Mode() fs.FileMode  { return f.mode }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fakeInfo) Sys() any           { return &syscall.Stat_t{Uid: f.uid} }

// TestOwners covers folders and files of another user, which only root
// could set up for real.
func TestOwners(t *testing.T) {
	const me, other = 1000, 1001
	dirs := []struct {
		name string
		mode fs.FileMode
		uid  uint32
		err  string
	}{
		{name: "ours and private", mode: fs.ModeDir | 0o700, uid: me},
		{name: "ours and readable by others", mode: fs.ModeDir | 0o755, uid: me},
		{name: "ours, writable by the group", mode: fs.ModeDir | 0o775, uid: me,
			err: "folder /d can be written by group or others (mode 0775): they could replace its files; run chmod go-w /d, or use a folder of its own"},
		{name: "ours, writable by others", mode: fs.ModeDir | 0o757, uid: me,
			err: "folder /d can be written by group or others (mode 0757)"},
		{name: "another user's and private", mode: fs.ModeDir | 0o700, uid: other,
			err: "folder /d belongs to uid 1001, not to this user (uid 1000; mode 0700): private files need a folder of this user's own"},
		{name: "another user's, readable by others", mode: fs.ModeDir | 0o755, uid: other,
			err: "folder /d belongs to uid 1001, not to this user (uid 1000; mode 0755)"},
		{name: "another user's, writable by the group", mode: fs.ModeDir | 0o775, uid: other,
			err: "folder /d belongs to uid 1001, not to this user (uid 1000; mode 0775)"},
		{name: "a shared sticky folder such as /tmp", mode: fs.ModeDir | fs.ModeSticky | 0o777, uid: 0,
			err: "folder /d is shared (mode 0777 with the sticky bit): private files need a folder of their own"},
		{name: "a shared sticky folder that is ours (/tmp when root runs us)", mode: fs.ModeDir | fs.ModeSticky | 0o777, uid: me,
			err: "folder /d is shared (mode 0777 with the sticky bit)"},
		{name: "ours, sticky but private to us", mode: fs.ModeDir | fs.ModeSticky | 0o755, uid: me},
	}
	for _, tt := range dirs {
		t.Run("folder "+tt.name, func(t *testing.T) {
			wantErr(t, dirVerdict("/d", fakeInfo{mode: tt.mode, uid: tt.uid}, me), tt.err)
		})
	}
	files := []struct {
		name string
		uid  uint32
		err  string
	}{
		{name: "ours", uid: me},
		{name: "another user's", uid: other, err: "/f belongs to uid 1001, not to this user (uid 1000); refusing to use it"},
	}
	for _, tt := range files {
		t.Run("file "+tt.name, func(t *testing.T) {
			wantErr(t, checkOwner("/f", fakeInfo{mode: 0o600, uid: tt.uid}, me), tt.err)
		})
	}
}

// TestReadLimited: a regular file within the limit is read; a larger one,
// a folder and a missing file are refused. ReadCredential trims one line
// and refuses an empty file and several lines, naming the field.
func TestReadLimited(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	small := write("small", "token\n")
	if b, err := ReadLimited(small, 6); err != nil || string(b) != "token\n" {
		t.Errorf("within the limit: %q, %v", b, err)
	}
	if _, err := ReadLimited(small, 5); err == nil || !strings.Contains(err.Error(), "larger than 5 bytes") {
		t.Errorf("over the limit: %v", err)
	}
	if _, err := ReadLimited(dir, 1<<20); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a folder: %v", err)
	}
	if _, err := ReadLimited(filepath.Join(dir, "missing"), 1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	if s, err := ReadCredential("auth.tokenFile", write("tok", "  s3cret \n")); err != nil || s != "s3cret" {
		t.Errorf("credential: %q, %v", s, err)
	}
	for content, want := range map[string]string{"\n": "auth.tokenFile: " + dir + "/bad is empty", "a\nb\n": "holds more than one line"} {
		if _, err := ReadCredential("auth.tokenFile", write("bad", content)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("credential %q: %v, want %q", content, err, want)
		}
	}
	big := write("big", strings.Repeat("x", MaxCredentialBytes+1))
	if _, err := ReadCredential("auth.passwordFile", big); err == nil || !strings.HasPrefix(err.Error(), "auth.passwordFile: ") {
		t.Errorf("a credential over the limit: %v", err)
	}
}

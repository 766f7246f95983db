//go:build unix

package safefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// logFiles returns the content of every file in dir by name.
func logFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range entries(t, dir) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = string(b)
	}
	return out
}

func TestRotatingWriterBoundaries(t *testing.T) {
	tests := []struct {
		name     string
		maxBytes int64
		keep     int
		existing map[string]string // files in the folder before
		writes   []string
		want     map[string]string // every file in the folder after
	}{
		{name: "filling up to the limit exactly does not rotate",
			maxBytes: 10, keep: 3, writes: []string{"12345", "67890"},
			want: map[string]string{"log": "1234567890"}},
		{name: "one byte past the limit rotates first",
			maxBytes: 10, keep: 3, writes: []string{"12345", "67890", "x"},
			want: map[string]string{"log": "x", "log.1": "1234567890"}},
		{name: "a write that would pass the limit goes whole into the new file",
			maxBytes: 10, keep: 3, writes: []string{"1234567", "abcde"},
			want: map[string]string{"log": "abcde", "log.1": "1234567"}},
		{name: "a write larger than the limit into an empty file is kept whole",
			maxBytes: 4, keep: 3, writes: []string{"123456", "a"},
			want: map[string]string{"log": "a", "log.1": "123456"}},
		{name: "rotated files shift and the oldest beyond keep is deleted",
			maxBytes: 2, keep: 2, writes: []string{"aa", "bb", "cc", "dd"},
			want: map[string]string{"log": "dd", "log.1": "cc", "log.2": "bb"}},
		{name: "keep 0 starts afresh",
			maxBytes: 2, keep: 0, writes: []string{"aa", "bb", "cc"},
			want: map[string]string{"log": "cc"}},
		{name: "the existing file's size counts",
			maxBytes: 10, keep: 1, existing: map[string]string{"log": "123456789"}, writes: []string{"a", "b"},
			want: map[string]string{"log": "b", "log.1": "123456789a"}},
		{name: "rotated files of an earlier run shift too",
			maxBytes: 10, keep: 2, existing: map[string]string{"log": "0123456789", "log.1": "older", "log.2": "oldest"},
			writes: []string{"new"},
			want:   map[string]string{"log": "new", "log.1": "0123456789", "log.2": "older"}},
		{name: "empty writes never rotate",
			maxBytes: 1, keep: 1, writes: []string{"a", "", ""},
			want: map[string]string{"log": "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "logs")
			mkdir(t, dir, 0o700)
			for name, data := range tt.existing {
				writeFile(t, filepath.Join(dir, name), data, 0o600)
			}
			w, err := NewRotatingWriter(filepath.Join(dir, "log"), tt.maxBytes, tt.keep)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.writes {
				n, err := w.Write([]byte(s))
				if err != nil || n != len(s) {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if got := logFiles(t, dir); !mapsEqual(got, tt.want) {
				t.Errorf("files = %v, want %v", got, tt.want)
			}
			for name := range tt.want {
				if m := mode(t, filepath.Join(dir, name)); m != 0o600 {
					t.Errorf("%s mode = %04o, want 0600", name, m)
				}
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestRotatingWriterFiles(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root string) string
		err   string
		// check runs after one write that rotates (when err is "").
		check func(t *testing.T, root, path string)
	}{
		{name: "new log 0600 in a new 0700 folder",
			setup: func(t *testing.T, root string) string { return filepath.Join(root, "state", "driftwatch", "tui.log") },
			check: func(t *testing.T, root, path string) {
				for _, p := range []string{path, path + ".1"} {
					if m := mode(t, p); m != 0o600 {
						t.Errorf("%s mode = %04o, want 0600", p, m)
					}
				}
				if m := mode(t, filepath.Dir(path)); m != 0o700 {
					t.Errorf("folder mode = %04o, want 0700", m)
				}
			}},
		{name: "an existing 0644 log is tightened, its 0755 folder left as it is",
			setup: func(t *testing.T, root string) string {
				mkdir(t, filepath.Join(root, "logs"), 0o755)
				writeFile(t, filepath.Join(root, "logs", "tui.log"), "", 0o644)
				return filepath.Join(root, "logs", "tui.log")
			},
			check: func(t *testing.T, root, path string) {
				if m := mode(t, path+".1"); m != 0o600 {
					t.Errorf("rotated file mode = %04o, want 0600", m)
				}
				if m := mode(t, path); m != 0o600 {
					t.Errorf("log mode = %04o, want 0600", m)
				}
				if m := mode(t, filepath.Dir(path)); m != 0o755 {
					t.Errorf("folder mode = %04o, want 0755 (never changed)", m)
				}
			}},
		{name: "symbolic link at the path is refused",
			setup: func(t *testing.T, root string) string {
				writeFile(t, filepath.Join(root, "victim"), "keep me", 0o644)
				symlink(t, filepath.Join(root, "victim"), filepath.Join(root, "tui.log"))
				return filepath.Join(root, "tui.log")
			},
			err: "tui.log is a symbolic link; refusing to follow it"},
		{name: "symbolic link as the folder is refused",
			setup: func(t *testing.T, root string) string {
				mkdir(t, filepath.Join(root, "elsewhere"), 0o755)
				symlink(t, filepath.Join(root, "elsewhere"), filepath.Join(root, "logs"))
				return filepath.Join(root, "logs", "tui.log")
			},
			err: "logs is a symbolic link; refusing to follow it"},
		{name: "symbolic links at rotated names are replaced, never followed",
			setup: func(t *testing.T, root string) string {
				writeFile(t, filepath.Join(root, "victim"), "keep me", 0o644)
				symlink(t, filepath.Join(root, "victim"), filepath.Join(root, "tui.log.1"))
				symlink(t, filepath.Join(root, "victim"), filepath.Join(root, "tui.log.2"))
				return filepath.Join(root, "tui.log")
			},
			check: func(t *testing.T, root, path string) {
				if b, _ := os.ReadFile(filepath.Join(root, "victim")); string(b) != "keep me" {
					t.Errorf("link target holds %q", b)
				}
				if fi, err := os.Lstat(path + ".1"); err != nil || !fi.Mode().IsRegular() {
					t.Errorf("%s.1 is not the rotated log: %v", path, err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			path := tt.setup(t, root)
			w, err := NewRotatingWriter(path, 4, 2)
			wantErr(t, err, tt.err)
			if err != nil {
				return
			}
			for _, s := range []string{"abcd", "e"} {
				if _, err := w.Write([]byte(s)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(path + ".1"); string(b) != "abcd" {
				t.Errorf("%s.1 holds %q, want %q", path, b, "abcd")
			}
			tt.check(t, root, path)
		})
	}
}

func TestRotatingWriterArguments(t *testing.T) {
	tests := []struct {
		maxBytes int64
		keep     int
		err      string
	}{
		{0, 1, "maximum size 0 must be at least 1 byte"},
		{-5, 1, "maximum size -5 must be at least 1 byte"},
		{10, -1, "keep -1 rotated files: must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.err, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			_, err := NewRotatingWriter(path, tt.maxBytes, tt.keep)
			wantErr(t, err, tt.err)
			if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the log was created: %v", err)
			}
		})
	}
}

func TestRotatingWriterClose(t *testing.T) {
	w, err := NewRotatingWriter(filepath.Join(t.TempDir(), "log"), 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("late")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Write after Close = %v, want os.ErrClosed", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
}

// TestRotatingWriterConcurrent has writers race through many rotations (run
// it with -race): every line must land whole, exactly once, in a file no
// larger than the limit.
func TestRotatingWriterConcurrent(t *testing.T) {
	const (
		writers  = 8
		lines    = 200
		maxBytes = 1000
	)
	dir := t.TempDir()
	line := func(w, i int) string { return fmt.Sprintf("writer %d line %05d\n", w, i) }
	// Keep every rotated file: 8*200 lines of 20 bytes, 50 lines a file.
	const files = writers * lines * 20 / maxBytes
	w, err := NewRotatingWriter(filepath.Join(dir, "log"), maxBytes, files)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for n := range writers {
		wg.Go(func() {
			for i := range lines {
				if _, err := w.Write([]byte(line(n, i))); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	written := logFiles(t, dir)
	for name, data := range written {
		if len(data) > maxBytes {
			t.Errorf("%s holds %d bytes, more than %d", name, len(data), maxBytes)
		}
		if !strings.HasSuffix(data, "\n") {
			t.Errorf("%s ends in a partial line: %q", name, data)
		}
		got = append(got, strings.SplitAfter(data, "\n")...)
	}
	got = slices.DeleteFunc(got, func(s string) bool { return s == "" })
	var want []string
	for n := range writers {
		for i := range lines {
			want = append(want, line(n, i))
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("got %d lines in %d files, want each of the %d lines once", len(got), len(written), len(want))
	}
	if len(written) != files {
		t.Errorf("%d files, want %d (full ones of 50 lines)", len(written), files)
	}
}

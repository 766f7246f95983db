package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sparseFile returns the path of a file of size bytes that takes no room
// on disk.
func sparseFile(t *testing.T, size int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "big.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSizeLimit checks that a config over MaxConfigSize is refused with
// an error naming the file, its size and the limit: by its size, before
// it is read, when it is a file.
func TestSizeLimit(t *testing.T) {
	const limit = "the limit is 16 MiB (16777216 bytes)"
	tests := []struct {
		name string
		size int64
		want string // the error after the path, "" for none
	}{
		{name: "at the limit", size: MaxConfigSize},
		{name: "one byte over", size: MaxConfigSize + 1, want: ": config file is 16.0 MiB (16777217 bytes): " + limit},
		{name: "50 MB", size: 50 << 20, want: ": config file is 50 MiB (52428800 bytes): " + limit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := sparseFile(t, tt.size)
			data, err := ReadFile(path)
			if tt.want == "" {
				if err != nil || len(data) != int(tt.size) {
					t.Fatalf("ReadFile = %d bytes, %v; want %d bytes", len(data), err, tt.size)
				}
				return
			}
			var list ErrorList
			if !errors.As(err, &list) || len(list) != 1 || list[0].File != path || err.Error() != path+tt.want {
				t.Fatalf("ReadFile error = %v (%T), want an ErrorList %q", err, err, path+tt.want)
			}
			if _, lerr := Load(path, testOptions()); lerr == nil || lerr.Error() != err.Error() {
				t.Errorf("Load error = %v, want %v", lerr, err)
			}
		})
	}
}

// TestReadLimit checks the limit on a config read from a stream, whose
// size is not known before it is read.
func TestReadLimit(t *testing.T) {
	zeros := strings.NewReader(strings.Repeat("\x00", MaxConfigSize+1))
	_, err := Read("-", zeros)
	want := "-: config is more than 16 MiB (16777216 bytes), the limit"
	if err == nil || err.Error() != want {
		t.Errorf("Read error = %v, want %q", err, want)
	}
	zeros.Reset(strings.Repeat("\x00", MaxConfigSize))
	if data, err := Read("-", zeros); err != nil || len(data) != MaxConfigSize {
		t.Errorf("Read = %d bytes, %v; want %d bytes", len(data), err, MaxConfigSize)
	}
}

package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// updateGoldenEnv names the environment variable that rewrites golden files:
// DRIFTWATCH_UPDATE_GOLDEN=1 go test ./config/
const updateGoldenEnv = "DRIFTWATCH_UPDATE_GOLDEN"

// golden compares got with testdata/<name>, or rewrites the file when
// DRIFTWATCH_UPDATE_GOLDEN=1.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv(updateGoldenEnv) == "1" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with %s=1 to create it): %v", updateGoldenEnv, err)
	}
	if bytes.Equal(got, want) {
		return
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(gl), len(wl)) {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Fatalf("%s differs from the golden file at line %d (run with %s=1 to update):\n got: %q\nwant: %q\n\nfull output:\n%s",
				path, i+1, updateGoldenEnv, g, w, got)
		}
	}
}

// Package golden compares test output with golden files under testdata/ and
// rewrites them when DRIFTWATCH_UPDATE_GOLDEN=1. It is the one golden helper
// of the project's tests (the terminal UI's view goldens use
// charmbracelet's golden package, which works the same way with -update).
package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// UpdateEnv names the environment variable that rewrites golden files:
// DRIFTWATCH_UPDATE_GOLDEN=1 go test ./pkg/ -run TestX.
const UpdateEnv = "DRIFTWATCH_UPDATE_GOLDEN"

// Check compares got with testdata/<name> (name may hold folders), or
// rewrites that file when UpdateEnv is 1. A difference fails the test at
// the first differing line, with the whole output.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv(UpdateEnv) == "1" {
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
		t.Fatalf("read golden file (run with %s=1 to create it): %v", UpdateEnv, err)
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
				path, i+1, UpdateEnv, g, w, got)
		}
	}
}

package config

import (
	"testing"

	goldenfile "github.com/driftwatch/driftwatch/internal/golden"
)

// golden compares got with testdata/<name> (see internal/golden).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, name, got)
}

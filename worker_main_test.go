package main

import (
	"os"
	"testing"

	"github.com/driftwatch/driftwatch/config/manifest"
)

// TestMain makes this test binary a render worker when a
// manifest.Sandbox starts it: the commands under test render charts
// through manifest.Self, which runs this binary.
func TestMain(m *testing.M) {
	manifest.ServeWorker()
	os.Exit(m.Run())
}

package config

import (
	"os"
	"testing"

	"github.com/driftwatch/driftwatch/config/manifest"
)

// TestMain makes this test binary a render worker when a
// manifest.Sandbox starts it (TestHelmSandboxFaultsOnlyItsSource).
func TestMain(m *testing.M) {
	manifest.ServeWorker()
	os.Exit(m.Run())
}

// Package tftest finds the OpenTofu tools (tofu and the local provider's
// mirror, built by scripts/build-binaries.sh) for tests that run them.
package tftest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/driftwatch/driftwatch/clusters/terraform"
)

// Tools returns the tofu binary and the CLI config (for TF_CLI_CONFIG_FILE)
// of $DRIFTWATCH_TOFU_DIR. Without that variable the test is skipped (a
// plain `go test`), unless $DRIFTWATCH_BIN_DIR is set, as under
// scripts/test.sh, which sets both: there a real-tool test fails rather
// than skips. A set variable whose tools are missing fails the test.
func Tools(t testing.TB) (bin, cliConfig string) {
	t.Helper()
	dir := os.Getenv(terraform.EnvToolsDir)
	if dir == "" {
		if os.Getenv("DRIFTWATCH_BIN_DIR") != "" {
			t.Fatalf("$DRIFTWATCH_BIN_DIR is set but $%s is not: run scripts/test.sh, or export both from scripts/build-binaries.sh --env", terraform.EnvToolsDir)
		}
		t.Skipf("$%s is not set: build the tools with scripts/build-binaries.sh tofu", terraform.EnvToolsDir)
	}
	bin = filepath.Join(dir, "bin", "tofu")
	cliConfig = filepath.Join(dir, "tofurc")
	for _, p := range []string{bin, cliConfig} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("$%s=%s: %v (build the tools with scripts/build-binaries.sh tofu)", terraform.EnvToolsDir, dir, err)
		}
	}
	return bin, cliConfig
}

// Package lctest starts local clusters from tests. Tests that need a real
// control plane call Start; without the binaries (plain `go test`) they are
// skipped, under scripts/test.sh they fail when a cluster does not start.
package lctest

import (
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/localcluster"
)

// EnvBinDir is the environment variable scripts/test.sh sets to the folder
// holding the control-plane binaries.
const EnvBinDir = "DRIFTWATCH_BIN_DIR"

// SkipMessage is the one reason real-cluster tests give when they skip.
const SkipMessage = "real-cluster test: run scripts/test.sh (needs the local control-plane binaries)"

// BinDir returns $DRIFTWATCH_BIN_DIR, the control-plane binaries folder. It
// is the only place a real-cluster test skips: without the variable (plain
// `go test`). scripts/test.sh always sets it, so under the README's test
// command no real-cluster test can skip; a control plane that cannot start
// then fails the test.
func BinDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(EnvBinDir)
	if dir == "" {
		t.Skip(SkipMessage)
	}
	return dir
}

// Start starts the clusters described by opts and stops them when the test
// ends. opts.BinDir defaults to $DRIFTWATCH_BIN_DIR and opts.Logger to the
// test log. Without $DRIFTWATCH_BIN_DIR the test is skipped; with it, a
// failed start fails the test.
func Start(t testing.TB, opts localcluster.Options) *localcluster.Set {
	t.Helper()
	binDir := BinDir(t)
	if opts.BinDir == "" {
		opts.BinDir = binDir
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	begin := time.Now()
	set, err := localcluster.Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("start local clusters: %v", err)
	}
	t.Cleanup(func() {
		if err := set.Stop(); err != nil {
			t.Errorf("stop local clusters: %v", err)
		}
	})
	for _, c := range set.Clusters {
		t.Logf("cluster %s: kube-apiserver ready after %v (%s)", c.Name, c.StartupTime.Round(time.Millisecond), c.Server)
	}
	t.Logf("%d local cluster(s) started in %v", len(set.Clusters), time.Since(begin).Round(time.Millisecond))
	return set
}

package localcluster

import (
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestPortClashRetry occupies the port picked for kube-apiserver, and
// again the one picked for the first retry (as another cluster starting at
// the same moment may take a port of the retry): each apiserver exits with
// "address already in use" and the start is retried on new ports until it
// comes up.
func TestPortClashRetry(t *testing.T) {
	binDir := os.Getenv("DRIFTWATCH_BIN_DIR") // lctest.EnvBinDir; lctest imports this package
	if binDir == "" {
		t.Skip("real-cluster test: run scripts/test.sh (needs the local control-plane binaries)")
	}
	t.Parallel()
	opts, err := Options{BinDir: binDir, Names: []string{"clash"}, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port
	ports, err := freePorts(portsPerCluster)
	if err != nil {
		t.Fatal(err)
	}
	ports[2] = busyPort // the apiserver's port

	sp := newSpawner()
	c := newCluster("clash", t.TempDir(), opts, ports, sp)
	retries := 0
	c.freePorts = func(n int) ([]int, error) {
		retries++
		p, err := freePorts(n)
		if err == nil && retries == 1 {
			p[2] = busyPort // the first retry clashes too
		}
		return p, err
	}
	t.Cleanup(func() {
		c.stop()
		sp.close()
	})
	if err := c.start(t.Context()); err != nil {
		t.Fatalf("start with a busy apiserver port: %v", err)
	}
	if c.Server == "https://127.0.0.1:"+strconv.Itoa(busyPort) {
		t.Fatalf("still on the busy port %d", busyPort)
	}
	if tail := tailFile(c.logPath(binAPIServer), 1000); strings.Count(tail, "address already in use") < 2 {
		t.Fatalf("the first two apiservers did not hit the clash; log:\n%s", tail)
	}
	if retries != 2 {
		t.Fatalf("started after %d retries, want 2", retries)
	}
}

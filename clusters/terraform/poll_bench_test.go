package terraform_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/clusters/terraform/tftest"
	"github.com/driftwatch/driftwatch/hub"
)

// BenchmarkPoll measures one poll of a ready workspace with the real tofu
// and provider, for the three local files of mainTF and for 50 more: ns/op
// is the wall time of a poll, tofu-cpu-ms/op the CPU time (user and
// system) of the tofu runs and providers it started. Most of it is tofu
// starting and launching its provider:
//
//	DRIFTWATCH_TOFU_DIR="$(scripts/build-binaries.sh tofu)" go test -run x -bench Poll -benchtime 10x ./clusters/terraform/
func BenchmarkPoll(b *testing.B) {
	for _, n := range []int{3, 53} {
		b.Run(fmt.Sprintf("resources=%d", n), func(b *testing.B) {
			bin, cli := tftest.Tools(b)
			dir := workspaceDir(b, bin, cli, manyFiles(n-3))
			r := start(b, dir, cli, hub.PolicyRepair, time.Hour)
			r.waitFor(b, "workspace ready", 120*time.Second, ready)
			before := childCPU(b)
			for b.Loop() {
				if err := r.ws.Poll(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((childCPU(b)-before).Milliseconds())/float64(b.N), "tofu-cpu-ms/op")
		})
	}
}

// manyFiles is a configuration of n more local files under out/ (not
// watched), "" for none.
func manyFiles(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(`
resource "local_file" "many" {
  count    = %d
  filename = "${path.module}/out/many-${count.index}.txt"
  content  = "file ${count.index}\n"
}
`, n)
}

// childCPU is the CPU time of every child process of this one that has
// ended and been waited for.
func childCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countingBinary returns a wrapper of bin that logs the subcommand of each
// run to a file, and a function returning the subcommands logged so far.
func countingBinary(t testing.TB, bin string) (string, func() []string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "runs.log")
	wrapper := filepath.Join(dir, "tofu")
	script := fmt.Sprintf("#!/bin/sh\necho \"$1\" >> '%s'\nexec '%s' \"$@\"\n", log, bin)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper, func() []string {
		b, err := os.ReadFile(log)
		if err != nil {
			return nil
		}
		return strings.Fields(string(b))
	}
}

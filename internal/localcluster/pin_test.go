//go:build linux

package localcluster_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// pinHelperEnv makes TestPinProcess's child pin itself and report.
const pinHelperEnv = "DRIFTWATCH_LOCALCLUSTER_PIN_HELPER"

// allowedCPUs returns the Cpus_allowed_list of every thread of pid (0:
// this process), by thread id.
func allowedCPUs(t *testing.T, pid int) map[string]string {
	t.Helper()
	dir := "/proc/self/task"
	if pid != 0 {
		dir = fmt.Sprintf("/proc/%d/task", pid)
	}
	tasks, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, task.Name(), "status"))
		if err != nil {
			continue // the thread ended
		}
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				out[task.Name()] = strings.TrimSpace(v)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no thread of %s", dir)
	}
	return out
}

// TestPinnedCPUs starts a cluster whose components run on one CPU: every
// thread of etcd and kube-apiserver is pinned to it.
func TestPinnedCPUs(t *testing.T) {
	t.Parallel()
	last := runtime.NumCPU() - 1
	set := lctest.Start(t, localcluster.Options{Names: []string{"pinned"}, CPUs: []int{last}})
	pids := localcluster.PIDs(set.Clusters[0])
	if len(pids) < 2 {
		t.Fatalf("running components %v, want etcd and kube-apiserver", pids)
	}
	for name, pid := range pids {
		for tid, cpus := range allowedCPUs(t, pid) {
			if cpus != strconv.Itoa(last) {
				t.Errorf("%s thread %s runs on CPUs %q, want %d", name, tid, cpus, last)
			}
		}
	}
}

// TestCPUsOutOfRange: a CPU the machine does not have is refused.
func TestCPUsOutOfRange(t *testing.T) {
	_, err := localcluster.Start(t.Context(), localcluster.Options{BinDir: t.TempDir(), CPUs: []int{runtime.NumCPU()}})
	if err == nil || !strings.Contains(err.Error(), "is not one of this machine's") {
		t.Fatalf("Start with CPU %d: %v, want it refused", runtime.NumCPU(), err)
	}
	if err := localcluster.PinProcess([]int{-1}); err == nil {
		t.Fatal("PinProcess(-1) accepted")
	}
	if err := localcluster.PinProcess(nil); err == nil {
		t.Fatal("PinProcess(nil) accepted")
	}
}

// TestPinProcess pins a child test process to CPU 0: every thread it has,
// and every thread it starts afterwards, runs there.
func TestPinProcess(t *testing.T) {
	if os.Getenv(pinHelperEnv) != "" {
		if err := localcluster.PinProcess([]int{0}); err != nil {
			t.Fatal(err)
		}
		// New threads: goroutines locked to threads of their own, blocked
		// together so that the runtime has to start more threads.
		var wg, started sync.WaitGroup
		hold := make(chan struct{})
		started.Add(8)
		for range 8 {
			wg.Go(func() {
				runtime.LockOSThread()
				started.Done()
				<-hold
			})
		}
		started.Wait()
		threads := allowedCPUs(t, 0)
		close(hold)
		wg.Wait()
		for tid, cpus := range threads {
			fmt.Printf("thread %s %s\n", tid, cpus)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPinProcess$", "-test.v")
	cmd.Env = append(os.Environ(), pinHelperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	n := 0
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "thread" {
			continue
		}
		n++
		if f[2] != "0" {
			t.Errorf("thread %s runs on CPUs %q, want 0", f[1], f[2])
		}
	}
	if n < 9 {
		t.Fatalf("%d threads reported, want at least 9 (8 locked ones and the main thread):\n%s", n, out)
	}
}

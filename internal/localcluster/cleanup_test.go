//go:build unix

package localcluster_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// The helper process: TestCleanupAfterFailure re-runs this test binary with
// helperModeEnv set, and the helper reports what it started on file
// descriptor 3 as one JSON line.
const (
	helperModeEnv = "DRIFTWATCH_LOCALCLUSTER_HELPER"
	helperDirEnv  = "DRIFTWATCH_LOCALCLUSTER_HELPER_DIR"
)

// helperReport is what the helper process writes to descriptor 3.
type helperReport struct {
	PIDs map[string]int `json:"pids"`
	Dir  string         `json:"dir"` // the Set's working folder
}

func TestCleanupAfterFailure(t *testing.T) {
	if mode := os.Getenv(helperModeEnv); mode != "" {
		// This is the child process runHelper started.
		cleanupHelper(t, mode)
		return
	}
	lctest.BinDir(t)

	t.Run("fatal", func(t *testing.T) {
		t.Parallel()
		rep, out, err := runHelper(t, "fatal", "", nil)
		if err == nil {
			t.Fatalf("helper passed, want a deliberate failure; output:\n%s", out)
		}
		if !strings.Contains(out, "deliberate failure") {
			t.Fatalf("helper did not fail deliberately (%v); output:\n%s", err, out)
		}
		assertGone(t, rep.PIDs, out)
		if _, err := os.Stat(rep.Dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("temporary folder %s not removed: %v", rep.Dir, err)
		}
	})

	t.Run("context cancelled during start", func(t *testing.T) {
		t.Parallel()
		rep, out, err := runHelper(t, "cancel", "", nil)
		if err != nil {
			t.Fatalf("helper: %v; output:\n%s", err, out)
		}
		if rep.PIDs["kube-apiserver"] == 0 {
			t.Fatalf("helper cancelled before kube-apiserver started: %v", rep.PIDs)
		}
		assertGone(t, rep.PIDs, out)
		if _, err := os.Stat(rep.Dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("temporary folder %s not removed: %v", rep.Dir, err)
		}
	})

	t.Run("SIGINT", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("relies on Pdeathsig (Linux)")
		}
		t.Parallel()
		// The helper dies without running cleanups, so it works in a folder
		// this test removes.
		rep, out, err := runHelper(t, "sigint", t.TempDir(), func(p *os.Process) error {
			return p.Signal(os.Interrupt)
		})
		if err == nil {
			t.Fatalf("helper exited cleanly after SIGINT; output:\n%s", out)
		}
		assertGone(t, rep.PIDs, out)
	})

	t.Run("Stop twice", func(t *testing.T) {
		t.Parallel()
		set := lctest.Start(t, localcluster.Options{Names: []string{"twice"}})
		pids := localcluster.PIDs(set.Clusters[0])
		dir := filepath.Dir(set.Clusters[0].Dir)
		if err := set.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := set.Stop(); err != nil {
			t.Fatalf("second Stop: %v", err)
		}
		for name, pid := range pids {
			if alive(pid) {
				t.Errorf("%s (pid %d) still running after Stop", name, pid)
			}
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("temporary folder %s not removed: %v", dir, err)
		}
		if err := set.Clusters[0].StartAPIServer(t.Context()); err == nil {
			t.Error("StartAPIServer after Stop succeeded")
		}
	})
}

// runHelper runs TestCleanupAfterFailure as the helper (cleanupHelper) in a
// child process in the given mode.
// Once the child reported, signal (if non-nil) is called with it. It
// returns the child's report, its output and its exit error.
func runHelper(t *testing.T, mode, dir string, signal func(*os.Process) error) (helperReport, string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCleanupAfterFailure$", "-test.v", "-test.count=1", "-test.timeout=3m")
	cmd.Env = append(os.Environ(), helperModeEnv+"="+mode, helperDirEnv+"="+dir)
	cmd.ExtraFiles = []*os.File{w}
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		w.Close()
		t.Fatal(err)
	}
	w.Close() // the child holds the write end now

	// Read the report while the child runs (it may block afterwards).
	type result struct {
		rep helperReport
		err error
	}
	if err := r.SetReadDeadline(time.Now().Add(2 * time.Minute)); err != nil {
		t.Logf("no read deadline on the pipe: %v", err)
	}
	reports := make(chan result, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		var rep helperReport
		line, err := bufio.NewReader(r).ReadBytes('\n')
		if err == nil {
			err = json.Unmarshal(line, &rep)
		}
		reports <- result{rep, err}
	})
	res := <-reports
	wg.Wait()
	if res.err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper report: %v; output:\n%s", res.err, out.String())
	}
	t.Logf("helper %s reported %v", mode, res.rep.PIDs)
	if signal != nil {
		if err := signal(cmd.Process); err != nil {
			t.Fatal(err)
		}
	}
	waitErr := cmd.Wait()
	return res.rep, out.String(), waitErr
}

// assertGone fails unless every pid has exited within a few seconds.
func assertGone(t *testing.T, pids map[string]int, helperOutput string) {
	t.Helper()
	if len(pids) == 0 {
		t.Fatalf("helper reported no processes; output:\n%s", helperOutput)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return // they all ended: their pids may be another's by now
		}
		for _, pid := range pids {
			if alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	testwait.For(t, 5*time.Second, "the helper's processes to end with it", func() error {
		var running []string
		for name, pid := range pids {
			if alive(pid) {
				running = append(running, fmt.Sprintf("%s (pid %d)", name, pid))
			}
		}
		return testwait.Check(len(running) == 0, "still running after the helper exited: %v", running)
	})
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	// A reaped-late child of a dead parent may linger as a zombie.
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return runtime.GOOS != "linux"
	}
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}

// cleanupHelper is the child process of TestCleanupAfterFailure.
func cleanupHelper(t *testing.T, mode string) {
	report := os.NewFile(3, "report")
	send := func(rep helperReport) {
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := report.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	opts := localcluster.Options{Names: []string{"helper"}, ControllerManager: true, Dir: os.Getenv(helperDirEnv)}

	switch mode {
	case "fatal":
		set := lctest.Start(t, opts)
		send(helperReport{PIDs: localcluster.PIDs(set.Clusters[0]), Dir: filepath.Dir(set.Clusters[0].Dir)})
		t.Fatal("deliberate failure: the cleanup must stop the cluster")

	case "cancel":
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		rec := &startRecorder{cancelOn: "kube-apiserver", cancel: cancel, pids: map[string]int{}}
		opts.BinDir = os.Getenv(lctest.EnvBinDir)
		opts.Logger = slog.New(rec)
		set, err := localcluster.Start(ctx, opts)
		if err == nil {
			set.Stop()
			t.Fatal("Start succeeded despite the cancelled context")
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Start error = %v, want context.Canceled", err)
		}
		t.Logf("Start returned: %v", err)
		send(rec.report())

	case "sigint":
		set := lctest.Start(t, opts)
		send(helperReport{PIDs: localcluster.PIDs(set.Clusters[0]), Dir: filepath.Dir(set.Clusters[0].Dir)})
		<-t.Context().Done() // until the parent interrupts this process

	default:
		t.Fatalf("unknown helper mode %q", mode)
	}
}

// startRecorder is a slog.Handler that records the components Start
// launches (the "component started" debug records) and the working folder,
// and cancels the start once cancelOn has been launched.
type startRecorder struct {
	cancelOn string
	cancel   context.CancelFunc
	mu       sync.Mutex
	pids     map[string]int
	dir      string
}

func (r *startRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *startRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *startRecorder) WithGroup(string) slog.Handler            { return r }

func (r *startRecorder) Handle(_ context.Context, rec slog.Record) error {
	var component string
	var pid int
	rec.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "component":
			component = a.Value.String()
		case "pid":
			pid = int(a.Value.Int64())
		case "dir":
			r.mu.Lock()
			r.dir = a.Value.String()
			r.mu.Unlock()
		}
		return true
	})
	if component != "" && pid != 0 {
		r.mu.Lock()
		r.pids[component] = pid
		r.mu.Unlock()
		if component == r.cancelOn {
			r.cancel()
		}
	}
	return nil
}

func (r *startRecorder) report() helperReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	pids := map[string]int{}
	for k, v := range r.pids {
		pids[k] = v
	}
	return helperReport{PIDs: pids, Dir: r.dir}
}

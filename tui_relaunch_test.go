//go:build linux

package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/creack/pty"

	"github.com/driftwatch/driftwatch/internal/benchconfig"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/startheap"
)

// BenchmarkTUIRelaunch5k measures what an on-call engineer waits for when
// relaunching the terminal UI over 5,000 objects, the whole way: the real
// driftwatch binary (go build) started with -f on a pseudo-terminal of
// 160x48, over one real local control plane (kube-apiserver and etcd on
// loopback) where a first run created 5,000 ConfigMaps and their Namespace
// from a manifest source, with the hub's state file as a real relaunch has
// it. Per run, from the exec (the process's start, the config's load, the
// hub and the UI included):
//
//   - first-rows-ms: to the first output showing the cluster's row with
//     its 5,001 objects;
//   - in-sync-ms: to the header saying all 5,001 are in sync (the watch
//     manager listed them and the hub compared each).
//
// Medians over the runs. The in-process figures of each part are
// internal/app's BenchmarkTUIControlPlane5k.
//
//	go test -run '^$' -bench TUIRelaunch5k -benchtime 5x .
//
// The relaunches follow each other at once, unless -relaunch-pause says
// how long to wait before each (outside the timer): the machine then takes
// back the memory the last one freed, as it does between a user's
// relaunches, and a relaunch pays for its fresh pages in full.
func BenchmarkTUIRelaunch5k(b *testing.B) {
	bin := driftwatchBinary(b)
	set := lctest.Start(b, localcluster.Options{Count: 1})
	r := newRelaunch(b, bin, set, 5000)
	r.run(b, 15*time.Minute) // the first run creates the objects
	var first, synced []time.Duration
	for b.Loop() {
		if *relaunchPause > 0 {
			b.StopTimer()
			time.Sleep(*relaunchPause)
			b.StartTimer()
		}
		f, s := r.run(b, 2*time.Minute)
		first, synced = append(first, f), append(synced, s)
	}
	b.ReportMetric(medianMs(first), "first-rows-ms")
	b.ReportMetric(medianMs(synced), "in-sync-ms")
}

// relaunchPause is BenchmarkTUIRelaunch5k's wait before each relaunch.
var relaunchPause = flag.Duration("relaunch-pause", 0, "BenchmarkTUIRelaunch5k: wait this long before each relaunch (e.g. 6s)")

// TestTUIRelaunch runs the benchmark's measurement on a small source: the
// binary on a pseudo-terminal must show the cluster's row with its objects,
// then all of them in sync, on a first run and on a relaunch.
func TestTUIRelaunch(t *testing.T) {
	bin := driftwatchBinary(t)
	set := lctest.Start(t, localcluster.Options{Count: 1})
	r := newRelaunch(t, bin, set, 30)
	for _, run := range []string{"first run", "relaunch"} {
		f, s := r.run(t, 5*time.Minute)
		t.Logf("%s: first rows %v, in sync %v", run, f, s)
		if f <= 0 || s < f {
			t.Errorf("%s: first rows %v, in sync %v", run, f, s)
		}
	}
	// The watches started once the UI had drawn the hub's state (or, on
	// a machine too loaded for that, after app.WatchAfterLimit).
	log, err := os.ReadFile(filepath.Join(r.dir, "state", "tui.log"))
	if err != nil {
		t.Fatal(err)
	}
	starts := strings.Count(string(log), `"msg":"cluster watches start"`)
	afterFrame := strings.Count(string(log), `"msg":"cluster watches start","after":"first frame"`)
	if starts != 2 || afterFrame == 0 {
		t.Errorf("the log says the watches started %d times, %d of them after the first frame; want 2, at least 1:\n%s", starts, afterFrame, log)
	}
	// Each start said how its heap is backed; where this machine's kernel
	// hands out huge pages without compacting (and they are not turned
	// off), in huge pages, withdrawn before the process ended.
	huge := strings.Count(string(log), `"msg":"start-up heap in huge pages"`)
	base := strings.Count(string(log), `"msg":"start-up heap in base pages","why":"`)
	withdrawn := strings.Count(string(log), `"msg":"start-up heap: huge pages withdrawn"`)
	_, why := startheap.Available()
	if off := startheap.Off(os.Getenv); off != "" {
		why = off
	}
	if huge+base != 2 || withdrawn != huge || (why == "" && huge == 0) {
		t.Errorf("the log says %d starts in huge pages (%d withdrawn), %d in base pages; the kernel's settings say %q:\n%s", huge, withdrawn, base, why, log)
	}
}

// relaunch is a config of n ConfigMaps on one local cluster, and the
// folder of the hub's state file and logs.
type relaunch struct {
	bin, dir, cfg, cluster string
	objects                int
}

// newRelaunch writes the manifests, the config and a private state folder.
func newRelaunch(tb testing.TB, bin string, set *localcluster.Set, n int) *relaunch {
	tb.Helper()
	dir := tb.TempDir()
	for _, d := range []string{"manifests", "state"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "manifests", "all.yaml"), []byte(benchconfig.ConfigMaps("relaunch", n)), 0o600); err != nil {
		tb.Fatal(err)
	}
	c := set.Clusters[0]
	cfg := fmt.Sprintf("hub: {id: relaunch}\nclusters:\n  - {id: %s, kubeconfig: %s}\nsources:\n  - {id: cms, path: manifests, clusters: [%s]}\n", c.Name, c.Kubeconfig, c.Name)
	path := filepath.Join(dir, "driftwatch.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		tb.Fatal(err)
	}
	return &relaunch{bin: bin, dir: dir, cfg: path, cluster: c.Name, objects: n + 1}
}

// run starts the binary on a pseudo-terminal and returns how long after
// the exec the cluster's row showed its objects and all were in sync; it
// then quits the UI with q and waits for the process.
func (r *relaunch) run(tb testing.TB, timeout time.Duration) (firstRows, inSync time.Duration) {
	tb.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		tb.Fatal(err)
	}
	defer ptmx.Close()
	if err := pty.Setsize(tty, &pty.Winsize{Rows: 48, Cols: 160}); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(r.bin, "-f", r.cfg, "--log-file", filepath.Join(r.dir, "state", "tui.log"))
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(r.dir, "state"), "TERM=xterm-256color")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	row := regexp.MustCompile(`(?s)>\s+` + regexp.QuoteMeta(r.cluster) + `\s.{0,80}?\b` + fmt.Sprint(r.objects) + `\b`)
	synced := fmt.Sprintf("all %d objects in sync", r.objects)

	start := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	_ = tty.Close()
	type mark struct {
		first, synced time.Time
		screen        string
	}
	marks := make(chan mark, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // reads until the child's end closes the terminal
		defer wg.Done()
		var m mark
		var text strings.Builder
		buf := make([]byte, 64<<10)
		for {
			n, err := ptmx.Read(buf)
			at := time.Now()
			if n > 0 && m.synced.IsZero() {
				text.WriteString(ansi.Strip(string(buf[:n]))) // the text drawn
				s := text.String()
				if m.first.IsZero() && row.MatchString(s) {
					m.first = at
				}
				if !m.first.IsZero() && strings.Contains(s, synced) {
					m.synced = at
					m.screen = s
					marks <- m
				}
			}
			if err != nil {
				if m.synced.IsZero() {
					m.screen = text.String()
					marks <- m
				}
				return
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer wg.Wait()
	var m mark
	select {
	case m = <-marks:
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-exited
		tb.Fatalf("no frame showed %s within %v; the log:\n%s", synced, timeout, tail(filepath.Join(r.dir, "state", "tui.log")))
	}
	if m.synced.IsZero() {
		err := <-exited
		tb.Fatalf("driftwatch ended (%v) before showing %s; its output:\n%s", err, synced, lastChars(m.screen, 4000))
	}
	if _, err := ptmx.Write([]byte("q")); err != nil {
		tb.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			tb.Fatalf("driftwatch exited with %v after q", err)
		}
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-exited
		tb.Fatal("driftwatch did not exit within a minute of q")
	}
	return m.first.Sub(start), m.synced.Sub(start)
}

// lastChars returns the last n bytes of s.
func lastChars(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// medianMs returns the median of ds in milliseconds.
func medianMs(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2].Microseconds()) / 1000
}

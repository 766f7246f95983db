//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// tuiChildEnv, set to a config path, makes TestTUIEndsWithItsTerminal run
// `driftwatch -f PATH` in this process: the child on the pseudo-terminal.
const tuiChildEnv = "DRIFTWATCH_TUI_CHILD"

// childRace is the GORACE of a -race child: no sleep at exit (the race
// runtime's atexit_sleep_ms defaults to 1000; the exit budget is the
// program's, not the race detector's), and its reports written under dir
// (its stderr is the pseudo-terminal, which nobody reads): a child that
// found a race exits with status 66, and raceReports shows why.
func childRace(dir string) string {
	return "GORACE=atexit_sleep_ms=0 log_path=" + filepath.Join(dir, "race")
}

// raceReports returns the race reports a child wrote under dir ("" if
// none).
func raceReports(dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "race.*"))
	var b strings.Builder
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil {
			b.Write(data)
		}
	}
	return b.String()
}

// hangupExitBudget is how long the TUI mode may take to exit once its
// terminal is gone (the bar).
const hangupExitBudget = 2 * time.Second

// demoExitBudget is how long `driftwatch demo` may take to exit once its
// terminal is gone: the TUI's budget and one second more, for its three
// clusters of five processes each, stopped beside the hub (under -race it
// exits in 0.6-0.7 s at load average 5-13, and once the hub's own stop
// took 1.8 s at load 13).
const demoExitBudget = hangupExitBudget + time.Second

// TestTUIEndsWithItsTerminal starts the TUI mode (`driftwatch -f FILE`, hub
// and UI in one process) on a pseudo-terminal, checks that the hub repairs,
// closes the terminal and checks that the process exits within two seconds
// and repairs nothing afterwards. Two ways a terminal goes:
//   - sighup: the terminal is the process's controlling terminal (as in a
//     tmux pane or an SSH session), so closing it sends SIGHUP;
//   - input-eio: the terminal is only the process's stdin/stdout, so no
//     signal comes and the end of the input (EIO) must end it.
//
// And SIGTERM ends it within two seconds while its only cluster is
// unreachable with calls hanging on it.
func TestTUIEndsWithItsTerminal(t *testing.T) {
	if path := os.Getenv(tuiChildEnv); path != "" {
		// Child mode: exactly what main does.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := run(ctx, []string{"-f", path, "--log-file", os.Getenv("DRIFTWATCH_TUI_LOG")}, os.Getenv, os.Stdout, os.Stderr)
		stop()
		os.Exit(exitCode(err, os.Stderr))
	}

	set := lctest.Start(t, localcluster.Options{Count: 1})
	admin := kubernetes.NewForConfigOrDie(set.Clusters[0].RESTConfig())
	for _, tc := range []struct {
		name        string
		controlling bool
		// sigterm: the terminal stays; the cluster is frozen (calls hang)
		// and the process gets SIGTERM.
		sigterm bool
	}{
		{"sighup", true, false},
		{"input-eio", false, false},
		{"sigterm-unreachable", true, true}, // last: it freezes the shared apiserver
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := "hup-" + tc.name
			path := e2eConfig(t, set, ns, "", "api", "worker")
			dir := t.TempDir()
			logPath := filepath.Join(dir, "tui.log")
			cmd := exec.Command(os.Args[0], "-test.run=^TestTUIEndsWithItsTerminal$", "-test.timeout=5m")
			cmd.Env = append(os.Environ(), tuiChildEnv+"="+path, "DRIFTWATCH_TUI_LOG="+logPath,
				"XDG_STATE_HOME="+dir, "TERM=xterm-256color", childRace(dir))
			ptmx, tty := openPTY(t)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
			if tc.controlling {
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			_ = tty.Close() // the child holds it now
			drained := make(chan struct{})
			go func() {
				defer close(drained)
				_, _ = io.Copy(io.Discard, ptmx) // a terminal nobody reads blocks its writer
			}()
			exited := make(chan struct{}) // closed once waitErr is set
			var waitErr error
			go func() {
				waitErr = cmd.Wait()
				close(exited)
			}()
			closed := false
			t.Cleanup(func() {
				if !closed {
					_ = ptmx.Close()
				}
				select {
				case <-exited:
				case <-time.After(10 * time.Second):
					_ = cmd.Process.Kill()
					<-exited
				}
				<-drained
				if t.Failed() {
					t.Logf("child log:\n%s", tail(logPath))
					if r := raceReports(dir); r != "" {
						t.Logf("child race reports:\n%s", r)
					}
				}
			})

			// The hub is live: it creates the ConfigMap, then repairs a
			// delete.
			ctx := t.Context()
			waitConfigMap(t, admin, ns, "web", exited)
			if err := admin.CoreV1().ConfigMaps(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitConfigMap(t, admin, ns, "web", exited)

			var end string
			if tc.sigterm {
				thaw, err := set.Clusters[0].FreezeAPIServer()
				if err != nil {
					t.Fatal(err)
				}
				defer thaw()
				waitLog(t, logPath, `"state":"unreachable"`, 30*time.Second)
				end = "SIGTERM"
			} else {
				end = "the terminal closed"
			}
			t0 := time.Now()
			if tc.sigterm {
				if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			} else {
				closed = true
				if err := ptmx.Close(); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-exited:
				t.Logf("exited %v after %s: %v", time.Since(t0).Round(time.Millisecond), end, waitErr)
				if waitErr != nil {
					t.Errorf("exit status: %v (want 0, as q)", waitErr)
				}
			case <-time.After(hangupExitBudget):
				t.Fatalf("still running %v after %s", hangupExitBudget, end)
			}
			if tc.sigterm {
				return // the apiserver is frozen: nothing to check on it
			}

			// Nothing repairs any more.
			if err := admin.CoreV1().ConfigMaps(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			// A hub still running recreates it from its watch within tens of
			// ms (repair p99 ~36 ms): 1.5 s leaves it ample time to.
			time.Sleep(1500 * time.Millisecond)
			if _, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("configmap after the hub exited: %v (want not found: something still repairs)", err)
			}
			log, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(log), "terminal gone") {
				t.Errorf("the log does not say the terminal went away:\n%s", tail(logPath))
			}
		})
	}
}

// openPTY opens a pseudo-terminal of 120x32. The pty library leaves the
// master in blocking mode, where Close neither interrupts a pending Read nor
// closes the descriptor until that Read returns (so the terminal would never
// hang up): the master returned here is a non-blocking duplicate the
// runtime's poller owns.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := pty.Setsize(tty, &pty.Winsize{Rows: 32, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Dup(int(m.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	_ = m.Close()
	syscall.CloseOnExec(fd) // or the child would hold its own terminal's master open
	if err := syscall.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), tty
}

// waitLog waits until the log file holds s.
func waitLog(t *testing.T, path, s string, timeout time.Duration) {
	t.Helper()
	testwait.For(t, timeout, fmt.Sprintf("the log to say %s", s), func() error {
		b, _ := os.ReadFile(path)
		return testwait.Check(strings.Contains(string(b), s), "the log:\n%s", tail(path))
	})
}

// waitConfigMap waits up to a minute for a ConfigMap to exist; the child
// must keep running meanwhile.
func waitConfigMap(t *testing.T, c kubernetes.Interface, ns, name string, exited <-chan struct{}) {
	t.Helper()
	testwait.For(t, time.Minute, fmt.Sprintf("configmap %s/%s", ns, name), func() error {
		_, err := c.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) && !errors.Is(err, context.DeadlineExceeded) {
			return testwait.Stop(err)
		}
		select {
		case <-exited:
			return testwait.Stop(errors.New("the TUI exited early"))
		default:
			return err
		}
	})
}

// demoChildEnv, set to a folder, makes TestDemoEndsWithItsTerminal run
// `driftwatch demo --dir FOLDER` in this process, on the pseudo-terminal.
const demoChildEnv = "DRIFTWATCH_DEMO_CHILD"

// TestDemoEndsWithItsTerminal: `driftwatch demo` on a pseudo-terminal that
// closes exits within demoExitBudget, and its local clusters (etcd,
// kube-apiserver, controller manager, scheduler, kwok) go with it.
func TestDemoEndsWithItsTerminal(t *testing.T) {
	if dir := os.Getenv(demoChildEnv); dir != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := run(ctx, []string{"demo", "--dir", dir}, os.Getenv, os.Stdout, os.Stderr)
		stop()
		os.Exit(exitCode(err, os.Stderr))
	}
	bins := lctest.BinDir(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDemoEndsWithItsTerminal$", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), demoChildEnv+"="+dir, app.EnvBinDir+"="+bins, "XDG_STATE_HOME="+dir, "TERM=xterm-256color", childRace(dir))
	ptmx, tty := openPTY(t)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = tty.Close()
	screen := &syncBuffer{}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(screen, ptmx)
	}()
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = ptmx.Close()
		}
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		<-drained
		if r := raceReports(dir); t.Failed() && r != "" {
			t.Logf("child race reports:\n%s", r)
		}
		for _, pid := range processesUnder(dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	testwait.For(t, 3*time.Minute, "the demo's UI to come up", func() error {
		if strings.Contains(screen.String(), "LIVE FEED") {
			return nil
		}
		select {
		case <-exited:
			return testwait.Stop(fmt.Errorf("the demo ended early: %v\n%s", waitErr, screen.String()))
		default:
			return fmt.Errorf("the screen:\n%s", screen.String())
		}
	})
	if n := len(processesUnder(dir)); n < 6 {
		t.Fatalf("%d control-plane processes under %s, want the demo's clusters (at least 6)", n, dir)
	}

	closed = true
	t0 := time.Now()
	if err := ptmx.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		t.Logf("the demo exited %v after its terminal closed: %v", time.Since(t0).Round(time.Millisecond), waitErr)
		if waitErr != nil {
			t.Errorf("exit status: %v (want 0, as q)", waitErr)
		}
	case <-time.After(demoExitBudget):
		t.Fatalf("the demo still runs %v after its terminal closed (at %s); its log ends:\n%s",
			demoExitBudget, t0.UTC().Format(time.TimeOnly+".000"), tail(filepath.Join(dir, "driftwatch.log")))
	}
	if left := processesUnder(dir); len(left) > 0 {
		t.Fatalf("processes of the demo's clusters outlived it: %v", left)
	}
}

// processesUnder returns the ids of the processes whose command line
// mentions dir (the demo's clusters keep their data and certificates
// there).
func processesUnder(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(b), dir) && !strings.Contains(string(b), "-test.run") {
			pids = append(pids, pid)
		}
	}
	return pids
}

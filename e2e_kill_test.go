package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/hub/intent"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// killChildEnv, set to a config path, makes TestKillDuringPruneThenRestart
// run `driftwatch serve -f PATH` in this process instead of the test: the
// parent re-executes the test binary so it can SIGKILL the hub.
const killChildEnv = "DRIFTWATCH_KILL_CHILD"

// killSeed fixes the kill delays so a failure can be reproduced.
const killSeed = 20260907

// TestKillDuringPruneThenRestart: a hub killed with SIGKILL right after a
// reload that removes one application of three, at several delays, resumes
// the prune when it restarts (from its decommission records, or from its
// applied records as "removed while down") and deletes nothing else; a
// start that would prune every object of the cluster is refused with exit 1
// and deletes nothing.
func TestKillDuringPruneThenRestart(t *testing.T) {
	if path := os.Getenv(killChildEnv); path != "" {
		// Child mode: the hub, exactly as `driftwatch serve` runs it.
		ctx, stop := signal.NotifyContext(t.Context(), syscall.SIGTERM)
		err := run(ctx, []string{"serve", "-f", path, "--listen", "127.0.0.1:0", "--probe-listen", "127.0.0.1:0"}, os.Getenv, os.Stdout, os.Stderr)
		stop()
		if code := exitCode(err, os.Stderr); code != 0 {
			os.Exit(code)
		}
		return
	}

	set := lctest.Start(t, localcluster.Options{Count: 1})
	c1 := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(c1.RESTConfig())
	dir := t.TempDir()
	state := filepath.Join(dir, "state.db")
	path := filepath.Join(dir, "driftwatch.yaml")
	const hubID, ns = "hub-k", "shop"
	kept := append(appIDs(c1.Name, ns, "a"), appIDs(c1.Name, ns, "b")...)
	pruned := appIDs(c1.Name, ns, "c")

	rng := rand.New(rand.NewPCG(killSeed, 0))
	delays := []time.Duration{0, 50 * time.Millisecond}
	for range 3 {
		delays = append(delays, time.Duration(1+rng.IntN(49))*time.Millisecond)
	}
	for i, delay := range delays {
		// 1. A hub applying a, b and c.
		safetyConfig(t, path, hubID, state, false, set, ns, "a", "b", "c")
		p1 := startKillChild(t, dir, fmt.Sprintf("run%d-first", i), path)
		waitObjects(t, admin, append(kept, pruned...), 60*time.Second, p1)
		uids := objectUIDs(t, admin, kept)

		// 2. c leaves the config; SIGHUP; SIGKILL after delay.
		safetyConfig(t, path, hubID, state, false, set, ns, "a", "b")
		if err := p1.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatalf("run %d: SIGHUP: %v", i, err)
		}
		time.Sleep(delay)
		if err := p1.cmd.Process.Kill(); err != nil {
			t.Fatalf("run %d: SIGKILL: %v", i, err)
		}
		err := p1.wait(t, 10*time.Second)
		if ws, ok := exitSignal(err); !ok || ws != syscall.SIGKILL {
			t.Fatalf("run %d: the first hub ended with %v before the SIGKILL", i, err)
		}
		left := 0
		for _, id := range pruned {
			if exists(t, admin, id) {
				left++
			}
		}
		in := peekState(t, state)
		decoms := 0
		for _, d := range in.Decommissions {
			if d.Ref.Application == "c" {
				decoms++
			}
		}
		t.Logf("run %d: SIGKILL %v after SIGHUP: reload logged %v, %d decommission record(s) of c, %d of c's objects left",
			i, delay, strings.Contains(p1.stderrText(), "config reloaded"), decoms, left)

		// 3. Restart: c's objects go, a's and b's stay untouched.
		p2 := startKillChild(t, dir, fmt.Sprintf("run%d-restart", i), path)
		for _, id := range pruned {
			waitGoneWhile(t, admin, id, 30*time.Second, p2)
		}
		// The decommissions the first hub left are finished (their
		// records dropped) once the restarted hub read the objects gone.
		waitLogged(t, p2, "decommission finished", decoms, 30*time.Second)
		// No event marks "no more deletes": a late extra delete would show
		// within 500 ms, many times the hub's watch-to-write p99 (~36 ms).
		time.Sleep(500 * time.Millisecond)
		checkUIDs(t, admin, uids, fmt.Sprintf("run %d: after the restart", i))
		if err := p2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatalf("run %d: SIGTERM: %v", i, err)
		}
		if err := p2.wait(t, 30*time.Second); err != nil {
			t.Fatalf("run %d: the restarted hub did not exit 0 on SIGTERM: %v", i, err)
		}
		if in := peekState(t, state); len(in.Decommissions) != 0 || len(in.Applied) != len(kept) {
			t.Fatalf("run %d: state after the prune: %d decommission record(s), %d applied, want 0 and %d",
				i, len(in.Decommissions), len(in.Applied), len(kept))
		}
	}

	// 4. Emptied while down: the start is refused, nothing is deleted.
	uids := objectUIDs(t, admin, kept)
	safetyConfig(t, path, hubID, state, false, set, ns)
	p3 := startKillChild(t, dir, "refused", path)
	err := p3.wait(t, 30*time.Second)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("start with applications: [] ended with %v, want exit status 1", err)
	}
	msg := p3.stderrText()
	for _, want := range []string{"refusing to prune 6 objects", "(all of them)", "--allow-prune"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("refused start: stderr does not mention %q:\n%s", want, msg)
		}
	}
	// The hub has exited; 500 ms lets a delete it sent just before exiting
	// reach the apiserver before the UIDs are read.
	time.Sleep(500 * time.Millisecond)
	checkUIDs(t, admin, uids, "after the refused start")
	if in := peekState(t, state); len(in.Decommissions) != 0 || len(in.Applied) != len(kept) {
		t.Fatalf("refused start changed the state: %d decommission record(s), %d applied, want 0 and %d",
			len(in.Decommissions), len(in.Applied), len(kept))
	}
}

// killChild is a hub running in a child process.
type killChild struct {
	name           string
	cmd            *exec.Cmd
	stdout, stderr string // file paths
	done           chan struct{}
	err            error // Wait's, once done is closed
}

// startKillChild starts `driftwatch serve -f path` in a re-executed test
// binary, its output in files under dir. It is killed and waited for when
// the test ends; a failed test logs the tails of its output.
func startKillChild(t *testing.T, dir, name, path string) *killChild {
	t.Helper()
	p := &killChild{
		name:   name,
		stdout: filepath.Join(dir, name+".stdout"),
		stderr: filepath.Join(dir, name+".stderr"),
		done:   make(chan struct{}),
	}
	out, err := os.Create(p.stdout)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	errOut, err := os.Create(p.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer errOut.Close()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestKillDuringPruneThenRestart$", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), killChildEnv+"="+path, "XDG_STATE_HOME="+dir) // serve's default token file goes there
	cmd.Stdout, cmd.Stderr = out, errOut
	cmd.Cancel = func() error { return cmd.Process.Kill() }
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p.cmd = cmd
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s (%v): stdout:\n%s\nstderr:\n%s", name, p.err, tail(p.stdout), tail(p.stderr))
		}
	})
	return p
}

// wait waits for the child to exit and returns Wait's error; it fails the
// test if the child is still running after timeout.
func (p *killChild) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		t.Fatalf("%s still running after %v", p.name, timeout)
		return nil
	}
}

// exited reports whether the child has exited.
func (p *killChild) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *killChild) stderrText() string {
	b, _ := os.ReadFile(p.stderr)
	return string(b)
}

// tail returns the last lines of a file.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

// exitSignal returns the signal that ended a process, from Wait's error.
func exitSignal(err error) (syscall.Signal, bool) {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 0, false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, false
	}
	return ws.Signal(), true
}

// waitObjects waits until every object exists; the child must keep running.
func waitObjects(t *testing.T, c kubernetes.Interface, ids []hub.NodeID, timeout time.Duration, p *killChild) {
	t.Helper()
	testwait.For(t, timeout, fmt.Sprintf("%d objects to exist", len(ids)), func() error {
		for _, id := range ids {
			if !exists(t, c, id) {
				return p.stopIfExited(fmt.Errorf("%s does not exist", id))
			}
		}
		return nil
	})
}

// stopIfExited returns err, made final by testwait.Stop when the child
// has exited: a wait that needs it running can end at once.
func (p *killChild) stopIfExited(err error) error {
	if p.exited() {
		return testwait.Stop(fmt.Errorf("%s exited (%v): %w", p.name, p.err, err))
	}
	return err
}

// waitGoneWhile is waitGone while the child keeps running.
// waitLogged waits until p's stderr holds n lines with msg.
func waitLogged(t *testing.T, p *killChild, msg string, n int, timeout time.Duration) {
	t.Helper()
	testwait.For(t, timeout, fmt.Sprintf("%s to log %q %d times", p.name, msg, n), func() error {
		got := strings.Count(p.stderrText(), msg)
		if got >= n {
			return nil
		}
		return p.stopIfExited(fmt.Errorf("logged %d times", got))
	})
}

func waitGoneWhile(t *testing.T, c kubernetes.Interface, id hub.NodeID, timeout time.Duration, p *killChild) {
	t.Helper()
	testwait.For(t, timeout, fmt.Sprintf("%s to be gone after the restart (the prune resumed)", id), func() error {
		if !exists(t, c, id) {
			return nil
		}
		return p.stopIfExited(fmt.Errorf("%s still exists", id))
	})
}

// objectUID returns the UID of a NodeID's object, "" when it does not exist.
func objectUID(t *testing.T, c kubernetes.Interface, id hub.NodeID) types.UID {
	t.Helper()
	ctx, ns, name := t.Context(), id.Namespace(), id.Name()
	var meta metav1.Object
	var err error
	switch id.Kind {
	case hub.KindDeployment:
		meta, err = c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	case hub.KindService:
		meta, err = c.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	case hub.KindConfigMap:
		meta, err = c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	default:
		t.Fatalf("%s: unknown kind", id)
	}
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return meta.GetUID()
}

func objectUIDs(t *testing.T, c kubernetes.Interface, ids []hub.NodeID) map[hub.NodeID]types.UID {
	t.Helper()
	uids := make(map[hub.NodeID]types.UID, len(ids))
	for _, id := range ids {
		uid := objectUID(t, c, id)
		if uid == "" {
			t.Fatalf("%s does not exist", id)
		}
		uids[id] = uid
	}
	return uids
}

// checkUIDs fails unless every object still exists with the same UID
// (neither deleted nor deleted and recreated).
func checkUIDs(t *testing.T, c kubernetes.Interface, uids map[hub.NodeID]types.UID, when string) {
	t.Helper()
	for id, want := range uids {
		switch got := objectUID(t, c, id); got {
		case want:
		case "":
			t.Fatalf("%s: %s was deleted", when, id)
		default:
			t.Fatalf("%s: %s was recreated (uid %s, was %s)", when, id, got, want)
		}
	}
}

// peekState reads the state file while no hub runs (a SIGKILL must leave
// it readable).
func peekState(t *testing.T, path string) hub.Intent {
	t.Helper()
	s, err := intent.Open(path, intent.Options{})
	if err != nil {
		t.Fatalf("open the state file after the hub stopped: %v", err)
	}
	in, err := s.Load()
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("read the state file: %v", err)
	}
	return in
}

package app

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/e2etest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// logBuffer is a log sink goroutines may write while a test reads it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// panickingIntent is a shared intent store whose first read panics (a bug
// reading what another replica wrote); it counts the reads.
type panickingIntent struct {
	recordingStore
	loads atomic.Int32
}

func (s *panickingIntent) Load() (hub.Intent, error) {
	if s.loads.Add(1) == 1 {
		panic("read the shared intent: boom (test)")
	}
	return hub.Intent{}, nil
}

// TestReplicasTickSurvivesPanic: a panic in the replicas' periodic work
// (here the shared intent's refresh) is recovered and logged with its
// stack; the intent is read again a lease duration later, and again after
// that, and the loop ends without a panic.
func TestReplicasTickSurvivesPanic(t *testing.T) {
	store := &panickingIntent{}
	logs := &logBuffer{}
	a := &App{log: slog.New(slog.NewTextHandler(logs, nil)), hub: hub.New(hub.Options{ID: "h", Intent: store})}
	synctest.Test(t, func(t *testing.T) {
		const lease = 10 * time.Second
		r := &replicas{a: a, lease: lease, wanted: map[string]clusters.ClusterConfig{}, owned: map[string]bool{}, pending: map[string]string{}}
		ctx, cancel := context.WithCancel(t.Context())
		var wg conc.WaitGroup
		wg.Go(func() { r.run(ctx) })
		time.Sleep(3*lease + lease/10) // reads at 1, 2 and 3 lease durations
		synctest.Wait()
		if n := store.loads.Load(); n != 3 {
			t.Errorf("%d reads of the shared intent, want 3 (the first panicked)", n)
		}
		cancel()
		wg.Wait() // re-panics if the loop died of the panic
	})
	if out := logs.String(); !strings.Contains(out, "panic recovered") || !strings.Contains(out, "rescue_test.go") {
		t.Errorf("the panic is not logged with its stack:\n%s", out)
	}
}

// panickingGetenv is a config.LoadOptions.Getenv that expands $KDIR to dir,
// and panics instead once armed (a bug in a reload's parse), once.
type panickingGetenv struct {
	dir   string
	armed atomic.Bool
}

func (g *panickingGetenv) getenv(name string) string {
	if name != "KDIR" {
		return ""
	}
	if g.armed.Swap(false) {
		panic("expand $KDIR: boom (test)")
	}
	return g.dir
}

// panicConfig writes a config whose cluster's kubeconfig path names $KDIR
// (expanded by panickingGetenv at every load), with extra appended, and
// returns its path.
func panicConfig(t *testing.T, dir, extra string) string {
	t.Helper()
	unreachableKubeconfig(t, dir)
	path := filepath.Join(dir, "driftwatch.yaml")
	body := "hub:\n  id: h\nclusters:\n  - id: c1\n    kubeconfig: ${KDIR}/kubeconfig\n" + extra
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGitPollerSurvivesPanic: a panic while a Git source's new commit is
// reloaded (here once the commit was checked out for the load) is
// recovered and logged with its stack; the poller polls again, offers the
// same commit again and puts it in force, and the app stops without a
// panic.
func TestGitPollerSurvivesPanic(t *testing.T) {
	repo := e2etest.NewGitRepo(t)
	c1 := repo.Commit("first", map[string]string{"deploy/web.yaml": configMapYAML("web", "1")})
	dir := t.TempDir()
	env := &panickingGetenv{dir: dir}
	path := panicConfig(t, dir, "sources:\n  - id: web\n    git: {url: '"+repo.FileURL()+"', ref: main, interval: 1h}\n"+
		"    path: deploy\n    clusters: [c1]\n    namespace: default\n")
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(io.MultiWriter(tWriter{t}, logs), &slog.HandlerOptions{Level: slog.LevelInfo}))
	git := NewGitSources(log, func(string) string { return "" })
	var armed atomic.Bool
	a := startApp(t, path, func(o *Options) {
		o.Logger, o.Git, o.StateFile = log, git, filepath.Join(dir, "state.db")
		o.LoadOptions = config.LoadOptions{IsolateSources: true, Getenv: env.getenv,
			GitCheckout: func(h config.Hub, id string, spec config.GitSource) (config.GitCheckout, error) {
				co, err := git.Checkout(h, id, spec)
				if armed.Swap(false) {
					panic("render " + co.Commit + ": boom (test)")
				}
				return co, err
			}}
	})
	inForce := func(commit string) func() error {
		return func() error {
			r, _ := revisionOf(a.hub.Snapshot(), "web")
			return testwait.Check(r.Commit == commit, "commit in force %q, want %q", r.Commit, commit)
		}
	}
	testwait.For(t, 30*time.Second, "the first commit in force", inForce(c1))

	armed.Store(true)
	c2 := repo.Commit("second", map[string]string{"deploy/web.yaml": configMapYAML("web", "2")})
	git.Trigger("web")
	testwait.For(t, 30*time.Second, "the reload's panic logged", func() error {
		return testwait.Check(strings.Contains(logs.String(), "panic recovered"), "no panic logged")
	})
	if out := logs.String(); !strings.Contains(out, `in="git source web's poll"`) || !strings.Contains(out, "rescue_test.go") {
		t.Errorf("the panic is not logged with the source and its stack:\n%s", out)
	}
	git.Trigger("web")
	testwait.For(t, 30*time.Second, "the second commit in force after the panic", inForce(c2))
	a.stop() // re-panics if the poller died of the panic
}

// TestSIGHUPReloadSurvivesPanic: a panic in a reload on SIGHUP is
// recovered and logged with its stack, the loop stays subscribed, and the
// next SIGHUP reloads the config; the loop then ends without a panic.
func TestSIGHUPReloadSurvivesPanic(t *testing.T) {
	// A SIGHUP nobody is subscribed to ends the process: this one keeps
	// the test binary alive whatever the loop does.
	guard := make(chan os.Signal, 8)
	signal.Notify(guard, syscall.SIGHUP)
	defer signal.Stop(guard)

	dir := t.TempDir()
	env := &panickingGetenv{dir: dir}
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(io.MultiWriter(tWriter{t}, logs), &slog.HandlerOptions{Level: slog.LevelInfo}))
	a := startApp(t, panicConfig(t, dir, ""), func(o *Options) {
		o.Logger = log
		o.LoadOptions = config.LoadOptions{IsolateSources: true, Getenv: env.getenv}
	})
	ctx, cancel := context.WithCancel(t.Context())
	var wg conc.WaitGroup
	wg.Go(a.ReloadOnSIGHUP(ctx))
	hangup := func(what string, done func() bool) {
		t.Helper()
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		testwait.For(t, 30*time.Second, what, func() error { return testwait.Check(done(), "not yet") })
	}

	env.armed.Store(true)
	hangup("the first reload's panic", func() bool { return !env.armed.Load() })
	hangup("the second SIGHUP's reload", func() bool { return strings.Contains(logs.String(), "config reloaded") })
	if out := logs.String(); !strings.Contains(out, `in="the config reload on SIGHUP"`) || !strings.Contains(out, "rescue_test.go") {
		t.Errorf("the panic is not logged with its stack:\n%s", out)
	}
	cancel()
	wg.Wait() // re-panics if the loop died of the panic
	a.stop()
}

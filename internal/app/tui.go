package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"charm.land/bubbles/v2/key"
	"github.com/sourcegraph/conc"
	"golang.org/x/term"
	"k8s.io/klog/v2"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/config/manifest"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/api"
	"github.com/driftwatch/driftwatch/internal/driftgen"
	"github.com/driftwatch/driftwatch/internal/safefile"
	"github.com/driftwatch/driftwatch/internal/startheap"
	"github.com/driftwatch/driftwatch/tui"
)

// DefaultLogFile is where the TUI modes log: $XDG_STATE_HOME/driftwatch (or
// ~/.local/state/driftwatch), else the temp folder.
func DefaultLogFile(getenv func(string) string) string {
	dir := getenv("XDG_STATE_HOME")
	if dir == "" {
		if home := getenv("HOME"); home != "" {
			dir = filepath.Join(home, ".local", "state")
		} else {
			dir = os.TempDir()
		}
	}
	return filepath.Join(dir, "driftwatch", "driftwatch.log")
}

// TUIOptions are the settings of RunTUI (the flags of driftwatch -f FILE).
type TUIOptions struct {
	// File is the config file; LogFile the log file (DefaultLogFile).
	File, LogFile string
	// ReadOnly disables every action in the UI.
	ReadOnly bool
	// AllowPrune confirms an initial desired state the prune guard would
	// refuse.
	AllowPrune bool
	// WriteConfig lets the UI write a proposed ignore rule into File (key
	// W in the node detail) and reload.
	WriteConfig bool
}

// Log rotation of the TUI modes: the file is rotated at logMaxBytes, and
// logKeep rotated files are kept.
const (
	logMaxBytes = 10 << 20
	logKeep     = 3
)

// openLog opens the log file for a TUI session (nothing may write to the
// terminal while the TUI runs) and routes klog into it. The file is private
// (0600, in a private folder: see safefile.MkdirPrivate), never followed
// through a symbolic link, and
// rotated by size.
func openLog(path string) (*slog.Logger, io.Closer, error) {
	w, err := safefile.NewRotatingWriter(path, logMaxBytes, logKeep)
	if err != nil {
		return nil, nil, fmt.Errorf("log file: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(w, logOptions(nil)))
	klog.SetSlogLogger(log.With("component", "client-go"))
	return log, w, nil
}

// RunTUI is the default command, `driftwatch -f FILE`: the hub and the
// terminal UI in one process. The hub lives exactly as long as the UI: q,
// SIGINT, SIGTERM and a terminal hangup (SIGHUP, the end of the terminal's
// input, a failed write to it) stop both, within a bounded time, so no
// invisible hub is left writing to clusters. `:reload` in the UI reloads the
// config (SIGHUP reloads only in `serve`, the daemon convention).
func RunTUI(ctx context.Context, o TUIOptions, env Env) error {
	getenv, stderr := env.Getenv, env.Stderr
	// The heap the start grows into (the config's load, the first frame,
	// the clusters' first lists) is backed by huge pages while it lasts,
	// where the kernel can do that without a stall (see startheap).
	heap, noHuge := startHeap(getenv)
	defer heap.End()
	// A hangup before the UI is up (while the state file opens) also ends
	// the program; tui.Run watches for it from then on.
	ctx, stopHangup := tui.NotifyHangup(ctx)
	defer stopHangup()
	// The log file is opened once a terminal is found; the Git sources
	// log to the app's logger from New on.
	git := NewGitSources(nil, getenv)
	loadOpts := git.LoadOptions(config.LoadOptions{Getenv: getenv, IsolateSources: true, RenderSandbox: manifest.Self()})
	cfg, err := config.Load(o.File, loadOpts)
	if err != nil {
		_ = git.Close()
		fmt.Fprintln(stderr, err)
		return &ExitError{Code: 1}
	}
	if !hasTerminal(env) {
		return noTerminal("", "for a hub without a UI, run driftwatch serve -f "+o.File+" (and driftwatch attach from a terminal)")
	}
	log, closer, err := openLog(o.LogFile)
	if err != nil {
		return errors.Join(err, git.Close())
	}
	defer closer.Close()
	if heap != nil {
		log.Info("start-up heap in huge pages", "bytes", startheap.Size, "for", startHeapWindow)
	} else {
		log.Info("start-up heap in base pages", "why", noHuge)
	}
	stateFile, err := StateFile(cfg, getenv)
	if err != nil {
		return StartError("", err)
	}
	// The clusters' watches start once the UI has drawn the hub's state.
	firstFrame := make(chan struct{})
	a, err := New(cfg, Options{Logger: log, LoadOptions: loadOpts, Git: git,
		StateFile: stateFile, AllowPrune: o.AllowPrune, WatchAfter: firstFrame})
	if err != nil {
		return StartError("", err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	// The hub's first publish is a snapshot the UI takes as it subscribes,
	// not a pass that only refreshes the gauges because nobody subscribed
	// yet: a subscription held from before the hub starts until the UI's
	// first frame.
	_, release := a.hub.Subscribe()
	defer release()
	var wg conc.WaitGroup
	var appErr error
	wg.Go(func() { appErr = a.Run(runCtx) })
	if heap != nil {
		wg.Go(func() { endStartHeap(runCtx, log, heap, startHeapWindow) })
	}
	uiOpts := tui.Options{ReadOnly: o.ReadOnly, NoColor: getenv("NO_COLOR") != "", Reload: a.reloadFromUI, Alerts: a.notificationAlerts,
		FirstFrame: func() { release(); close(firstFrame) }, Logger: log}
	if o.WriteConfig {
		uiOpts.WriteRule = a.WriteIgnoreRule
	}
	uiErr := tui.Run(runCtx, tui.HubSource(a.hub), uiOpts)
	stop()
	uiErr = uiEnded(log, uiErr)
	wg.Wait()
	closeErr := a.Close()
	log.Info("stopped")
	fmt.Fprintf(stderr, "driftwatch: logs in %s\n", o.LogFile)
	return errors.Join(uiErr, appErr, closeErr)
}

// startHeapWindow is how long the start-up heap stays advised for huge
// pages: the start of driftwatch -f over thousands of objects (its first
// frame, the clusters' first lists) takes a second or two.
const startHeapWindow = 10 * time.Second

// startHeap asks for huge pages on the heap the start grows into (see
// startheap.Advise), unless the environment turns that off
// (startheap.Off: DRIFTWATCH_HUGEPAGES=off, GODEBUG=disablethp=1); it
// returns nil and why not otherwise.
func startHeap(getenv func(string) string) (*startheap.Advice, string) {
	if why := startheap.Off(getenv); why != "" {
		return nil, why
	}
	return startheap.Advise()
}

// endStartHeap withdraws the start-up heap's advice (a *startheap.Advice)
// after window, or when ctx ends.
func endStartHeap(ctx context.Context, log *slog.Logger, heap interface{ End() error }, window time.Duration) {
	t := time.NewTimer(window)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	if err := heap.End(); err != nil {
		log.Warn("start-up heap: huge pages not withdrawn", "err", err)
		return
	}
	log.Info("start-up heap: huge pages withdrawn")
}

// hasTerminal reports whether the terminal UI can run (see Env.Terminal).
func hasTerminal(env Env) bool {
	if env.Terminal != nil {
		return env.Terminal()
	}
	return terminals(os.Stdin, os.Stdout)
}

// terminals reports whether in and out are both terminals.
func terminals(in, out *os.File) bool {
	return term.IsTerminal(int(in.Fd())) && term.IsTerminal(int(out.Fd()))
}

// noTerminal is the usage error of a mode that runs the terminal UI
// without a terminal, where bubbletea would fail with an obscure error
// about its input reader: prefix names the command ("demo: "), instead
// says what to run.
func noTerminal(prefix, instead string) error {
	return UsageError("%sthe terminal UI needs a terminal, but standard input and output are not both one (a pipe, a file, a service or CI job?): %s", prefix, instead)
}

// uiEnded logs why the terminal UI ended when the terminal went away, and
// returns the error the command ends with: a hangup ends the program as q
// does.
func uiEnded(log *slog.Logger, err error) error {
	if errors.Is(err, tui.ErrHangup) {
		log.Warn("terminal gone: stopping", "cause", err.Error())
		return nil
	}
	if err == nil {
		log.Info("terminal UI ended: stopping")
	}
	return err
}

// reloadFromUI is the UI's :reload: it reloads the config file, never
// allowing a guarded prune, and logs a rejection with every error.
func (a *App) reloadFromUI() (string, error) {
	if err := a.Reload(false); err != nil {
		a.log.Error("config reload rejected", "err", err)
		return "", fmt.Errorf("%w (details in the log)", err)
	}
	return "config reloaded from " + a.path, nil
}

// Attach is `driftwatch attach URL`: the terminal UI over a headless
// hub's API, with the client's options (see ClientOptions). Attached to a
// replica of a hub that runs as several (or a Service in front of them),
// it shows every replica's clusters with their owner and sends each
// action to the owner (api.ReplicaClient). The first contact (the
// snapshot, the list of replicas) waits at most opts.ResponseTimeout
// (default 30s) for each answer: a hub that never answers ends attach with
// an error naming its address.
func Attach(ctx context.Context, url string, readOnly bool, opts api.ClientOptions, env Env) error {
	// Nothing may write to the terminal while the UI runs: what the
	// client and the UI log (a panic recovered in a stream or an action,
	// with its stack) is kept and written to standard error once the UI
	// has ended.
	var logs attachLog
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	defer logs.writeTo(env.Stderr)
	c, err := api.NewClientWithOptions(url, opts)
	if err != nil {
		return UsageError("attach: %v", err)
	}
	if !hasTerminal(env) {
		return noTerminal("attach: ", "without it, the hub's state is at GET "+url+"/api/v1/snapshot")
	}
	// noAnswer is the error of a first request (err, under fctx) the hub
	// did not answer in time; nil for any other outcome.
	noAnswer := func(fctx context.Context, err error) error {
		if err == nil || ctx.Err() != nil || !errors.Is(fctx.Err(), context.DeadlineExceeded) {
			return nil
		}
		return fmt.Errorf("attach: the hub at %s did not answer within %s (is it running, is this its API address, is a proxy in the way?): %w", url, c.ResponseTimeout(), err)
	}
	fctx, cancel := context.WithTimeout(ctx, c.ResponseTimeout())
	first, err := c.Snapshot(fctx)
	cancel()
	if e := noAnswer(fctx, err); e != nil {
		return e
	}
	if err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	reload := func() (string, error) {
		if err := c.Reload(false); err != nil {
			return "", err
		}
		return "the hub reloaded its config", nil
	}
	// A hub that runs as several replicas: one view of all of them, each
	// action sent to the replica that manages its cluster. A hub of one
	// process (or one older than GET /api/v1/replicas) is attached as is.
	// A single hub's snapshot, fetched above, is the first frame's.
	var src tui.Source = c
	initial := first
	rctx, rcancel := context.WithTimeout(ctx, c.ResponseTimeout())
	l, err := c.Replicas(rctx)
	rcancel()
	if e := noAnswer(rctx, err); e != nil {
		return e
	}
	if err == nil && len(l.Replicas) > 0 {
		src, initial = api.NewReplicaClient(c, 0), nil
	}
	readOnly, readOnlyMsg := attachReadOnly(ctx, c, readOnly)
	err = tui.Run(ctx, src, tui.Options{ReadOnly: readOnly, ReadOnlyMessage: readOnlyMsg, NoColor: env.Getenv("NO_COLOR") != "", Reload: reload, Initial: initial, Logger: opts.Logger})
	if errors.Is(err, tui.ErrHangup) {
		return nil // the terminal went away: end as q does
	}
	return err
}

// The node view of attach reads the desired object it shows through the
// client (the API's snapshots do not carry them).
var (
	_ tui.NodeReader = (*api.Client)(nil)
	_ tui.NodeReader = (*api.ReplicaClient)(nil)
)

// attachReadOnly reports whether attach's UI is read-only, and what it
// says when an action is pressed: a viewer's token (or a read-only hub,
// which answers viewer) may take no action, so the UI leaves them out
// rather than offer what the hub refuses. A hub older than GET
// /api/v1/whoami, or one that does not answer it, is attached as asked.
func attachReadOnly(ctx context.Context, c *api.Client, readOnly bool) (bool, string) {
	if readOnly {
		return true, ""
	}
	wctx, cancel := context.WithTimeout(ctx, c.ResponseTimeout())
	who, err := c.Whoami(wctx)
	cancel()
	if err != nil || who.Role != "viewer" {
		return false, ""
	}
	if who.Name == "" {
		return true, "read-only: this token is a viewer's (actions need an operator token)"
	}
	return true, fmt.Sprintf("read-only: token %q is a viewer's (actions need an operator token)", who.Name)
}

// attachLogMax bounds what attach keeps of its log while the UI runs (a
// panic's stack is a few KiB; a stream that panics on every reconnect
// would grow it without end).
const attachLogMax = 1 << 20

// attachLog keeps what attach logs while its UI runs, up to attachLogMax
// bytes (the first ones: the first panic says the most), for writeTo.
type attachLog struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	dropped int
}

// Write keeps p, or counts it once a record did not fit.
func (l *attachLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dropped > 0 || l.buf.Len()+len(p) > attachLogMax {
		l.dropped++
		return len(p), nil
	}
	return l.buf.Write(p)
}

// writeTo writes what was kept to w (nil: nowhere), and how many records
// did not fit.
func (l *attachLog) writeTo(w io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w == nil || l.buf.Len() == 0 {
		return
	}
	_, _ = l.buf.WriteTo(w)
	if l.dropped > 0 {
		fmt.Fprintf(w, "(%d more log records left out)\n", l.dropped)
	}
}

// runDemoTUI runs the terminal UI for the demo until the user quits; `g`
// toggles the drift generator.
func runDemoTUI(ctx context.Context, h *hub.Hub, gen *driftgen.Generator, readOnly bool, status string, getenv func(string) string) error {
	toggle := tui.ExtraKey{
		Binding: key.NewBinding(key.WithKeys("g"), key.WithHelp("g", "drift generator on/off")),
		Run: func() string {
			if gen.Toggle() {
				return "drift generator on"
			}
			return "drift generator off"
		},
	}
	return tui.Run(ctx, tui.HubSource(h), tui.Options{ReadOnly: readOnly, NoColor: getenv("NO_COLOR") != "", Extra: []tui.ExtraKey{toggle}, Status: status})
}

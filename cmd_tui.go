package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"charm.land/bubbles/v2/key"
	"github.com/sourcegraph/conc"
	"k8s.io/klog/v2"

	"github.com/driftwatch/driftwatch/internal/driftgen"
	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/hub/api"
	"github.com/driftwatch/driftwatch/internal/safefile"
	"github.com/driftwatch/driftwatch/tui"
)

// defaultLogFile is where the TUI modes log: $XDG_STATE_HOME/driftwatch (or
// ~/.local/state/driftwatch), else the temp folder.
func defaultLogFile(getenv func(string) string) string {
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

// Log rotation of the TUI modes: the file is rotated at logMaxBytes, and
// logKeep rotated files are kept.
const (
	logMaxBytes = 10 << 20
	logKeep     = 3
)

// openLog opens the log file for a TUI session (nothing may write to the
// terminal while the TUI runs) and routes klog into it. The file is private
// (0600 in a 0700 folder), never followed through a symbolic link, and
// rotated by size.
func openLog(path string) (*slog.Logger, io.Closer, error) {
	w, err := safefile.NewRotatingWriter(path, logMaxBytes, logKeep)
	if err != nil {
		return nil, nil, fmt.Errorf("log file: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(w, nil))
	klog.SetSlogLogger(log.With("component", "client-go"))
	return log, w, nil
}

// runTUI is the default command, `driftwatch -f FILE`: the hub and the
// terminal UI in one process. The hub lives exactly as long as the UI: q,
// SIGINT, SIGTERM and a terminal hangup (SIGHUP, the end of the terminal's
// input, a failed write to it) stop both, within a bounded time, so no
// invisible hub is left writing to clusters. `:reload` in the UI reloads the
// config (SIGHUP reloads only in `serve`, the daemon convention).
func runTUI(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	// A hangup before the UI is up (while the state file opens) also ends
	// the program; tui.Run watches for it from then on.
	ctx, stopHangup := tui.NotifyHangup(ctx)
	defer stopHangup()
	fs := flag.NewFlagSet("driftwatch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "config file (required)")
	readOnly := fs.Bool("readonly", false, "disable every action in the UI")
	allowPrune := fs.Bool("allow-prune", false, allowPruneUsage)
	logFile := fs.String("log-file", defaultLogFile(getenv), "log file (nothing is written to the terminal while the UI runs)")
	if err := fs.Parse(args); err != nil {
		return usageError("%v", err)
	}
	if *file == "" {
		return usageError("-f FILE is required (see driftwatch help)")
	}
	if fs.NArg() > 0 {
		return usageError("unexpected arguments %v", fs.Args())
	}
	cfg, err := config.Load(*file, config.LoadOptions{Getenv: getenv})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return &exitError{code: 1}
	}
	log, closer, err := openLog(*logFile)
	if err != nil {
		return err
	}
	defer closer.Close()
	stateFile, err := stateFileFor(cfg, getenv)
	if err != nil {
		return startError("", err)
	}
	a, err := newApp(cfg, appOptions{log: log, loadOpts: config.LoadOptions{Getenv: getenv},
		stateFile: stateFile, allowPrune: *allowPrune})
	if err != nil {
		return startError("", err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg conc.WaitGroup
	var appErr error
	wg.Go(func() { appErr = a.Run(runCtx) })
	uiErr := tui.Run(runCtx, tui.HubSource(a.hub), tui.Options{ReadOnly: *readOnly, NoColor: getenv("NO_COLOR") != "",
		Reload: a.reloadFromUI})
	stop()
	uiErr = uiEnded(log, uiErr)
	wg.Wait()
	closeErr := a.Close()
	log.Info("stopped")
	fmt.Fprintf(stderr, "driftwatch: logs in %s\n", *logFile)
	return errors.Join(uiErr, appErr, closeErr)
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
func (a *app) reloadFromUI() (string, error) {
	if err := a.Reload(false); err != nil {
		a.log.Error("config reload rejected", "err", err)
		return "", fmt.Errorf("%w (details in the log)", err)
	}
	return "config reloaded from " + a.path, nil
}

// runAttach is `driftwatch attach URL`: the terminal UI over a headless
// hub's API.
func runAttach(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("attach", flag.ContinueOnError)
	fs.SetOutput(stderr)
	readOnly := fs.Bool("readonly", false, "disable every action in the UI")
	cf := addClientFlags(fs)
	if err := fs.Parse(args); err != nil {
		return usageError("attach: %v", err)
	}
	if fs.NArg() != 1 {
		return usageError("attach: want one hub address, e.g. driftwatch attach http://127.0.0.1:7070")
	}
	opts, err := cf.options(getenv)
	if err != nil {
		return usageError("attach: %v", err)
	}
	c, err := api.NewClientWithOptions(fs.Arg(0), opts)
	if err != nil {
		return usageError("attach: %v", err)
	}
	if _, err := c.Snapshot(ctx); err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	reload := func() (string, error) {
		if err := c.Reload(false); err != nil {
			return "", err
		}
		return "the hub reloaded its config", nil
	}
	err = tui.Run(ctx, c, tui.Options{ReadOnly: *readOnly, NoColor: getenv("NO_COLOR") != "", Reload: reload})
	if errors.Is(err, tui.ErrHangup) {
		return nil // the terminal went away: end as q does
	}
	return err
}

// runDemoTUI runs the terminal UI for the demo until the user quits; `g`
// toggles the drift generator.
func runDemoTUI(ctx context.Context, h *hub.Hub, gen *driftgen.Generator, readOnly bool, getenv func(string) string) error {
	toggle := tui.ExtraKey{
		Binding: key.NewBinding(key.WithKeys("g"), key.WithHelp("g", "drift generator on/off")),
		Run: func() string {
			if gen.Toggle() {
				return "drift generator on"
			}
			return "drift generator off"
		},
	}
	return tui.Run(ctx, tui.HubSource(h), tui.Options{ReadOnly: readOnly, NoColor: getenv("NO_COLOR") != "", Extra: []tui.ExtraKey{toggle}})
}

package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	tea "charm.land/bubbletea/v2"
	"golang.org/x/term"
)

// ErrHangup is what Run returns (wrapped, with the cause) when the terminal
// went away: SIGHUP, the end of its input (EOF, EIO) or a failed write to
// it. Callers end the program as if the user had quit: nobody is watching
// any more.
var ErrHangup = errors.New("the terminal hung up")

// hangupFile is one side of the terminal. A read or write error, or the
// end of input, reports a hangup. It keeps the *os.File's Fd, so bubbletea
// still sees a terminal (raw mode, window size); the hangup reports come
// from the reads and writes bubbletea makes anyway, so detecting them costs
// nothing. (bubbletea alone ends its input reader quietly at EOF and keeps
// running, which is what left invisible hubs behind.)
type hangupFile struct {
	*os.File
	hangup context.CancelCauseFunc
	wrote  func(p []byte) // after each write that succeeded, with what it wrote (nil: none)
}

// Read reads from the terminal; any error (EOF, EIO after a hangup) ends
// the program.
func (f *hangupFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	if err != nil {
		f.hangup(fmt.Errorf("%w: read %s: %w", ErrHangup, f.Name(), err))
	}
	return n, err
}

// Write writes to the terminal; an error ends the program.
func (f *hangupFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	if err != nil {
		f.hangup(fmt.Errorf("%w: write %s: %w", ErrHangup, f.Name(), err))
	} else if f.wrote != nil {
		f.wrote(p[:n])
	}
	return n, err
}

// terminalOptions returns the program options that watch the terminal for
// a hangup (input as bubbletea picks it: stdin, or the controlling terminal
// when stdin is not one; output stdout, calling wrote after each write),
// and a func that releases what it opened. Without any terminal, stdin is
// the input as it is, and its end ends the UI.
func terminalOptions(hangup context.CancelCauseFunc, wrote func([]byte)) ([]tea.ProgramOption, func()) {
	in := os.Stdin
	release := func() {}
	if !term.IsTerminal(int(in.Fd())) {
		if tty, _, err := tea.OpenTTY(); err == nil {
			in = tty
			release = func() { _ = tty.Close() }
		}
	}
	return []tea.ProgramOption{
		tea.WithInput(&hangupFile{File: in, hangup: hangup}),
		tea.WithOutput(&hangupFile{File: os.Stdout, hangup: hangup, wrote: wrote}),
	}, release
}

// NotifyHangup returns a copy of ctx that is cancelled, with a cause
// wrapping ErrHangup, when the process receives SIGHUP; stop releases the
// signal and waits for the goroutine it started. Run watches SIGHUP itself;
// programs use this to cover what they do before and after the UI runs.
func NotifyHangup(ctx context.Context) (hctx context.Context, stop func()) {
	hctx, cancel := context.WithCancelCause(ctx)
	stopSignals := notifyHangup(hctx, cancel)
	return hctx, func() {
		stopSignals()
		cancel(nil)
	}
}

// notifyHangup cancels ctx with ErrHangup when the process receives SIGHUP,
// until stop is called; stop waits for the goroutine it started.
func notifyHangup(ctx context.Context, hangup context.CancelCauseFunc) (stop func()) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGHUP)
	done := make(chan struct{})
	quit := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-sig:
			hangup(fmt.Errorf("%w: SIGHUP", ErrHangup))
		case <-ctx.Done():
		case <-quit:
		}
	}()
	return func() {
		signal.Stop(sig)
		close(quit)
		<-done
	}
}

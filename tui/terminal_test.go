package tui

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

// TestReloadCommand: :reload runs Options.Reload off the event loop and
// shows its message or error; it is refused in read-only mode and says so
// when the caller offers no reload.
func TestReloadCommand(t *testing.T) {
	ok := func() (string, error) { return "config reloaded", nil }
	bad := func() (string, error) { return "", errors.New("config rejected: line 3") }
	tests := []struct {
		name    string
		opts    Options
		status  string
		isErr   bool
		runs    bool
		wantRun string
	}{
		{name: "reloads", opts: Options{Reload: ok}, status: "reloading the config...", runs: true, wantRun: "config reloaded"},
		{name: "rejected", opts: Options{Reload: bad}, status: "reloading the config...", runs: true, wantRun: "error: config rejected: line 3"},
		{name: "not offered", opts: Options{}, status: "reload is not available here", isErr: true},
		{name: "read-only", opts: Options{ReadOnly: true, Reload: ok}, status: ReadOnlyMessage, isErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newFixtureModel(t, 80, 24, tt.opts)
			run(t, m, []step{keys(":"), text("reload")})
			_, cmd := m.Update(keyPress("enter"))
			if m.StatusMessage() != tt.status || m.statusErr != tt.isErr {
				t.Fatalf("status = %q (error %v), want %q (error %v)", m.StatusMessage(), m.statusErr, tt.status, tt.isErr)
			}
			if (cmd != nil) != tt.runs {
				t.Fatalf("command returned: %v, want %v", cmd != nil, tt.runs)
			}
			if !tt.runs {
				return
			}
			m.Update(cmd())
			if m.StatusMessage() != tt.wantRun {
				t.Fatalf("status after the reload = %q, want %q", m.StatusMessage(), tt.wantRun)
			}
		})
	}
}

// TestHangupFile: the end of the terminal's input and a failed write to it
// each report a hangup wrapping ErrHangup; a good read and write do not.
func TestHangupFile(t *testing.T) {
	t.Run("read until EOF", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		ctx, hangup := context.WithCancelCause(context.Background())
		f := &hangupFile{File: r, hangup: hangup}
		if _, err := w.Write([]byte("k")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 8)
		if n, err := f.Read(buf); n != 1 || err != nil || ctx.Err() != nil {
			t.Fatalf("first read: %d, %v, ctx %v", n, err, ctx.Err())
		}
		_ = w.Close()
		if _, err := f.Read(buf); !errors.Is(err, io.EOF) {
			t.Fatalf("read after the writer closed: %v, want EOF", err)
		}
		if cause := context.Cause(ctx); !errors.Is(cause, ErrHangup) || !strings.Contains(cause.Error(), "EOF") {
			t.Fatalf("cause = %v, want a hangup at EOF", cause)
		}
		_ = r.Close()
	})
	t.Run("failed write", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		ctx, hangup := context.WithCancelCause(context.Background())
		f := &hangupFile{File: w, hangup: hangup}
		if _, err := f.Write([]byte("frame")); err != nil || ctx.Err() != nil {
			t.Fatalf("write: %v, ctx %v", err, ctx.Err())
		}
		_ = r.Close() // the reader is gone: the next write fails (EPIPE)
		if _, err := f.Write([]byte("frame")); err == nil {
			t.Fatal("write to a closed pipe succeeded")
		}
		if cause := context.Cause(ctx); !errors.Is(cause, ErrHangup) {
			t.Fatalf("cause = %v, want a hangup", cause)
		}
		_ = w.Close()
	})
}

// Package app is driftwatch's wiring: it ties a loaded config, the
// cluster registry and the hub into one running App (New, Run, Reload),
// and runs each mode of the program on top of it: the headless server with
// its API, probes, tokens and TLS (Serve), the hub with the terminal UI
// (RunTUI) or the UI over a remote hub (Attach), the demo (Demo), a config
// check (Check), the one-shot drift report (Diff) and the starter config
// (Init). Package main only parses the command line and calls these.
package app

import (
	"fmt"
	"io"
)

// ExitError carries a process exit code: the commands return it when the
// code is not 1 (2: a wrong command line or config, 3: a cluster
// unreachable) or when the message was already printed (Err nil).
type ExitError struct {
	Code int
	Err  error
}

// Error returns the message (or the exit status when there is none).
func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

// Unwrap returns the error.
func (e *ExitError) Unwrap() error { return e.Err }

// UsageError is an exit-2 error: the command line was wrong.
func UsageError(format string, args ...any) error {
	return &ExitError{Code: 2, Err: fmt.Errorf(format, args...)}
}

// Env is what a command reads and writes besides its options.
type Env struct {
	// Getenv looks up environment variables (tests inject their own).
	Getenv func(string) string
	// Stdin is read where a command reads a file named "-" (check -f -,
	// diff -f -); nil: there is none.
	Stdin io.Reader
	// Stdout receives the command's output, Stderr its progress, errors
	// and (headless) logs.
	Stdout, Stderr io.Writer
	// Terminal reports whether the terminal UI can run; nil: whether the
	// process's standard input and output are both terminals (the UI
	// reads and draws on them, not on Stdin and Stdout).
	Terminal func() bool
	// BuildScript builds the local control-plane binaries of the demo and
	// the bench when $DRIFTWATCH_BIN_DIR is unset; it prints their folder
	// (package main embeds scripts/build-binaries.sh).
	BuildScript []byte
}

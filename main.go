// Command driftwatch is a multi-cluster drift hub with a terminal UI: it keeps
// the Kubernetes objects of a YAML config (its applications, and manifests
// from files, kustomize, Helm and Git sources) true on many clusters, sees
// external changes through watches within milliseconds and repairs them by
// server-side apply.
//
// This package only parses the command line (cobra, in root.go and the
// cmd_*.go files) and calls the packages that do the work.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/driftwatch/driftwatch/config/manifest"
	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/cli"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	// Started as a render worker (manifest.Sandbox), this process
	// renders one chart and exits here.
	manifest.ServeWorker()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// usageError is an exit-2 error: the command line was wrong.
func usageError(format string, args ...any) error { return app.UsageError(format, args...) }

// exitCode prints err (if any) on stderr and returns the process's exit
// code: 0 without an error, an app.ExitError's code, else 1.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ee *app.ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintln(stderr, "driftwatch:", ee.Err)
		}
		return ee.Code
	}
	fmt.Fprintln(stderr, "driftwatch:", err)
	return 1
}

// run is the whole program: it parses args and runs one command until ctx
// is cancelled or the work is done, reading os.Stdin where a file
// argument is "-". A wrong command line is an app.ExitError with code 2
// whose one line says what is wrong and where the help is.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return execute(ctx, args, &cliEnv{getenv: getenv, stdin: os.Stdin, stdout: stdout, stderr: stderr})
}

// execute runs the command line args in the environment c.
func execute(ctx context.Context, args []string, c *cliEnv) error {
	return cli.Execute(ctx, newRootCmd(c), args)
}

// Command driftwatch is a multi-cluster drift hub with a terminal UI: it keeps
// the Deployments, Services and ConfigMaps of a YAML config true on many
// Kubernetes clusters, sees external changes through watches within
// milliseconds and repairs them by server-side apply.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitError carries a process exit code through run's error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError is an exit-2 error: the command line was wrong.
func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "driftwatch:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "driftwatch:", err)
	return 1
}

const usage = `driftwatch keeps Kubernetes objects true across many clusters.

Usage:
  driftwatch -f FILE [--readonly]   run the hub and the terminal UI (logs go to a file); the hub
                                    ends with its terminal; :reload reloads the config
  driftwatch serve -f FILE          run the hub headless: HTTP API (bearer tokens), probes and
                                    /metrics on --probe-listen, JSON logs; SIGHUP reloads
  driftwatch reload                 ask a running hub (serve) to reload its config (--allow-prune, --server URL)
  driftwatch attach URL             terminal UI over a headless hub (e.g. http://127.0.0.1:7070;
                                    token from --token-file, $DRIFTWATCH_TOKEN or serve's default file)
  driftwatch demo [--headless]      three local clusters with live drift and repair
  driftwatch check -f FILE          validate a config and print its plan (-o yaml: the objects)
  driftwatch bench                  measure drift detection and repair on local clusters (vs a raw watch and polling)
  driftwatch version                print the version
  driftwatch help                   show this help

A start or reload that would decommission every managed object of a cluster,
or more than hub.pruneLimit objects, is refused; --allow-prune confirms it.
`

// run is the whole program: it parses args and runs one subcommand until ctx
// is cancelled or the work is done.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return &exitError{code: 2}
	}
	switch args[0] {
	case "version", "--version":
		fmt.Fprintf(stdout, "driftwatch %s\n", version)
		return nil
	case "attach":
		return runAttach(ctx, args[1:], getenv, stdout, stderr)
	case "demo":
		return runDemo(ctx, args[1:], getenv, stdout, stderr)
	case "serve":
		return runServe(ctx, args[1:], getenv, stdout, stderr)
	case "reload":
		return runReload(ctx, args[1:], getenv, stdout, stderr)
	case "check":
		return runCheck(ctx, args[1:], getenv, stdout, stderr)
	case "bench":
		return runBench(ctx, args[1:], getenv, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		if strings.HasPrefix(args[0], "-") {
			return runTUI(ctx, args, getenv, stdout, stderr)
		}
		return usageError("unknown command %q (see driftwatch help)", args[0])
	}
}

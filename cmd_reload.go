package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/hub/api"
)

const reloadUsage = `Usage: driftwatch reload [--allow-prune] [--server URL] [--token-file FILE] [--ca-file FILE]

Asks a running hub (driftwatch serve) to reload its config file, like
SIGHUP. An invalid file changes nothing and every error is printed. A change
that would decommission every managed object of a cluster, or more than
hub.pruneLimit objects at once, is refused and nothing changes; if it is
intended, run the command again with --allow-prune. It needs an operator
token: --token-file, else $DRIFTWATCH_TOKEN, else the token file serve made
on this machine. Exit 0 reloaded, 1 refused or rejected, 2 usage.

Flags:
`

// runReload is `driftwatch reload`: POST /api/v1/reload on a running hub.
func runReload(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	_ = ctx // the request is bounded by the client
	fs := flag.NewFlagSet("reload", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), reloadUsage)
		fs.PrintDefaults()
	}
	allowPrune := fs.Bool("allow-prune", false, "confirm a reload that decommissions every managed object of a cluster, or more than hub.pruneLimit objects")
	server := fs.String("server", "http://"+defaultListen, "the hub's API address (serve's --listen; https:// when it serves TLS)")
	cf := addClientFlags(fs)
	// Parse quietly so a bad flag is reported once, by usageError.
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return nil
	case err != nil:
		fs.Usage()
		return usageError("reload: %v", err)
	case fs.NArg() > 0:
		return usageError("reload: unexpected argument %q (the hub's address goes after --server)", fs.Arg(0))
	}
	opts, err := cf.options(getenv)
	if err != nil {
		return usageError("reload: %v", err)
	}
	c, err := api.NewClientWithOptions(*server, opts)
	if err != nil {
		return usageError("reload: %v", err)
	}
	if err := c.Reload(*allowPrune); err != nil {
		if errors.Is(err, hub.ErrPruneRefused) {
			return &exitError{code: 1, err: fmt.Errorf("reload refused: %w", err)}
		}
		return &exitError{code: 1, err: fmt.Errorf("reload: %w", err)}
	}
	fmt.Fprintf(stdout, "config reloaded by the hub at %s\n", *server)
	return nil
}

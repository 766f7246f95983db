package main

import (
	"github.com/spf13/cobra"

	"github.com/driftwatch/driftwatch/internal/app"
)

// newReloadCmd is `driftwatch reload`.
func newReloadCmd(c *cliEnv) *cobra.Command {
	var allowPrune bool
	cmd := &cobra.Command{
		Use:   "reload [--allow-prune] [--server URL]",
		Short: "Ask a running hub (driftwatch serve) to reload its config",
		Long: `Reload asks a running hub (driftwatch serve) to reload its config file, like
SIGHUP. An invalid file changes nothing and every error is printed. A change
that would decommission every managed object of a cluster, or more than
hub.pruneLimit objects at once, is refused and nothing changes; if it is
intended, run the command again with --allow-prune. Exit 0 reloaded, 1
refused or rejected, 2 usage.

` + remoteTokenText + `
It needs an operator token.`,
		Example: `  driftwatch reload
  driftwatch reload --allow-prune
  driftwatch reload --server https://hub.example:7070 --ca-file ca.pem --token-file token`,
	}
	cmd.Flags().BoolVar(&allowPrune, "allow-prune", false, "confirm a reload that decommissions every managed object of a cluster, or more than hub.pruneLimit objects")
	parse := func(cmd *cobra.Command, args []string) (bool, error) {
		if len(args) > 0 {
			return false, usageError("reload: unexpected argument %q (the hub's address goes after --server)", args[0])
		}
		return allowPrune, nil
	}
	return hubCommand(c, cmd, parse, (*app.Remote).Reload, nil)
}

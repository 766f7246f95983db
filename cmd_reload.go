package main

import (
	"github.com/spf13/cobra"

	"github.com/driftwatch/driftwatch/internal/app"
)

// newReloadCmd is `driftwatch reload`.
func newReloadCmd(c *cliEnv) *cobra.Command {
	var allowPrune bool
	var server string
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "reload [--allow-prune] [--server URL]",
		Short: "Ask a running hub (driftwatch serve) to reload its config",
		Long: `Reload asks a running hub (driftwatch serve) to reload its config file, like
SIGHUP. An invalid file changes nothing and every error is printed. A change
that would decommission every managed object of a cluster, or more than
hub.pruneLimit objects at once, is refused and nothing changes; if it is
intended, run the command again with --allow-prune. It needs an operator
token: --token-file, else $DRIFTWATCH_TOKEN, else the token file serve made
on this machine. The token goes over plain http only to this machine
(127.0.0.1, ::1, localhost); any other hub needs an https:// --server. Exit 0
reloaded, 1 refused or rejected, 2 usage.`,
		Example: `  driftwatch reload
  driftwatch reload --allow-prune
  driftwatch reload --server https://hub.example:7070 --ca-file ca.pem --token-file token`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError("reload: unexpected argument %q (the hub's address goes after --server)", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := cf.options(c.getenv)
			if err != nil {
				return usageError("reload: %v", err)
			}
			return app.Reload(server, allowPrune, opts, c.stdout)
		},
	}
	cmd.Flags().BoolVar(&allowPrune, "allow-prune", false, "confirm a reload that decommissions every managed object of a cluster, or more than hub.pruneLimit objects")
	cmd.Flags().StringVar(&server, "server", "http://"+app.DefaultListen, "the hub's API `address` (serve's --listen; https:// when it serves TLS)")
	cf.addFlags(cmd.Flags())
	return cmd
}

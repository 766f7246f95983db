package main

import (
	"github.com/spf13/cobra"

	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/cli"
)

// newDiffCmd is `driftwatch diff -f FILE`.
func newDiffCmd(c *cliEnv) *cobra.Command {
	var o app.DiffOptions
	var output string
	cmd := &cobra.Command{
		Use:   "diff -f FILE [--cluster X] [--application Y] [-o json]",
		Short: "Is anything drifted right now? One pass, for scripts and CI",
		Long: `Diff compares every desired object of the config with the live one, once,
with the hub's classification, and prints a unified diff per drifted object
with its NodeID and the field manager that changed it. Nothing is written to
any cluster and no hub is left running.

Terraform workspaces are planned once each, read-only (refresh-only, no
state lock); --cluster and --application also take a workspace id.

Exit 0 in sync, 1 drift found, 2 usage or config error (like kubectl diff
and argocd app diff), 3 a cluster unreachable, an object not checked or a
workspace that could not be planned, 4 a cluster refused the credentials
(401, e.g. an expired or revoked token, or 403 on the whole API: renew
them; 4 wins over 3, 3 over 1).`,
		Example: `  driftwatch diff -f driftwatch.yaml
  driftwatch diff -f driftwatch.yaml --cluster prod-eu --application web
  driftwatch diff -f driftwatch.yaml -o json | jq '.summary'`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case o.File == "":
				return usageError("diff: -f FILE is required")
			case output != "" && output != "text" && output != "json":
				return usageError("diff: -o %q: want text or json", output)
			}
			o.JSON = output == "json"
			return app.Diff(cmd.Context(), o, c.env())
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.File, "file", "f", "", "config `FILE` (required)")
	fs.StringSliceVar(&o.Clusters, "cluster", nil, "only these cluster `ids` (comma separated or repeated)")
	fs.StringSliceVar(&o.Applications, "application", nil, "only these application `ids` (comma separated or repeated)")
	fs.StringVarP(&output, "output", "o", "text", "output `format`: text (unified diffs) or json")
	return cmd
}

package main

import (
	"github.com/spf13/cobra"

	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/cli"
)

// newInitCmd is `driftwatch init`.
func newInitCmd(c *cliEnv) *cobra.Command {
	var o app.InitOptions
	cmd := &cobra.Command{
		Use:   "init [--kubeconfig FILE] [--context a,b] [-o FILE] [--force]",
		Short: "Write a starter config from your kubeconfig's contexts",
		Long: `Init reads the kubeconfig's contexts (all, or --context a,b) and prints a
commented starter config with one cluster per context and one example
application, which driftwatch check accepts. The kubeconfig is --kubeconfig,
else the files of $KUBECONFIG (merged), else ~/.kube/config, as kubectl
resolves it. -o FILE writes the config instead, never over an existing file
without --force.`,
		Example: `  driftwatch init
  driftwatch init --context prod-eu,prod-us -o driftwatch.yaml
  driftwatch init --kubeconfig ~/.kube/fleet.yaml -o driftwatch.yaml --force`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Kubeconfig, o.Contexts = c.kubeconfig, c.contexts
			return app.Init(o, c.env())
		},
	}
	c.addKubeFlags(cmd)
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "write the config to this `file` (default: print it)")
	cmd.Flags().BoolVar(&o.Force, "force", false, "overwrite the -o file if it exists")
	return cmd
}

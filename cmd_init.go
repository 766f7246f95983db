package main

import (
	"github.com/spf13/cobra"

	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/cli"
)

// newInitCmd is `driftwatch init`.
func newInitCmd(c *cliEnv) *cobra.Command {
	var o app.InitOptions
	var output string
	cmd := &cobra.Command{
		Use:   "init [--kubeconfig FILE] [--context a,b] [--output-file FILE] [--force]",
		Short: "Write a starter config from your kubeconfig's contexts",
		Long: `Init reads the kubeconfig's contexts (all, or --context a,b) and prints a
commented starter config with one cluster per context and one example
application, which driftwatch check accepts. The kubeconfig is --kubeconfig,
else the files of $KUBECONFIG (merged), else ~/.kube/config, as kubectl
resolves it. --output-file FILE (-O) writes the config instead, never over
an existing file without --force; - is standard output. -o is the output
format, as in every command: yaml, the only one.

The example application starts with policy: warn: driftwatch creates its
objects but only reports drift, on every context, production included, until
you set it to repair.`,
		Example: `  driftwatch init
  driftwatch init --context prod-eu,prod-us --output-file driftwatch.yaml
  driftwatch init --kubeconfig ~/.kube/fleet.yaml -O driftwatch.yaml --force`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch output {
			case app.FormatYAML:
			case app.FormatText, app.FormatJSON:
				return cli.CheckFormat(cmd, output, app.FormatYAML)
			default: // -o named the file to write before it was a format
				return cli.OutputFileMoved(cmd, output, "--output-file", app.FormatYAML)
			}
			o.Kubeconfig, o.Contexts = c.kubeconfig, c.contexts
			return app.Init(o, c.env())
		},
	}
	c.addKubeFlags(cmd)
	fs := cmd.Flags()
	fs.StringVarP(&output, "output", "o", app.FormatYAML, "output `format`: yaml")
	fs.StringVarP(&o.OutputFile, "output-file", "O", "", "write the config to this `file` (default: print it; - is standard output)")
	fs.BoolVar(&o.Force, "force", false, "overwrite the --output-file file if it exists")
	return cmd
}

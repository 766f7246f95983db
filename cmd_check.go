package main

import (
	"github.com/spf13/cobra"

	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/cli"
)

// newCheckCmd is `driftwatch check -f FILE`.
func newCheckCmd(c *cliEnv) *cobra.Command {
	var o app.CheckOptions
	cmd := &cobra.Command{
		Use:   "check -f FILE [-o text|json|yaml]",
		Short: "Validate a config and print its plan",
		Long: `Check validates a config file, and the kubeconfigs it names, without
contacting any cluster: each kubeconfig exists, is a file and parses, each
context exists (also in the files of $KUBECONFIG, merged), and so do the
cluster and user it names; no two clusters are the same cluster (the same
API server and credentials, however the files and contexts are named).
Every problem is reported as file:line:column: field: message and the exit
status is 1. --skip-kubeconfigs checks the file alone.

A valid config prints its plan (-o text), or the compiled objects (-o yaml,
or -o json as one List). -f - reads the config from standard input.`,
		Example: `  driftwatch check -f driftwatch.yaml
  driftwatch check -f driftwatch.yaml -o yaml
  # In CI, without the kubeconfigs
  driftwatch check -f driftwatch.yaml --skip-kubeconfigs
  # A generated config
  render-config | driftwatch check -f -`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError("check: unexpected argument %q (the file goes after -f)", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.File == "" {
				return usageError("check: -f FILE is required")
			}
			if o.Output == "plan" { // its name before -o took text everywhere
				o.Output = app.FormatText
			}
			if err := cli.CheckFormat(cmd, o.Output, app.FormatText, app.FormatJSON, app.FormatYAML); err != nil {
				return err
			}
			return app.Check(o, c.env())
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.File, "file", "f", "", "config `FILE` to check (required; - reads standard input)")
	fs.StringVarP(&o.Output, "output", "o", app.FormatText, "output `format`: text (the plan: a summary per cluster), json or yaml (the compiled objects)")
	addKubeconfigFlag(fs, &o.Kubeconfig)
	fs.BoolVar(&o.SkipKubeconfigs, "skip-kubeconfigs", false, "check the file alone, without reading the kubeconfigs it names")
	return cmd
}

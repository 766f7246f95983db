package main

import (
	"github.com/spf13/cobra"

	"github.com/driftwatch/driftwatch/internal/app"
)

// newCheckCmd is `driftwatch check -f FILE`.
func newCheckCmd(c *cliEnv) *cobra.Command {
	var file, output string
	cmd := &cobra.Command{
		Use:   "check -f FILE [-o plan|yaml]",
		Short: "Validate a config and print its plan",
		Long: `Check validates a config file without contacting any cluster. Every problem
is reported as file:line:column: field: message and the exit status is 1.
A valid config prints its plan (or, with -o yaml, the compiled objects).`,
		Example: `  driftwatch check -f driftwatch.yaml
  driftwatch check -f driftwatch.yaml -o yaml`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError("check: unexpected argument %q (the file goes after -f)", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case file == "":
				return usageError("check: -f FILE is required")
			case output != "plan" && output != "yaml":
				return usageError("check: -o %q: want plan or yaml", output)
			}
			return app.Check(file, output, c.env())
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "config `FILE` to check (required)")
	cmd.Flags().StringVarP(&output, "output", "o", "plan", "output `format`: plan (a summary per cluster) or yaml (the compiled objects)")
	return cmd
}

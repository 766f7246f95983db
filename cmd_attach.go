package main

import (
	"github.com/spf13/cobra"

	"github.com/driftwatch/driftwatch/internal/app"
)

// newAttachCmd is `driftwatch attach URL`.
func newAttachCmd(c *cliEnv) *cobra.Command {
	var readOnly bool
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "attach URL",
		Short: "Run the terminal UI over a headless hub (driftwatch serve)",
		Long: `Attach runs the terminal UI over the HTTP API of a hub that driftwatch serve
runs. The token comes from --token-file, else $DRIFTWATCH_TOKEN, else the
token file serve made on this machine; :reload asks the hub to reload its
config. The token goes over plain http only to this machine (127.0.0.1, ::1,
localhost): any other hub, and any replica address its Leases advertise,
needs https://.`,
		Example: `  driftwatch attach http://127.0.0.1:7070
  driftwatch attach https://hub.example:7070 --ca-file ca.pem --token-file token --readonly`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("attach: want one hub address, e.g. driftwatch attach http://127.0.0.1:7070")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := cf.options(c.getenv)
			if err != nil {
				return usageError("attach: %v", err)
			}
			return app.Attach(cmd.Context(), args[0], readOnly, opts, c.env())
		},
	}
	cmd.Flags().BoolVar(&readOnly, "readonly", false, "disable every action in the UI")
	cf.addFlags(cmd.Flags())
	return cmd
}

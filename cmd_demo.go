package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/cli"
)

// newDemoCmd is `driftwatch demo`.
func newDemoCmd(c *cliEnv) *cobra.Command {
	var o app.DemoOptions
	cmd := &cobra.Command{
		Use:   "demo [--headless]",
		Short: "Three local clusters with live drift and repair",
		Long: `Demo starts three local clusters (etcd, kube-apiserver, controller manager,
scheduler and kwok's fake nodes), writes a demo config, and runs the hub, the
terminal UI and a drift generator that breaks what the hub manages (g
toggles it). The inventory service's manifests come from a local Git
repository, to which the demo commits a release every 30 s and which the
hub fetches at once, as a push webhook would make it. With --headless it
prints every repair as a line instead. The hub serves its API as serve does
(--listen, default 127.0.0.1:7070, with the token file serve makes), so that
driftwatch status, pause, hold and attach work on it from another terminal.

The control-plane binaries come from $DRIFTWATCH_BIN_DIR, else they are built
once: about 15-20 minutes and 3 GB of disk on 2 cores, reused by later runs.`,
		Example: `  driftwatch demo
  driftwatch demo --headless --interval 1s --until-repairs 5`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Interval <= 0 {
				return usageError("demo: --interval must be positive")
			}
			return app.Demo(cmd.Context(), o, c.env())
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&o.Headless, "headless", false, "run without the TUI: print drift and repairs as lines")
	fs.DurationVar(&o.Interval, "interval", 4*time.Second, "time between generated drifts")
	fs.IntVar(&o.UntilRepairs, "until-repairs", 0, "exit 0 once this many generated drifts were repaired (0: run until interrupted)")
	fs.BoolVar(&o.ReadOnly, "readonly", false, "disable the TUI's actions")
	fs.StringVar(&o.Dir, "dir", "", "`folder` for the demo's clusters, config and log (default: a new temporary folder)")
	fs.StringVar(&o.Listen, "listen", app.DefaultListen, "`address` of the demo hub's API, for status, pause, hold and attach from another terminal (\"\": none); in use (a serve running): none")
	return cmd
}

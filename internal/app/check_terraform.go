package app

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/driftwatch/driftwatch/clusters/terraform"
	"github.com/driftwatch/driftwatch/config"
)

// warnWorkspaces warns about workspaces whose folder or binary cannot be
// found now; the hub would report them as unhealthy.
func warnWorkspaces(w io.Writer, cfg *config.Config) {
	for _, ws := range cfg.Terraform {
		if st, err := os.Stat(ws.Dir); errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(w, "driftwatch: warning: terraform workspace %q: dir %s does not exist\n", ws.ID, ws.Dir)
		} else if err == nil && !st.IsDir() {
			fmt.Fprintf(w, "driftwatch: warning: terraform workspace %q: dir %s is not a folder\n", ws.ID, ws.Dir)
		}
		if _, err := terraform.FindBinary(ws.Binary, os.Getenv); err != nil {
			fmt.Fprintf(w, "driftwatch: warning: terraform workspace %q: %v\n", ws.ID, err)
		}
	}
}

// printWorkspaces adds the config's Terraform workspaces to the plan.
func printWorkspaces(b *strings.Builder, cfg *config.Config) {
	for _, ws := range cfg.Terraform {
		fmt.Fprintf(b, "\nterraform workspace %s\n", ws.ID)
		tw := tabwriter.NewWriter(b, 0, 4, 1, ' ', 0)
		fmt.Fprintf(tw, "  dir:\t%s\n", ws.Dir)
		bin := ws.Binary
		if bin == "" {
			bin = "tofu (from the binaries cache, else $PATH)"
		}
		fmt.Fprintf(tw, "  binary:\t%s\n", bin)
		fmt.Fprintf(tw, "  interval:\t%s (and at once when a file in dir changes)\n", ws.Interval)
		fmt.Fprintf(tw, "  policy:\t%s\n", ws.Policy)
		targets := "(every managed resource)"
		if ws.Targets != nil {
			targets = strings.Join(ws.Targets, ", ")
		}
		fmt.Fprintf(tw, "  targets:\t%s\n", targets)
		if len(ws.Vars) > 0 {
			fmt.Fprintf(tw, "  vars:\t%s\n", formatLabels(ws.Vars))
		}
		if len(ws.VarFiles) > 0 {
			fmt.Fprintf(tw, "  varFiles:\t%s\n", strings.Join(ws.VarFiles, ", "))
		}
		tw.Flush()
	}
}

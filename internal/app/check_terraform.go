package app

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
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
		if _, err := terraform.SensitiveVariables(ws.Dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(w, "driftwatch: warning: terraform workspace %q: variable declarations: %v (vars values not shown)\n", ws.ID, err)
		}
		if _, err := terraform.FindBinary(ws.Binary, os.Getenv); err != nil {
			fmt.Fprintf(w, "driftwatch: warning: terraform workspace %q: %v\n", ws.ID, err)
		}
	}
}

// printWorkspaces adds the config's Terraform workspaces to the plan.
func printWorkspaces(b *bufio.Writer, cfg *config.Config) {
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
			fmt.Fprintf(tw, "  vars:\t%s\n", workspaceVars(ws))
		}
		if len(ws.VarFiles) > 0 {
			fmt.Fprintf(tw, "  varFiles:\t%s\n", strings.Join(ws.VarFiles, ", "))
		}
		tw.Flush()
	}
}

// workspaceVars formats a workspace's vars for the plan: NAME=VALUE, but
// the values of variables declared sensitive in the workspace and of those
// the config reads from the environment (${NAME}) are never printed, nor
// any value when the declarations cannot be read.
func workspaceVars(ws config.Workspace) string {
	sensitive, err := terraform.SensitiveVariables(ws.Dir)
	parts := make([]string, 0, len(ws.Vars))
	for _, k := range slices.Sorted(maps.Keys(ws.Vars)) {
		v := ws.Vars[k]
		switch {
		case slices.Contains(ws.SecretVars, k):
			v = "(secret, from the environment)"
		case err != nil:
			v = "(hidden: variable declarations unreadable)"
		case sensitive[k]:
			v = "(sensitive)"
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ", ")
}

package main

import (
	"github.com/spf13/cobra"

	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/cli"
)

// newDiffCmd is `driftwatch diff -f FILE`.
func newDiffCmd(c *cliEnv) *cobra.Command {
	var o app.DiffOptions
	cmd := &cobra.Command{
		Use:   "diff -f FILE [--cluster X] [--context C] [--application Y] [-o text|json|yaml]",
		Short: "Is anything drifted right now? One pass, for scripts and CI",
		Long: `Diff compares every desired object of the config with the live one, once,
with the hub's classification, and prints a unified diff per drifted object
with its NodeID and the field manager that changed it. Nothing is written to
any cluster and no hub is left running.

Terraform workspaces are planned once each, read-only (refresh-only, no
state lock); --cluster and --application also take a workspace id.
--context keeps the clusters reached through these kubeconfig contexts.
The clusters of clusterAPI sources are discovered at runtime and not
diffed: a source in scope is reported as not checked (exit 3).

The kubeconfigs are checked first, as driftwatch check does: a missing
file, context, cluster or user is a config error (exit 2), not an outage.
-f - reads the config from standard input.

Exit 0 in sync, 1 drift found, 2 usage or config error (like kubectl diff
and argocd app diff), 3 a cluster unreachable, an object or a source not
checked or a workspace that could not be planned, 4 a cluster refused the
credentials (401, e.g. an expired or revoked token, or 403 on the whole
API: renew them; 4 wins over 3, 3 over 1).

--dry-run also asks each apiserver to validate the repair of every drifted
object without persisting it (server-side apply with dryRun=All, as kubectl
diff --server-side does): a repair that an admission webhook or policy,
validation or a field the apiserver keeps immutable would refuse is shown
with why ("! dry run: the repair would fail: ...") and exits 5 (3 and 4
win over it, it wins over 1). It needs the patch verb on the kinds
compared, where a diff alone needs get.`,
		Example: `  driftwatch diff -f driftwatch.yaml
  driftwatch diff -f driftwatch.yaml --cluster prod-eu --application web
  driftwatch diff -f driftwatch.yaml --context kind-dev
  driftwatch diff -f driftwatch.yaml -o json | jq '.summary'
  driftwatch diff -f driftwatch.yaml --revision "$PR_HEAD_SHA" --dry-run`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.File == "" {
				return usageError("diff: -f FILE is required")
			}
			if err := cli.CheckFormat(cmd, o.Output, app.FormatText, app.FormatJSON, app.FormatYAML); err != nil {
				return err
			}
			return app.Diff(cmd.Context(), o, c.env())
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.File, "file", "f", "", "config `FILE` (required; - reads standard input)")
	fs.StringSliceVar(&o.Clusters, "cluster", nil, "only these cluster `ids` (comma separated or repeated)")
	fs.StringSliceVar(&o.Contexts, "context", nil, "only the clusters reached through these kubeconfig `contexts` (comma separated or repeated)")
	fs.StringSliceVar(&o.Applications, "application", nil, "only these application `ids` (comma separated or repeated)")
	fs.StringVarP(&o.Output, "output", "o", app.FormatText, "output `format`: text (unified diffs), json or yaml (the report)")
	addKubeconfigFlag(fs, &o.Kubeconfig)
	fs.StringVar(&o.Revision, "revision", "", "compare with this `ref` (branch, tag or commit) of every Git source instead of each source's own, e.g. a pull request's head")
	fs.BoolVar(&o.DryRun, "dry-run", false, "also ask each apiserver to validate every drifted object's repair without persisting it (exit 5 when one would be refused; needs the patch verb)")
	return cmd
}

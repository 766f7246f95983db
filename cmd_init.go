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
		Use:   "init [--kubeconfig FILE] [--context a,b] [--from FOLDER [--namespace NS]] [--output-file FILE] [--force]",
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
you set it to repair.

--from FOLDER starts from manifests you already have: a source of FOLDER, in
policy warn too, replaces the example. A kustomization at its root makes a
kustomize source, a Chart.yaml (or a .tgz) a Helm chart (its values.yaml
applies by itself), overlays/NAME/kustomization.yaml folders (base/overlays)
one kustomize source of overlays/${cluster.labels.env}, each cluster labeled
env=NAME when its context name holds NAME; anything else, a folder of YAML
and JSON manifests. Init renders FOLDER once and reports how many objects of
which kinds it holds, or why it does not render. A relative FOLDER is
written relative to the --output-file's folder (as given when printed).
--namespace NS is the namespace of the objects that set none (a chart's
release namespace); it is left out when every object sets its own.`,
		Example: `  driftwatch init
  driftwatch init --context prod-eu,prod-us --output-file driftwatch.yaml
  driftwatch init --kubeconfig ~/.kube/fleet.yaml -O driftwatch.yaml --force
  driftwatch init --from ./deploy -O driftwatch.yaml
  driftwatch init --from ./charts/web --namespace web --context prod-eu`,
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
			return app.Init(cmd.Context(), o, c.env())
		},
	}
	c.addKubeFlags(cmd)
	fs := cmd.Flags()
	fs.StringVarP(&output, "output", "o", app.FormatYAML, "output `format`: yaml")
	fs.StringVarP(&o.OutputFile, "output-file", "O", "", "write the config to this `file` (default: print it; - is standard output)")
	fs.BoolVar(&o.Force, "force", false, "overwrite the --output-file file if it exists")
	fs.StringVar(&o.From, "from", "", "start from this `folder` of manifests, kustomization or chart: a source of it replaces the example")
	fs.StringVar(&o.Namespace, "namespace", "", "`namespace` of the --from objects that set none (a chart's release namespace)")
	return cmd
}

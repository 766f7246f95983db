package main

import (
	_ "embed"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/cli"
)

// buildBinariesScript builds the local control-plane binaries of the demo
// and the bench when $DRIFTWATCH_BIN_DIR is unset.
//
//go:embed scripts/build-binaries.sh
var buildBinariesScript []byte

// cliEnv is what every command reads and writes besides its flags.
type cliEnv struct {
	getenv func(string) string
	// stdin is read where a file argument is "-".
	stdin          io.Reader
	stdout, stderr io.Writer
	// kubeconfig and contexts are the global --kubeconfig and --context,
	// for the commands that talk to one cluster.
	kubeconfig string
	contexts   []string
}

// env is the commands' environment for package app.
func (c *cliEnv) env() app.Env {
	return app.Env{Getenv: c.getenv, Stdin: c.stdin, Stdout: c.stdout, Stderr: c.stderr, BuildScript: buildBinariesScript}
}

// allowPruneUsage documents the --allow-prune flag of the commands that
// start a hub.
const allowPruneUsage = "confirm an initial desired state that decommissions every managed object of a cluster, or more than hub.pruneLimit objects (e.g. applications removed while the hub was down)"

// addKubeFlags registers kubectl's global --kubeconfig and --context as
// persistent flags of a command that reads one kubeconfig's contexts
// (init). The commands that read a config's clusters take --kubeconfig
// alone (addKubeconfigFlag), and diff a --context of its own that keeps
// the clusters reached through those contexts.
func (c *cliEnv) addKubeFlags(cmd *cobra.Command) {
	pf := cmd.PersistentFlags()
	pf.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig `file` (default: $KUBECONFIG, else ~/.kube/config, as kubectl resolves them)")
	pf.StringSliceVar(&c.contexts, "context", nil, "kubeconfig `contexts`, comma separated (default: every context)")
}

// addKubeconfigFlag registers --kubeconfig on a command that reads the
// clusters of a config file: the kubeconfig of those that name none, as
// kubectl's --kubeconfig replaces $KUBECONFIG.
func addKubeconfigFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "kubeconfig", "", "kubeconfig `file` of the clusters that name none (default: $KUBECONFIG, else ~/.kube/config, as kubectl resolves them)")
}

// newRootCmd builds the command tree. The root itself is the TUI mode,
// `driftwatch -f FILE`.
func newRootCmd(c *cliEnv) *cobra.Command {
	var o app.TUIOptions
	var kubeconfig string
	shown, revision := cli.BuildVersion(version, debug.ReadBuildInfo)
	root := &cobra.Command{
		Use:   "driftwatch -f FILE",
		Short: "Keep Kubernetes objects true across many clusters",
		Long: `driftwatch keeps the Kubernetes objects of a YAML config true on many
clusters: its applications, and any object of the manifests it names (plain
YAML files, kustomize overlays, Helm charts, Git repositories). It sees
external changes through watches and repairs them by server-side apply.

Run with -f FILE, it is the hub and the terminal UI in one process: logs go
to a file (nothing is written to the terminal while the UI runs), the hub
lives exactly as long as its terminal, and :reload reloads the config.

A start or reload that would decommission every managed object of a cluster,
or more than hub.pruneLimit objects, is refused; --allow-prune confirms it.`,
		Example: `  # Write a starter config from your kubeconfig's contexts, validate it, run it
  driftwatch init --output-file driftwatch.yaml
  driftwatch check -f driftwatch.yaml
  driftwatch -f driftwatch.yaml

  # Is anything drifted right now? (exit 0 in sync, 1 drift, 3 unreachable)
  driftwatch diff -f driftwatch.yaml

  # Three local clusters with live drift and repair
  driftwatch demo`,
		Version: shown,
		Args:    cli.RootArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch o.File {
			case "":
				return usageError("-f FILE is required: driftwatch -f FILE runs the hub and the terminal UI; other commands are listed by driftwatch --help")
			case "-":
				return usageError("-f -: the terminal UI reads the terminal, and :reload the config file again: give a file")
			}
			env := c.env()
			getenv, err := app.KubeconfigEnv(env.Getenv, kubeconfig, "")
			if err != nil {
				return err
			}
			env.Getenv = getenv
			return app.RunTUI(cmd.Context(), o, env)
		},
	}
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	f := root.Flags()
	f.StringVarP(&o.File, "file", "f", "", "config `FILE` (required)")
	f.BoolVar(&o.ReadOnly, "readonly", false, "disable every action in the UI")
	f.BoolVar(&o.AllowPrune, "allow-prune", false, allowPruneUsage)
	f.BoolVar(&o.WriteConfig, "write-config", false, "let the node detail's W key add the proposed ignore rule to the config file and reload")
	f.StringVar(&o.LogFile, "log-file", app.DefaultLogFile(c.getenv), "log `file` (nothing is written to the terminal while the UI runs)")
	addKubeconfigFlag(f, &kubeconfig)

	root.AddCommand(newServeCmd(c), newAttachCmd(c), newReloadCmd(c), newStatusCmd(c), newPauseCmd(c, true), newPauseCmd(c, false),
		newHoldCmd(c), newReleaseCmd(c), newRepairCmd(c), newPolicyCmd(c), newLogCmd(c), newDescribeCmd(c), newDemoCmd(c), newCheckCmd(c),
		newBenchCmd(c), newInitCmd(c), newDiffCmd(c), newConfigCmd(c), cli.VersionCmd(shown, revision, c.stdout))
	cli.Setup(root)
	return root
}

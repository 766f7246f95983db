package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/cli"
)

// serveOptions are the flags of `driftwatch serve`.
type serveOptions struct {
	app.ServeOptions
	level      string
	kubeconfig string
}

// newServeCmd is `driftwatch serve -f FILE`.
func newServeCmd(c *cliEnv) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve -f FILE",
		Short: "Run the hub headless: HTTP API, probes and metrics, JSON logs",
		Long: `Serve runs the hub without a UI: JSON logs on stderr, the HTTP API on
--listen (bearer tokens; https with --tls-cert-file and --tls-key-file),
/healthz, /readyz and /metrics on --probe-listen. SIGHUP (and driftwatch
reload) reloads the config, never allowing a guarded prune; SIGTERM stops it.

Without --token-file, serve makes an operator token on its first start in
$XDG_STATE_HOME/driftwatch/tokens, which attach and reload on this machine
use by default. A start the prune guard refuses exits 1 and says what it
would prune; --allow-prune confirms it.`,
		Example: `  driftwatch serve -f driftwatch.yaml
  driftwatch serve -f driftwatch.yaml --listen 0.0.0.0:7070 --tls-cert-file tls.crt --tls-key-file tls.key
  driftwatch serve -f driftwatch.yaml --token-file tokens --log-level debug`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			env := c.env()
			getenv, err := app.KubeconfigEnv(env.Getenv, o.kubeconfig, "serve")
			if err != nil {
				return err
			}
			env.Getenv = getenv
			return app.Serve(cmd.Context(), o.ServeOptions, env)
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

// addFlags registers serve's flags on fs.
func (o *serveOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.File, "file", "f", "", "config `FILE` (required)")
	fs.StringVar(&o.Listen, "listen", app.DefaultListen, "`address` of the HTTP API (a non-loopback one needs TLS or --insecure-listen)")
	fs.StringVar(&o.ProbeListen, "probe-listen", app.DefaultProbeListen, "`address` of /healthz, /readyz and /metrics, which need no token: keep it on a private network")
	fs.StringVar(&o.TokenFile, "token-file", "", "bearer tokens, one <token> <role> [name] per line, role viewer or operator, mode 0600 (default: an operator token made on the first start in $XDG_STATE_HOME/driftwatch/tokens)")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", "", "serve the API over TLS with this PEM certificate (reloaded when it changes)")
	fs.StringVar(&o.TLSKeyFile, "tls-key-file", "", "PEM private key of --tls-cert-file")
	fs.BoolVar(&o.InsecureListen, "insecure-listen", false, "allow a non-loopback --listen without TLS (e.g. behind a TLS proxy)")
	fs.BoolVar(&o.ReadOnly, "readonly", false, "reject every action over the API")
	fs.BoolVar(&o.AllowPrune, "allow-prune", false, allowPruneUsage)
	fs.StringVar(&o.ReplicaID, "replica-id", "", "this replica's `id` when the config sets hub.coordination, unique among the replicas (default $POD_NAME, then the host name)")
	fs.StringVar(&o.AdvertiseAddress, "advertise-address", "", "`host:port` at which the other replicas and attach reach this replica's API (default: the --listen address bound)")
	fs.StringVar(&o.level, "log-level", "info", "log `level`: debug, info, warn, error")
	addKubeconfigFlag(fs, &o.kubeconfig)
}

// validate checks the flags once parsed; every error is a usage error.
func (o *serveOptions) validate() error {
	switch o.File {
	case "":
		return usageError("serve: -f FILE is required")
	case "-":
		return usageError("serve: -f -: serve reads its config file again on every reload: give a file")
	}
	if err := o.LogLevel.UnmarshalText([]byte(o.level)); err != nil {
		return usageError("serve: --log-level: %v", err)
	}
	if err := o.Validate(); err != nil {
		return usageError("serve: %v", err)
	}
	return nil
}

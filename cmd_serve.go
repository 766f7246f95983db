package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/sourcegraph/conc"
	"k8s.io/klog/v2"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub/api"
)

// serveOptions are the flags of `driftwatch serve`.
type serveOptions struct {
	file       string
	listen     string
	readOnly   bool
	allowPrune bool
	logLevel   slog.Level
}

// defaultListen is serve's default address; `driftwatch reload` talks to it
// by default.
const defaultListen = "127.0.0.1:7070"

func parseServe(args []string, stderr io.Writer) (serveOptions, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o serveOptions
	fs.StringVar(&o.file, "f", "", "config file (required)")
	fs.StringVar(&o.listen, "listen", defaultListen, "HTTP address for the API, /metrics, /healthz and /readyz")
	fs.BoolVar(&o.readOnly, "readonly", false, "reject every action over the API")
	fs.BoolVar(&o.allowPrune, "allow-prune", false, allowPruneUsage)
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return o, usageError("serve: %v", err)
	}
	if o.file == "" {
		return o, usageError("serve: -f FILE is required")
	}
	if fs.NArg() > 0 {
		return o, usageError("serve: unexpected arguments %v", fs.Args())
	}
	if err := o.logLevel.UnmarshalText([]byte(*level)); err != nil {
		return o, usageError("serve: -log-level: %v", err)
	}
	return o, nil
}

// runServe is `driftwatch serve -f FILE`: the hub without a UI, JSON logs on
// stderr, the HTTP API. SIGHUP (and `driftwatch reload`) reloads the
// config; SIGTERM (ctx) stops it.
func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parseServe(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: o.logLevel}))
	klog.SetSlogLogger(log.With("component", "client-go"))
	cfg, err := config.Load(o.file, config.LoadOptions{Getenv: getenv})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return &exitError{code: 1}
	}
	stateFile, err := stateFileFor(cfg, getenv)
	if err != nil {
		return startError("serve", err)
	}
	a, err := newApp(cfg, appOptions{log: log, loadOpts: config.LoadOptions{Getenv: getenv},
		stateFile: stateFile, allowPrune: o.allowPrune})
	if err != nil {
		return startError("serve", err)
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return errors.Join(fmt.Errorf("serve: listen %s: %w", o.listen, err), a.Close())
	}
	log.Info("driftwatch serving", "config", o.file, "listen", ln.Addr().String(), "clusters", len(cfg.Clusters), "applications", len(cfg.Applications))
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	err = serveApp(ctx, a, ln, o.readOnly, log)
	return errors.Join(err, a.Close())
}

// serveApp runs the app with its HTTP server on ln and SIGHUP reloads until
// ctx ends, then shuts everything down and waits for it.
func serveApp(ctx context.Context, a *app, ln net.Listener, readOnly bool, log *slog.Logger) error {
	srv := &http.Server{
		Handler:           api.Handler(a.hub, api.Options{ReadOnly: readOnly, Ready: a.ready, Reload: a.Reload, Logger: log}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	var wg conc.WaitGroup
	var appErr, srvErr error
	wg.Go(func() { appErr = a.Run(ctx) })
	wg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			srvErr = err
		}
	})
	wg.Go(a.reloadOnSIGHUP(ctx))
	<-ctx.Done()
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	wg.Wait()
	log.Info("stopped")
	return errors.Join(appErr, srvErr)
}

package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sourcegraph/conc"
	"k8s.io/klog/v2"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub/api"
	"github.com/driftwatch/driftwatch/internal/safefile"
)

// serveOptions are the flags of `driftwatch serve`.
type serveOptions struct {
	file           string
	listen         string
	probeListen    string
	tokenFile      string
	tlsCertFile    string
	tlsKeyFile     string
	insecureListen bool
	readOnly       bool
	allowPrune     bool
	logLevel       slog.Level
}

// defaultListen is serve's default API address; `driftwatch reload` talks
// to it by default.
const defaultListen = "127.0.0.1:7070"

// defaultProbeListen is serve's default address for probes and metrics.
const defaultProbeListen = "127.0.0.1:7071"

// Server limits. The write timeout bounds every answer but the watch
// stream's (its handler clears its deadline) and a reload's (which
// extends it); reads of a request, headers included, are bounded too, and
// idle keep-alive connections are closed.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 64 << 10
)

func parseServe(args []string, stderr io.Writer) (serveOptions, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o serveOptions
	fs.StringVar(&o.file, "f", "", "config file (required)")
	fs.StringVar(&o.listen, "listen", defaultListen, "address of the HTTP API (a non-loopback one needs TLS or --insecure-listen)")
	fs.StringVar(&o.probeListen, "probe-listen", defaultProbeListen, "address of /healthz, /readyz and /metrics, which need no token: keep it on a private network")
	fs.StringVar(&o.tokenFile, "token-file", "", "bearer tokens, one <token> <role> [name] per line, role viewer or operator, mode 0600 (default: an operator token made on the first start in $XDG_STATE_HOME/driftwatch/tokens)")
	fs.StringVar(&o.tlsCertFile, "tls-cert-file", "", "serve the API over TLS with this PEM certificate (reloaded when it changes)")
	fs.StringVar(&o.tlsKeyFile, "tls-key-file", "", "PEM private key of --tls-cert-file")
	fs.BoolVar(&o.insecureListen, "insecure-listen", false, "allow a non-loopback --listen without TLS (e.g. behind a TLS proxy)")
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
	if (o.tlsCertFile == "") != (o.tlsKeyFile == "") {
		return o, usageError("serve: --tls-cert-file and --tls-key-file go together")
	}
	loopback, err := isLoopback(o.listen)
	if err != nil {
		return o, usageError("serve: --listen %s: %v", o.listen, err)
	}
	if !loopback && o.tlsCertFile == "" && !o.insecureListen {
		return o, usageError("serve: --listen %s is not a loopback address and would send tokens in clear text: set --tls-cert-file and --tls-key-file, or --insecure-listen if a TLS proxy is in front", o.listen)
	}
	return o, nil
}

// isLoopback reports whether a listen address only accepts local
// connections: a loopback IP or "localhost". An empty host (every
// interface) and other names are not.
func isLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// runServe is `driftwatch serve -f FILE`: the hub without a UI, JSON logs on
// stderr, the HTTP API (with bearer tokens) and a separate listener for
// probes and metrics. SIGHUP (and `driftwatch reload`) reloads the config;
// SIGTERM (ctx) stops it.
func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parseServe(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: o.logLevel}))
	cfg, err := config.Load(o.file, config.LoadOptions{Getenv: getenv})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return &exitError{code: 1}
	}
	var tlsCfg *tls.Config
	if o.tlsCertFile != "" {
		r, err := newCertReloader(o.tlsCertFile, o.tlsKeyFile, log)
		if err != nil {
			return &exitError{code: 1, err: fmt.Errorf("serve: %w", err)}
		}
		tlsCfg = r.tlsConfig()
	}
	tokens, err := serveTokens(o.tokenFile, getenv, log)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("serve: %w", err)}
	}
	stateFile, err := stateFileFor(cfg, getenv)
	if err != nil {
		return startError("serve", err)
	}
	// klog's logger is global: set it only once the checks above passed,
	// just before client-go starts.
	klog.SetSlogLogger(log.With("component", "client-go"))
	a, err := newApp(cfg, appOptions{log: log, loadOpts: config.LoadOptions{Getenv: getenv},
		stateFile: stateFile, allowPrune: o.allowPrune})
	if err != nil {
		return startError("serve", err)
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return errors.Join(fmt.Errorf("serve: listen %s: %w", o.listen, err), a.Close())
	}
	probeLn, err := net.Listen("tcp", o.probeListen)
	if err != nil {
		return errors.Join(fmt.Errorf("serve: --probe-listen %s: %w", o.probeListen, err), ln.Close(), a.Close())
	}
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	log.Info("driftwatch serving", "config", o.file, "listen", ln.Addr().String(), "tls", tlsCfg != nil,
		"probeListen", probeLn.Addr().String(), "tokens", tokens.Len(), "clusters", len(cfg.Clusters), "applications", len(cfg.Applications))
	fmt.Fprintf(stdout, "listening on %s://%s\n", scheme, ln.Addr())
	fmt.Fprintf(stdout, "probes and metrics on http://%s\n", probeLn.Addr())
	err = serveApp(ctx, a, serveSetup{api: ln, probes: probeLn, tls: tlsCfg, tokens: tokens, readOnly: o.readOnly}, log)
	return errors.Join(err, a.Close())
}

// serveTokens returns the tokens the API accepts: those of tokenFile, else
// those of the default token file, made with one random operator token
// (named "default") on the first start. It logs which file, never a token.
func serveTokens(tokenFile string, getenv func(string) string, log *slog.Logger) (*api.Tokens, error) {
	if tokenFile != "" {
		t, err := api.LoadTokens(tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		log.Info("API tokens loaded", "file", tokenFile, "tokens", t.Len())
		return t, nil
	}
	path := defaultTokenFile(getenv)
	if path == "" {
		return nil, errors.New("no --token-file, and no default token file (neither XDG_STATE_HOME nor HOME is an absolute folder)")
	}
	data, err := safefile.ReadPrivate(path)
	created := false
	if errors.Is(err, fs.ErrNotExist) {
		if created, err = ensureTokenFile(path); err != nil {
			return nil, fmt.Errorf("default token file: %w", err)
		}
		data, err = safefile.ReadPrivate(path)
	}
	if err != nil {
		return nil, fmt.Errorf("default token file: %w", err)
	}
	t, err := api.ParseTokens(path, data)
	if err != nil {
		return nil, fmt.Errorf("default token file: %w", err)
	}
	if created {
		log.Info("created an operator token for the API; clients on this machine use it by default", "file", path)
	} else {
		log.Info("API tokens loaded", "file", path, "tokens", t.Len())
	}
	return t, nil
}

// ensureTokenFile creates the default token file with a new operator token
// unless it exists, and reports whether it created it. The file is written
// whole under a temporary name and linked into place, so a concurrent
// start never reads it half written nor replaces it (link fails when path
// exists).
func ensureTokenFile(path string) (bool, error) {
	tok, err := api.NewToken()
	if err != nil {
		return false, err
	}
	tmp := path + ".new." + strconv.Itoa(os.Getpid())
	f, err := safefile.OpenPrivate(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp)
	content := "# The operator token driftwatch serve made on its first start. `driftwatch attach`\n" +
		"# and `driftwatch reload` use it on this machine. Lines: <token> <role> [name].\n" +
		tok + " operator default\n"
	_, err = io.WriteString(f, content)
	err = errors.Join(err, f.Sync(), f.Close())
	if err != nil {
		return false, fmt.Errorf("write %s: %w", tmp, err)
	}
	switch err := os.Link(tmp, path); {
	case errors.Is(err, fs.ErrExist):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, syncDir(filepath.Dir(path))
}

// syncDir makes a new link in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// serveSetup is what serveApp serves on.
type serveSetup struct {
	// api serves the API; probes serves /healthz, /readyz and /metrics.
	api, probes net.Listener
	// tls, when set, serves the API over TLS (probes stay plain HTTP).
	tls *tls.Config
	// tokens authenticate the API's callers.
	tokens   *api.Tokens
	readOnly bool
}

// serveApp runs the app with its API and probe servers and SIGHUP reloads
// until ctx ends, then shuts everything down and waits for it.
func serveApp(ctx context.Context, a *app, s serveSetup, log *slog.Logger) error {
	opts := api.Options{Tokens: s.tokens, ReadOnly: s.readOnly, Ready: a.ready, Reload: a.Reload, Logger: log}
	errLog := slog.NewLogLogger(log.With("component", "http").Handler(), slog.LevelWarn)
	apiServer := api.NewServer(a.hub, opts)
	apiSrv := &http.Server{
		Handler:           apiServer.Handler(),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          errLog,
		TLSConfig:         s.tls,
	}
	probeSrv := &http.Server{
		Handler:           api.ProbeHandler(a.hub, opts),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          errLog,
	}
	var wg conc.WaitGroup
	var appErr, apiErr, probeErr error
	wg.Go(func() { appErr = a.Run(ctx) })
	serve := func(srv *http.Server, ln net.Listener, errp *error) func() {
		return func() {
			var err error
			if srv.TLSConfig != nil {
				err = srv.ServeTLS(ln, "", "") // the certificate comes from GetCertificate
			} else {
				err = srv.Serve(ln)
			}
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				*errp = err
			}
		}
	}
	wg.Go(serve(apiSrv, s.api, &apiErr))
	wg.Go(serve(probeSrv, s.probes, &probeErr))
	wg.Go(a.reloadOnSIGHUP(ctx))
	<-ctx.Done()
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = apiServer.Close() // ends the watch streams, which never go idle
	_ = apiSrv.Shutdown(shutdownCtx)
	_ = probeSrv.Shutdown(shutdownCtx)
	wg.Wait()
	log.Info("stopped")
	return errors.Join(appErr, apiErr, probeErr)
}

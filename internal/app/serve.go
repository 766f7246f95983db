package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sourcegraph/conc"
	"k8s.io/klog/v2"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/config/manifest"
	"github.com/driftwatch/driftwatch/internal/api"
	"github.com/driftwatch/driftwatch/internal/coord"
	"github.com/driftwatch/driftwatch/internal/safefile"
	"github.com/driftwatch/driftwatch/tui"
)

// ServeOptions are the settings of Serve (the flags of driftwatch serve).
type ServeOptions struct {
	// File is the config file.
	File string
	// Listen is the API's address, ProbeListen that of the probes and
	// metrics (DefaultListen, DefaultProbeListen).
	Listen, ProbeListen string
	// TokenFile holds the API's bearer tokens; "" uses the default token
	// file, made with an operator token on the first start.
	TokenFile string
	// TLSCertFile and TLSKeyFile, when set, serve the API over TLS
	// (reloaded when the files change).
	TLSCertFile, TLSKeyFile string
	// InsecureListen allows a Listen beyond loopback without TLS (a TLS
	// proxy in front).
	InsecureListen bool
	// ReadOnly rejects every action over the API.
	ReadOnly bool
	// AllowPrune confirms an initial desired state the prune guard would
	// refuse.
	AllowPrune bool
	// LogLevel is the level of the JSON logs on stderr.
	LogLevel slog.Level
	// ReplicaID names this replica when the config sets
	// hub.coordination; "" means $POD_NAME, else the host name.
	ReplicaID string
	// AdvertiseAddress is the API address the other replicas and attach
	// reach this one at; "" means the address Listen bound.
	AdvertiseAddress string
}

// DefaultListen is serve's default API address; `driftwatch reload` talks
// to it by default.
const DefaultListen = "127.0.0.1:7070"

// DefaultProbeListen is serve's default address for probes and metrics.
const DefaultProbeListen = "127.0.0.1:7071"

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

// Validate checks the addresses and the TLS files: the API may listen
// beyond loopback only with TLS or InsecureListen, which would send tokens
// in clear text; the API and the probes need addresses of their own; the
// TLS files go together.
func (o ServeOptions) Validate() error {
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		return errors.New("--tls-cert-file and --tls-key-file go together")
	}
	loopback, err := isLoopback(o.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.Listen, err)
	}
	if !loopback && o.TLSCertFile == "" && !o.InsecureListen {
		return fmt.Errorf("--listen %s is not a loopback address and would send tokens in clear text: set --tls-cert-file and --tls-key-file, or --insecure-listen if a TLS proxy is in front", o.Listen)
	}
	if sameListenAddress(o.Listen, o.ProbeListen) {
		return fmt.Errorf("--listen %s and --probe-listen %s name the same address: the API and the probes each need their own port (the probes' default is %s)",
			o.Listen, o.ProbeListen, DefaultProbeListen)
	}
	return nil
}

// sameListenAddress reports whether two listen addresses cannot both be
// bound: the same port (not 0, which picks a free one) on the same host,
// localhost being 127.0.0.1, or either on every interface ("", 0.0.0.0,
// ::).
func sameListenAddress(a, b string) bool {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil || pa != pb || pa == "0" {
		return false
	}
	host := func(h string) string {
		if h == "localhost" {
			return "127.0.0.1"
		}
		if ip := net.ParseIP(h); ip != nil {
			if ip.IsUnspecified() {
				return ""
			}
			return ip.String()
		}
		return h
	}
	ha, hb = host(ha), host(hb)
	return ha == hb || ha == "" || hb == ""
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

// Serve is `driftwatch serve -f FILE`: the hub without a UI, JSON logs on
// stderr, the HTTP API (with bearer tokens) and a separate listener for
// probes and metrics. SIGHUP (and `driftwatch reload`) reloads the config;
// SIGTERM (ctx) stops it.
func Serve(ctx context.Context, o ServeOptions, env Env) error {
	getenv, stdout, stderr := env.Getenv, env.Stdout, env.Stderr
	log := slog.New(slog.NewJSONHandler(stderr, logOptions(o.LogLevel)))
	git := NewGitSources(log.With("component", "git"), getenv)
	loadOpts := git.LoadOptions(config.LoadOptions{Getenv: getenv, IsolateSources: true, RenderSandbox: manifest.Self()})
	cfg, err := config.Load(o.File, loadOpts)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return errors.Join(&ExitError{Code: 1}, git.Close())
	}
	var tlsCfg *tls.Config
	if o.TLSCertFile != "" {
		r, err := newCertReloader(o.TLSCertFile, o.TLSKeyFile, log)
		if err != nil {
			return &ExitError{Code: 1, Err: fmt.Errorf("serve: %w", err)}
		}
		tlsCfg = r.tlsConfig()
	}
	tokens, err := serveTokens(o.TokenFile, getenv, log)
	if err != nil {
		return &ExitError{Code: 1, Err: fmt.Errorf("serve: %w", err)}
	}
	stateFile, err := StateFile(cfg, getenv)
	if err != nil {
		return StartError("serve", err)
	}
	replicaID := ""
	if cfg.Hub.Coordination != nil {
		if replicaID, err = ResolveReplicaID(o.ReplicaID, getenv); err != nil {
			return StartError("serve", err)
		}
	}
	// klog's logger is global: set it only once the checks above passed,
	// just before client-go starts.
	klog.SetSlogLogger(log.With("component", "client-go"))
	a, err := New(cfg, Options{Logger: log, LoadOptions: loadOpts, Git: git,
		StateFile: stateFile, AllowPrune: o.AllowPrune, ReplicaID: replicaID})
	if err != nil {
		return StartError("serve", err)
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return errors.Join(fmt.Errorf("serve: listen %s: %w", o.Listen, err), a.Close())
	}
	probeLn, err := net.Listen("tcp", o.ProbeListen)
	if err != nil {
		return errors.Join(fmt.Errorf("serve: --probe-listen %s: %w", o.ProbeListen, err), ln.Close(), a.Close())
	}
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	if a.rep != nil {
		addr := o.AdvertiseAddress
		if addr == "" {
			addr = ln.Addr().String()
		}
		a.rep.coord.SetAddress(scheme + "://" + addr)
		log.Info("running as a replica", "replica", replicaID, "namespace", cfg.Hub.Coordination.Namespace, "advertise", scheme+"://"+addr)
	}
	log.Info("driftwatch serving", "config", o.File, "listen", ln.Addr().String(), "tls", tlsCfg != nil,
		"probeListen", probeLn.Addr().String(), "tokens", tokens.Len(), "clusters", len(cfg.Clusters), "applications", len(cfg.Applications))
	fmt.Fprintf(stdout, "listening on %s://%s\n", scheme, ln.Addr())
	fmt.Fprintf(stdout, "probes and metrics on http://%s\n", probeLn.Addr())
	err = serveApp(ctx, a, serveSetup{api: ln, probes: probeLn, tls: tlsCfg, tokens: tokens, readOnly: o.ReadOnly}, log)
	if errors.Is(err, coord.ErrDuplicateReplica) {
		err = &ExitError{Code: 1, Err: fmt.Errorf("serve: %w; set a unique --replica-id (the default is $POD_NAME, then the host name)", err)}
	}
	return errors.Join(err, a.Close())
}

// serveTokens returns the tokens the API accepts: those of tokenFile, else
// those of the default token file, made with one random operator token on
// the first start, named after the user it belongs to (the file is theirs
// alone: see defaultTokenName). It logs which file, never a token.
func serveTokens(tokenFile string, getenv func(string) string, log *slog.Logger) (*api.Tokens, error) {
	if tokenFile != "" {
		t, err := api.LoadTokens(tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		log.Info("API tokens loaded", "file", tokenFile, "tokens", t.Len())
		return t, nil
	}
	path := DefaultTokenFile(getenv)
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

// defaultTokenName is the name of the default token: the user running the
// hub, whose alone the file is (mode 0600), so what the hub logs and notes
// a pause or a hold by says who; a name a token file cannot hold (white
// space) has it replaced by '-', and none is "default".
func defaultTokenName(user string) string {
	name := strings.Join(strings.Fields(user), "-")
	if name == "" || name == "local" {
		return "default"
	}
	return name
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
		tok + " operator " + defaultTokenName(tui.LocalUser()) + "\n"
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
func serveApp(ctx context.Context, a *App, s serveSetup, log *slog.Logger) error {
	opts := a.apiOptions(s.tokens, s.readOnly, log)
	apiSrv := newAPIServer(a, opts, s.tls)
	probeSrv := newHTTPServer(api.ProbeHandler(a.hub, opts), nil, httpErrorLog(log))
	var wg conc.WaitGroup
	var appErr, apiErr, probeErr error
	appDone := make(chan struct{})
	wg.Go(func() {
		defer close(appDone)
		appErr = a.Run(ctx)
	})
	wg.Go(func() { apiErr = apiSrv.serve(s.api) })
	wg.Go(func() { probeErr = serveHTTP(probeSrv, s.probes) })
	reloadCtx, stopReload := context.WithCancel(ctx)
	defer stopReload()
	wg.Go(a.ReloadOnSIGHUP(reloadCtx))
	// The app ends before ctx only on an error (a replica id another live
	// process holds): the servers stop then too.
	select {
	case <-ctx.Done():
	case <-appDone:
	}
	stopReload()
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	apiSrv.shutdown(shutdownCtx)
	_ = probeSrv.Shutdown(shutdownCtx)
	wg.Wait()
	log.Info("stopped")
	return errors.Join(appErr, apiErr, probeErr)
}

// apiServer is the API's HTTP server: its handler (with the watch streams
// it keeps) and the server's limits.
type apiServer struct {
	api *api.Server
	srv *http.Server
}

// apiOptions are the options of a's API with tokens (readOnly: every
// token a viewer's): its readiness, reloads, replicas and Git webhooks.
func (a *App) apiOptions(tokens *api.Tokens, readOnly bool, log *slog.Logger) api.Options {
	opts := api.Options{Tokens: tokens, ReadOnly: readOnly, Ready: a.Ready, Reload: a.Reload, Logger: log}
	if a.rep != nil {
		opts.Replicas = a.rep.apiReplicas
	}
	if a.git != nil {
		opts.GitWebhook = a.git.WebhookHandler()
	}
	return opts
}

// httpErrorLog is the error log of the hub's HTTP servers: log's, at
// warning level.
func httpErrorLog(log *slog.Logger) *stdlog.Logger {
	return slog.NewLogLogger(log.With("component", "http").Handler(), slog.LevelWarn)
}

// newAPIServer returns the API of a's hub with opts (its Logger also the
// server's error log), over TLS when tlsCfg is set.
func newAPIServer(a *App, opts api.Options, tlsCfg *tls.Config) *apiServer {
	as := api.NewServer(a.hub, opts)
	return &apiServer{api: as, srv: newHTTPServer(as.Handler(), tlsCfg, httpErrorLog(opts.Logger))}
}

// newHTTPServer returns a server of h with the hub's limits (timeouts,
// header size), over TLS when tlsCfg is set.
func newHTTPServer(h http.Handler, tlsCfg *tls.Config, errLog *stdlog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          errLog,
		TLSConfig:         tlsCfg,
	}
}

// serveHTTP serves srv on ln (over TLS when it has a TLS config, whose
// GetCertificate gives the certificate) until it is shut down; an error
// other than the shutdown's is returned.
func serveHTTP(srv *http.Server, ln net.Listener) error {
	var err error
	if srv.TLSConfig != nil {
		err = srv.ServeTLS(ln, "", "")
	} else {
		err = srv.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// serve serves the API on ln until shutdown (see serveHTTP).
func (s *apiServer) serve(ln net.Listener) error { return serveHTTP(s.srv, ln) }

// shutdown ends the watch streams (which never go idle), then lets the
// other requests finish until ctx ends.
func (s *apiServer) shutdown(ctx context.Context) {
	_ = s.api.Close()
	_ = s.srv.Shutdown(ctx)
}

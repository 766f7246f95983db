package app

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/conc"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/config/manifest"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/driftgen"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/safefile"
	"github.com/driftwatch/driftwatch/internal/termtext"
	"github.com/driftwatch/driftwatch/tui"
)

// EnvBinDir points at prebuilt control-plane binaries (scripts/test.sh sets
// it); without it the demo builds them with the embedded script.
const EnvBinDir = "DRIFTWATCH_BIN_DIR"

// BinDir returns the control-plane binaries folder: $DRIFTWATCH_BIN_DIR,
// else the folder env.BuildScript prints once it built the binaries
// (progress on stderr).
func BinDir(ctx context.Context, env Env) (string, error) {
	if d := env.Getenv(EnvBinDir); d != "" {
		return d, nil
	}
	if len(env.BuildScript) == 0 {
		return "", fmt.Errorf("no control-plane binaries: set %s", EnvBinDir)
	}
	cmd := exec.CommandContext(ctx, "bash", "-s", "k8s") // the control plane only
	cmd.Stdin = bytes.NewReader(env.BuildScript)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = env.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build the local control-plane binaries: %w", err)
	}
	return strings.TrimSpace(out.String()), nil
}

// demoClusterNames are the demo's three local clusters (labels in the
// demo config).
func demoClusterNames() []string { return []string{"prod-eu", "prod-us", "staging-eu"} }

// demoConfigText is the demo's config: its state file, the three clusters'
// kubeconfigs and the URL of the inventory service's Git repository.
func demoConfigText(stateFile string, kubeconfigs []string, repoURL string) string {
	return fmt.Sprintf(demoConfig, stateFile, kubeconfigs[0], kubeconfigs[1], kubeconfigs[2], repoURL)
}

// demoConfig is the demo's config (see demoConfigText).
const demoConfig = `# driftwatch demo: three local clusters, five applications and the
# inventory service's own manifests from its Git repository (a kustomize
# overlay per environment; the demo commits a release from time to time);
# a fake autoscaler (field manager demo-autoscaler) scales storefront and
# checkout on prod-eu, and the inventory HPA scales its StatefulSet on the
# production clusters.
hub:
  id: demo-hub
  stateFile: %s
  resync: 5m
  workers: 4
clusters:
  - id: prod-eu
    kubeconfig: %s
    labels: {env: prod, region: eu}
  - id: prod-us
    kubeconfig: %s
    labels: {env: prod, region: us}
  - id: staging-eu
    kubeconfig: %s
    labels: {env: staging, region: eu}
applications:
  - id: storefront
    namespace: shop
    selector: env=prod
    image: registry.example/storefront:1.4.2
    replicas: 3
    port: 8080
    env: {MODE: production}
    config: {CURRENCY: EUR, FEATURE_SEARCH: "on"}
    ignore:
      # The demo's autoscaler scales storefront on prod-eu: spec.replicas is
      # its while it owns the field. checkout on prod-eu, scaled by the same
      # autoscaler without such a rule, shows as contested.
      - name: autoscaler
        managers: [demo-autoscaler]
        paths: ["/spec/replicas"]
        kinds: [Deployment]
  - id: checkout
    namespace: shop
    selector: env in (prod, staging)
    image: registry.example/checkout:2.0.1
    replicas: 2
    port: 9090
  - id: catalog
    namespace: shop
    selector: region=eu
    image: registry.example/catalog:0.9.0
    replicas: 2
    port: 8081
    config: {CACHE_TTL: 30s}
  - id: ledger
    tenancy: "acme:eu"
    namespace: finance
    clusters: [prod-eu]
    image: registry.example/ledger:5.1.0
    port: 7000
  # Cannot become available: no node has disk=none. It shows as stuck once
  # its progress deadline passes.
  - id: nightly-report
    namespace: batch
    clusters: [staging-eu]
    image: registry.example/report:1.0.0
    progressDeadlineSeconds: 20
    nodeSelector: {disk: none}
sources:
  # The inventory service as its team keeps it in Git: a kustomize base and
  # one overlay per environment, each cluster getting the overlay its env
  # label names: a StatefulSet, a CronJob, an HPA, RBAC and more.
  - id: inventory
    git: {url: "%s", ref: main}
    kustomize: overlays/${cluster.labels.env}
    selector: env in (prod, staging)
    namespace: inventory
    ignore:
      # The HPA owns the StatefulSet's replicas (2 to 6 on production).
      - name: autoscaler
        paths: ["/spec/replicas"]
        kinds: [StatefulSet.apps]
# What the hub does about an object is also written on it as a Kubernetes
# Event: kubectl describe shows DriftRepaired, RolloutStuck...
notifications:
  kubernetesEvents: {}
`

// demoAutoscaled are the Deployments the demo's fake autoscaler scales:
// storefront (its replicas ignored by a manager rule in demoConfig) and
// checkout (no rule: contested).
func demoAutoscaled() []hub.NodeID {
	return []hub.NodeID{
		hub.NewNodeID("prod-eu", "shop", "storefront", hub.KindDeployment),
		hub.NewNodeID("prod-eu", "shop", "checkout", hub.KindDeployment),
	}
}

// demoAutoscaleInterval is the time between the fake autoscaler's scales.
const demoAutoscaleInterval = 3 * time.Second

// demoStopGrace is how long each of the demo's control-plane processes gets
// to exit before it is killed: the demo ends within about two seconds.
const demoStopGrace = 300 * time.Millisecond

// DemoOptions are the settings of Demo (the flags of driftwatch demo).
type DemoOptions struct {
	// Headless runs without the TUI: every repair is a line on stdout.
	Headless bool
	// Interval is the time between generated drifts (positive).
	Interval time.Duration
	// UntilRepairs ends the demo once this many generated drifts were
	// repaired (0: run until ctx ends).
	UntilRepairs int
	// ReadOnly disables the TUI's actions.
	ReadOnly bool
	// Dir holds the clusters, the Terraform workspace, the config and the
	// log; "" makes a temporary folder, removed at the end.
	Dir string
	// Listen is where the demo's hub serves its API, as serve does (the
	// default token file's tokens), so that status, pause, hold and
	// attach can be tried on it from another terminal; "" serves none. An
	// address in use (a serve running) leaves the demo without an API,
	// said once, and goes on.
	Listen string
}

// Demo is `driftwatch demo`: three local clusters with fake nodes, a
// Terraform workspace of local files (when the tools of
// scripts/build-binaries.sh are built), a demo config, the hub, the TUI (or
// headless lines) and a drift generator.
func Demo(ctx context.Context, o DemoOptions, env Env) error {
	getenv, stdout, stderr := env.Getenv, env.Stdout, env.Stderr
	var err error
	if !o.Headless && !hasTerminal(env) {
		return noTerminal("demo: ", "run driftwatch demo --headless, which prints drift and repairs as lines")
	}
	// A hangup ends the demo and its clusters, as q and Ctrl-C do.
	ctx, stopHangup := tui.NotifyHangup(ctx)
	defer stopHangup()
	dir := o.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "driftwatch-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	// Logs: JSON on stderr when headless, a file while the TUI runs.
	var log *slog.Logger
	if o.Headless {
		log = slog.New(slog.NewJSONHandler(stderr, logOptions(slog.LevelWarn)))
	} else {
		w, err := safefile.NewRotatingWriter(filepath.Join(dir, "driftwatch.log"), logMaxBytes, logKeep)
		if err != nil {
			return fmt.Errorf("demo: log file: %w", err)
		}
		defer w.Close()
		log = slog.New(slog.NewJSONHandler(w, logOptions(nil)))
	}
	klog.SetSlogLogger(log.With("component", "client-go"))
	progress := func(format string, a ...any) { fmt.Fprintf(stderr, "demo: "+format+"\n", a...) }

	bins, err := BinDir(ctx, env)
	if err != nil {
		return err
	}
	progress("starting 3 local clusters (etcd, kube-apiserver, controller manager, scheduler, kwok) in %s", dir)
	names := demoClusterNames()
	set, err := localcluster.Start(ctx, localcluster.Options{
		Count: len(names), Names: names, BinDir: bins, Dir: filepath.Join(dir, "clusters"), Full: true, Nodes: 2,
		// Disposable: they go with the demo, within its exit budget.
		StopGrace: demoStopGrace,
		Logger:    slog.New(slog.NewTextHandler(stderr, logOptions(slog.LevelInfo))),
	})
	if err != nil {
		return fmt.Errorf("demo: start local clusters: %w", err)
	}
	stopClusters := sync.OnceFunc(func() {
		progress("stopping the local clusters")
		_ = set.Stop()
	})
	defer stopClusters()
	// A Terraform workspace of local files beside the clusters, when the
	// tools are built.
	ws, err := setupDemoWorkspace(ctx, dir, getenv)
	status := "" // the TUI's first status message
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		status = fmt.Sprintf("no Terraform workspace: %v", err)
		progress("%s", status)
		log.Warn("demo: no Terraform workspace", "err", err)
	case ws == nil:
		status = demoToolsHint
		progress("%s", demoToolsHint)
		log.Info("demo: " + demoToolsHint)
	default:
		progress("Terraform workspace %s initialised and applied in %s", demoWorkspaceID, ws.Dir)
	}
	repo, err := newDemoRepo(filepath.Join(dir, "inventory-repo"))
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	progress("the inventory service's manifests are in the Git repository %s; a release is committed every %s", repo.dir, demoReleaseInterval)
	cfgPath := filepath.Join(dir, "demo.yaml")
	stateFile := filepath.Join(dir, "state.db")
	cfgText := demoConfigText(stateFile, []string{set.Clusters[0].Kubeconfig, set.Clusters[1].Kubeconfig, set.Clusters[2].Kubeconfig}, repo.url())
	gitSources := NewGitSources(log.With("component", "git"), getenv)
	loadOpts := gitSources.LoadOptions(config.LoadOptions{Getenv: getenv, IsolateSources: true, RenderSandbox: manifest.Self()})
	appOpts := Options{Logger: log, StateFile: stateFile, LoadOptions: loadOpts, Git: gitSources}
	var wsFiles map[string]string
	if ws != nil {
		cfgText += demoTerraformSection(ws.Dir)
		appOpts.TerraformEnv, appOpts.TerraformStopGrace = ws.Env, demoTerraformStopGrace
		wsFiles = ws.Files
	}
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o600); err != nil {
		return err
	}
	cfg, err := config.Load(cfgPath, loadOpts)
	if err != nil {
		return errors.Join(fmt.Errorf("demo config: %w", err), gitSources.Close())
	}
	progress("config written to %s; starting the hub", cfgPath)
	// The demo's state stays in its own folder, never the user's.
	a, err := New(cfg, appOpts)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer a.Close()
	clients := make(map[string]kubernetes.Interface, len(set.Clusters))
	for _, lc := range set.Clusters {
		rc := lc.RESTConfig()
		rc.UserAgent = driftgen.FieldManager
		c, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return err
		}
		clients[lc.Name] = c
	}
	gen := driftgen.New(clients, uint64(time.Now().UnixNano()))
	dyn, err := demoDynamic(set)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	gen.SetDynamic(dyn)
	targets := func() []driftgen.Target {
		var ts []driftgen.Target
		for _, n := range a.hub.Snapshot().Nodes {
			if n.Application != "nightly-report" && n.Status == hub.StatusInSync &&
				(n.ID.Cluster != demoWorkspaceID || wsFiles[n.ID.Resource] != "") {
				// The workspace's files are edited rather than patched.
				ts = append(ts, driftgen.Target{ID: n.ID, Kind: n.Kind, File: wsFiles[n.ID.Resource]})
			}
		}
		return ts
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	tracker := newRepairTracker()
	var wg conc.WaitGroup
	var appErr error
	wg.Go(func() { appErr = a.Run(runCtx) })
	wg.Go(func() {
		// Let the hub create everything before breaking it.
		select {
		case <-runCtx.Done():
			return
		case <-time.After(3 * time.Second):
		}
		gen.Run(runCtx, o.Interval, targets, func(d driftgen.Drift) {
			tracker.add(d)
			if d.Err != nil {
				log.Warn("drift generator", "err", d.Err)
			}
		})
	})
	// The fake autoscaler: storefront's replicas are ignored, checkout's
	// are fought over.
	autoscaler := driftgen.NewAutoscaler(clients, demoAutoscaled(), 4, 5)
	wg.Go(func() {
		autoscaler.Run(runCtx, demoAutoscaleInterval, func(err error) { log.Warn("demo autoscaler", "err", err) })
	})
	// The inventory team releases: a commit, then a fetch at once.
	wg.Go(func() {
		repo.runReleases(runCtx, demoReleaseInterval, gitSources, func(err error) { log.Warn("demo release", "err", err) })
	})
	var demoAPI *apiServer
	if o.Listen != "" {
		var url string
		if demoAPI, url, err = serveDemoAPI(a, o, getenv, log, &wg); err != nil {
			progress("no API: %v", err)
		} else {
			try := "driftwatch status"
			if url != "http://"+DefaultListen {
				try += " --server " + url
			}
			msg := fmt.Sprintf("API on %s: try %s in another terminal", url, try)
			progress("%s", msg)
			if status == "" {
				status = msg
			}
		}
	}
	var uiErr error
	if o.Headless {
		progress("headless: generated drift every %s; Ctrl-C stops everything", o.Interval)
		uiErr = demoHeadless(runCtx, a.hub, tracker, o.UntilRepairs, stdout)
	} else {
		uiErr = runDemoTUI(runCtx, a.hub, gen, o.ReadOnly, status, getenv)
	}
	stop()
	if demoAPI != nil {
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		demoAPI.shutdown(shutdownCtx)
		cancel()
	}
	// The clusters are the demo's own and disposable: they stop beside
	// the hub, not after it, so that the demo ends within its budget. The
	// hub starts no write once stopping; a call still in flight may fail,
	// and its watches end with errors in the demo's log.
	var stopping conc.WaitGroup
	stopping.Go(stopClusters)
	wg.Wait()
	stopping.Wait()
	if errors.Is(uiErr, tui.ErrHangup) {
		log.Warn("terminal gone: stopping the demo", "cause", uiErr.Error())
		uiErr = nil
	}
	if uiErr != nil && !errors.Is(uiErr, context.Canceled) {
		return uiErr
	}
	return appErr
}

// demoManifests are the inventory service's manifests the demo's source
// renders (written to the demo's folder, as a team's repository would hold
// them).
//
//go:embed demomanifests
var demoManifests embed.FS

// writeDemoManifests writes demoManifests into dir.
func writeDemoManifests(dir string) error {
	root, err := fs.Sub(demoManifests, "demomanifests")
	if err != nil {
		return err
	}
	if err := os.CopyFS(dir, root); err != nil {
		return fmt.Errorf("write the demo's manifests: %w", err)
	}
	return nil
}

// demoDynamic returns the drift generator's dynamic clients, for the kinds
// of the demo's manifest source.
func demoDynamic(set *localcluster.Set) (map[string]driftgen.Dynamic, error) {
	out := make(map[string]driftgen.Dynamic, len(set.Clusters))
	for _, lc := range set.Clusters {
		rc := lc.RESTConfig()
		rc.UserAgent = driftgen.FieldManager
		dc, err := dynamic.NewForConfig(rc)
		if err != nil {
			return nil, err
		}
		disc, err := discovery.NewDiscoveryClientForConfig(rc)
		if err != nil {
			return nil, err
		}
		mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
		// Discovery now, at setup: the mapper's first lookup reads every
		// API group and cannot be cancelled, so a drift made while the
		// demo stops must not be the one that pays for it.
		if _, err := mapper.RESTMapping(schema.GroupKind{Kind: "ConfigMap"}); err != nil {
			return nil, fmt.Errorf("cluster %q: discovery: %w", lc.Name, err)
		}
		out[lc.Name] = driftgen.Dynamic{Client: dc, Mapper: mapper}
	}
	return out, nil
}

// repairTracker matches generated drifts with the hub's repairs.
type repairTracker struct {
	mu      sync.Mutex
	pending map[hub.NodeID]driftgen.Drift
	done    int
}

func newRepairTracker() *repairTracker {
	return &repairTracker{pending: make(map[hub.NodeID]driftgen.Drift)}
}

func (r *repairTracker) add(d driftgen.Drift) {
	if d.Err != nil {
		return
	}
	r.mu.Lock()
	r.pending[d.ID] = d
	r.mu.Unlock()
}

// check returns the drifts the snapshot shows repaired (and forgets them).
func (r *repairTracker) check(s *hub.Snapshot) []hub.NodeStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []hub.NodeStatus
	for id, d := range r.pending {
		n, ok := s.Node(id)
		if !ok || n.LastRepair == nil || n.LastRepair.VerifiedAt.IsZero() || n.LastRepair.ObservedAt.Before(d.At.Add(-time.Second)) {
			continue
		}
		delete(r.pending, id)
		r.done++
		out = append(out, n)
	}
	return out
}

// demoHeadless prints every generated drift's repair as a line, until ctx
// ends or untilRepairs repairs were seen.
func demoHeadless(ctx context.Context, h *hub.Hub, tracker *repairTracker, untilRepairs int, stdout io.Writer) error {
	ch, cancel := h.Subscribe()
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case s := <-ch:
			for _, n := range tracker.check(s) {
				fmt.Fprintln(stdout, repairLine(n))
			}
			tracker.mu.Lock()
			done := tracker.done
			tracker.mu.Unlock()
			if untilRepairs > 0 && done >= untilRepairs {
				fmt.Fprintf(stdout, "demo: %d generated drifts repaired\n", done)
				return nil
			}
		}
	}
}

// repairLine is the headless line of a repaired node, "repaired <nodeid>:
// <drift> (by <manager>) detect <latency>, repaired <latency>", with the
// cluster's text cleaned for the terminal (termtext.Clean).
func repairLine(n hub.NodeStatus) string {
	r := n.LastRepair
	return termtext.Clean(fmt.Sprintf("repaired %s: %s (by %s) detect %s, repaired %s",
		n.ID, r.Drift.Summary(), attribution(r), r.DetectLatency().Round(time.Microsecond), r.RepairLatency().Round(time.Microsecond)))
}

func attribution(r *hub.Repair) string {
	if r.Attribution == nil {
		return "unknown"
	}
	return r.Attribution.Manager
}

// serveDemoAPI serves the demo hub's API as serve does on o.Listen, with
// the default token file's tokens (made on the first start, as serve makes
// it), on wg until its shutdown; it returns the URL it serves at.
func serveDemoAPI(a *App, o DemoOptions, getenv func(string) string, log *slog.Logger, wg *conc.WaitGroup) (*apiServer, string, error) {
	tokens, err := serveTokens("", getenv, log)
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, "", fmt.Errorf("%w (--listen takes another address)", err)
	}
	s := newAPIServer(a, a.apiOptions(tokens, o.ReadOnly, log), nil)
	wg.Go(func() {
		if err := s.serve(ln); err != nil {
			log.Warn("demo API", "err", err)
		}
	})
	return s, "http://" + ln.Addr().String(), nil
}

package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/sourcegraph/conc"
	"github.com/sourcegraph/conc/pool"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/driftgen"
	"github.com/driftwatch/driftwatch/internal/localcluster"
)

// Bench modes (Options.Mode).
const (
	ModeWatch = "watch"
	ModePoll  = "poll"
	ModeBurst = "burst"
	ModeAll   = "all"
	ModeScale = "scale"
	ModeFleet = "fleet"
	ModeMixed = "mixed"
)

// modeBurstOthers is the burst run's second hub (runReport.Others): the
// same burst with the other clusters drifting meanwhile.
const modeBurstOthers = "burst with the other clusters drifting"

// benchNamespace holds every object the bench manages.
const benchNamespace = "bench"

// benchHubID is the hub id of the bench's generated configs; the objects
// the bench creates before a hub starts are applied with that hub's field
// manager, so a fresh hub finds them as its own, as after a restart.
const benchHubID = "bench"

// benchMaxServices caps the Services per cluster: the local apiservers
// allocate ClusterIPs from a /24 (253 addresses).
const benchMaxServices = 200

// benchBurstWorkers is how many deletes of a burst are in flight at once.
const benchBurstWorkers = 32

// othersWindowFallback is how long the burst run's other clusters drift
// when the raw repair floor before the hub (the burst's length on this
// machine) was not measured.
const othersWindowFallback = time.Second

// othersRepairBar bounds the repair p99 of the other clusters' drifts
// during a burst: the watch run's bar, so that a drift on a quiet cluster
// never waits behind the burst's repairs (about a second here).
const othersRepairBar = 250 * time.Millisecond

// burstRepairFloorBar bounds the burst's all repaired in over its raw
// repair floor.
const burstRepairFloorBar = 1.5

// pinSplit splits a machine's cpus for --pin: every CPU but the last for
// the control planes, the last for this process.
func pinSplit(cpus int) (planes, self []int) {
	for c := range cpus - 1 {
		planes = append(planes, c)
	}
	return planes, []int{cpus - 1}
}

// cpuList formats CPU numbers as a list ("0, 1").
func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ", ")
}

// overFloor formats a figure's ratio to its floor, " (1.25x the what)",
// or "" when either was not measured.
func overFloor(d, floor msDuration, what string) string {
	if d <= 0 || floor <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%.2fx the %s)", float64(d)/float64(floor), what)
}

// Options are the settings of Run (the flags of driftwatch bench; their
// defaults are the command's).
type Options struct {
	// Mode is ModeWatch, ModePoll, ModeBurst, ModeAll, ModeScale,
	// ModeFleet, ModeMixed or ModeGit.
	Mode string
	// Clusters is how many local control planes to start (1 to 20); for
	// ModeFleet, how many cluster entries the config has (1 to 2000),
	// served by APIServers control planes.
	Clusters int
	// APIServers is how many local control planes serve the fleet's
	// entries (ModeFleet, 1 to 20).
	APIServers int
	// Objects is the managed objects per cluster (per entry for
	// ModeFleet).
	Objects int
	// Drifts is the drifts of the watch and poll runs, over all clusters,
	// made at Rate per second per cluster.
	Drifts int
	Rate   float64
	// Interval is the poll run's resync period.
	Interval time.Duration
	// Burst is the burst run's deletes on the first cluster.
	Burst int
	// Seed makes the drift schedule.
	Seed uint64
	// Output is "text" (a table; "table" is the same) or "json".
	Output string
	// QPS and Workers override the hub's client rate limit per cluster and
	// its reconcile workers (0: the config defaults).
	QPS     float64
	Workers int
	// Idle is how long the scale and fleet runs measure idle CPU.
	Idle time.Duration
	// Duration is how long the fleet run makes drift (Rate per second per
	// entry).
	Duration time.Duration
	// Dir holds the clusters and the configs; "" makes a temporary folder.
	Dir string
	// CPUProfile and MemProfile, when set, are where CPU and heap profiles
	// are written.
	CPUProfile, MemProfile string
	// Pin runs the control planes on every CPU but the last and this
	// process (the hub, the plain clients of the floors, the drift client
	// and the raw watch) on the last (Linux, 2 CPUs or more), so that the
	// hub and the apiservers never share a core, as in a real fleet.
	Pin bool
	// IdleCPUProfile, when set, is where a CPU profile of the scale and
	// fleet runs' idle window alone is written.
	IdleCPUProfile string
	// Chart, when set, is an SVG file to draw the latency distributions
	// and the burst's repairs over time to (package chart).
	Chart string
	// Baseline, with ModeMixed, also runs ModeScale's measures (the three
	// kinds) at the same object count in the same run, for the ratios.
	Baseline bool
	// Pushes is how many commits ModeGit pushes (each announced by a
	// webhook).
	Pushes int
}

// Validate checks the options; its errors say which flag is wrong.
func (o Options) Validate() error {
	switch {
	case !slices.Contains([]string{ModeWatch, ModePoll, ModeBurst, ModeAll, ModeScale, ModeFleet, ModeMixed, ModeGit}, o.Mode):
		return fmt.Errorf("--mode %q: want watch, poll, burst, all, scale, fleet, mixed or git", o.Mode)
	case o.Output != "text" && o.Output != "table" && o.Output != "json":
		return fmt.Errorf("-o %q: want text or json", o.Output)
	case o.Mode == ModeFleet && (o.Clusters < 1 || o.Clusters > 2000):
		return fmt.Errorf("--clusters must be between 1 and 2000 with --mode fleet")
	case o.Mode != ModeFleet && (o.Clusters < 1 || o.Clusters > 20):
		return fmt.Errorf("--clusters must be between 1 and 20")
	case o.Mode == ModeFleet && (o.APIServers < 1 || o.APIServers > 20 || o.APIServers > o.Clusters):
		return fmt.Errorf("--apiservers must be between 1 and 20, and at most --clusters")
	case o.Mode == ModeFleet && o.Duration <= 0:
		return fmt.Errorf("--duration must be positive")
	case o.Objects < 1 || o.Objects > 100_000:
		return fmt.Errorf("--objects must be between 1 and 100000")
	case o.Mode == ModeMixed && o.Objects < MixedMinObjects:
		return fmt.Errorf("--objects must be at least %d with --mode mixed (a CRD and one object of each other kind)", MixedMinObjects)
	case o.Mode == ModeGit && (o.Objects < 3 || o.Objects > GitMaxObjects):
		return fmt.Errorf("--objects must be between 3 and %d with --mode git (a third of them Services)", GitMaxObjects)
	case o.Mode == ModeGit && (o.Pushes < 1 || o.Pushes > 100):
		return fmt.Errorf("--pushes must be between 1 and 100 with --mode git")
	case o.Drifts < 1:
		return fmt.Errorf("--drifts must be positive")
	case o.Rate <= 0:
		return fmt.Errorf("--rate must be positive")
	case o.Interval <= 0:
		return fmt.Errorf("--interval must be positive")
	case o.Burst < 1 || o.Burst > 100_000:
		return fmt.Errorf("--burst must be between 1 and 100000")
	case o.QPS < 0 || o.Workers < 0:
		return fmt.Errorf("--qps and --workers must not be negative")
	case o.Idle <= 0:
		return fmt.Errorf("--idle must be positive")
	case o.Pin && runtime.NumCPU() < 2:
		return fmt.Errorf("--pin needs 2 CPUs or more: this machine has %d", runtime.NumCPU())
	case o.IdleCPUProfile != "" && o.CPUProfile != "":
		return fmt.Errorf("--idle-cpuprofile and --cpuprofile: one CPU profile at a time")
	case o.IdleCPUProfile != "" && o.Mode != ModeScale && o.Mode != ModeFleet && o.Mode != ModeMixed:
		return fmt.Errorf("--idle-cpuprofile profiles the idle window of --mode scale, fleet or mixed")
	case o.Chart != "" && (o.Mode == ModeScale || o.Mode == ModeMixed || o.Mode == ModeGit):
		return fmt.Errorf("--chart draws the watch, poll and burst runs: not with --mode %s", o.Mode)
	}
	return nil
}

// phase labels the calling goroutine, and every goroutine it starts from
// now on (a hub's, a floor's clients), with the bench phase it is in, so
// that a --cpuprofile can be read a phase at a time:
// go tool pprof -tagfocus 'phase=cold sync' FILE.
func phase(ctx context.Context, name string) {
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels("phase", name)))
}

// Run is `driftwatch bench`: it starts local control planes, has the
// hub manage generated objects on them, makes drift on a seeded schedule
// from a client of its own and measures detection and repair against an
// independent raw watch, for driftwatch and for a poll baseline.
func Run(ctx context.Context, o Options, env app.Env) error {
	stdout, stderr := env.Stdout, env.Stderr
	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err != nil {
			return fmt.Errorf("bench: cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("bench: cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	klog.SetSlogLogger(log.With("component", "client-go"))
	b := &bencher{opts: o, log: log, stderr: stderr}
	load, _ := LoadAverage()

	bins, err := app.BinDir(ctx, env)
	if err != nil {
		return err
	}
	dir := o.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "driftwatch-bench-"); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer os.RemoveAll(dir)
	}
	b.dir = dir
	planes := o.Clusters
	if o.Mode == ModeFleet {
		planes = o.APIServers
	}
	b.progress("starting %d local control plane(s) (etcd, kube-apiserver)", planes)
	began := time.Now()
	lo := localcluster.Options{Count: planes, BinDir: bins, Dir: filepath.Join(dir, "clusters"), Logger: log}
	var self []int
	if o.Pin {
		lo.CPUs, self = pinSplit(runtime.NumCPU())
	}
	set, err := localcluster.Start(ctx, lo)
	if err != nil {
		return fmt.Errorf("bench: start local clusters: %w", err)
	}
	defer func() {
		b.progress("stopping the local clusters")
		_ = set.Stop()
	}()
	if o.Pin {
		if err := localcluster.PinProcess(self); err != nil {
			return fmt.Errorf("bench: --pin: %w", err)
		}
		b.pinned = fmt.Sprintf("control planes on CPU %s, this process on CPU %s", cpuList(lo.CPUs), cpuList(self))
		b.progress("pinned: %s", b.pinned)
	}
	b.progress("clusters ready after %s", time.Since(began).Round(time.Millisecond))
	b.set = set
	b.clients = make(map[string]kubernetes.Interface, len(set.Clusters))
	for _, lc := range set.Clusters {
		c, err := kubernetes.NewForConfig(plainConfig(lc))
		if err != nil {
			return fmt.Errorf("bench: cluster %q: client: %w", lc.Name, err)
		}
		b.clients[lc.Name] = c
	}
	b.targets = b.clients
	b.dynamic = make(map[string]dynamic.Interface, len(set.Clusters))
	for _, lc := range set.Clusters {
		rc := lc.RESTConfig()
		rc.QPS = -1
		rc.UserAgent = driftgen.FieldManager
		d, err := dynamic.NewForConfig(rc)
		if err != nil {
			return fmt.Errorf("bench: cluster %q: dynamic client: %w", lc.Name, err)
		}
		b.dynamic[lc.Name] = d
	}

	rep := benchReport{
		Mode: o.Mode, Clusters: o.Clusters, ObjectsPerCluster: o.Objects, Seed: o.Seed,
		QPS: b.opts.QPS, CPUs: runtime.NumCPU(), LoadBefore: load, Pinned: b.pinned,
	}
	switch o.Mode {
	case ModeScale:
		rep.Scale, err = b.scale(ctx)
	case ModeFleet:
		rep.APIServers = o.APIServers
		rep.Fleet, rep.Runs, err = b.fleet(ctx, &rep)
	case ModeMixed:
		rep.Drifts, rep.Rate = o.Drifts, o.Rate
		err = b.mixed(ctx, &rep)
	case ModeGit:
		err = b.gitRun(ctx, &rep)
	default:
		rep.Drifts, rep.Rate = o.Drifts, o.Rate
		rep.Runs, err = b.driftRuns(ctx, &rep)
	}
	if err != nil && !rep.failed() {
		return err
	}
	// A run that failed with a reason to show is reported, then the
	// error makes the exit status.
	rep.Workers = b.workers
	rep.finish(o)
	var werr error
	if o.Output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		werr = enc.Encode(rep)
	} else {
		werr = rep.writeTable(stdout)
	}
	if o.Chart != "" {
		werr = errors.Join(werr, writeChart(o.Chart, &rep))
	}
	return errors.Join(err, werr)
}

// bencher holds what the runs of one bench share.
type bencher struct {
	opts   Options
	log    *slog.Logger
	stderr io.Writer
	// pinned describes --pin's split of the CPUs (empty without it).
	pinned  string
	dir     string
	set     *localcluster.Set
	clients map[string]kubernetes.Interface
	// targets are the drift clients by cluster id of the config: clients,
	// or for the fleet each entry's apiserver's client.
	targets map[string]kubernetes.Interface
	// dynamic are the dynamic clients by cluster name (--mode mixed).
	dynamic map[string]dynamic.Interface
	// current receives the raw watch's events (nil between runs).
	current atomic.Pointer[Tracker]
	// workers is the hub's effective worker count (from the config).
	workers int
	// hubs counts the hubs started: each gets a fresh state file in dir.
	hubs int
	// inBaseline is set while --mode mixed runs its baseline.
	inBaseline bool
}

func (b *bencher) progress(format string, a ...any) {
	fmt.Fprintf(b.stderr, "bench: "+format+"\n", a...)
}

// qps is the hub's effective client rate limit per cluster.
func (b *bencher) qps() float64 {
	if b.opts.QPS > 0 {
		return b.opts.QPS
	}
	return 50
}

// workload is a generated config and its compiled objects.
type workload struct {
	cfg   *config.Config
	specs []hub.NodeSpec
	// mix counts the objects per kind on the first cluster.
	mix map[hub.Kind]int
	// git fetches cfg's Git sources, loaded with loadOpts (its
	// LoadOptions); nil without Git sources.
	git      *app.GitSources
	loadOpts config.LoadOptions
}

// targets returns the workload's objects as drift targets.
func (w *workload) targets() []Target {
	ts := make([]Target, 0, len(w.specs))
	for _, s := range w.specs {
		// Decoded once per target: the tracker compares many events
		// against it.
		// A compiled spec always has a body that decodes.
		obj, err := kubeobj.Object(s)
		if err != nil || obj == nil {
			panic(fmt.Sprintf("bench: target %s: no desired object (%v)", s.ID, err))
		}
		ts = append(ts, Target{ID: s.ID, Desired: obj})
	}
	return ts
}

// loadWorkload writes and loads a config with objects managed objects per
// cluster and extra more on the first cluster only.
func (b *bencher) loadWorkload(name string, objects, extra int) (*workload, error) {
	path := filepath.Join(b.dir, name+".yaml")
	text := benchConfig(b.set, objects, extra, b.opts.QPS, b.opts.Workers)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	cfg, err := config.Load(path, config.LoadOptions{Getenv: func(string) string { return "" }})
	if err != nil {
		return nil, fmt.Errorf("bench: generated config %s: %w", path, err)
	}
	b.workers = cfg.Workers()
	w := &workload{cfg: cfg, specs: config.Compile(cfg), mix: map[hub.Kind]int{}}
	first := b.set.Clusters[0].Name
	for _, s := range w.specs {
		if s.ID.Cluster == first {
			w.mix[s.ID.Kind]++
		}
	}
	return w, nil
}

// writeHubSection writes the head of a generated config: a comment naming
// what generated it, the hub section (the client limit qps with a burst of
// twice that, and workers, when set) and the clusters key.
func writeHubSection(sb *strings.Builder, by string, qps float64, workers int) {
	fmt.Fprintf(sb, "# generated by %s\nhub:\n  id: %s\n", by, benchHubID)
	if qps > 0 {
		fmt.Fprintf(sb, "  qps: %g\n  burst: %d\n", qps, int(2*qps))
	}
	if workers > 0 {
		fmt.Fprintf(sb, "  workers: %d\n", workers)
	}
	sb.WriteString("clusters:\n")
}

// benchConfig returns the text of a config managing objects objects per
// cluster in the bench namespace, plus extra objects on the first cluster:
// applications of a Deployment, a Service and a ConfigMap while Services
// last (benchMaxServices), then of a Deployment and a ConfigMap, and one
// Deployment alone to make the count exact. Names are deterministic.
func benchConfig(set *localcluster.Set, objects, extra int, qps float64, workers int) string {
	var sb strings.Builder
	writeHubSection(&sb, "driftwatch bench", qps, workers)
	for _, lc := range set.Clusters {
		fmt.Fprintf(&sb, "  - id: %s\n    kubeconfig: %s\n    labels: {bench: \"true\"}\n", lc.Name, lc.Kubeconfig)
	}
	sb.WriteString("applications:\n")
	writeApps(&sb, "a", benchNamespace, "selector: bench=true", objects, benchMaxServices)
	if extra > 0 {
		writeApps(&sb, "x", benchNamespace, "clusters: ["+set.Clusters[0].Name+"]", extra, 0)
	}
	return sb.String()
}

// writeApps writes applications named prefix00001... in namespace holding n
// objects.
func writeApps(sb *strings.Builder, prefix, namespace, target string, n, maxServices int) {
	full := min(n/3, maxServices)
	rest := n - 3*full
	i := 0
	app := func(port, cfg bool) {
		i++
		fmt.Fprintf(sb, "  - id: %s%05d\n    namespace: %s\n    %s\n    image: registry.example/bench:1\n    replicas: 2\n",
			prefix, i, namespace, target)
		if port {
			sb.WriteString("    port: 8080\n")
		}
		if cfg {
			sb.WriteString("    config: {MODE: bench}\n")
		}
	}
	for range full {
		app(true, true)
	}
	for range rest / 2 {
		app(false, true)
	}
	if rest%2 == 1 {
		app(false, false)
	}
}

// precreate server-side applies specs from the bench's own client, as the
// hub would (field manager driftwatch), many at a time: the runs then
// start from objects that exist and are in sync.
func (b *bencher) precreate(ctx context.Context, specs []hub.NodeSpec) error {
	began := time.Now()
	for name, c := range b.clients {
		_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("bench: cluster %q: create namespace %s: %w", name, benchNamespace, err)
		}
	}
	var done atomic.Int64
	stopProgress := b.every(5*time.Second, func() {
		b.progress("creating objects: %d/%d", done.Load(), len(specs))
	})
	defer stopProgress()
	p := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError().WithMaxGoroutines(16)
	for _, s := range specs {
		p.Go(func(ctx context.Context) error {
			if err := benchApply(ctx, b.clients[s.ID.Cluster], s); err != nil {
				return err
			}
			done.Add(1)
			return nil
		})
	}
	if err := p.Wait(); err != nil {
		return err
	}
	b.progress("created %d objects in %s", len(specs), time.Since(began).Round(time.Millisecond))
	return nil
}

// benchApply server-side applies one object with the bench hub's field
// manager.
func benchApply(ctx context.Context, c kubernetes.Interface, s hub.NodeSpec) error {
	body := s.Body
	var err error
	force := true
	opts := metav1.PatchOptions{FieldManager: kubeobj.FieldManagerFor(benchHubID), Force: &force}
	switch s.Kind {
	case hub.KindDeployment:
		_, err = c.AppsV1().Deployments(s.Namespace).Patch(ctx, s.Name, types.ApplyPatchType, body, opts)
	case hub.KindService:
		_, err = c.CoreV1().Services(s.Namespace).Patch(ctx, s.Name, types.ApplyPatchType, body, opts)
	default:
		_, err = c.CoreV1().ConfigMaps(s.Namespace).Patch(ctx, s.Name, types.ApplyPatchType, body, opts)
	}
	if err != nil {
		return fmt.Errorf("bench: apply %s: %w", s.ID, err)
	}
	return nil
}

// every calls f every d until the returned stop is called; stop waits for
// the goroutine.
func (b *bencher) every(d time.Duration, f func()) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				f()
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// runningHub is one app (hub and cluster registry) running in the
// background.
type runningHub struct {
	app  *app.App
	stop context.CancelFunc
	wg   conc.WaitGroup
	err  error
}

// startHub builds a fresh app for w, with a fresh state file in the
// bench's folder (never the user's), and runs it until stopped.
func (b *bencher) startHub(ctx context.Context, w *workload, hubOpts hub.Options, disableWatch bool) (*runningHub, error) {
	b.hubs++
	a, err := app.New(w.cfg, app.Options{Logger: b.log, HubOptions: hubOpts, DisableWatch: disableWatch,
		StateFile: filepath.Join(b.dir, fmt.Sprintf("state-%d.db", b.hubs)), Git: w.git, LoadOptions: w.loadOpts})
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	r := &runningHub{app: a}
	runCtx, stop := context.WithCancel(ctx)
	r.stop = stop
	r.wg.Go(func() { r.err = r.app.Run(runCtx) })
	return r, nil
}

// Stop stops the app, waits for every goroutine it started and closes its
// state file.
func (r *runningHub) Stop() error {
	r.stop()
	r.wg.Wait()
	return errors.Join(r.err, r.app.Close())
}

// heapReturnWait is how long a drift run waits, once its hub is in sync,
// for the hub to return the heap its first sync freed.
const heapReturnWait = 2 * time.Second

// waitHeapReturned waits until h has returned the heap a wave of work
// freed (hub.HeapReturns: it does once its queue is idle after its first
// sync), at most limit, and says which: the drift run's peak RSS is then
// the drift run's, not the first sync's, as for a hub that has been
// running. A first sync too small to be returned waits the whole limit.
func waitHeapReturned(ctx context.Context, h *hub.Hub, limit time.Duration) string {
	began := time.Now()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for h.HeapReturns() == 0 {
		if time.Since(began) >= limit {
			return fmt.Sprintf("its first sync's heap not returned after %s", limit)
		}
		select {
		case <-ctx.Done():
			return "stopped"
		case <-t.C:
		}
	}
	return fmt.Sprintf("its first sync's heap returned %s later", time.Since(began).Round(time.Millisecond))
}

// waitInSync waits until the hub shows every one of its want objects in sync.
func (b *bencher) waitInSync(ctx context.Context, h *hub.Hub, want int, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	snaps, unsubscribe := h.Subscribe()
	defer unsubscribe()
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	inSync, others := 0, ""
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: hub sync: %d of %d objects in sync after %s (%s): %w", inSync, want, limit, others, ctx.Err())
		case <-t.C:
			b.progress("hub sync: %d/%d objects in sync (%s)", inSync, want, others)
		case s := <-snaps:
			inSync = 0
			byStatus := map[hub.Status]int{}
			for _, n := range s.Nodes {
				if n.Status == hub.StatusInSync || n.Status == hub.StatusRepaired {
					inSync++
				} else {
					byStatus[n.Status]++
				}
			}
			others = statusCounts(byStatus, s.QueueDepth)
			if inSync == want && len(s.Nodes) == want {
				return nil
			}
		}
	}
}

// syncLimit bounds how long a hub may take to show everything in sync: the
// poll baseline GETs every object through the client rate limit.
func (b *bencher) syncLimit(objectsPerCluster int) time.Duration {
	return 2*time.Minute + time.Duration(float64(2*objectsPerCluster)/b.qps()*float64(time.Second))
}

// driftRuns runs the watch, poll and burst runs the mode asks for.
func (b *bencher) driftRuns(ctx context.Context, rep *benchReport) ([]runReport, error) {
	o := b.opts
	base, err := b.loadWorkload("bench", o.Objects, 0)
	if err != nil {
		return nil, err
	}
	rep.Mix = mixOf(base.mix)
	if err := b.precreate(ctx, base.specs); err != nil {
		return nil, err
	}
	floorCtx, stopFloor := context.WithCancel(ctx)
	floor, err := StartFloor(floorCtx, b.clients, benchNamespace, func(cluster string, kind hub.Kind, ev watch.Event, at time.Time) {
		if tr := b.current.Load(); tr != nil {
			tr.Event(cluster, kind, ev, at)
		}
	}, b.log)
	if err != nil {
		stopFloor()
		return nil, fmt.Errorf("bench: raw watch: %w", err)
	}
	defer func() {
		stopFloor()
		floor.Wait()
	}()

	var runs []runReport
	steps := Plan(base.targets(), o.Drifts, o.Rate, o.Seed)
	rep.Schedule = Fingerprint(steps)
	last := steps[len(steps)-1].Offset
	if o.Mode == ModeWatch || o.Mode == ModeAll {
		r, err := b.driftRun(ctx, ModeWatch, base, steps, nil, 1, last+time.Minute)
		if err != nil {
			return append(runs, r), err
		}
		runs = append(runs, r)
	}
	if o.Mode == ModePoll || o.Mode == ModeAll {
		pass := time.Duration(float64(2*o.Objects) / b.qps() * float64(time.Second))
		r, err := b.driftRun(ctx, ModePoll, base, steps, nil, 1, last+3*o.Interval+2*pass+time.Minute)
		if err != nil {
			return append(runs, r), err
		}
		runs = append(runs, r)
	}
	if o.Mode == ModeBurst || o.Mode == ModeAll {
		w := base
		if extra := o.Burst - o.Objects; extra > 0 {
			if w, err = b.loadWorkload("bench-burst", o.Objects, extra); err != nil {
				return nil, err
			}
			var add []hub.NodeSpec
			for _, s := range w.specs {
				if strings.HasPrefix(s.Application, "x") {
					add = append(add, s)
				}
			}
			b.progress("burst: creating %d more objects on %s", len(add), b.set.Clusters[0].Name)
			if err := b.precreate(ctx, add); err != nil {
				return nil, err
			}
		}
		burst := BurstPlan(w.targets(), b.set.Clusters[0].Name, o.Burst, o.Seed)
		// The raw repair floor is measured before the hub's burst and
		// again after it, and the burst is taken over their mean, so that
		// a machine whose speed drifts during the run moves the floor with
		// the hub. A floor that fails is reported, not the run's failure:
		// the hub's figures stand.
		before, _, _, beforeErr := b.burstRepairFloor(ctx, w, burst, b.workers, "before the hub")
		if beforeErr != nil && ctx.Err() != nil {
			return runs, beforeErr
		}
		r, err := b.driftRun(ctx, ModeBurst, w, burst, nil, benchBurstWorkers, 5*time.Minute)
		if err != nil {
			return append(runs, r), err
		}
		if beforeErr != nil {
			b.log.Warn("raw repair floor before the hub not measured", "err", beforeErr)
			r.RepairFloorError = "before the hub: " + beforeErr.Error()
		} else {
			r.RepairFloorBefore = msDuration(before)
		}
		if r.Repaired == r.Drifts {
			took, n, deletes, err := b.burstRepairFloor(ctx, w, burst, b.workers, "after the hub")
			if err != nil {
				if ctx.Err() != nil {
					return append(runs, r), err
				}
				b.log.Warn("raw repair floor after the hub not measured", "err", err)
				msg := "after the hub: " + err.Error()
				if r.RepairFloorError != "" { // the floor before the hub failed too
					msg = r.RepairFloorError + "; " + msg
				}
				r.RepairFloorError = msg
			}
			r.RepairFloor, r.RepairFloorConcurrency, r.RepairFloorDeletes = msDuration(took), n, msDuration(deletes)
		}
		// Then the same burst once more with the other clusters drifting
		// meanwhile, at --rate each for as long as the floor before the
		// hub took (the burst's length on this machine): what one
		// cluster's burst costs another's drifts. A run of its own, so
		// that the burst's figures above carry no load but the burst's.
		window := othersWindowFallback
		if beforeErr == nil && before > 0 {
			window = before
		}
		if others := OthersPlan(w.targets(), b.set.Clusters[0].Name, o.Rate, window, o.Seed); len(others) > 0 && r.Repaired == r.Drifts {
			ro, err := b.driftRun(ctx, modeBurstOthers, w, burst, others, benchBurstWorkers, 5*time.Minute)
			if ro.Others != nil {
				ro.Others.RatePerCluster, ro.Others.Window = o.Rate, msDuration(window)
				ro.Others.BurstRepaired, ro.Others.BurstElapsed, ro.Others.Failures = ro.Repaired, ro.Elapsed, ro.Failures
				r.Others = ro.Others
			}
			if err != nil {
				return append(runs, r), err
			}
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// driftRun runs one fresh hub over w, makes the planned drifts once it is in
// sync (steps, workers at a time on each cluster, and others beside them,
// one at a time on each cluster: see makeDrifts), and waits until the raw
// watch saw every one repaired (or limit).
func (b *bencher) driftRun(ctx context.Context, mode string, w *workload, steps, others []Step, workers int, limit time.Duration) (runReport, error) {
	o := b.opts
	r := runReport{Mode: mode, Drifts: len(steps)}
	tr := NewTracker(len(steps)+len(others), w.cfg.Hub.ManagedBy)
	b.current.Store(tr)
	defer b.current.Store(nil)

	hubOpts := hub.Options{OnRecord: tr.Record}
	disableWatch := false
	switch mode {
	case ModePoll:
		hubOpts.Resync = o.Interval
		disableWatch = true
		b.progress("poll: a fresh hub with watches off, resync every %s", o.Interval)
	default:
		b.progress("%s: a fresh hub (watches on)", mode)
	}
	began := time.Now()
	rh, err := b.startHub(ctx, w, hubOpts, disableWatch)
	if err != nil {
		return r, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = rh.Stop()
		}
	}()
	if err := b.waitInSync(ctx, rh.app.Hub(), len(w.specs), b.syncLimit(len(w.specs)/len(b.set.Clusters))); err != nil {
		r.SyncFailed = true
		r.Failures = explainUnsynced(w.specs, rh.app.Hub().Snapshot())
		return r, fmt.Errorf("%s run: %w", mode, err)
	}
	r.Sync = msDuration(time.Since(began))
	returned := waitHeapReturned(ctx, rh.app.Hub(), heapReturnWait)
	b.progress("%s: hub in sync with %d objects after %s (%s); making %d drifts", mode, len(w.specs), r.Sync.dur().Round(time.Millisecond), returned, len(steps))
	stopped = true
	err = b.makeDrifts(ctx, &r, rh, tr, driftgen.New(b.targets, o.Seed), steps, others, workers, limit)
	return r, err
}

// makeDrifts makes the planned drifts through gen on the running hub rh
// (in sync, its drift records going to tr, which b.current holds), waits
// until the raw watch saw every one repaired (or limit), stops rh and
// fills r's figures. others (the burst's other clusters) are made at the
// same time, on their own schedule, and reported apart (r.Others): r's
// figures are steps' alone.
func (b *bencher) makeDrifts(ctx context.Context, r *runReport, rh *runningHub, tr *Tracker, gen Drifter, steps, others []Step, workers int, limit time.Duration) error {
	mode := r.Mode
	stopped := false
	defer func() {
		if !stopped {
			_ = rh.Stop()
		}
	}()
	var before map[string]RequestDurations
	var err error
	if mode == ModeBurst {
		if before, err = b.scrapeAPIServers(ctx); err != nil {
			r.APIServerError = err.Error()
		}
	}
	if err := ResetPeakRSS(); err != nil {
		b.log.Warn("peak rss is the whole process's", "err", err)
	}
	stopSplit := b.followRSSSplit()
	defer stopSplit()
	var cost costReading
	if mode == ModeFleet {
		// The fleet's drift run's allocations alone: pprof -base
		// FILE-drift-before FILE-drift-after (outside the measured span).
		b.writeHeapProfileTo(memProfilePath(b.opts.MemProfile, "-drift-before"))
		cost = b.readCost(ctx)
	}
	cpu0, faults0 := CPUTime(), MinorFaults()
	issued := time.Now()
	var alongside conc.WaitGroup
	if len(others) > 0 {
		alongside.Go(func() { Execute(ctx, gen, tr, others, 1) })
	}
	Execute(ctx, gen, tr, steps, workers)
	r.Issue = msDuration(time.Since(issued))
	alongside.Wait()
	stopProgress := b.every(5*time.Second, func() {
		n := 0
		for _, s := range tr.Samples() {
			if !s.Repair.IsZero() {
				n++
			}
		}
		b.progress("%s: %d/%d drifts repaired", mode, n, len(steps))
	})
	timer := time.NewTimer(limit)
	select {
	case <-tr.Done():
	case <-timer.C:
		r.TimedOut = true
	case <-ctx.Done():
	}
	timer.Stop()
	stopProgress()
	r.CPU, r.MinorFaults = msDuration(CPUTime()-cpu0), MinorFaults()-faults0
	if mode == ModeFleet {
		r.Cost = b.costSince(ctx, cost)
		b.writeHeapProfileTo(memProfilePath(b.opts.MemProfile, "-drift-after"))
	}
	r.PeakRSS, _ = PeakRSS()
	r.PeakAnonRSS, r.PeakFileRSS = stopSplit()
	if before != nil {
		if after, err := b.scrapeAPIServers(ctx); err != nil {
			r.APIServerError = err.Error()
		} else {
			r.APIServer = apiserverLatencies(b.clusterNames(), before, after)
		}
	}
	if mode != ModeFleet && mode != ModeMixed && mode != modeBurstOthers { // their profiles are their steady states'; the burst's is its first hub's
		b.writeHeapProfile()
	}
	snap := rh.app.Hub().Snapshot()
	stopped = true
	if err := rh.Stop(); err != nil {
		return fmt.Errorf("%s run: %w", mode, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	samples := tr.Samples()
	r.Failures = explainFailures(samples, snap)
	samples, otherSamples := splitOthers(samples, others)
	if len(others) > 0 {
		r.Others = othersOf(otherSamples)
	}
	r.runLatencies = latenciesOf(samples)
	r.Samples = samplesOf(samples)
	r.ByAction = make(map[string]actionReport)
	for a, l := range CollectByAction(samples) {
		r.ByAction[string(a)] = actionReport{Floor: latencyOf(l.Floor), Detect: latencyOf(l.Detect), Repair: latencyOf(l.Repair)}
	}
	if mode == ModeMixed {
		r.ByKind = make(map[string]actionReport)
		for k, l := range CollectByKind(samples) {
			r.ByKind[string(k)] = actionReport{Floor: latencyOf(l.Floor), Detect: latencyOf(l.Detect), Repair: latencyOf(l.Repair)}
		}
	}
	var first, lastRepair time.Time
	for _, s := range samples {
		switch {
		case s.Err != nil:
			r.Failed++
			if r.FirstError == "" {
				r.FirstError = s.Err.Error()
			}
			continue
		case !s.Repair.IsZero():
			r.Repaired++
			if s.Repair.After(lastRepair) {
				lastRepair = s.Repair
			}
		}
		if first.IsZero() || s.Start.Before(first) {
			first = s.Start
		}
	}
	if r.Repaired > 0 {
		elapsed := lastRepair.Sub(first)
		r.Elapsed = msDuration(elapsed)
		r.RepairsPerSecond = float64(r.Repaired) / elapsed.Seconds()
	}
	b.progress("%s: %d/%d repaired, the last %s after the first drift", mode, r.Repaired, r.Drifts, r.Elapsed.dur().Round(time.Millisecond))
	return nil
}

// scrapeAPIServers scrapes every local apiserver's request latency
// histogram, by cluster name.
func (b *bencher) scrapeAPIServers(ctx context.Context) (map[string]RequestDurations, error) {
	out := make(map[string]RequestDurations, len(b.set.Clusters))
	for _, lc := range b.set.Clusters {
		d, err := ScrapeRequestDurations(ctx, lc.RESTConfig())
		if err != nil {
			return nil, fmt.Errorf("cluster %q: %w", lc.Name, err)
		}
		out[lc.Name] = d
	}
	return out, nil
}

// clusterNames returns the local clusters' names, in order.
func (b *bencher) clusterNames() []string {
	names := make([]string, 0, len(b.set.Clusters))
	for _, lc := range b.set.Clusters {
		names = append(names, lc.Name)
	}
	return names
}

// writeHeapProfile writes --memprofile (after a GC), if asked for. The
// baseline of --mode mixed (its scale run) writes its own file beside it
// (memProfilePath).
func (b *bencher) writeHeapProfile() {
	suffix := ""
	if b.opts.Mode == ModeMixed && b.inBaseline {
		suffix = "-baseline"
	}
	b.writeHeapProfileTo(memProfilePath(b.opts.MemProfile, suffix))
}

// writeHeapProfileTo writes a heap profile (after a GC) to path, if not "".
func (b *bencher) writeHeapProfileTo(path string) {
	if path == "" {
		return
	}
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		b.log.Warn("heap profile", "err", err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.log.Warn("heap profile", "err", err)
	}
}

// memProfilePath is where a heap profile goes: path with suffix before
// its extension (mem.pprof, -baseline: mem-baseline.pprof); "" when path
// is.
func memProfilePath(path, suffix string) string {
	if path == "" || suffix == "" {
		return path
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + suffix + ext
}

// scale measures a hub managing many objects: the time from its start to
// everything in sync, its memory per object at steady state and its idle
// CPU.
func (b *bencher) scale(ctx context.Context) (*scaleReport, error) {
	o := b.opts
	heap0 := heapBefore()
	w, err := b.loadWorkload("bench", o.Objects, 0)
	if err != nil {
		return nil, err
	}
	total := len(w.specs)
	s := &scaleReport{Objects: total, Mix: mixOf(w.mix)}
	began := time.Now()
	if err := b.precreate(ctx, w.specs); err != nil {
		return nil, err
	}
	s.Precreate = msDuration(time.Since(began))
	// From here on only the hub holds the config and the compiled objects
	// (as much of them as it keeps): the heap per object is the hub's. A
	// failed sync is explained from the file, loaded again.
	path := w.cfg.Path

	if err := ResetPeakRSS(); err != nil {
		b.log.Warn("peak rss is the whole process's", "err", err)
	}
	b.progress("scale: starting a fresh hub on %d existing objects", total)
	began = time.Now()
	rh, err := b.startHub(ctx, &workload{cfg: w.cfg}, hub.Options{}, false)
	w = nil
	if err != nil {
		return nil, err
	}
	defer func() { _ = rh.Stop() }()
	if err := b.waitInSync(ctx, rh.app.Hub(), total, b.syncLimit(o.Objects)); err != nil {
		s.SyncFailed = true
		if cfg, lerr := config.Load(path, config.LoadOptions{Getenv: func(string) string { return "" }}); lerr == nil {
			s.Failures = explainUnsynced(config.Compile(cfg), rh.app.Hub().Snapshot())
		}
		return s, fmt.Errorf("scale run: %w", err)
	}
	s.InitialSync = msDuration(time.Since(began))
	s.PeakRSS, _ = PeakRSS()
	b.progress("scale: in sync after %s; settling, then measuring memory and %s of idle CPU", s.InitialSync.dur().Round(time.Millisecond), o.Idle)
	if !sleepCtx(ctx, 2*time.Second) {
		return nil, ctx.Err()
	}
	heap := heapInUse()
	b.writeHeapProfile()
	s.HeapInUse = heap
	if heap > heap0 {
		s.BytesPerObject = float64(heap-heap0) / float64(total)
	}
	s.RSS, _ = RSS()
	cpu0 := CPUTime()
	if !b.idle(ctx) {
		return nil, ctx.Err()
	}
	s.IdleCPU = msDuration(CPUTime() - cpu0)
	s.IdleFor = msDuration(o.Idle)
	s.IdleCPUPercent = 100 * s.IdleCPU.dur().Seconds() / s.IdleFor.dur().Seconds()
	if err := rh.Stop(); err != nil {
		return nil, fmt.Errorf("scale run: %w", err)
	}
	return s, nil
}

// heapInUse returns the bytes in in-use heap spans after two collections.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// benchReport is the output of `driftwatch bench` (-o json).
type benchReport struct {
	Mode string `json:"mode"`
	// Clusters is the local clusters, or for the fleet its cluster
	// entries, served by APIServers local clusters.
	Clusters          int       `json:"clusters"`
	APIServers        int       `json:"apiservers,omitempty"`
	ObjectsPerCluster int       `json:"objectsPerCluster"`
	Mix               objectMix `json:"mix"`
	Seed              uint64    `json:"seed"`
	// Schedule fingerprints the watch and poll runs' drift plan.
	Schedule     string       `json:"schedule,omitempty"`
	Drifts       int          `json:"drifts,omitempty"`
	Rate         float64      `json:"driftsPerSecondPerCluster,omitempty"`
	PollInterval msDuration   `json:"pollIntervalMs,omitempty"`
	Burst        int          `json:"burst,omitempty"`
	QPS          float64      `json:"hubQPSPerCluster"`
	Workers      int          `json:"hubWorkers"`
	Runs         []runReport  `json:"runs,omitempty"`
	Ratios       *benchRatios `json:"ratios,omitempty"`
	Scale        *scaleReport `json:"scale,omitempty"`
	Fleet        *fleetReport `json:"fleet,omitempty"`
	Mixed        *mixedReport `json:"mixed,omitempty"`
	Git          *gitReport   `json:"git,omitempty"`
	Targets      []benchGoal  `json:"targets,omitempty"`
	Notes        []string     `json:"notes,omitempty"`
	// CPUs is the machine's CPU count; LoadBefore its 1, 5 and 15 minute
	// load averages before the bench started anything.
	CPUs       int    `json:"cpus"`
	LoadBefore string `json:"loadBefore,omitempty"`
	// Pinned says which CPUs the control planes and this process ran on
	// (--pin); empty when they shared every CPU.
	Pinned string `json:"pinned,omitempty"`
}

// objectMix counts managed objects per kind on one cluster (the first).
type objectMix struct {
	Deployments int `json:"deployments"`
	Services    int `json:"services"`
	ConfigMaps  int `json:"configMaps"`
}

func mixOf(m map[hub.Kind]int) objectMix {
	return objectMix{Deployments: m[hub.KindDeployment], Services: m[hub.KindService], ConfigMaps: m[hub.KindConfigMap]}
}

// runReport is one watch, poll or burst run.
type runReport struct {
	Mode     string `json:"mode"`
	Drifts   int    `json:"drifts"`
	Repaired int    `json:"repaired"`
	Failed   int    `json:"failed"`
	// FirstError is the first failed drift call's error.
	FirstError string `json:"firstError,omitempty"`
	TimedOut   bool   `json:"timedOut,omitempty"`
	runLatencies
	// ByAction splits floor, detect and repair by drift action.
	ByAction map[string]actionReport `json:"byAction"`
	// ByKind splits them by kind (NodeID slug; --mode mixed).
	ByKind map[string]actionReport `json:"byKind,omitempty"`
	// Samples are the per-drift latencies behind the percentiles (for
	// charts).
	Samples *runSamples `json:"samples,omitempty"`
	// Sync is the fresh hub's start to everything in sync.
	Sync msDuration `json:"syncMs"`
	// Issue is how long making every drift call took.
	Issue msDuration `json:"issueMs"`
	// Elapsed is the first drift call's start to the last repair seen.
	Elapsed          msDuration `json:"elapsedMs"`
	RepairsPerSecond float64    `json:"repairsPerSecond"`
	// RepairFloor (the burst) is the raw repair floor measured in the
	// same run after the hub's: the same deletes as the burst (the same
	// objects, the same calls in flight) made again by the bench's client,
	// while a plain client server-side applies each object again (the
	// same body, the hub's field manager) as soon as its delete returned,
	// RepairFloorConcurrency applies in flight (the hub's writes at once
	// on one cluster); from the first delete's start to the last apply
	// returning. It is the burst's work without the detection.
	// RepairFloorBefore is the same floor measured before the hub's
	// burst; "all repaired in" (Elapsed) is over the mean of the two
	// (repairFloor).
	RepairFloor            msDuration `json:"repairFloorMs,omitempty"`
	RepairFloorBefore      msDuration `json:"repairFloorBeforeMs,omitempty"`
	RepairFloorConcurrency int        `json:"repairFloorConcurrency,omitempty"`
	// RepairFloorDeletes is when the floor's last delete returned, from
	// its first delete's start.
	RepairFloorDeletes msDuration `json:"repairFloorDeletesMs,omitempty"`
	// RepairFloorLatency (the fleet) is the raw repair floor's repair
	// latencies, measured in the same run after the hub's: the same
	// drifts made again, each drifted object applied again by a plain
	// client as soon as its drift call returned (RepairFloorConcurrency
	// applies in flight, the hub's writers), timed by the same raw watch
	// from the drift call's start to the object seen as desired again.
	// It is the fleet's drift run without the detection: what the hub's
	// repair latencies (Repair) stand beside.
	RepairFloorLatency *latencyReport `json:"repairFloorLatency,omitempty"`
	// RepairFloorCost is what the fleet's raw repair floor cost, as Cost
	// for the hub's drift run: from its first drift to its last repair
	// seen.
	RepairFloorCost *spanCost `json:"repairFloorCost,omitempty"`
	// RepairFloorError says why the raw repair floor was not measured.
	RepairFloorError string `json:"repairFloorError,omitempty"`
	// CPU is this process's CPU time from the first drift to the last
	// repair (the hub, its clients, the raw watch and the drift client).
	CPU msDuration `json:"cpuMs"`
	// MinorFaults is the minor page faults this process took over the
	// same span: part of CPU, and most of the cost of a heap that grows
	// back after the hub returned it to the operating system.
	MinorFaults int64 `json:"minorFaults,omitempty"`
	// Cost is what the fleet's drift phase cost the control planes and
	// this process, and the calls the apiservers served, over the same
	// span (fleet runs only).
	Cost *spanCost `json:"cost,omitempty"`
	// PeakRSS is this process's peak resident set over the same span.
	PeakRSS uint64 `json:"peakRSSBytes"`
	// PeakAnonRSS and PeakFileRSS are the peaks of its anonymous part
	// (the Go heap, stacks) and of its file-backed part (the binary's
	// pages in memory, the state file's mapping) over the same span,
	// sampled every 20 ms: what PeakRSS is made of.
	PeakAnonRSS uint64 `json:"peakAnonRSSBytes,omitempty"`
	PeakFileRSS uint64 `json:"peakFileRSSBytes,omitempty"`
	// Others (the burst) is a second hub's run of the same burst while
	// every other cluster drifts: those drifts' figures, kept apart from
	// the burst's above (which are the first hub's, doing the burst
	// alone).
	Others *othersReport `json:"others,omitempty"`
	// APIServer is each apiserver's own request latency over the burst
	// (its /metrics before and after); APIServerError says why it is
	// missing.
	APIServer      []apiserverLatency `json:"apiserver,omitempty"`
	APIServerError string             `json:"apiserverError,omitempty"`
	// SyncFailed is set when the fresh hub never showed everything in
	// sync (the run made no drift).
	SyncFailed bool `json:"syncFailed,omitempty"`
	// Failures explains every drift not seen repaired, or every object
	// not in sync when SyncFailed.
	Failures []failureReport `json:"failures,omitempty"`
}

// othersReport is the burst run's second hub: the same burst again while
// every other cluster drifts, at RatePerCluster drifts per second on each
// for Window (the raw repair floor's length before the hub) from the
// burst's first delete, one at a time on each cluster, by the same drift
// client: whether one cluster's burst delays another cluster's drifts.
type othersReport struct {
	Clusters       []string   `json:"clusters"`
	RatePerCluster float64    `json:"ratePerCluster"`
	Window         msDuration `json:"windowMs"`
	Drifts         int        `json:"drifts"`
	Repaired       int        `json:"repaired"`
	Failed         int        `json:"failed"`
	// runLatencies are the other clusters' drifts', as the run's.
	runLatencies
	// BurstRepaired and BurstElapsed are the burst's own in this run:
	// how many of its deletes were seen repaired, and when the last one
	// was after the first delete.
	BurstRepaired int        `json:"burstRepaired"`
	BurstElapsed  msDuration `json:"burstElapsedMs"`
	// Failures explains every drift of this run not seen repaired, the
	// burst's and the other clusters'.
	Failures []failureReport `json:"failures,omitempty"`
}

// runLatencies are a run's latencies from each drift call's start: the
// raw watch's event, the hub's own event (for a poll: its reconcile's
// start), the hub's classification, its repair call returning, the raw
// watch's event showing the object as desired again.
type runLatencies struct {
	Floor    latencyReport `json:"floor"`
	Observed latencyReport `json:"hubEvent"`
	Detect   latencyReport `json:"detect"`
	Applied  latencyReport `json:"applied"`
	Repair   latencyReport `json:"repair"`
}

// latenciesOf summarizes samples' latencies.
func latenciesOf(samples []Sample) runLatencies {
	lat := Collect(samples)
	return runLatencies{Floor: latencyOf(lat.Floor), Observed: latencyOf(lat.Observed), Detect: latencyOf(lat.Detect),
		Applied: latencyOf(lat.Applied), Repair: latencyOf(lat.Repair)}
}

// namedLatency is one of runLatencies with its name in tables and
// comparisons.
type namedLatency struct {
	name string
	p    latencyReport
}

// named lists the latencies in their order, by name.
func (l runLatencies) named() []namedLatency {
	return []namedLatency{{"floor", l.Floor}, {"hub-event", l.Observed}, {"detect", l.Detect}, {"apply", l.Applied}, {"repair", l.Repair}}
}

// splitOthers splits a run's samples into the planned steps' and the
// others' (those on the clusters others drift).
func splitOthers(samples []Sample, others []Step) (own, side []Sample) {
	if len(others) == 0 {
		return samples, nil
	}
	clusters := make(map[string]bool)
	for _, s := range others {
		clusters[s.Target.ID.Cluster] = true
	}
	for _, s := range samples {
		if clusters[s.Target.ID.Cluster] {
			side = append(side, s)
		} else {
			own = append(own, s)
		}
	}
	return own, side
}

// othersOf summarizes the other clusters' samples (RatePerCluster and
// Window are the caller's).
func othersOf(samples []Sample) *othersReport {
	o := &othersReport{Drifts: len(samples)}
	seen := make(map[string]bool)
	for _, s := range samples {
		if c := s.Target.ID.Cluster; !seen[c] {
			seen[c] = true
			o.Clusters = append(o.Clusters, c)
		}
		switch {
		case s.Err != nil:
			o.Failed++
		case !s.Repair.IsZero():
			o.Repaired++
		}
	}
	slices.Sort(o.Clusters)
	o.runLatencies = latenciesOf(samples)
	return o
}

// peakRSSText is a run's peak RSS with the peaks of its anonymous and
// file-backed parts, when sampled.
func peakRSSText(r runReport) string {
	if r.PeakAnonRSS == 0 && r.PeakFileRSS == 0 {
		return fmtBytes(r.PeakRSS)
	}
	return fmt.Sprintf("%s (anonymous %s, file-backed %s)", fmtBytes(r.PeakRSS), fmtBytes(r.PeakAnonRSS), fmtBytes(r.PeakFileRSS))
}

// actionReport is the latencies of one drift action.
type actionReport struct {
	Floor  latencyReport `json:"floor"`
	Detect latencyReport `json:"detect"`
	Repair latencyReport `json:"repair"`
}

// latencyReport is a latency summary (nearest-rank percentiles).
type latencyReport struct {
	N   int        `json:"n"`
	P50 msDuration `json:"p50Ms"`
	P95 msDuration `json:"p95Ms"`
	P99 msDuration `json:"p99Ms"`
	Max msDuration `json:"maxMs"`
}

func latencyOf(ds []time.Duration) latencyReport {
	p := Summarize(ds)
	return latencyReport{N: p.N, P50: msDuration(p.P50), P95: msDuration(p.P95), P99: msDuration(p.P99), Max: msDuration(p.Max)}
}

// scaleReport is the --mode scale run.
type scaleReport struct {
	Objects int       `json:"objects"`
	Mix     objectMix `json:"mixPerCluster"`
	// Precreate is how long the bench's own client took to create them.
	Precreate msDuration `json:"precreateMs"`
	// InitialSync is a fresh hub's start to every object in sync.
	InitialSync msDuration `json:"initialSyncMs"`
	PeakRSS     uint64     `json:"peakRSSBytes"`
	RSS         uint64     `json:"steadyRSSBytes"`
	HeapInUse   uint64     `json:"heapInUseBytes"`
	// BytesPerObject is the heap in use after GC, minus the heap before the
	// config was loaded, per managed object.
	BytesPerObject float64    `json:"bytesPerObject"`
	IdleCPU        msDuration `json:"idleCPUMs"`
	IdleFor        msDuration `json:"idleForMs"`
	// IdleCPUPercent is IdleCPU over IdleFor, in percent of one core.
	IdleCPUPercent float64 `json:"idleCPUPercentOfCore"`
	// SyncFailed and Failures: the hub never showed every object in sync,
	// and why for each object that was not.
	SyncFailed bool            `json:"syncFailed,omitempty"`
	Failures   []failureReport `json:"failures,omitempty"`
}

// benchRatios are the headline ratios of --mode all.
type benchRatios struct {
	// PollOverWatchDetectP50 is poll detect p50 / watch detect p50.
	PollOverWatchDetectP50 float64 `json:"pollOverWatchDetectP50,omitempty"`
	// WatchDetectP99OverFloorP99 is watch detect p99 / floor p99.
	WatchDetectP99OverFloorP99 float64 `json:"watchDetectP99OverFloorP99,omitempty"`
	// MixedDetectP99OverFloorP99 is the mixed run's detect p99 / its
	// floor p99.
	MixedDetectP99OverFloorP99 float64 `json:"mixedDetectP99OverFloorP99,omitempty"`
	// MixedSyncOverScaleSync and MixedHeapOverScaleHeap compare the mixed
	// kinds' initial sync and heap per object with the three kinds' at the
	// same object count (--baseline).
	MixedSyncOverScaleSync float64 `json:"mixedSyncOverScaleSync,omitempty"`
	MixedHeapOverScaleHeap float64 `json:"mixedHeapOverScaleHeap,omitempty"`
	// BurstRepairedOverRepairFloor is the burst's all repaired in over its
	// raw repair floor; FleetColdSyncOverCreateFloor the fleet's cold sync
	// over its raw create floor.
	BurstRepairedOverRepairFloor float64 `json:"burstRepairedOverRepairFloor,omitempty"`
	// BurstOthersRepairP99OverFloorP99 is the repair p99 of the other
	// clusters' drifts during the burst over their raw watch floor p99.
	BurstOthersRepairP99OverFloorP99 float64 `json:"burstOthersRepairP99OverFloorP99,omitempty"`
	FleetColdSyncOverCreateFloor     float64 `json:"fleetColdSyncOverCreateFloor,omitempty"`
	// FleetColdSyncOverCreateWatchFloor is the fleet's cold sync over its
	// raw create floor with watches (the same creates while raw watches
	// follow them; no bar).
	FleetColdSyncOverCreateWatchFloor float64 `json:"fleetColdSyncOverCreateWatchFloor,omitempty"`
	// FleetRepairP99OverFloorP99 is the fleet's repair p99 over its raw
	// watch floor p99 (the drift seen); FleetRepairP99OverRepairFloorP99
	// over its raw repair floor's repair p99 (a plain client repairing
	// the same drifts).
	FleetRepairP99OverFloorP99       float64 `json:"fleetRepairP99OverFloorP99,omitempty"`
	FleetRepairP99OverRepairFloorP99 float64 `json:"fleetRepairP99OverRepairFloorP99,omitempty"`
	// FleetColdSyncCPUOverCreateFloorCPU is the CPU (this process's and
	// the control planes') the fleet's cold sync spent per object over
	// what its raw create floor spent; FleetRepairCPUOverRepairFloorCPU
	// the drift run's CPU per drift over its raw repair floor's. On a
	// machine whose cores are all busy the time ratios follow these.
	FleetColdSyncCPUOverCreateFloorCPU float64 `json:"fleetColdSyncCpuOverCreateFloorCpu,omitempty"`
	FleetRepairCPUOverRepairFloorCPU   float64 `json:"fleetRepairCpuOverRepairFloorCpu,omitempty"`
	// GitPushOverFloor is the git run's push to all applied p50 over its
	// raw apply floor.
	GitPushOverFloor float64 `json:"gitPushOverFloor,omitempty"`
}

// plainConfig is the config of the bench's plain clients of lc (the drift
// client, the raw watch, the floors): protobuf, and not rate limited.
func plainConfig(lc *localcluster.Cluster) *rest.Config {
	rc := lc.RESTConfig()
	rc.QPS = -1
	rc.UserAgent = driftgen.FieldManager
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return rc
}

// ratios returns rep.Ratios, made if missing.
func (rep *benchReport) ratios() *benchRatios {
	if rep.Ratios == nil {
		rep.Ratios = &benchRatios{}
	}
	return rep.Ratios
}

// ratioGoal adds the target that got is within bar times floor (and, when
// all is false, it is missed: not everything was done), and returns the
// ratio.
func (rep *benchReport) ratioGoal(goal string, bar float64, got, floor msDuration, all bool) float64 {
	ratio := float64(got) / float64(floor)
	rep.Targets = append(rep.Targets, benchGoal{Goal: goal, Met: ratio <= bar && all,
		Actual: fmt.Sprintf("%.2fx (%s vs %s)", ratio, fmtDur(got.dur()), fmtDur(floor.dur()))})
	return ratio
}

// benchGoal is one target of the issue, checked against the figures.
type benchGoal struct {
	Goal   string `json:"goal"`
	Met    bool   `json:"met"`
	Actual string `json:"actual"`
}

// msDuration encodes as a number of milliseconds.
type msDuration time.Duration

// MarshalJSON encodes the duration in milliseconds.
func (d msDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(float64(time.Duration(d).Microseconds()) / 1000)
}

// UnmarshalJSON decodes a number of milliseconds (to the microsecond).
func (d *msDuration) UnmarshalJSON(b []byte) error {
	var ms float64
	if err := json.Unmarshal(b, &ms); err != nil {
		return fmt.Errorf("milliseconds: %w", err)
	}
	*d = msDuration(time.Duration(math.Round(ms*1000)) * time.Microsecond)
	return nil
}

func (d msDuration) dur() time.Duration { return time.Duration(d) }

// failed reports whether a run or the scale run failed with reasons to
// report.
func (rep *benchReport) failed() bool {
	for _, r := range rep.Runs {
		if r.SyncFailed || len(r.Failures) > 0 || (r.Others != nil && len(r.Others.Failures) > 0) {
			return true
		}
	}
	if rep.Fleet != nil && (rep.Fleet.SyncFailed || len(rep.Fleet.Failures) > 0) {
		return true
	}
	if rep.Mixed != nil && (rep.Mixed.SyncFailed || len(rep.Mixed.Failures) > 0) {
		return true
	}
	if rep.Git != nil && rep.Git.Error != "" {
		return true
	}
	return rep.Scale != nil && (rep.Scale.SyncFailed || len(rep.Scale.Failures) > 0)
}

func findRun(runs []runReport, mode string) *runReport {
	for i := range runs {
		if runs[i].Mode == mode {
			return &runs[i]
		}
	}
	return nil
}

// finish derives the ratios, the targets and the notes.
func (rep *benchReport) finish(o Options) {
	watchRun, pollRun, burstRun := findRun(rep.Runs, ModeWatch), findRun(rep.Runs, ModePoll), findRun(rep.Runs, ModeBurst)
	if pollRun != nil {
		rep.PollInterval = msDuration(o.Interval)
	}
	if burstRun != nil {
		rep.Burst = burstRun.Drifts
	}
	if watchRun != nil && pollRun != nil && watchRun.Detect.P50 > 0 {
		rep.Ratios = &benchRatios{PollOverWatchDetectP50: float64(pollRun.Detect.P50) / float64(watchRun.Detect.P50)}
	}
	if watchRun != nil && watchRun.Floor.P99 > 0 {
		rep.ratios().WatchDetectP99OverFloorP99 = float64(watchRun.Detect.P99) / float64(watchRun.Floor.P99)
	}
	if watchRun != nil {
		d, f := watchRun.Detect.P99.dur(), watchRun.Floor.P99.dur()
		rep.Targets = append(rep.Targets,
			benchGoal{Goal: "watch detect p99 within 2x of floor p99 and under 100ms",
				Met:    d > 0 && d <= 2*f && d < 100*time.Millisecond && watchRun.Repaired == watchRun.Drifts,
				Actual: fmt.Sprintf("%s vs floor %s", fmtDur(d), fmtDur(f))},
			benchGoal{Goal: fmt.Sprintf("watch repair p99 under 250ms at %g drifts/s per cluster", o.Rate),
				Met:    watchRun.Repair.P99 > 0 && watchRun.Repair.P99.dur() < 250*time.Millisecond && watchRun.Repaired == watchRun.Drifts,
				Actual: fmtDur(watchRun.Repair.P99.dur())})
	}
	if burstRun != nil {
		rep.Targets = append(rep.Targets, benchGoal{
			Goal:   fmt.Sprintf("burst of %d deletes fully repaired in under 15s", burstRun.Drifts),
			Met:    burstRun.Repaired == burstRun.Drifts && burstRun.Elapsed.dur() < 15*time.Second,
			Actual: fmt.Sprintf("%s (%d/%d)", fmtDur(burstRun.Elapsed.dur()), burstRun.Repaired, burstRun.Drifts)})
		if floor := burstRun.repairFloor(); floor > 0 && burstRun.Elapsed > 0 {
			rep.ratios().BurstRepairedOverRepairFloor = rep.ratioGoal(fmt.Sprintf("burst all repaired within %gx the raw repair floor", burstRepairFloorBar),
				burstRepairFloorBar, burstRun.Elapsed, floor, burstRun.Repaired == burstRun.Drifts)
		}
		if o := burstRun.Others; o != nil {
			rep.Targets = append(rep.Targets, benchGoal{
				Goal:   fmt.Sprintf("the other clusters' repair p99 during the burst under %s", fmtDur(othersRepairBar)),
				Met:    o.Repair.P99 > 0 && o.Repair.P99.dur() < othersRepairBar && o.Repaired == o.Drifts,
				Actual: fmt.Sprintf("%s (%d/%d repaired; floor p99 %s)", fmtDur(o.Repair.P99.dur()), o.Repaired, o.Drifts, fmtDur(o.Floor.P99.dur()))})
			if o.Floor.P99 > 0 && o.Repair.P99 > 0 {
				rep.ratios().BurstOthersRepairP99OverFloorP99 = float64(o.Repair.P99) / float64(o.Floor.P99)
			}
		}
		if g, ok := apiserverGoal(burstRun); ok {
			rep.Targets = append(rep.Targets, g)
		}
	}
	if rep.Scale != nil {
		prefix := ""
		if rep.Mixed != nil {
			prefix = "three kinds (baseline): "
		}
		rep.Targets = append(rep.Targets, benchGoal{
			Goal:   fmt.Sprintf("%sunder 2 KiB of hub memory per managed object at %d objects per cluster", prefix, o.Objects),
			Met:    rep.Scale.BytesPerObject > 0 && rep.Scale.BytesPerObject < 2048,
			Actual: fmtBytes(uint64(rep.Scale.BytesPerObject))})
	}
	rep.finishFleet()
	rep.finishMixed(o)
	rep.finishGit(o)
	if rep.Scale != nil || rep.Mixed != nil || rep.Fleet != nil {
		rep.Notes = append(rep.Notes, heapNote)
	}
	if pollRun != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("poll: watches off, the hub's resync alone finds drift, every %s (+ up to 10%% jitter); each pass GETs every object through the hub's client rate limit (%s per cluster). Real poll tools use about 5m: poll figures scale with the interval.", o.Interval, clusters.DescribeRateLimit(float32(rep.QPS), 0)))
	}
	if len(rep.Runs) > 0 {
		rep.Notes = append(rep.Notes, "floor: an independent raw watch (no informer, no label selector; dynamic for the mixed kinds) seeing the change; hub-event: the hub's own watch event (poll: its reconcile starting); detect: the hub classifying it; apply: the hub's repair call returning; repair: the raw watch seeing the object as desired again. All from the drift call's start.")
		rep.Notes = append(rep.Notes, "cpu and peak rss are this process's from the first drift to the last repair: the hub plus the bench's raw watch and drift client; the control planes are separate processes. The first drift comes once the hub has returned the heap its first sync freed (at most 2s after it is in sync), as a hub that has been running has. "+
			"The peak rss is shown with the peaks of its anonymous part (the Go heap and stacks) and of its file-backed part (the pages of the binary the process touched, more with every library linked, and the state file's mapping), each sampled every 20 ms.")
	}
	if burstRun != nil && burstRun.repairFloor() > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("raw repair floor: before the burst's hub started and again after it stopped, the bench's client deletes the same objects as the burst does (%d at a time) while a plain client-go client server-side applies each again (the same body, the hub's field manager) as soon as its delete returned, as many applies in flight as the hub runs writes on one cluster (its writers but one), from the first delete's start to the last apply returning: the burst's deletes and repairs without the detection. All repaired in runs from the burst's first delete to the raw watch seeing the last object back, and is taken over the mean of the two floors, so that a machine whose speed drifts during the run moves the floor with the hub.", benchBurstWorkers))
	}
	if burstRun != nil && burstRun.Others != nil {
		rep.Notes = append(rep.Notes, "other clusters: once the burst's floors are measured, a second fresh hub takes the same burst while the drift client drifts every other cluster at the run's rate (deletes, scales, image edits, label removals, one call at a time on each cluster) for as long as the raw repair floor before the hub took; the same raw watch times them. The hub hands its writes to writers that serve the clusters' queues in turn, and a cluster never runs all of them at once, so a quiet cluster's repair never waits behind a burst's queue.")
	}
	if burstRun != nil && len(burstRun.APIServer) > 0 {
		rep.Notes = append(rep.Notes, "apiserver: each local apiserver's own apiserver_request_duration_seconds (/metrics) scraped before and after the burst and subtracted, over every client (the hub, the drift client, the raw watch); mutating: POST, PUT, PATCH, DELETE, APPLY; read: GET, LIST; p50 and p99 interpolated inside the histogram's buckets, as histogram_quantile does.")
	}
}

// apiserverGoal checks the Kubernetes SLO (mutating calls p99 under 1s)
// on every apiserver that served mutating calls during the burst.
func apiserverGoal(r *runReport) (benchGoal, bool) {
	g := benchGoal{Goal: fmt.Sprintf("apiserver mutating p99 under %s (Kubernetes SLO) during the burst", apiserverSLO), Met: true}
	var worst *apiserverLatency
	for i, l := range r.APIServer {
		if l.Verbs != VerbsMutating || l.N == 0 {
			continue
		}
		if worst == nil || l.P99 > worst.P99 {
			worst = &r.APIServer[i]
		}
	}
	switch {
	case worst != nil:
		g.Met = worst.P99.dur() < apiserverSLO
		g.Actual = fmt.Sprintf("%s on %s (%d calls)", fmtDur(worst.P99.dur()), worst.Cluster, worst.N)
	case r.APIServerError != "":
		g.Met, g.Actual = false, "not measured: "+r.APIServerError
	default:
		return g, false
	}
	return g, true
}

// writeTable writes the report as aligned text.
func (rep *benchReport) writeTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	mix := rep.Mix
	if rep.Scale != nil {
		mix = rep.Scale.Mix
	}
	clustersText := fmt.Sprintf("%d cluster(s)", rep.Clusters)
	if rep.APIServers > 0 {
		clustersText = fmt.Sprintf("%d cluster entries on %d apiserver(s)", rep.Clusters, rep.APIServers)
	}
	mixText := fmt.Sprintf("%d Deployments, %d Services, %d ConfigMaps each", mix.Deployments, mix.Services, mix.ConfigMaps)
	if rep.Mixed != nil {
		kinds := make([]string, 0, len(rep.Mixed.Kinds))
		for _, k := range rep.Mixed.Kinds {
			kinds = append(kinds, fmt.Sprintf("%d %s", k.N, k.Kind))
		}
		mixText = fmt.Sprintf("%d kinds each: %s", len(rep.Mixed.Kinds), strings.Join(kinds, ", "))
	}
	if rep.Git != nil {
		mixText = "ConfigMaps, Deployments and Services in turn, from a Git source"
	}
	fmt.Fprintf(tw, "driftwatch bench --mode %s: %s x %d objects (%s); hub: %d workers, client rate limit %s per cluster\n",
		rep.Mode, clustersText, rep.ObjectsPerCluster, mixText, rep.Workers, clusters.DescribeRateLimit(float32(rep.QPS), 0))
	if rep.LoadBefore != "" {
		pinned := ""
		if rep.Pinned != "" {
			pinned = "; " + rep.Pinned
		}
		fmt.Fprintf(tw, "machine: %d CPUs, load average before the bench %s%s\n", rep.CPUs, rep.LoadBefore, pinned)
	}
	if len(rep.Runs) > 0 {
		what := "deletes, scales, image edits, label removals"
		if rep.Mixed != nil {
			what = "deletes, field edits, label removals"
		}
		fmt.Fprintf(tw, "drifts: %d at %g/s per cluster, seed %d, schedule %s (%s)\n\n", rep.Drifts, rep.Rate, rep.Seed, rep.Schedule, what)
		fmt.Fprintln(tw, "mode\tlatency\tn\tp50\tp95\tp99\tmax")
		for _, r := range rep.Runs {
			for _, l := range r.named() {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.Mode, l.name, l.p.N, fmtDur(l.p.P50.dur()), fmtDur(l.p.P95.dur()), fmtDur(l.p.P99.dur()), fmtDur(l.p.Max.dur()))
			}
		}
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "mode\tdrifts\trepaired\tfailed\thub sync\tdrifts made in\tall repaired in\trepairs/s\tcpu\tpeak rss")
		for _, r := range rep.Runs {
			repaired := fmt.Sprint(r.Repaired)
			if r.TimedOut {
				repaired += " (timed out)"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\t%s\t%.1f\t%s\t%s\n", r.Mode, r.Drifts, repaired, r.Failed,
				fmtDur(r.Sync.dur()), fmtDur(r.Issue.dur()), fmtDur(r.Elapsed.dur()), r.RepairsPerSecond, fmtDur(r.CPU.dur()), peakRSSText(r))
		}
		for _, r := range rep.Runs {
			if r.repairFloor() > 0 {
				floors, over := fmt.Sprintf("%s after the hub", fmtDur(r.RepairFloor.dur())), "floor"
				switch {
				case r.RepairFloorBefore > 0 && r.RepairFloor > 0:
					floors, over = fmt.Sprintf("%s before the hub and %s after it", fmtDur(r.RepairFloorBefore.dur()), fmtDur(r.RepairFloor.dur())), "floors' mean"
				case r.RepairFloorBefore > 0:
					floors = fmt.Sprintf("%s before the hub", fmtDur(r.RepairFloorBefore.dur()))
				}
				fmt.Fprintf(tw, "\n%s: raw repair floor (the %d objects deleted again, %d at a time, each applied again by a plain client once deleted, %d at a time) %s, its deletes done after %s; all repaired in %s%s\n",
					r.Mode, r.Drifts, benchBurstWorkers, r.RepairFloorConcurrency, floors, fmtDur(r.RepairFloorDeletes.dur()),
					fmtDur(r.Elapsed.dur()), overFloor(r.Elapsed, r.repairFloor(), over))
			}
		}
		for _, r := range rep.Runs {
			if o := r.Others; o != nil {
				fmt.Fprintf(tw, "\n%s: the same burst again with the other clusters drifting meanwhile (%s: %g/s each over %s, the floor's length before the hub); the burst all repaired in %s (%d of %d), the other clusters' drifts %d of %d repaired\n",
					r.Mode, strings.Join(o.Clusters, ", "), o.RatePerCluster, fmtDur(o.Window.dur()), fmtDur(o.BurstElapsed.dur()), o.BurstRepaired, r.Drifts, o.Repaired, o.Drifts)
				fmt.Fprintln(tw, "others\tn\tp50\tp95\tp99\tmax")
				for _, l := range o.named() {
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", l.name, l.p.N, fmtDur(l.p.P50.dur()), fmtDur(l.p.P95.dur()), fmtDur(l.p.P99.dur()), fmtDur(l.p.Max.dur()))
				}
			}
		}
		for _, r := range rep.Runs {
			if r.Mode != ModeWatch && r.Mode != ModeFleet && r.Mode != ModeMixed {
				continue
			}
			fmt.Fprintln(tw)
			fmt.Fprintf(tw, "%s by action\tn\tfloor p50\tfloor p99\tdetect p50\tdetect p99\trepair p50\trepair p99\n", r.Mode)
			for _, a := range reportedActions() {
				l, ok := r.ByAction[string(a)]
				if !ok {
					continue
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", a, l.Detect.N, fmtDur(l.Floor.P50.dur()), fmtDur(l.Floor.P99.dur()),
					fmtDur(l.Detect.P50.dur()), fmtDur(l.Detect.P99.dur()), fmtDur(l.Repair.P50.dur()), fmtDur(l.Repair.P99.dur()))
			}
			writeByKind(tw, &r)
		}
		for _, r := range rep.Runs {
			if len(r.APIServer) == 0 {
				continue
			}
			fmt.Fprintln(tw)
			fmt.Fprintf(tw, "%s: each apiserver's own request latency during the run (its /metrics)\n", r.Mode)
			fmt.Fprintln(tw, "apiserver\tverb-class\tn\tp50\tp99")
			for _, l := range r.APIServer {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", l.Cluster, l.Verbs, l.N, fmtDur(l.P50.dur()), fmtDur(l.P99.dur()))
			}
		}
		for _, r := range rep.Runs {
			if r.FirstError != "" {
				fmt.Fprintf(tw, "%s: first failed drift: %s\n", r.Mode, r.FirstError)
			}
			if r.APIServerError != "" {
				fmt.Fprintf(tw, "%s: apiserver latency not measured: %s\n", r.Mode, r.APIServerError)
			}
			if r.RepairFloorError != "" {
				fmt.Fprintf(tw, "%s: raw repair floor not measured: %s\n", r.Mode, r.RepairFloorError)
			}
		}
	}
	if rep.Ratios != nil {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "ratio\tvalue")
		if rep.Ratios.PollOverWatchDetectP50 > 0 {
			fmt.Fprintf(tw, "poll detect p50 / watch detect p50\t%.0fx\n", rep.Ratios.PollOverWatchDetectP50)
		}
		if rep.Ratios.WatchDetectP99OverFloorP99 > 0 {
			fmt.Fprintf(tw, "watch detect p99 / floor p99\t%.2fx\n", rep.Ratios.WatchDetectP99OverFloorP99)
		}
		if rep.Ratios.BurstRepairedOverRepairFloor > 0 {
			fmt.Fprintf(tw, "burst all repaired / raw repair floor\t%.2fx\n", rep.Ratios.BurstRepairedOverRepairFloor)
		}
		if rep.Ratios.BurstOthersRepairP99OverFloorP99 > 0 {
			fmt.Fprintf(tw, "burst other clusters' repair p99 / floor p99\t%.2fx\n", rep.Ratios.BurstOthersRepairP99OverFloorP99)
		}
		if rep.Ratios.FleetColdSyncOverCreateFloor > 0 {
			fmt.Fprintf(tw, "fleet cold sync / raw create floor\t%.2fx\n", rep.Ratios.FleetColdSyncOverCreateFloor)
		}
		if rep.Ratios.FleetColdSyncOverCreateWatchFloor > 0 {
			fmt.Fprintf(tw, "fleet cold sync / raw create floor with watches\t%.2fx\n", rep.Ratios.FleetColdSyncOverCreateWatchFloor)
		}
		if rep.Ratios.FleetRepairP99OverFloorP99 > 0 {
			fmt.Fprintf(tw, "fleet repair p99 / floor p99\t%.2fx\n", rep.Ratios.FleetRepairP99OverFloorP99)
		}
		if rep.Ratios.FleetRepairP99OverRepairFloorP99 > 0 {
			fmt.Fprintf(tw, "fleet repair p99 / raw repair floor p99\t%.2fx\n", rep.Ratios.FleetRepairP99OverRepairFloorP99)
		}
		if rep.Ratios.FleetColdSyncCPUOverCreateFloorCPU > 0 {
			fmt.Fprintf(tw, "fleet cold sync cpu per object / raw create floor's\t%.2fx\n", rep.Ratios.FleetColdSyncCPUOverCreateFloorCPU)
		}
		if rep.Ratios.FleetRepairCPUOverRepairFloorCPU > 0 {
			fmt.Fprintf(tw, "fleet drift run cpu per drift / raw repair floor's\t%.2fx\n", rep.Ratios.FleetRepairCPUOverRepairFloorCPU)
		}
		if rep.Ratios.MixedDetectP99OverFloorP99 > 0 {
			fmt.Fprintf(tw, "mixed detect p99 / floor p99\t%.2fx\n", rep.Ratios.MixedDetectP99OverFloorP99)
		}
		if rep.Ratios.MixedSyncOverScaleSync > 0 {
			fmt.Fprintf(tw, "mixed initial sync / three kinds' initial sync\t%.2fx\n", rep.Ratios.MixedSyncOverScaleSync)
		}
		if rep.Ratios.MixedHeapOverScaleHeap > 0 {
			fmt.Fprintf(tw, "mixed heap per object / three kinds' heap per object\t%.2fx\n", rep.Ratios.MixedHeapOverScaleHeap)
		}
		if rep.Ratios.GitPushOverFloor > 0 {
			fmt.Fprintf(tw, "git push to all applied p50 / raw apply floor\t%.2fx\n", rep.Ratios.GitPushOverFloor)
		}
	}
	if s := rep.Scale; s != nil {
		fmt.Fprintln(tw)
		if rep.Mixed != nil {
			fmt.Fprintln(tw, "three kinds (baseline) measure\tvalue")
		} else {
			fmt.Fprintln(tw, "measure\tvalue")
		}
		fmt.Fprintf(tw, "managed objects\t%d\n", s.Objects)
		fmt.Fprintf(tw, "objects created by the bench client (16 at a time)\t%s\n", fmtDur(s.Precreate.dur()))
		fmt.Fprintf(tw, "initial sync (hub start to all in sync)\t%s\n", fmtDur(s.InitialSync.dur()))
		fmt.Fprintf(tw, "peak rss during the sync\t%s\n", fmtBytes(s.PeakRSS))
		fmt.Fprintf(tw, "steady rss\t%s\n", fmtBytes(s.RSS))
		fmt.Fprintf(tw, "heap in use after GC\t%s\n", fmtBytes(s.HeapInUse))
		fmt.Fprintf(tw, "hub heap per managed object\t%s\n", fmtBytes(uint64(s.BytesPerObject)))
		fmt.Fprintf(tw, "idle cpu over %s\t%s (%.2f%% of a core)\n", fmtDur(s.IdleFor.dur()), fmtDur(s.IdleCPU.dur()), s.IdleCPUPercent)
	}
	rep.Fleet.writeTable(tw)
	if r := findRun(rep.Runs, ModeFleet); rep.Fleet != nil && r != nil {
		if r.Cost != nil {
			fmt.Fprintf(tw, "drift phase's cost (first drift to last repair)\t%s\n", r.Cost)
		}
		if l := r.RepairFloorLatency; l != nil {
			fmt.Fprintf(tw, "raw repair floor (a plain client, the same drifts, %d at a time)\trepair p50 %s, p99 %s; the hub's p99 %s%s\n",
				r.RepairFloorConcurrency, fmtDur(l.P50.dur()), fmtDur(l.P99.dur()), fmtDur(r.Repair.P99.dur()), overFloor(r.Repair.P99, l.P99, "floor"))
		}
		if r.RepairFloorCost != nil {
			fmt.Fprintf(tw, "raw repair floor's cost (first drift to last repair)\t%s\n", r.RepairFloorCost)
		}
		if hub, floor, budget := rep.driftCPU(r); hub > 0 || floor > 0 {
			given := ""
			if budget > 0 {
				given = fmt.Sprintf("; the machine's cores give %s a drift at %g drifts/s", fmtDur(budget.dur()), rep.Rate*float64(rep.Fleet.Entries))
			}
			fmt.Fprintf(tw, "cpu per drift (control planes and this process)\thub %s, raw repair floor %s%s\n", fmtDur(hub.dur()), fmtDur(floor.dur()), given)
		}
	}
	rep.Mixed.writeTable(tw, rep.Scale)
	rep.Git.writeTable(tw)
	if len(rep.Targets) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "target\tresult\tactual")
		for _, g := range rep.Targets {
			res := "met"
			if !g.Met {
				res = "MISSED"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", g.Goal, res, g.Actual)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rep.Runs {
		what := r.Mode
		if r.SyncFailed {
			what += ": the hub never showed every object in sync; objects not in sync"
		} else {
			what += ": drifts not seen repaired"
		}
		writeFailures(w, what, r.Failures)
		if o := r.Others; o != nil {
			writeFailures(w, r.Mode+" with the other clusters drifting: drifts not seen repaired", o.Failures)
		}
	}
	if s := rep.Scale; s != nil {
		writeFailures(w, "scale: the hub never showed every object in sync; objects not in sync", s.Failures)
	}
	if m := rep.Mixed; m != nil {
		writeFailures(w, "mixed: the hub never showed every object in sync; objects not in sync", m.Failures)
	}
	if f := rep.Fleet; f != nil {
		writeFailures(w, "fleet: the hub never showed every entry synced and every object in sync; objects not in sync", f.Failures)
	}
	if len(rep.Notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range rep.Notes {
			fmt.Fprintln(w, "note:", n)
		}
	}
	return nil
}

// reportedActions are the drift actions the by-action tables list, in
// order (those a run made).
func reportedActions() []driftgen.Action {
	return []driftgen.Action{driftgen.ActionDelete, driftgen.ActionScale, driftgen.ActionImage, driftgen.ActionEdit, driftgen.ActionUnlabel}
}

// fmtDur formats a latency with a precision that suits its size.
func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}

// fmtBytes formats a byte count in B, KiB or MiB.
func fmtBytes(n uint64) string {
	switch {
	case n == 0:
		return "-"
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.2f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}

// idle waits out the idle window (--idle), CPU-profiling it alone with
// --idle-cpuprofile; false when ctx ended first.
func (b *bencher) idle(ctx context.Context) bool {
	if b.opts.IdleCPUProfile == "" {
		return sleepCtx(ctx, b.opts.Idle)
	}
	f, err := os.Create(b.opts.IdleCPUProfile)
	if err != nil {
		b.log.Warn("idle cpu profile", "err", err)
		return sleepCtx(ctx, b.opts.Idle)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		b.log.Warn("idle cpu profile", "err", err)
		return sleepCtx(ctx, b.opts.Idle)
	}
	defer pprof.StopCPUProfile()
	return sleepCtx(ctx, b.opts.Idle)
}

// statusCounts describes the statuses of the objects not in sync and the
// hub's queue, for progress lines: "unknown 240, drifted 3; 12 queued".
func statusCounts(by map[hub.Status]int, queued int) string {
	var parts []string
	for _, st := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%s %d", st, by[st]))
	}
	s := strings.Join(parts, ", ")
	if s != "" {
		s += "; "
	}
	return s + fmt.Sprintf("%d queued", queued)
}

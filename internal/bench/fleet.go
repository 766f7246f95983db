package bench

import (
	"context"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
)

// Fleet defaults: what --mode fleet uses for the flags left unset.
const (
	FleetClusters   = 250
	FleetObjects    = 100
	FleetAPIServers = 3
	FleetRate       = 1.0
	FleetDuration   = 30 * time.Second
	FleetIdle       = 10 * time.Second
)

// Fleet bars: the targets --mode fleet checks.
const (
	fleetColdSyncBar = 30 * time.Second
	fleetRSSBar      = 1 << 30
	fleetIdleCPUBar  = 5.0 // percent of one core
	fleetRepairBar   = 250 * time.Millisecond
	// fleetColdSyncFloorBar bounds the cold sync over the raw create floor.
	fleetColdSyncFloorBar = 1.3
	// fleetRepairFloorBar bounds the repair p99 over the raw-watch floor
	// p99.
	fleetRepairFloorBar = 2.0
)

// FleetDefaults gives the options --mode fleet's defaults where the user left
// the flag unset (changed reports whether a flag, by name, was set): 250
// cluster entries of 100 objects, 1 drift per second per entry, 10 s of idle
// CPU.
func FleetDefaults(o *Options, changed func(flag string) bool) {
	if o.Mode != ModeFleet {
		return
	}
	if !changed("clusters") {
		o.Clusters = FleetClusters
	}
	if !changed("objects") {
		o.Objects = FleetObjects
	}
	if !changed("rate") {
		o.Rate = FleetRate
	}
	if !changed("idle") {
		o.Idle = FleetIdle
	}
}

// fleetEntry is one cluster entry of the fleet config: its own id and
// namespace, on one of the shared apiservers.
type fleetEntry struct {
	ID        string
	Namespace string
	// APIServer is the local cluster serving the entry.
	APIServer *localcluster.Cluster
}

// fleetEntries names n entries round-robin over the apiservers: f001 in
// namespace fleet-f001 on the first, f002 on the second, and so on.
func fleetEntries(apiservers []*localcluster.Cluster, n int) []fleetEntry {
	width := len(strconv.Itoa(n))
	out := make([]fleetEntry, n)
	for i := range out {
		id := fmt.Sprintf("f%0*d", width, i+1)
		out[i] = fleetEntry{ID: id, Namespace: "fleet-" + id, APIServer: apiservers[i%len(apiservers)]}
	}
	return out
}

// fleetConfig returns the text of a config with one cluster entry per
// fleet entry, each through its apiserver's kubeconfig, and objects
// applications per entry in the entry's own namespace targeting that entry
// alone (a Deployment and a ConfigMap each, no Services: a local apiserver
// has 253 ClusterIPs for all the entries it serves). Every entry therefore
// has its own watches, as separate clusters would.
func fleetConfig(entries []fleetEntry, objects int, qps float64, workers int) string {
	var sb strings.Builder
	writeHubSection(&sb, "driftwatch bench --mode fleet", qps, workers)
	for _, e := range entries {
		fmt.Fprintf(&sb, "  - id: %s\n    kubeconfig: %s\n", e.ID, e.APIServer.Kubeconfig)
	}
	sb.WriteString("applications:\n")
	for _, e := range entries {
		writeApps(&sb, e.ID+"-a", e.Namespace, "clusters: ["+e.ID+"]", objects, 0)
	}
	return sb.String()
}

// SpreadPlan is Plan with each cluster's drifts shifted by its place in
// sorted order over clusters x ratePerCluster: every cluster still sees
// ratePerCluster drifts per second, and the fleet's drifts arrive evenly
// spaced instead of one burst per cluster each round.
func SpreadPlan(targets []Target, drifts int, ratePerCluster float64, seed uint64) []Step {
	steps := Plan(targets, drifts, ratePerCluster, seed)
	n := len(groupByCluster(targets))
	if n == 0 || ratePerCluster <= 0 {
		return steps
	}
	// Plan gives step j to the (j mod n)-th cluster.
	for j := range steps {
		steps[j].Offset += time.Duration(float64(j%n) / (float64(n) * ratePerCluster) * float64(time.Second))
	}
	return steps
}

// fleetReport is the --mode fleet run's cold start, memory and idle CPU; its
// drift phase is the run of mode fleet in benchReport.Runs.
type fleetReport struct {
	Entries         int       `json:"entries"`
	APIServers      int       `json:"apiservers"`
	ObjectsPerEntry int       `json:"objectsPerEntry"`
	Objects         int       `json:"objects"`
	Mix             objectMix `json:"mixPerEntry"`
	// ClustersSynced is a fresh hub's start, with no object on the
	// apiservers, to every entry reported synced; ColdSync to every object
	// created and shown in sync too.
	ClustersSynced msDuration `json:"clustersSyncedMs"`
	ColdSync       msDuration `json:"coldSyncMs"`
	// CreateFloor is the raw create floor measured in the same run before
	// the cold hub: a plain client creating the same objects (the same
	// bodies, each entry's in a namespace of its own) on the same
	// apiservers, CreateFloorConcurrency calls in flight (the hub's
	// writers), from its first call to its last returning.
	CreateFloor            msDuration `json:"createFloorMs,omitempty"`
	CreateFloorConcurrency int        `json:"createFloorConcurrency,omitempty"`
	// CreateFloorError says why the raw create floor was not measured.
	CreateFloorError string `json:"createFloorError,omitempty"`
	// CreateFloorAfter is the same floor measured again once the cold hub
	// stopped (its objects still on the apiservers), so that the floor
	// brackets the cold sync: a machine whose speed drifts during the run
	// moves both. The cold sync's ratio is over their mean (floor).
	CreateFloorAfter      msDuration `json:"createFloorAfterMs,omitempty"`
	CreateFloorAfterError string     `json:"createFloorAfterError,omitempty"`
	// CreateWatchFloor is the raw create floor with what the apiservers
	// serve any watch-based tool: measured right before the cold hub, the
	// same creates while a raw watch per entry and kind (the hub's
	// informers' watches) follows each entry's floor namespace, from the
	// first call until the last returned and the watches saw every object
	// created. Beside the cold sync it says how much of the gap to the
	// raw create floor is the watch events' cost (no bar: the cold sync's
	// bar is over the raw create floor).
	CreateWatchFloor      msDuration `json:"createWatchFloorMs,omitempty"`
	CreateWatchFloorError string     `json:"createWatchFloorError,omitempty"`
	CreateWatchFloorCost  *spanCost  `json:"createWatchFloorCost,omitempty"`
	// CreateFloorCost, CreateFloorAfterCost and ColdSyncCost are what the
	// floors and the cold sync cost the control planes and this process,
	// and the calls the apiservers served meanwhile.
	CreateFloorCost      *spanCost `json:"createFloorCost,omitempty"`
	CreateFloorAfterCost *spanCost `json:"createFloorAfterCost,omitempty"`
	ColdSyncCost         *spanCost `json:"coldSyncCost,omitempty"`
	// PeakRSS is this process's peak resident set during the cold sync;
	// RSS, HeapInUse, OpenFDs and Goroutines are measured once it settled.
	PeakRSS   uint64 `json:"peakRSSBytes"`
	RSS       uint64 `json:"steadyRSSBytes"`
	HeapInUse uint64 `json:"heapInUseBytes"`
	// BytesPerObject is the heap in use after GC, minus the heap before
	// the config was loaded, per managed object.
	BytesPerObject float64 `json:"bytesPerObject"`
	OpenFDs        int     `json:"openFDs"`
	Goroutines     int     `json:"goroutines"`
	// IdleCPU is this process's CPU time over IdleFor with no drift.
	IdleCPU        msDuration `json:"idleCPUMs"`
	IdleFor        msDuration `json:"idleForMs"`
	IdleCPUPercent float64    `json:"idleCPUPercentOfCore"`
	// IdleCost is the idle span's cost, the control planes' CPU while the
	// hub watches and probes every entry, and IdleFloorCost the same
	// length's right after the hub stopped: what the idle hub costs the
	// clusters is the difference.
	IdleCost      *spanCost `json:"idleCost,omitempty"`
	IdleFloorCost *spanCost `json:"idleFloorCost,omitempty"`
	// DriftFor is the drift phase's planned length.
	DriftFor msDuration `json:"driftForMs"`
	// SyncFailed and Failures: the hub never showed every entry synced
	// and every object in sync, and why for each object that was not.
	SyncFailed bool            `json:"syncFailed,omitempty"`
	Failures   []failureReport `json:"failures,omitempty"`
}

// fleet runs --mode fleet on the local apiservers: a cold start (a fresh
// hub creating every object of every entry), the settled hub's memory and
// idle CPU, then drift at the rate per entry on a second fresh hub started
// on the existing objects (its sync is the run's hub sync), measured against
// a raw watch of every namespace of each apiserver.
func (b *bencher) fleet(ctx context.Context, rep *benchReport) (*fleetReport, []runReport, error) {
	o := b.opts
	entries := fleetEntries(b.set.Clusters, o.Clusters)
	path := filepath.Join(b.dir, "fleet.yaml")
	if err := os.WriteFile(path, []byte(fleetConfig(entries, o.Objects, o.QPS, o.Workers)), 0o600); err != nil {
		return nil, nil, fmt.Errorf("bench: %w", err)
	}
	// The raw create floor first, on apiservers as empty as the cold
	// hub's, before the heap is measured.
	cfg, err := config.Load(path, config.LoadOptions{Getenv: func(string) string { return "" }})
	if err != nil {
		return nil, nil, fmt.Errorf("bench: generated config %s: %w", path, err)
	}
	// A floor that fails is reported, not the run's failure.
	defer pprof.SetGoroutineLabels(ctx) // the phases end with the fleet
	phase(ctx, "create floor before")
	b.compactStores(ctx)
	createFloor, floorConc, floorCost, err := b.fleetCreateFloor(ctx, entries, config.Compile(cfg), cfg.Workers(), "before the hub", false)
	floorErr := ""
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, err
		}
		b.log.Warn("raw create floor not measured", "err", err)
		floorErr = err.Error()
	}
	var createWatchFloor time.Duration
	var createWatchFloorCost *spanCost
	createWatchFloorErr := ""
	// The same creates with the watches, on apiservers as empty as the
	// cold hub's, right before it.
	phase(ctx, "create watch floor")
	if floorErr == "" {
		b.compactStores(ctx)
		watched, _, watchedCost, err := b.fleetCreateFloor(ctx, entries, config.Compile(cfg), cfg.Workers(), "with watches", true)
		switch {
		case err == nil:
			createWatchFloor, createWatchFloorCost = watched, watchedCost
		case ctx.Err() != nil:
			return nil, nil, err
		default:
			b.log.Warn("raw create floor with watches not measured", "err", err)
			createWatchFloorErr = err.Error()
		}
	}
	heap0 := heapBefore()
	cfg, err = config.Load(path, config.LoadOptions{Getenv: func(string) string { return "" }})
	if err != nil {
		return nil, nil, fmt.Errorf("bench: generated config %s: %w", path, err)
	}
	b.workers = cfg.Workers()
	specs := config.Compile(cfg)
	mix := map[hub.Kind]int{}
	for _, s := range specs {
		if s.ID.Cluster == entries[0].ID {
			mix[s.ID.Kind]++
		}
	}
	f := &fleetReport{Entries: len(entries), APIServers: len(b.set.Clusters), ObjectsPerEntry: o.Objects,
		Objects: len(specs), Mix: mixOf(mix), DriftFor: msDuration(o.Duration),
		CreateFloor: msDuration(createFloor), CreateFloorConcurrency: floorConc, CreateFloorError: floorErr,
		CreateWatchFloor: msDuration(createWatchFloor), CreateWatchFloorError: createWatchFloorErr, CreateWatchFloorCost: createWatchFloorCost}
	f.CreateFloorCost = floorCost
	rep.Mix = f.Mix
	specs = nil
	// From here on only the hub holds the config (as much of it as it
	// keeps) until the memory is measured: the heap per object is the
	// hub's. The bench loads the file again when it needs it.
	load := func() (*config.Config, error) {
		return config.Load(path, config.LoadOptions{Getenv: func(string) string { return "" }})
	}

	if err := ResetPeakRSS(); err != nil {
		b.log.Warn("peak rss is the whole process's", "err", err)
	}
	b.progress("fleet: a fresh hub creating %d objects of %d cluster entries on %d apiserver(s)", f.Objects, f.Entries, f.APIServers)
	phase(ctx, "cold sync")
	b.compactStores(ctx)
	// FILE-cold-before: the heap before the cold hub, for pprof -base
	// (what the cold sync allocated, with -sample_index=alloc_space).
	b.writeHeapProfileTo(memProfilePath(b.opts.MemProfile, "-cold-before"))
	coldCost := b.readCost(ctx)
	began := time.Now()
	sw := newSyncWatch()
	rh, err := b.startHub(ctx, &workload{cfg: cfg}, hub.Options{OnStatus: sw.onStatus}, false)
	cfg = nil
	if err != nil {
		return nil, nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = rh.Stop()
		}
	}()
	synced, done, err := b.waitFleetSync(ctx, rh.app.Hub(), sw, entries, f.Objects, began, fleetSyncLimit(f.Objects))
	sw.stop()
	f.ClustersSynced = msDuration(synced)
	if err != nil {
		f.SyncFailed = true
		if cfg, lerr := load(); lerr == nil {
			f.Failures = explainUnsynced(config.Compile(cfg), rh.app.Hub().Snapshot())
		}
		return f, nil, fmt.Errorf("fleet cold sync: %w", err)
	}
	f.ColdSync = msDuration(done)
	f.ColdSyncCost = b.costSince(ctx, coldCost)
	f.PeakRSS, _ = PeakRSS()
	b.progress("fleet: every entry synced after %s, every object in sync after %s (the hub's heap returns so far: %d); settling, then measuring memory and %s of idle CPU",
		synced.Round(time.Millisecond), f.ColdSync.dur().Round(time.Millisecond), rh.app.Hub().HeapReturns(), o.Idle)
	if !sleepCtx(ctx, fleetSettle) {
		return nil, nil, ctx.Err()
	}
	heap := heapInUse()
	b.writeHeapProfile()
	f.HeapInUse = heap
	if heap > heap0 {
		f.BytesPerObject = float64(heap-heap0) / float64(f.Objects)
	}
	f.RSS, _ = RSS()
	f.OpenFDs = openFDs()
	f.Goroutines = runtime.NumGoroutine()
	idleCost := b.readCost(ctx)
	cpu0 := CPUTime()
	if !b.idle(ctx) {
		return nil, nil, ctx.Err()
	}
	f.IdleCPU = msDuration(CPUTime() - cpu0)
	f.IdleCost = b.costSince(ctx, idleCost)
	f.IdleFor = msDuration(o.Idle)
	f.IdleCPUPercent = 100 * f.IdleCPU.dur().Seconds() / f.IdleFor.dur().Seconds()
	b.progress("fleet: steady rss %s, idle cpu %.2f%% of a core (the hub's heap returns: %d)", fmtBytes(f.RSS), f.IdleCPUPercent, rh.app.Hub().HeapReturns())
	stopped = true
	err = rh.Stop()
	// The stopped hub is garbage from here on: the phases after it (a
	// floor, the drift run's own hub) must not carry its heap, which
	// every garbage collection would mark again.
	rh = nil
	if err != nil {
		return f, nil, fmt.Errorf("fleet cold hub: %w", err)
	}
	// The control planes at rest without the hub, for its idle cost.
	idleCost = b.readCost(ctx)
	if !sleepCtx(ctx, o.Idle) {
		return f, nil, ctx.Err()
	}
	f.IdleFloorCost = b.costSince(ctx, idleCost)
	if cfg, err = load(); err != nil {
		return f, nil, fmt.Errorf("bench: generated config %s: %w", path, err)
	}
	specs = config.Compile(cfg)
	// The raw create floor again, so that it brackets the cold sync; a
	// floor that fails is reported, not the run's failure.
	phase(ctx, "create floor after")
	b.compactStores(ctx)
	if f.CreateFloorError == "" {
		after, _, afterCost, err := b.fleetCreateFloor(ctx, entries, specs, cfg.Workers(), "after the hub", false)
		switch {
		case err == nil:
			f.CreateFloorAfter, f.CreateFloorAfterCost = msDuration(after), afterCost
		case ctx.Err() != nil:
			return f, nil, err
		default:
			b.log.Warn("raw create floor after the cold hub not measured", "err", err)
			f.CreateFloorAfterError = err.Error()
		}
	}

	// Drift: a plan over every entry, a raw watch per apiserver and kind
	// over all namespaces, a drift client per entry.
	w := &workload{cfg: cfg, specs: specs, mix: mix}
	steps := SpreadPlan(fleetTargets(w.specs), int(float64(len(entries))*o.Rate*o.Duration.Seconds()), o.Rate, o.Seed)
	if len(steps) == 0 {
		return f, nil, fmt.Errorf("bench: --duration %s at --rate %g makes no drift", o.Duration, o.Rate)
	}
	if err := fillDesired(steps, w.specs); err != nil {
		return f, nil, err
	}
	rep.Drifts, rep.Rate, rep.Schedule = len(steps), o.Rate, Fingerprint(steps)
	entryOf := make(map[string]string, len(entries)) // apiserver/namespace -> entry
	b.targets = make(map[string]kubernetes.Interface, len(entries))
	for _, e := range entries {
		entryOf[e.APIServer.Name+"/"+e.Namespace] = e.ID
		b.targets[e.ID] = b.clients[e.APIServer.Name]
	}
	phase(ctx, "drift")
	b.compactStores(ctx)
	floorCtx, stopFloor := context.WithCancel(ctx)
	floor, err := StartFloor(floorCtx, b.clients, metav1.NamespaceAll, func(apiserver string, kind hub.Kind, ev watch.Event, at time.Time) {
		tr := b.current.Load()
		if tr == nil {
			return
		}
		acc, err := meta.Accessor(ev.Object)
		if err != nil {
			return
		}
		if entry, ok := entryOf[apiserver+"/"+acc.GetNamespace()]; ok {
			tr.Event(entry, kind, ev, at)
		}
	}, b.log)
	if err != nil {
		stopFloor()
		return f, nil, fmt.Errorf("bench: raw watch: %w", err)
	}
	defer func() {
		stopFloor()
		floor.Wait()
	}()
	last := steps[len(steps)-1].Offset
	r, err := b.driftRun(ctx, ModeFleet, w, steps, nil, 1, last+2*time.Minute)
	if err != nil || r.TimedOut || r.Repaired == 0 {
		return f, []runReport{r}, err
	}
	// A floor that fails is reported, not the run's failure: the hub's
	// figures stand.
	phase(ctx, "repair floor")
	b.compactStores(ctx)
	lat, cost, err := b.fleetRepairFloor(ctx, w, entries, steps, b.workers)
	switch {
	case err == nil:
		r.RepairFloorLatency, r.RepairFloorConcurrency, r.RepairFloorCost = &lat, b.workers, cost
	case ctx.Err() != nil:
		return f, []runReport{r}, err
	default:
		b.log.Warn("raw repair floor not measured", "err", err)
		r.RepairFloorError = err.Error()
	}
	return f, []runReport{r}, nil
}

// fleetSettle is how long the cold hub settles after its sync before memory
// and idle CPU are measured: longer than a cluster's events/s window (10 s),
// whose decay after the sync is reported as health changes (each one a
// snapshot of every NodeID), so the idle window measures the steady state
// rather than the sync's tail.
const fleetSettle = 15 * time.Second

// fleetSyncLimit bounds the cold sync: generous (20 ms per object on top of
// two minutes), as the hub creates every object on apiservers that share
// the machine's cores with it.
func fleetSyncLimit(objects int) time.Duration {
	return 2*time.Minute + time.Duration(objects)*20*time.Millisecond
}

// syncWatch follows a hub's sync through its OnStatus hook: how many
// NodeIDs are in sync now, without the snapshots a subscriber gets (at
// fleet scale each copies every NodeID's status; a fleet's hub runs
// headless, with nobody subscribed).
type syncWatch struct {
	mu     sync.Mutex
	status map[hub.NodeID]hub.Status // nil once stopped
	inSync int
	// changed is signalled (never blocking) at every change.
	changed chan struct{}
}

func newSyncWatch() *syncWatch {
	return &syncWatch{status: make(map[hub.NodeID]hub.Status), changed: make(chan struct{}, 1)}
}

// stop drops what w holds: the hub keeps calling its hook, and w's map of
// every NodeID would count in the settled hub's heap per object.
func (w *syncWatch) stop() {
	w.mu.Lock()
	w.status, w.inSync = nil, 0
	w.mu.Unlock()
}

// onStatus is the hub's OnStatus hook.
func (w *syncWatch) onStatus(id hub.NodeID, st hub.Status, _ time.Time) {
	w.mu.Lock()
	if w.status == nil {
		w.mu.Unlock()
		return
	}
	if isInSync(w.status[id]) {
		w.inSync--
	}
	w.status[id] = st
	if isInSync(st) {
		w.inSync++
	}
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// count returns how many NodeIDs the hook last reported in sync.
func (w *syncWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.inSync
}

// isInSync reports whether a status counts as in sync for a sync's end.
func isInSync(st hub.Status) bool { return st == hub.StatusInSync || st == hub.StatusRepaired }

// waitFleetSync waits until every entry is synced and every one of the
// hub's want objects in sync, following the hub through w (its OnStatus
// hook) and its cluster health, and confirming the end with one snapshot.
// It returns how long after began the entries were synced (0 if they never
// all were) and the objects in sync (done), each by the hub's own stamps
// (the latest entry's synced state, the latest object's in-sync status;
// see sinceWithin), with an error that says how far the sync got.
func (b *bencher) waitFleetSync(ctx context.Context, h *hub.Hub, w *syncWatch, entries []fleetEntry, want int, began time.Time, limit time.Duration) (synced, done time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	progress := time.NewTicker(5 * time.Second)
	defer progress.Stop()
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	syncedN := 0
	for {
		select {
		case <-ctx.Done():
			return synced, 0, fmt.Errorf("bench: fleet sync: %d of %d entries synced, %d of %d objects in sync, %d in the hub's queue after %s: %w",
				syncedN, len(entries), w.count(), want, h.QueueLen(), limit, ctx.Err())
		case <-progress.C:
			b.progress("fleet sync: %d/%d entries synced, %d/%d objects in sync, %d queued", syncedN, len(entries), w.count(), want, h.QueueLen())
			continue
		case <-poll.C:
		case <-w.changed:
		}
		if synced == 0 {
			var lastSynced time.Time
			syncedN = 0
			for _, e := range entries {
				if c, ok := h.Health(e.ID); ok && c.State == hub.ClusterSynced {
					syncedN++
					lastSynced = later(lastSynced, c.Since)
				}
			}
			if syncedN == len(entries) {
				synced = sinceWithin(began, lastSynced, time.Now())
			}
		}
		if synced == 0 || w.count() < want {
			continue
		}
		// The hook says every object is in sync: a snapshot confirms it
		// (the hook leaves out statuses the config sets) and has every
		// object's stamp.
		s := h.Snapshot()
		var lastInSync time.Time
		inSync := 0
		for _, n := range s.Nodes {
			if isInSync(n.Status) {
				inSync++
				lastInSync = later(lastInSync, n.LastChange)
			}
		}
		if inSync == want && len(s.Nodes) == want {
			return synced, sinceWithin(began, lastInSync, s.Taken), nil
		}
	}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// sinceWithin returns how long after began the hub's own clock says
// something happened (at), bounded by when the snapshot saying so was
// taken: the hub stamps each status change and cluster state as it makes
// it, while a snapshot shows them only at the publisher's next pass (up to
// a second later while a fleet syncs, see the hub's publishPause). An at
// outside those bounds (unset, or another clock's) counts as taken.
func sinceWithin(began, at, taken time.Time) time.Duration {
	if at.Before(began) || at.After(taken) {
		at = taken
	}
	return at.Sub(began)
}

// fleetTargets returns the specs as drift targets without their decoded
// objects (SpreadPlan needs only the ids; fillDesired decodes the planned
// ones).
func fleetTargets(specs []hub.NodeSpec) []Target {
	ts := make([]Target, len(specs))
	for i, s := range specs {
		ts[i] = Target{ID: s.ID}
	}
	return ts
}

// fillDesired decodes the desired object of every planned target, once per
// object.
func fillDesired(steps []Step, specs []hub.NodeSpec) error {
	byID := make(map[hub.NodeID]*hub.NodeSpec, len(specs))
	for i := range specs {
		byID[specs[i].ID] = &specs[i]
	}
	decoded := make(map[hub.NodeID]*unstructured.Unstructured)
	for i := range steps {
		id := steps[i].Target.ID
		obj, ok := decoded[id]
		if !ok {
			s := byID[id]
			if s == nil {
				return fmt.Errorf("bench: planned target %s is not in the config", id)
			}
			var err error
			if obj, err = kubeobj.Object(*s); err != nil || obj == nil {
				return fmt.Errorf("bench: target %s: no desired object (%v)", id, err)
			}
			decoded[id] = obj
		}
		steps[i].Target.Desired = obj
	}
	return nil
}

// openFDs counts this process's open file descriptors (Linux: /proc/self/fd;
// 0 elsewhere).
func openFDs() int {
	des, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(des)
}

// floor is the raw create floor the cold sync is measured against: the
// mean of the floors before and after the cold hub, or the one measured
// (0 when neither was).
func (f *fleetReport) floor() msDuration { return meanOfMeasured(f.CreateFloor, f.CreateFloorAfter) }

// coldCPU is the CPU (the control planes' and this process's) the cold
// sync spent per object, and its raw create floor's (the mean of the
// floors measured), 0 where not measured.
func (f *fleetReport) coldCPU() (hub, floor msDuration) {
	hub = f.ColdSyncCost.per(f.Objects)
	var sum msDuration
	n := 0
	for _, c := range []*spanCost{f.CreateFloorCost, f.CreateFloorAfterCost} {
		if p := c.per(f.Objects); p > 0 {
			sum += p
			n++
		}
	}
	if n > 0 {
		floor = sum / msDuration(n)
	}
	return hub, floor
}

// driftCPU is the CPU (the control planes' and this process's) the fleet's
// drift run r spent per drift, its raw repair floor's, and what the
// machine's cores give a drift at the rate the drifts were made (its cores
// over the drifts made a second; 0 with --pin), 0 where not measured.
func (rep *benchReport) driftCPU(r *runReport) (hub, floor, budget msDuration) {
	hub = r.Cost.per(r.Drifts)
	floor = r.RepairFloorCost.per(r.Drifts)
	cores := 0
	for _, c := range []*spanCost{r.Cost, r.RepairFloorCost} {
		if c != nil && c.Cores > 0 {
			cores = c.Cores
		}
	}
	if rep.Fleet == nil || rep.Pinned != "" {
		// Pinned, the control planes have cores of their own: the
		// machine's cores over the drifts are no budget of either side.
		return hub, floor, 0
	}
	if rate := rep.Rate * float64(rep.Fleet.Entries); cores > 0 && rate > 0 {
		budget = msDuration(float64(time.Second) * float64(cores) / rate)
	}
	return hub, floor, budget
}

// compactStores compacts and defragments every control plane's etcd (see
// localcluster.Cluster.Compact) before a phase, so that each phase starts
// on stores without the history of the phases before it. A store that
// cannot be compacted is logged; the phase runs anyway.
func (b *bencher) compactStores(ctx context.Context) {
	began := time.Now()
	for _, lc := range b.set.Clusters {
		if err := lc.Compact(ctx); err != nil {
			b.log.Warn("etcd not compacted", "err", err)
		}
	}
	b.progress("fleet: etcd compacted and defragmented on %d control plane(s) in %s", len(b.set.Clusters), time.Since(began).Round(time.Millisecond))
}

// finishFleet adds the fleet's targets and notes.
func (rep *benchReport) finishFleet() {
	f := rep.Fleet
	if f == nil {
		return
	}
	if f.ColdSync > 0 || f.SyncFailed {
		rep.Targets = append(rep.Targets, benchGoal{
			Goal:   fmt.Sprintf("fleet cold sync of %d entries x %d objects under %s", f.Entries, f.ObjectsPerEntry, fmtDur(fleetColdSyncBar)),
			Met:    !f.SyncFailed && f.ColdSync.dur() < fleetColdSyncBar,
			Actual: fmtDur(f.ColdSync.dur())})
	}
	if floor := f.floor(); f.ColdSync > 0 && floor > 0 {
		rep.ratios().FleetColdSyncOverCreateFloor = rep.ratioGoal(fmt.Sprintf("fleet cold sync within %gx the raw create floor", fleetColdSyncFloorBar),
			fleetColdSyncFloorBar, f.ColdSync, floor, true)
	}
	if r := f.overWatchFloor(); r > 0 {
		rep.ratios().FleetColdSyncOverCreateWatchFloor = r
	}
	if hub, floor := f.coldCPU(); hub > 0 && floor > 0 {
		rep.ratios().FleetColdSyncCPUOverCreateFloorCPU = float64(hub) / float64(floor)
	}
	if f.RSS > 0 {
		rep.Targets = append(rep.Targets,
			benchGoal{Goal: "fleet steady rss under 1 GiB", Met: f.RSS < fleetRSSBar, Actual: fmtBytes(f.RSS)},
			benchGoal{Goal: fmt.Sprintf("fleet idle cpu under %g%% of a core", fleetIdleCPUBar), Met: f.IdleCPUPercent < fleetIdleCPUBar,
				Actual: fmt.Sprintf("%.2f%% over %s", f.IdleCPUPercent, fmtDur(f.IdleFor.dur()))})
	}
	if r := findRun(rep.Runs, ModeFleet); r != nil {
		rep.Targets = append(rep.Targets, benchGoal{
			Goal:   fmt.Sprintf("fleet repair p99 under %s at %g drifts/s per entry", fmtDur(fleetRepairBar), rep.Rate),
			Met:    r.Repair.P99 > 0 && r.Repair.P99.dur() < fleetRepairBar && r.Repaired == r.Drifts,
			Actual: fmt.Sprintf("%s (%d/%d repaired)", fmtDur(r.Repair.P99.dur()), r.Repaired, r.Drifts)})
		if r.Repair.P99 > 0 && r.Floor.P99 > 0 {
			rep.ratios().FleetRepairP99OverFloorP99 = rep.ratioGoal(fmt.Sprintf("fleet repair p99 within %gx the raw-watch floor p99", fleetRepairFloorBar),
				fleetRepairFloorBar, r.Repair.P99, r.Floor.P99, r.Repaired == r.Drifts)
		}
		if l := r.RepairFloorLatency; l != nil && r.Repair.P99 > 0 && l.P99 > 0 {
			rep.ratios().FleetRepairP99OverRepairFloorP99 = float64(r.Repair.P99) / float64(l.P99)
			rep.Notes = append(rep.Notes, fmt.Sprintf("fleet raw repair floor: after the drift run's hub stopped, the same drifts made again (the same plan and client) while a plain client-go client (a connection per entry) server-side applies each drifted object's desired body (the hub's field manager, forced) as soon as its drift call returned, %d applies in flight across the entries (the hub's writers); each repair timed by the same raw watch, from the drift call's start to the object seen as desired again: the drift run without the detection.", r.RepairFloorConcurrency))
		}
		if hub, floor, budget := rep.driftCPU(r); hub > 0 && floor > 0 {
			rep.ratios().FleetRepairCPUOverRepairFloorCPU = float64(hub) / float64(floor)
			if budget > 0 && floor > budget {
				rep.Notes = append(rep.Notes, fmt.Sprintf("fleet: at %g drifts/s the raw repair floor alone needed more CPU than the machine's cores give (%s a drift, control planes and this process, against %s): its repairs queued as the hub's did, so both repair p99s are mostly the time each took to drain its queue, and the cpu per drift ratio (%.2fx) is what sets the hub's apart from the plain client's.",
					rep.Rate*float64(f.Entries), fmtDur(floor.dur()), fmtDur(budget.dur()), float64(hub)/float64(floor)))
			}
		}
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("fleet: %d cluster entries, each its own kubeconfig entry and namespace on one of %d shared apiservers (round-robin), so each has its own watch manager and watches; "+
		"cold sync: a fresh hub with nothing on the apiservers creating every object, run headless (followed through its status hook and the entries' health, not a snapshot subscription) and timed by its own stamps of the last entry synced and the last object in sync; steady rss, heap and idle cpu (no drift) measured once it settled (the hub returns the heap its cold sync freed to the system once its queue is idle), with the control planes' cpu over the idle span and over as long right after the hub stopped (what the idle hub costs the clusters); "+
		"the drift run is a second fresh hub started on the existing objects (hub sync), drifts spread evenly over the entries and over time; "+
		"raw create floor: before the cold hub, a plain client-go client server-side applying the same bodies on the same apiservers, on a connection per entry as a client of that many clusters has, each entry's objects in a namespace of its own (created first, as the hub creates the entries'), as many calls in flight as the hub has writers, taken in turn across the entries as the hub's writers take them, from the first call to the last returning; its objects are deleted before the hub starts; measured again the same way once the cold hub stopped (the hub's objects on the apiservers), and the cold sync's ratio taken over the mean of the two, so that a machine whose speed drifts during the run moves the floor with the hub; raw create floor with watches: right before the cold hub, the same creates while a raw watch per entry and kind (a plain watch, no informer and no cache, each event decoded) follows each entry's floor namespace, from the first call until the last returned and the watches saw every object created: what the apiservers serve any watch-based tool, beside the plain creates (no bar); before each phase every etcd is compacted to its current revision and defragmented (as an apiserver's 5-minute compaction would, in time), so that no phase writes on the history of the ones before it.", f.Entries, f.APIServers))
}

// overWatchFloor is the cold sync over the raw create floor with watches
// (0 when either was not measured).
func (f *fleetReport) overWatchFloor() float64 {
	if f.ColdSync <= 0 || f.CreateWatchFloor <= 0 {
		return 0
	}
	return float64(f.ColdSync) / float64(f.CreateWatchFloor)
}

// writeTable writes the fleet's measures (nothing for a nil report).
func (f *fleetReport) writeTable(tw io.Writer) {
	if f == nil {
		return
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "fleet measure\tvalue")
	fmt.Fprintf(tw, "cluster entries / apiservers\t%d / %d\n", f.Entries, f.APIServers)
	fmt.Fprintf(tw, "managed objects\t%d\n", f.Objects)
	fmt.Fprintf(tw, "every entry synced (hub start, nothing created yet)\t%s\n", fmtDur(f.ClustersSynced.dur()))
	fmt.Fprintf(tw, "cold sync (hub start to every object created and in sync)\t%s%s\n", fmtDur(f.ColdSync.dur()), overFloor(f.ColdSync, f.floor(), "raw create floor"))
	if floor := f.floor(); floor > 0 {
		both := ""
		if f.CreateFloor > 0 && f.CreateFloorAfter > 0 {
			both = fmt.Sprintf(" (before the hub %s, after it %s)", fmtDur(f.CreateFloor.dur()), fmtDur(f.CreateFloorAfter.dur()))
		}
		fmt.Fprintf(tw, "raw create floor (a plain client, the same bodies, %d at a time)\t%s%s\n", f.CreateFloorConcurrency, fmtDur(floor.dur()), both)
	}
	if f.CreateFloorError != "" {
		fmt.Fprintf(tw, "raw create floor before the hub\tnot measured: %s\n", f.CreateFloorError)
	}
	if f.CreateFloorAfterError != "" {
		fmt.Fprintf(tw, "raw create floor after the hub\tnot measured: %s\n", f.CreateFloorAfterError)
	}
	if f.CreateWatchFloor > 0 {
		over := ""
		if r := f.overWatchFloor(); r > 0 {
			over = fmt.Sprintf(" (the cold sync %.2fx it)", r)
		}
		fmt.Fprintf(tw, "raw create floor with watches (a raw watch per entry and kind)\t%s%s\n", fmtDur(f.CreateWatchFloor.dur()), over)
	}
	if f.CreateWatchFloorError != "" {
		fmt.Fprintf(tw, "raw create floor with watches\tnot measured: %s\n", f.CreateWatchFloorError)
	}
	if f.ColdSyncCost != nil {
		fmt.Fprintf(tw, "cold sync's cost\t%s\n", f.ColdSyncCost)
	}
	if f.CreateFloorCost != nil {
		fmt.Fprintf(tw, "raw create floor's cost (before the hub)\t%s\n", f.CreateFloorCost)
	}
	if f.CreateFloorAfterCost != nil {
		fmt.Fprintf(tw, "raw create floor's cost (after the hub)\t%s\n", f.CreateFloorAfterCost)
	}
	if f.CreateWatchFloorCost != nil {
		fmt.Fprintf(tw, "raw create floor with watches' cost\t%s\n", f.CreateWatchFloorCost)
	}
	if hub, floor := f.coldCPU(); hub > 0 || floor > 0 {
		fmt.Fprintf(tw, "cpu per object created (control planes and this process)\tcold sync %s, raw create floor %s\n", fmtDur(hub.dur()), fmtDur(floor.dur()))
	}
	fmt.Fprintf(tw, "peak rss during the cold sync\t%s\n", fmtBytes(f.PeakRSS))
	fmt.Fprintf(tw, "steady rss\t%s\n", fmtBytes(f.RSS))
	fmt.Fprintf(tw, "heap in use after GC\t%s\n", fmtBytes(f.HeapInUse))
	fmt.Fprintf(tw, "hub heap per managed object\t%s\n", fmtBytes(uint64(f.BytesPerObject)))
	fmt.Fprintf(tw, "open fds / goroutines\t%d / %d\n", f.OpenFDs, f.Goroutines)
	fmt.Fprintf(tw, "idle cpu over %s\t%s (%.2f%% of a core)\n", fmtDur(f.IdleFor.dur()), fmtDur(f.IdleCPU.dur()), f.IdleCPUPercent)
	if with, without := f.IdleCost.controlPlanePercent(), f.IdleFloorCost.controlPlanePercent(); with >= 0 && without >= 0 {
		fmt.Fprintf(tw, "control planes' idle cpu, with the hub / without\t%.2f%% / %.2f%% of a core\n", with, without)
	}
}

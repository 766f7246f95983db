package bench

import (
	"context"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc/pool"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
)

// Mixed bars: the targets --mode mixed checks.
const (
	// mixedDetectBar is the most the mixed run's detect p99 may be, in
	// multiples of its raw-watch floor's p99.
	mixedDetectBar = 1.5
	// mixedHeapBar is the most hub heap per managed object (the three
	// kinds' bar).
	mixedHeapBar = 2048
	// mixedSyncBar is the most the mixed kinds' initial sync may take, in
	// multiples of the three kinds' at the same object count ("the same
	// order of time").
	mixedSyncBar = 2.0
)

// mixedReport is the --mode mixed run's desired state, initial sync,
// memory and idle CPU, and the source render costs; its drift phase is
// the run of mode mixed in benchReport.Runs.
type mixedReport struct {
	// Objects is the managed objects over all clusters; Kinds counts them
	// per kind on the first cluster.
	Objects int         `json:"objects"`
	Kinds   []kindCount `json:"kindsPerCluster"`
	// Precreate is how long the bench's own client took to create them.
	Precreate msDuration `json:"precreateMs"`
	// InitialSync is a fresh hub's start, on existing objects, to every
	// object in sync.
	InitialSync msDuration `json:"initialSyncMs"`
	PeakRSS     uint64     `json:"peakRSSBytes"`
	RSS         uint64     `json:"steadyRSSBytes"`
	HeapInUse   uint64     `json:"heapInUseBytes"`
	// BytesPerObject is the heap in use after GC, minus the heap before the
	// config was loaded, per managed object.
	BytesPerObject float64    `json:"bytesPerObject"`
	IdleCPU        msDuration `json:"idleCPUMs"`
	IdleFor        msDuration `json:"idleForMs"`
	IdleCPUPercent float64    `json:"idleCPUPercentOfCore"`
	// Renders are what rendering a 100-object source costs.
	Renders []renderCost `json:"renders,omitempty"`
	// SyncFailed and Failures: the hub never showed every object in sync,
	// and why for each object that was not.
	SyncFailed bool            `json:"syncFailed,omitempty"`
	Failures   []failureReport `json:"failures,omitempty"`
}

// mixed runs --mode mixed: the render costs of 100-object sources, then
// the mixed kinds' desired state loaded from a generated plain-files
// sources config, created by the bench's client; a fresh hub's initial
// sync, heap per object and idle CPU; drift on the same hub against a
// raw watch of every drifted kind; and with --baseline the three kinds'
// scale run at the same object count.
func (b *bencher) mixed(ctx context.Context, rep *benchReport) error {
	o := b.opts
	m := &mixedReport{}
	rep.Mixed = m
	b.progress("mixed: rendering 100-object sources (plain files, kustomize, Helm), %d times each", renderRuns)
	var err error
	if m.Renders, err = renderCosts(ctx, filepath.Join(b.dir, "render")); err != nil {
		return fmt.Errorf("bench: %w", err)
	}

	heap0 := heapBefore()
	// The heap before the config, for `go tool pprof -base`: the
	// difference is what the hub holds for the objects.
	b.writeHeapProfileTo(memProfilePath(o.MemProfile, "-before"))
	path, err := writeMixed(b.dir, b.set, o.Objects, o.QPS, o.Workers)
	if err != nil {
		return err
	}
	load := func() (*config.Config, error) {
		cfg, err := config.Load(path, config.LoadOptions{Getenv: func(string) string { return "" }})
		if err != nil {
			return nil, fmt.Errorf("bench: generated config %s: %w", path, err)
		}
		return cfg, nil
	}
	cfg, err := load()
	if err != nil {
		return err
	}
	b.workers = cfg.Workers()
	specs := config.Compile(cfg)
	mix := map[hub.Kind]int{}
	for _, s := range specs {
		if s.ID.Cluster == b.set.Clusters[0].Name {
			mix[s.ID.Kind]++
		}
	}
	m.Objects, m.Kinds = len(specs), kindCounts(mix)
	began := time.Now()
	if err := b.precreateMixed(ctx, specs); err != nil {
		return err
	}
	m.Precreate = msDuration(time.Since(began))
	specs = nil
	// From here on only the hub holds the config and the compiled objects
	// until the memory is measured; the bench loads the file again when it
	// needs it.

	if err := ResetPeakRSS(); err != nil {
		b.log.Warn("peak rss is the whole process's", "err", err)
	}
	b.progress("mixed: starting a fresh hub on %d existing objects of %d kinds", m.Objects, len(mix))
	began = time.Now()
	// The drift phase's tracker takes the hub's records once it exists.
	record := func(r hub.Repair) {
		if tr := b.current.Load(); tr != nil {
			tr.Record(r)
		}
	}
	rh, err := b.startHub(ctx, &workload{cfg: cfg}, hub.Options{OnRecord: record}, false)
	cfg = nil
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = rh.Stop()
		}
	}()
	if err := b.waitInSync(ctx, rh.app.Hub(), m.Objects, b.syncLimit(o.Objects)); err != nil {
		m.SyncFailed = true
		if cfg, lerr := load(); lerr == nil {
			m.Failures = explainUnsynced(config.Compile(cfg), rh.app.Hub().Snapshot())
		}
		return fmt.Errorf("mixed run: %w", err)
	}
	m.InitialSync = msDuration(time.Since(began))
	m.PeakRSS, _ = PeakRSS()
	b.progress("mixed: in sync after %s; settling, then measuring memory and %s of idle CPU", m.InitialSync.dur().Round(time.Millisecond), o.Idle)
	if !sleepCtx(ctx, 2*time.Second) {
		return ctx.Err()
	}
	heap := heapInUse()
	b.writeHeapProfile()
	m.HeapInUse = heap
	if heap > heap0 {
		m.BytesPerObject = float64(heap-heap0) / float64(m.Objects)
	}
	m.RSS, _ = RSS()
	cpu0 := CPUTime()
	if !b.idle(ctx) {
		return ctx.Err()
	}
	m.IdleCPU = msDuration(CPUTime() - cpu0)
	m.IdleFor = msDuration(o.Idle)
	m.IdleCPUPercent = 100 * m.IdleCPU.dur().Seconds() / m.IdleFor.dur().Seconds()

	if cfg, err = load(); err != nil {
		return err
	}
	stopped = true
	r, err := b.mixedDrifts(ctx, rh, cfg, rep)
	rep.Runs = []runReport{r}
	if err != nil {
		return err
	}
	if o.Baseline {
		b.progress("baseline: the three kinds (--mode scale) at %d objects per cluster", o.Objects)
		b.inBaseline = true
		if rep.Scale, err = b.scale(ctx); err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
	}
	return nil
}

// mixedDrifts makes --mode mixed's drifts on the running hub rh (in sync
// with cfg; mixedDrifts stops it) and measures them against a dynamic raw
// watch of every drifted kind in the mixed namespace.
func (b *bencher) mixedDrifts(ctx context.Context, rh *runningHub, cfg *config.Config, rep *benchReport) (runReport, error) {
	o := b.opts
	r := runReport{Mode: ModeMixed, Sync: rep.Mixed.InitialSync}
	specs := config.Compile(cfg)
	crd := crdKind().slug()
	var targets []Target
	for _, s := range specs {
		if s.ID.Kind != crd {
			targets = append(targets, Target{ID: s.ID})
		}
	}
	steps := PlanWith(targets, o.Drifts, o.Rate, o.Seed, MixedActions)
	if err := fillDesired(steps, specs); err != nil {
		_ = rh.Stop()
		return r, err
	}
	r.Drifts = len(steps)
	rep.Schedule = Fingerprint(steps)
	tr := NewTracker(len(steps), cfg.Hub.ManagedBy)
	b.current.Store(tr)
	defer b.current.Store(nil)
	floorCtx, stopFloor := context.WithCancel(ctx)
	floor, err := StartDynamicFloor(floorCtx, b.dynamic, mixedNamespace, mixedFloorKinds(), func(cluster string, kind hub.Kind, ev watch.Event, at time.Time) {
		if tr := b.current.Load(); tr != nil {
			tr.Event(cluster, kind, ev, at)
		}
	}, b.log)
	if err != nil {
		stopFloor()
		_ = rh.Stop()
		return r, fmt.Errorf("bench: raw watch: %w", err)
	}
	defer func() {
		stopFloor()
		floor.Wait()
	}()
	b.progress("mixed: making %d drifts (deletes, field edits, label removals) over %d kinds", len(steps), len(mixedKinds()))
	last := steps[len(steps)-1].Offset
	gen := dynamicDrifter{clients: b.dynamic, kinds: mixedKindsBySlug()}
	err = b.makeDrifts(ctx, &r, rh, tr, gen, steps, nil, 1, last+time.Minute)
	return r, err
}

// writeMixed writes --mode mixed's manifest files and config under dir and
// returns the config's path.
func writeMixed(dir string, set *localcluster.Set, objects int, qps float64, workers int) (string, error) {
	for p, text := range mixedFiles(objects) {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", fmt.Errorf("bench: %w", err)
		}
		if err := os.WriteFile(full, []byte(text), 0o600); err != nil {
			return "", fmt.Errorf("bench: %w", err)
		}
	}
	path := filepath.Join(dir, "mixed.yaml")
	if err := os.WriteFile(path, []byte(mixedConfig(set, qps, workers)), 0o600); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	return path, nil
}

// precreateMixed server-side applies the mixed specs from the bench's own
// dynamic client, as the hub would (field manager driftwatch): the
// namespace, the CustomResourceDefinitions (apply order 0) until
// established, then the rest, 16 at a time.
func (b *bencher) precreateMixed(ctx context.Context, specs []hub.NodeSpec) error {
	began := time.Now()
	for name, c := range b.clients {
		_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mixedNamespace}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("bench: cluster %q: create namespace %s: %w", name, mixedNamespace, err)
		}
	}
	kinds := mixedKindsBySlug()
	var first, rest []hub.NodeSpec
	for _, s := range specs {
		if _, ok := kinds[s.ID.Kind]; !ok {
			return fmt.Errorf("bench: %s: kind %s is not one of the mixed kinds", s.ID, s.ID.Kind)
		}
		if s.Order == 0 {
			first = append(first, s)
		} else {
			rest = append(rest, s)
		}
	}
	for _, s := range first {
		if err := dynamicApply(ctx, b.dynamic[s.ID.Cluster], kinds[s.ID.Kind], s); err != nil {
			return err
		}
	}
	for name, c := range b.dynamic {
		if err := waitEstablished(ctx, c, widgetCRD); err != nil {
			return fmt.Errorf("bench: cluster %q: %w", name, err)
		}
	}
	var done atomic.Int64
	stopProgress := b.every(5*time.Second, func() {
		b.progress("creating objects: %d/%d", done.Load(), len(rest))
	})
	defer stopProgress()
	p := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError().WithMaxGoroutines(16)
	for _, s := range rest {
		p.Go(func(ctx context.Context) error {
			if err := dynamicApply(ctx, b.dynamic[s.ID.Cluster], kinds[s.ID.Kind], s); err != nil {
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

// dynamicApply server-side applies one object of kind k with driftwatch's
// field manager. A custom resource whose kind the apiserver does not serve
// yet (just established) is retried for a few seconds.
func dynamicApply(ctx context.Context, c dynamic.Interface, k mixedKind, s hub.NodeSpec) error {
	var ri dynamic.ResourceInterface = c.Resource(k.gvr())
	if s.Namespace != "" {
		ri = c.Resource(k.gvr()).Namespace(s.Namespace)
	}
	force := true
	opts := metav1.PatchOptions{FieldManager: kubeobj.FieldManagerFor(benchHubID), Force: &force}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := ri.Patch(ctx, s.Name, types.ApplyPatchType, s.Body, opts)
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			return fmt.Errorf("bench: apply %s: %w", s.ID, err)
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return fmt.Errorf("bench: apply %s: %w", s.ID, ctx.Err())
		}
	}
}

// waitEstablished waits until the CustomResourceDefinition name is
// Established (30 s at most).
func waitEstablished(ctx context.Context, c dynamic.Interface, name string) error {
	ri := c.Resource(crdKind().gvr())
	deadline := time.Now().Add(30 * time.Second)
	for {
		u, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err == nil && established(u) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("crd %s not established after 30s (last error: %v)", name, err)
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return fmt.Errorf("crd %s: %w", name, ctx.Err())
		}
	}
}

// established reports whether a CustomResourceDefinition has the condition
// Established=True.
func established(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// finishMixed adds the mixed run's ratios, targets and notes.
func (rep *benchReport) finishMixed(o Options) {
	m := rep.Mixed
	if m == nil {
		return
	}
	ratios := benchRatios{}
	r := findRun(rep.Runs, ModeMixed)
	if r != nil && r.Floor.P99 > 0 {
		ratios.MixedDetectP99OverFloorP99 = float64(r.Detect.P99) / float64(r.Floor.P99)
	}
	if s := rep.Scale; s != nil && s.InitialSync > 0 && m.InitialSync > 0 {
		ratios.MixedSyncOverScaleSync = float64(m.InitialSync) / float64(s.InitialSync)
	}
	if s := rep.Scale; s != nil && s.BytesPerObject > 0 && m.BytesPerObject > 0 {
		ratios.MixedHeapOverScaleHeap = m.BytesPerObject / s.BytesPerObject
	}
	if ratios != (benchRatios{}) {
		out := rep.ratios()
		out.MixedDetectP99OverFloorP99 = ratios.MixedDetectP99OverFloorP99
		out.MixedSyncOverScaleSync = ratios.MixedSyncOverScaleSync
		out.MixedHeapOverScaleHeap = ratios.MixedHeapOverScaleHeap
	}
	if r != nil {
		d, f := r.Detect.P99.dur(), r.Floor.P99.dur()
		rep.Targets = append(rep.Targets, benchGoal{
			Goal:   fmt.Sprintf("mixed detect p99 within %gx of the floor p99 (all %d drifts repaired)", mixedDetectBar, r.Drifts),
			Met:    d > 0 && f > 0 && float64(d) <= mixedDetectBar*float64(f) && r.Repaired == r.Drifts,
			Actual: fmt.Sprintf("%s vs floor %s (%d/%d repaired)", fmtDur(d), fmtDur(f), r.Repaired, r.Drifts)})
	}
	if m.InitialSync > 0 || m.SyncFailed {
		rep.Targets = append(rep.Targets, benchGoal{
			Goal:   fmt.Sprintf("mixed hub heap per managed object at most %s at %d mixed objects per cluster", fmtBytes(mixedHeapBar), o.Objects),
			Met:    m.BytesPerObject > 0 && m.BytesPerObject <= mixedHeapBar,
			Actual: fmtBytes(uint64(m.BytesPerObject))})
	}
	if s := rep.Scale; s != nil && (m.InitialSync > 0 || m.SyncFailed) {
		rep.Targets = append(rep.Targets, benchGoal{
			Goal:   fmt.Sprintf("mixed initial sync within %gx of the three kinds' at %d objects per cluster", mixedSyncBar, o.Objects),
			Met:    !m.SyncFailed && !s.SyncFailed && m.InitialSync > 0 && s.InitialSync > 0 && float64(m.InitialSync) <= mixedSyncBar*float64(s.InitialSync),
			Actual: fmt.Sprintf("%s vs %s", fmtDur(m.InitialSync.dur()), fmtDur(s.InitialSync.dur()))})
	}
	names := make([]string, 0, len(m.Kinds))
	for _, k := range m.Kinds {
		names = append(names, k.Kind)
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("mixed: the desired state is a generated config of plain-files sources (config.Load, as users load theirs): %s; "+
		"the bench's client creates them, then a fresh hub starts on them (initial sync), its heap per object and idle cpu are measured once it settled, "+
		"and the same hub takes the drifts (deletes, field edits, label removals), measured against a raw dynamic watch of every drifted kind in %s.",
		strings.Join(names, ", "), mixedNamespace))
	if rep.Scale != nil {
		rep.Notes = append(rep.Notes, "baseline: --mode scale's run (Deployments, Services, ConfigMaps from applications) at the same object count, after the mixed run, on the same clusters.")
	} else {
		rep.Notes = append(rep.Notes, fmt.Sprintf("no baseline (--baseline=false): compare with `driftwatch bench --mode scale --objects %d --clusters %d -o json` through `driftwatch bench compare`.", o.Objects, rep.Clusters))
	}
	if len(m.Renders) > 0 {
		rep.Notes = append(rep.Notes, "render: config/manifest.Render of the same 100 objects of ten kinds as a folder of plain files, a kustomize overlay (namespace, label, a patch) over a base, and a Helm chart (a template per kind ranging over 10 items); wall time per render (p50, max) and heap allocations per render (mean), after one warm-up render.")
	}
}

// writeTable writes the mixed run's measures, the side-by-side with the
// three kinds, and the render costs (nothing for a nil report).
func (m *mixedReport) writeTable(tw io.Writer, scale *scaleReport) {
	if m == nil {
		return
	}
	if m.InitialSync > 0 || m.SyncFailed {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "mixed measure\tvalue")
		fmt.Fprintf(tw, "managed objects\t%d\n", m.Objects)
		fmt.Fprintf(tw, "objects created by the bench client (16 at a time)\t%s\n", fmtDur(m.Precreate.dur()))
		fmt.Fprintf(tw, "initial sync (hub start to all in sync)\t%s\n", fmtDur(m.InitialSync.dur()))
		fmt.Fprintf(tw, "peak rss during the sync\t%s\n", fmtBytes(m.PeakRSS))
		fmt.Fprintf(tw, "steady rss\t%s\n", fmtBytes(m.RSS))
		fmt.Fprintf(tw, "heap in use after GC\t%s\n", fmtBytes(m.HeapInUse))
		fmt.Fprintf(tw, "hub heap per managed object\t%s\n", fmtBytes(uint64(m.BytesPerObject)))
		fmt.Fprintf(tw, "idle cpu over %s\t%s (%.2f%% of a core)\n", fmtDur(m.IdleFor.dur()), fmtDur(m.IdleCPU.dur()), m.IdleCPUPercent)
	}
	if scale != nil && m.InitialSync > 0 && scale.InitialSync > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "side by side\tthree kinds\tmixed kinds\tmixed / three")
		row := func(name, a, b string, ratio float64) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.2fx\n", name, a, b, ratio)
		}
		row("managed objects", fmt.Sprint(scale.Objects), fmt.Sprint(m.Objects), float64(m.Objects)/float64(scale.Objects))
		row("initial sync", fmtDur(scale.InitialSync.dur()), fmtDur(m.InitialSync.dur()), float64(m.InitialSync)/float64(scale.InitialSync))
		if scale.BytesPerObject > 0 {
			row("hub heap per managed object", fmtBytes(uint64(scale.BytesPerObject)), fmtBytes(uint64(m.BytesPerObject)), m.BytesPerObject/scale.BytesPerObject)
		}
		if scale.PeakRSS > 0 {
			row("peak rss during the sync", fmtBytes(scale.PeakRSS), fmtBytes(m.PeakRSS), float64(m.PeakRSS)/float64(scale.PeakRSS))
		}
		if scale.RSS > 0 {
			row("steady rss", fmtBytes(scale.RSS), fmtBytes(m.RSS), float64(m.RSS)/float64(scale.RSS))
		}
	}
	if len(m.Renders) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "source render (config/manifest.Render)\tobjects\trenders\tp50\tmax\tallocs/render\tbytes/render")
		for _, c := range m.Renders {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%d\t%s\n", c.Source, c.Objects, c.Renders, fmtDur(c.P50.dur()), fmtDur(c.Max.dur()), c.Allocs, fmtBytes(c.Bytes))
		}
	}
}

// writeByKind writes a run's latencies per kind (--mode mixed).
func writeByKind(tw io.Writer, r *runReport) {
	if len(r.ByKind) == 0 {
		return
	}
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "%s by kind\tn\tfloor p50\tfloor p99\tdetect p50\tdetect p99\trepair p50\trepair p99\n", r.Mode)
	for _, k := range sortedKeys(r.ByKind) {
		l := r.ByKind[k]
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", k, l.Detect.N, fmtDur(l.Floor.P50.dur()), fmtDur(l.Floor.P99.dur()),
			fmtDur(l.Detect.P50.dur()), fmtDur(l.Detect.P99.dur()), fmtDur(l.Repair.P50.dur()), fmtDur(l.Repair.P99.dur()))
	}
}

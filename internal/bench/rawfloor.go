package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc/pool"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/driftgen"
)

// The raw floors: what a plain client-go client achieves on the same
// apiservers, with the same object bodies and as many calls in flight as
// the hub's writers, measured in the same run as the hub's figure they
// stand beside. The hub's writers (hub.Options.Writers, the config's
// workers by default) carry out its creates and repairs in turn across
// clusters, each cluster running at most all but one of them at once
// (hub/writeq.go).

// hubWritesPerCluster is how many writes the hub runs at once on one
// cluster with workers writers: all but one (hub/writeq.go's perCluster).
func hubWritesPerCluster(workers int) int {
	return max(1, workers-1)
}

// rawApply is one server-side apply of the floor: the spec (its body,
// namespace and name) through the client of its apiserver.
type rawApply struct {
	client kubernetes.Interface
	spec   hub.NodeSpec
}

// interleave orders specs round-robin across their clusters (each
// cluster's in the given order), as the hub's writers take turns across
// clusters: with many clusters on few apiservers, every apiserver then has
// its share of the calls in flight.
func interleave(specs []hub.NodeSpec) []hub.NodeSpec {
	byCluster := make(map[string][]hub.NodeSpec)
	var order []string
	for _, s := range specs {
		if _, ok := byCluster[s.ID.Cluster]; !ok {
			order = append(order, s.ID.Cluster)
		}
		byCluster[s.ID.Cluster] = append(byCluster[s.ID.Cluster], s)
	}
	out := make([]hub.NodeSpec, 0, len(specs))
	for i := 0; len(out) < len(specs); i++ {
		for _, c := range order {
			if cs := byCluster[c]; i < len(cs) {
				out = append(out, cs[i])
			}
		}
	}
	return out
}

// timeApplies creates namespaces (if not there yet) and then server-side
// applies every call with the hub's field manager, concurrency calls in
// flight, in the given order; it returns the time from the first call to
// the last one returning.
func timeApplies(ctx context.Context, namespaces map[string]kubernetes.Interface, calls []rawApply, concurrency int) (time.Duration, error) {
	began := time.Now()
	p := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError().WithMaxGoroutines(max(1, concurrency))
	for _, ns := range sortedKeys(namespaces) {
		c := namespaces[ns]
		p.Go(func(ctx context.Context) error {
			_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{FieldManager: driftgen.FieldManager})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("bench: raw floor: create namespace %s: %w", ns, err)
			}
			return nil
		})
	}
	if err := p.Wait(); err != nil {
		return 0, err
	}
	p = pool.New().WithContext(ctx).WithCancelOnError().WithFirstError().WithMaxGoroutines(max(1, concurrency))
	for _, a := range calls {
		p.Go(func(ctx context.Context) error { return benchApply(ctx, a.client, a.spec) })
	}
	if err := p.Wait(); err != nil {
		return 0, fmt.Errorf("raw floor: %w", err)
	}
	return time.Since(began), nil
}

// inNamespace returns s moved to namespace ns: its body's
// metadata.namespace and its Namespace (the URL the apply goes to).
func inNamespace(s hub.NodeSpec, ns string) (hub.NodeSpec, error) {
	var obj map[string]any
	if err := json.Unmarshal(s.Body, &obj); err != nil {
		return s, fmt.Errorf("bench: %s: body: %w", s.ID, err)
	}
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return s, fmt.Errorf("bench: %s: body has no metadata", s.ID)
	}
	md["namespace"] = ns
	b, err := json.Marshal(obj)
	if err != nil {
		return s, fmt.Errorf("bench: %s: body: %w", s.ID, err)
	}
	s.Body, s.Namespace = b, ns
	return s, nil
}

// entryClients returns a plain client per fleet entry, each on a
// connection of its own to the entry's apiserver, as a plain client of
// that many clusters has one per cluster (a Dial of its own keeps
// client-go from sharing one transport among the entries' identical
// configs); closeAll closes their connections.
func entryClients(entries []fleetEntry) (clients map[string]kubernetes.Interface, closeAll func(), err error) {
	clients = make(map[string]kubernetes.Interface, len(entries))
	var hcs []*http.Client
	closeAll = func() {
		for _, hc := range hcs {
			hc.CloseIdleConnections()
		}
	}
	for _, e := range entries {
		rc := plainConfig(e.APIServer)
		rc.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		hc, err := rest.HTTPClientFor(rc)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("bench: entry %s: client: %w", e.ID, err)
		}
		hcs = append(hcs, hc)
		c, err := kubernetes.NewForConfigAndClient(rc, hc)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("bench: entry %s: client: %w", e.ID, err)
		}
		clients[e.ID] = c
	}
	return clients, closeAll, nil
}

// floorNamespace is the namespace the fleet's raw create floor uses for an
// entry's namespace: the hub's own namespaces stay untouched.
func floorNamespace(ns string) string { return "floor-" + ns }

// fleetCreateFloor is the raw create floor of the fleet's cold sync: a
// plain client creating every entry's objects (the same bodies) in a
// namespace of its own per entry on the entry's apiserver (created first,
// as the hub creates the entries' namespaces), with the hub's writers'
// concurrency, interleaved across entries as the hub's writers take them.
// The floor's objects are deleted afterwards (the empty namespaces stay:
// the local control planes run no namespace controller to finalize a
// namespace deletion). It returns the time and the calls in flight. when
// says in the progress which of the floors this is ("before the hub",
// "after the hub").
//
// watched adds what the apiservers serve any watch-based tool: a raw
// watch per entry and kind on the entry's floor namespace (the hub's
// informers' watches, one event per object created, decoded by this
// process), started before the first call; the time then runs until the
// last call returned and the watches saw every object created.
func (b *bencher) fleetCreateFloor(ctx context.Context, entries []fleetEntry, specs []hub.NodeSpec, writers int, when string, watched bool) (time.Duration, int, *spanCost, error) {
	clients, closeAll, err := entryClients(entries)
	if err != nil {
		return 0, 0, nil, err
	}
	defer closeAll()
	namespaces := make(map[string]kubernetes.Interface, len(entries))
	for _, e := range entries {
		namespaces[floorNamespace(e.Namespace)] = clients[e.ID]
	}
	calls := make([]rawApply, 0, len(specs))
	for _, s := range interleave(specs) {
		c, ok := clients[s.ID.Cluster]
		if !ok {
			return 0, 0, nil, fmt.Errorf("bench: %s: no fleet entry %s", s.ID, s.ID.Cluster)
		}
		moved, err := inNamespace(s, floorNamespace(s.Namespace))
		if err != nil {
			return 0, 0, nil, err
		}
		calls = append(calls, rawApply{client: c, spec: moved})
	}
	var seen *createdSeen
	if watched {
		wctx, stop := context.WithCancel(ctx)
		seen, err = b.watchFloorNamespaces(wctx, entries, clients)
		defer func() {
			stop()
			seen.wait()
		}()
		if err != nil {
			return 0, 0, nil, err
		}
	}
	b.progress("fleet: raw create floor %s: a plain client creating %d objects in %d namespaces of its own (a connection per entry), %d at a time", when, len(calls), len(namespaces), writers)
	before := b.readCost(ctx)
	began := time.Now()
	took, err := timeApplies(ctx, namespaces, calls, writers)
	if err == nil && seen != nil {
		// From the same start, to the last object seen created.
		err = seen.await(ctx, len(calls), fleetWatchFloorWait)
		took = time.Since(began)
	}
	cost := b.costSince(ctx, before)
	if err != nil {
		// What it created goes too, so that nothing but empty
		// namespaces stays beside the hub's run.
		return 0, 0, nil, errors.Join(err, b.deleteFloorObjects(ctx, namespaces))
	}
	if seen != nil {
		b.progress("fleet: raw create floor %s: %s, its %d raw watches saw all %d objects created; deleting its objects", when, took.Round(time.Millisecond), seen.watches(), len(calls))
	} else {
		b.progress("fleet: raw create floor %s: %s; deleting its objects", when, took.Round(time.Millisecond))
	}
	if err := b.deleteFloorObjects(ctx, namespaces); err != nil {
		return 0, 0, nil, err
	}
	return took, writers, cost, nil
}

// fleetWatchFloorWait bounds how long the watched create floor waits, once
// its last call returned, for the watches to see the objects not seen yet.
const fleetWatchFloorWait = time.Minute

// createdSeen counts the objects a watched floor's raw watches saw
// created.
type createdSeen struct {
	mu     sync.Mutex
	added  int
	change chan struct{} // closed and replaced on each count
	floors []*Floor
}

// watchFloorNamespaces starts a raw watch per entry and kind on the
// entry's floor namespace (no object there yet) and returns what counts
// their ADDED events; each watch has its starting point when it returns.
// The watches run until ctx ends (then call wait), also those started
// before an error.
func (b *bencher) watchFloorNamespaces(ctx context.Context, entries []fleetEntry, clients map[string]kubernetes.Interface) (*createdSeen, error) {
	s := &createdSeen{change: make(chan struct{})}
	sink := s.sink()
	for _, e := range entries {
		f, err := StartFloor(ctx, map[string]kubernetes.Interface{e.ID: clients[e.ID]}, floorNamespace(e.Namespace), sink, b.log)
		if err != nil {
			return s, fmt.Errorf("bench: entry %s: raw watch: %w", e.ID, err)
		}
		s.floors = append(s.floors, f)
	}
	return s, nil
}

// sink is the watches' EventSink: it counts ADDED events.
func (s *createdSeen) sink() EventSink {
	return func(_ string, _ hub.Kind, ev watch.Event, _ time.Time) {
		if ev.Type != watch.Added {
			return
		}
		s.mu.Lock()
		s.added++
		close(s.change)
		s.change = make(chan struct{})
		s.mu.Unlock()
	}
}

// await returns once n objects were seen created, or an error after
// limit without a new one, or when ctx ends.
func (s *createdSeen) await(ctx context.Context, n int, limit time.Duration) error {
	for {
		s.mu.Lock()
		added, change := s.added, s.change
		s.mu.Unlock()
		if added >= n {
			return nil
		}
		select {
		case <-change:
		case <-time.After(limit):
			return fmt.Errorf("raw watches saw %d of the %d objects created, none more in %s", added, n, limit)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// watches is how many raw watches count.
func (s *createdSeen) watches() int { return len(s.floors) * len(hub.Kinds()) }

// wait waits for the watches' goroutines (after their context ended).
func (s *createdSeen) wait() {
	for _, f := range s.floors {
		f.Wait()
	}
}

// retryCollection runs a collection delete until it succeeds, at most 10
// times a second apart: one of thousands of objects can outlast the
// apiserver's request timeout (the stream is reset) after deleting part of
// them, and the next call goes on with the rest.
func retryCollection(ctx context.Context, del func() error) error {
	var err error
	for range 10 {
		if err = del(); err == nil || ctx.Err() != nil {
			return err
		}
		if !sleepCtx(ctx, time.Second) {
			return ctx.Err()
		}
	}
	return err
}

// deleteFloorObjects deletes every object of the bench's kinds in each
// namespace (one collection delete per kind and namespace).
func (b *bencher) deleteFloorObjects(ctx context.Context, namespaces map[string]kubernetes.Interface) error {
	p := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError().WithMaxGoroutines(8)
	for _, ns := range sortedKeys(namespaces) {
		c := namespaces[ns]
		p.Go(func(ctx context.Context) error {
			var o metav1.DeleteOptions
			var l metav1.ListOptions
			if err := retryCollection(ctx, func() error { return c.AppsV1().Deployments(ns).DeleteCollection(ctx, o, l) }); err != nil {
				return fmt.Errorf("bench: raw floor: delete the Deployments of %s: %w", ns, err)
			}
			if err := retryCollection(ctx, func() error { return c.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, o, l) }); err != nil {
				return fmt.Errorf("bench: raw floor: delete the ConfigMaps of %s: %w", ns, err)
			}
			// Services have no collection delete; the fleet makes none.
			svcs, err := c.CoreV1().Services(ns).List(ctx, l)
			if err != nil {
				return fmt.Errorf("bench: raw floor: list the Services of %s: %w", ns, err)
			}
			for _, s := range svcs.Items {
				if err := c.CoreV1().Services(ns).Delete(ctx, s.Name, o); err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("bench: raw floor: delete Service %s/%s: %w", ns, s.Name, err)
				}
			}
			return nil
		})
	}
	return p.Wait()
}

// burstRepairFloor is the raw repair floor of the burst, measured before
// the hub's run and after it (no hub running; when says which in the
// progress): the bench's client deletes the burst's objects, as many at
// once as the burst's deletes, while a plain
// client server-side applies each one again with the hub's field manager
// as soon as its delete returned, as many at once as the hub's writers run
// on one cluster, leaving every object as desired again. Both sides then
// hold the same deletes on the same apiserver: the floor is the burst
// without the detection. It returns the time from the first delete's start
// to the last apply returning, the applies in flight, and when the last
// delete returned.
func (b *bencher) burstRepairFloor(ctx context.Context, w *workload, steps []Step, workers int, when string) (took time.Duration, inFlight int, deletes time.Duration, err error) {
	byID := make(map[hub.NodeID]hub.NodeSpec, len(w.specs))
	for _, s := range w.specs {
		byID[s.ID] = s
	}
	calls := make([]rawApply, 0, len(steps))
	for _, st := range steps {
		s, ok := byID[st.Target.ID]
		if !ok {
			return 0, 0, 0, fmt.Errorf("bench: burst target %s is not in the config", st.Target.ID)
		}
		calls = append(calls, rawApply{client: b.clients[s.ID.Cluster], spec: s})
	}
	inFlight = hubWritesPerCluster(workers)
	b.progress("burst: raw repair floor %s: deleting the %d objects (%d at a time), a plain client applying each again once deleted (%d at a time)", when, len(calls), benchBurstWorkers, inFlight)
	// Deleted objects wait here for an applier; it holds every call, so
	// a delete never waits for the applies.
	deleted := make(chan rawApply, len(calls))
	var deletesDone atomic.Int64 // nanoseconds from began
	began := time.Now()
	p := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError()
	p.Go(func(ctx context.Context) error {
		defer close(deleted)
		dp := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError().WithMaxGoroutines(benchBurstWorkers)
		for _, a := range calls {
			dp.Go(func(ctx context.Context) error {
				if err := deleteSpec(ctx, a.client, a.spec); err != nil {
					return err
				}
				deleted <- a
				return nil
			})
		}
		err := dp.Wait()
		deletesDone.Store(int64(time.Since(began)))
		return err
	})
	p.Go(func(ctx context.Context) error {
		ap := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError().WithMaxGoroutines(max(1, inFlight))
		for a := range deleted {
			ap.Go(func(ctx context.Context) error { return benchApply(ctx, a.client, a.spec) })
		}
		return ap.Wait()
	})
	if err := p.Wait(); err != nil {
		return 0, 0, 0, fmt.Errorf("raw repair floor: %w", err)
	}
	took = time.Since(began)
	b.progress("burst: raw repair floor %s: %s (its deletes done after %s)", when, took.Round(time.Millisecond), time.Duration(deletesDone.Load()).Round(time.Millisecond))
	return took, inFlight, time.Duration(deletesDone.Load()), nil
}

// deleteSpec deletes spec's object (gone already is fine).
func deleteSpec(ctx context.Context, c kubernetes.Interface, s hub.NodeSpec) error {
	var err error
	var o metav1.DeleteOptions
	switch s.Kind {
	case hub.KindDeployment:
		err = c.AppsV1().Deployments(s.Namespace).Delete(ctx, s.Name, o)
	case hub.KindService:
		err = c.CoreV1().Services(s.Namespace).Delete(ctx, s.Name, o)
	default:
		err = c.CoreV1().ConfigMaps(s.Namespace).Delete(ctx, s.Name, o)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("bench: delete %s: %w", s.ID, err)
	}
	return nil
}

// repairFloorLimit bounds how long the fleet's raw repair floor waits for
// the raw watch to see its last repair once every apply returned.
const repairFloorLimit = 2 * time.Minute

// plainRepairer is the fleet's raw repair floor's drifter: it makes each
// drift through gen and, once the drift call returned, hands the drifted
// object's desired spec to a plain client's appliers (repair). It knows
// what it drifted, so it repairs without detecting anything.
type plainRepairer struct {
	gen     Drifter
	specs   map[hub.NodeID]hub.NodeSpec
	clients map[string]kubernetes.Interface
	repair  chan<- rawApply
}

// Do makes the drift and queues its repair.
func (p *plainRepairer) Do(ctx context.Context, t driftgen.Target, a driftgen.Action) driftgen.Drift {
	d := p.gen.Do(ctx, t, a)
	if d.Err == nil {
		s := p.specs[t.ID]
		p.repair <- rawApply{client: p.clients[t.ID.Cluster], spec: s}
	}
	return d
}

// fleetRepairFloor is the raw repair floor of the fleet's drift run,
// measured after the hub's run on the same objects with the hub stopped:
// the same drifts (the same plan, seed and schedule, made by the same
// drift client) while a plain client server-side applies each drifted
// object's desired body (the hub's field manager, forced) as soon as its
// drift call returned, inFlight applies at once across the entries (the
// hub's writers), in the order the drifts returned. The same raw watch
// times each repair, from the drift call's start to the object seen as
// desired again, as it times the hub's. It is the drift run without the
// detection: what the hub's repair latencies stand beside.
func (b *bencher) fleetRepairFloor(ctx context.Context, w *workload, entries []fleetEntry, steps []Step, inFlight int) (latencyReport, *spanCost, error) {
	byID := make(map[hub.NodeID]hub.NodeSpec, len(w.specs))
	for _, s := range w.specs {
		byID[s.ID] = s
	}
	for _, st := range steps {
		if _, ok := byID[st.Target.ID]; !ok {
			return latencyReport{}, nil, fmt.Errorf("bench: drift target %s is not in the config", st.Target.ID)
		}
	}
	tr := NewTracker(len(steps), w.cfg.Hub.ManagedBy)
	b.current.Store(tr)
	defer b.current.Store(nil)
	clients, closeAll, err := entryClients(entries)
	if err != nil {
		return latencyReport{}, nil, err
	}
	defer closeAll()
	b.progress("fleet: raw repair floor: the same %d drifts again, a plain client (a connection per entry) applying each drifted object once its drift returned, %d at a time", len(steps), inFlight)
	// The queue holds every repair, so a drift never waits for the
	// appliers.
	repairs := make(chan rawApply, len(steps))
	gen := &plainRepairer{gen: driftgen.New(b.targets, b.opts.Seed), specs: byID, clients: clients, repair: repairs}
	cost := b.readCost(ctx)
	p := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError()
	p.Go(func(ctx context.Context) error {
		ap := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError().WithMaxGoroutines(max(1, inFlight))
		for a := range repairs {
			ap.Go(func(ctx context.Context) error { return benchApply(ctx, a.client, a.spec) })
		}
		return ap.Wait()
	})
	Execute(ctx, gen, tr, steps, 1)
	close(repairs)
	if err := p.Wait(); err != nil {
		return latencyReport{}, nil, fmt.Errorf("raw repair floor: %w", err)
	}
	timer := time.NewTimer(repairFloorLimit)
	defer timer.Stop()
	select {
	case <-tr.Done():
	case <-timer.C:
	case <-ctx.Done():
		return latencyReport{}, nil, ctx.Err()
	}
	spent := b.costSince(ctx, cost)
	samples := tr.Samples()
	for _, s := range samples {
		switch {
		case errors.Is(s.Err, errSuperseded):
			// Drifted again before the raw watch saw it repaired, as
			// the hub's run counts it: the later drift is timed.
		case s.Err != nil:
			return latencyReport{}, nil, fmt.Errorf("raw repair floor: drift of %s: %w", s.Target.ID, s.Err)
		case s.Repair.IsZero():
			return latencyReport{}, nil, fmt.Errorf("raw repair floor: %s not seen repaired within %s of the last apply returning", s.Target.ID, repairFloorLimit)
		}
	}
	lat := Collect(samples).Repair
	rep := latencyOf(lat)
	b.progress("fleet: raw repair floor: repair p50 %s, p99 %s", fmtDur(rep.P50.dur()), fmtDur(rep.P99.dur()))
	return rep, spent, nil
}

// repairFloor is the burst's raw repair floor its all repaired in is taken
// over: the mean of the floors measured before and after the hub, or the
// one measured; 0 when neither was.
func (r *runReport) repairFloor() msDuration {
	return meanOfMeasured(r.RepairFloorBefore, r.RepairFloor)
}

// meanOfMeasured is the mean of a floor measured before a hub's run and
// after it, or the one of the two measured (a floor not measured is 0); 0
// when neither was.
func meanOfMeasured(before, after msDuration) msDuration {
	switch {
	case before > 0 && after > 0:
		return (before + after) / 2
	case before > 0:
		return before
	}
	return after
}

package clusters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sourcegraph/conc"
	"github.com/sourcegraph/conc/panics"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/pack"
)

// RegistryOptions configure a Registry. Zero values take the defaults.
type RegistryOptions struct {
	// Logger receives the registry's and the managers' logs. Default: discard.
	Logger *slog.Logger
	// Health tunes the /readyz probes.
	Health HealthOptions
	// MinBackoff and MaxBackoff bound the delay before a failed or panicked
	// cluster manager is restarted. Defaults 1s and 30s.
	MinBackoff, MaxBackoff time.Duration
	// Registerer receives the backends' metrics (write conflicts, foreign
	// objects, writes by another hub with the same id). Default: none.
	Registerer prometheus.Registerer
}

// Registry owns one watch manager per cluster. Clusters are added and removed
// at runtime; each runs in its own supervised goroutine, so one that cannot
// connect or panics never blocks or stops the others: a panic is recovered,
// reported as that cluster's error, and the cluster restarted with backoff.
type Registry struct {
	sink    hub.Sink
	log     *slog.Logger
	opts    RegistryOptions
	metrics *metrics

	// beforeRun, when set (tests), runs in a cluster's supervised goroutine
	// before each manager start.
	beforeRun func(cluster string, attempt int)

	// generation is shared by every manager (see Manager.nextGen).
	generation atomic.Int64

	// opMu serialises Add, Remove and Update, so a check and the action
	// it decides are one step (two concurrent Updates of one cluster
	// could otherwise both stop the old manager and race to add theirs).
	// It is never taken by a manager's goroutines.
	opMu sync.Mutex

	mu      sync.Mutex
	ctx     context.Context
	entries map[string]*entry
	// writes holds each cluster's writeLog, kept across restarts and
	// updates of its manager until the cluster is removed.
	writes map[string]*writeLog
	// dicts pack the cached objects of every manager, one dictionary per
	// kind (the objects of a kind look alike on every cluster).
	dicts  pack.Dicts[hub.Kind]
	wg     conc.WaitGroup
	closed bool
}

type entry struct {
	cfg    ClusterConfig
	cancel context.CancelFunc
	done   chan struct{}
	mgr    *Manager
}

// NewRegistry returns a registry that reports to sink.
func NewRegistry(sink hub.Sink, opts RegistryOptions) *Registry {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = time.Second
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	return &Registry{sink: sink, log: opts.Logger, opts: opts, metrics: newMetrics(opts.Registerer), entries: make(map[string]*entry),
		writes: make(map[string]*writeLog)}
}

// ErrRegistryClosed is returned by Add and Update after Run has returned.
var ErrRegistryClosed = errors.New("cluster registry is closed")

// Run starts every cluster added so far (and later ones as they are added),
// and blocks until ctx ends; then it stops every cluster and waits for all
// of their goroutines.
func (r *Registry) Run(ctx context.Context) error {
	r.mu.Lock()
	r.ctx = ctx
	for _, e := range r.entries {
		r.startLocked(e)
	}
	r.mu.Unlock()
	<-ctx.Done()
	r.mu.Lock()
	r.closed = true
	for _, e := range r.entries {
		if e.cancel != nil {
			e.cancel()
		}
	}
	r.mu.Unlock()
	r.wg.Wait()
	return nil
}

// Add registers a cluster and, once Run has started, starts its manager.
func (r *Registry) Add(cfg ClusterConfig) error {
	r.opMu.Lock()
	defer r.opMu.Unlock()
	return r.add(cfg)
}

func (r *Registry) add(cfg ClusterConfig) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrRegistryClosed
	}
	if _, ok := r.entries[cfg.ID]; ok {
		return fmt.Errorf("cluster %q: already registered", cfg.ID)
	}
	e := &entry{cfg: cfg}
	r.entries[cfg.ID] = e
	if r.ctx != nil {
		r.startLocked(e)
	}
	return nil
}

// Remove stops a cluster's manager, waits for its goroutines and forgets it,
// freeing its informer caches. It reports the cluster as removed.
func (r *Registry) Remove(id string) bool {
	r.opMu.Lock()
	defer r.opMu.Unlock()
	r.mu.Lock()
	e, ok := r.entries[id]
	if ok {
		delete(r.entries, id)
	}
	r.mu.Unlock()
	if !ok {
		return false
	}
	if e.cancel != nil {
		e.cancel()
		<-e.done
	}
	r.mu.Lock()
	delete(r.writes, id) // its manager is gone: nothing writes there any more
	r.mu.Unlock()
	r.metrics.forget(id)
	r.sink.ClusterChanged(hub.ClusterHealth{Cluster: id, State: hub.ClusterRemoved, Since: time.Now(), Source: e.cfg.Source,
		Seq: r.generation.Add(1)})
	return true
}

// Update replaces a cluster's configuration. When it differs, the cluster's
// manager is restarted with the new one (e.g. rotated credentials); the hub
// keeps its desired and status state, and the restart re-syncs the cluster.
func (r *Registry) Update(cfg ClusterConfig) error {
	r.opMu.Lock()
	defer r.opMu.Unlock()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrRegistryClosed
	}
	e, ok := r.entries[cfg.ID]
	same := ok && sameConfig(e.cfg, cfg)
	r.mu.Unlock()
	if same {
		return nil
	}
	if ok {
		r.mu.Lock()
		delete(r.entries, cfg.ID)
		r.mu.Unlock()
		if e.cancel != nil {
			e.cancel()
			<-e.done
		}
	}
	return r.add(cfg)
}

// Backend returns the cluster's backend (its current manager).
func (r *Registry) Backend(id string) (hub.Backend, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[id]
	if !ok || e.mgr == nil {
		return nil, false
	}
	return e.mgr, true
}

// IDs returns the registered cluster ids, sorted.
func (r *Registry) IDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, 0, len(r.entries))
	for id := range r.entries {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Config returns a registered cluster's configuration.
func (r *Registry) Config(id string) (ClusterConfig, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[id]
	if !ok {
		return ClusterConfig{}, false
	}
	return e.cfg, true
}

// Health returns the current health of every registered cluster.
func (r *Registry) Health() []hub.ClusterHealth {
	r.mu.Lock()
	mgrs := make([]*Manager, 0, len(r.entries))
	for _, e := range r.entries {
		if e.mgr != nil {
			mgrs = append(mgrs, e.mgr)
		}
	}
	r.mu.Unlock()
	out := make([]hub.ClusterHealth, 0, len(mgrs))
	for _, m := range mgrs {
		out = append(out, m.Health())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Cluster < out[j].Cluster })
	return out
}

func (r *Registry) startLocked(e *entry) {
	ctx, cancel := context.WithCancel(r.ctx)
	e.cancel = cancel
	e.done = make(chan struct{})
	r.wg.Go(func() {
		defer close(e.done)
		r.supervise(ctx, e)
	})
}

// supervise runs a cluster's manager, restarting it with backoff after an
// error or a panic until ctx ends.
func (r *Registry) supervise(ctx context.Context, e *entry) {
	backoff := r.opts.MinBackoff
	for attempt := 0; ; attempt++ {
		mgr := newManager(e.cfg, r.sink, r.log, r.opts.Health, func() int64 { return r.generation.Add(1) })
		mgr.metrics = r.metrics
		mgr.dicts = &r.dicts
		r.mu.Lock()
		if r.writes[e.cfg.ID] == nil {
			r.writes[e.cfg.ID] = mgr.writes
		}
		mgr.writes = r.writes[e.cfg.ID]
		e.mgr = mgr
		r.mu.Unlock()
		started := time.Now()
		var runErr error
		var catcher panics.Catcher
		catcher.Try(func() {
			if r.beforeRun != nil {
				r.beforeRun(e.cfg.ID, attempt)
			}
			runErr = mgr.Run(ctx)
		})
		if rec := catcher.Recovered(); rec != nil {
			runErr = fmt.Errorf("cluster %q: panic: %v", e.cfg.ID, rec.Value)
			r.log.Error("cluster manager panicked; restarting", "cluster", e.cfg.ID, "err", runErr, "stack", string(rec.Stack))
			mgr.setError(hub.ClusterUnreachable, runErr.Error())
		} else if runErr != nil && ctx.Err() == nil {
			if st := mgr.Health().State; st == hub.ClusterSynced || st == hub.ClusterDegraded {
				// Its run ended with an error once ready (an event
				// handler panicked): until the next manager reports, the
				// cluster is not watched, and the hub must not take it
				// for ready (its calls fail with hub.ErrRestarting).
				mgr.setError(hub.ClusterUnreachable, runErr.Error())
			}
		}
		if ctx.Err() != nil {
			return
		}
		if time.Since(started) > 2*r.opts.MaxBackoff {
			backoff = r.opts.MinBackoff
		}
		r.log.Warn("cluster manager stopped; restarting", "cluster", e.cfg.ID, "err", runErr, "backoff", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, r.opts.MaxBackoff)
	}
}

// sameConfig reports whether two configurations of a cluster are the same.
// Getenv is left out: a func is never deeply equal to another, and the
// environment lookup of one process does not change between reloads, so
// comparing it would restart every cluster on every reload.
func sameConfig(a, b ClusterConfig) bool {
	a.Getenv, b.Getenv = nil, nil
	return reflect.DeepEqual(a, b)
}

package bench

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/sourcegraph/conc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/driftwatch/driftwatch/hub"
)

// EventSink receives the raw watch's events with the time each arrived. It
// is called from one goroutine per cluster and kind.
type EventSink func(cluster string, kind hub.Kind, ev watch.Event, at time.Time)

// Floor is the benchmark's independent raw watch: one plain client-go watch
// (typed, or dynamic for any kind) per cluster and kind on the managed
// namespace, without a label selector, no informer and no cache. What it
// sees is the floor any watch-based tool competes with.
type Floor struct {
	log *slog.Logger
	wg  conc.WaitGroup
}

// StartFloor lists every kind in namespace on every cluster for a starting
// resource version, then watches from it until ctx ends, handing each event
// to sink. It returns once every watch has its starting point (events from
// then on are delivered); call Wait after ctx ends.
func StartFloor(ctx context.Context, clients map[string]kubernetes.Interface, namespace string, sink EventSink, log *slog.Logger) (*Floor, error) {
	var ws []floorWatch
	for _, name := range sortedKeys(clients) {
		for _, kind := range hub.Kinds() {
			ws = append(ws, floorWatch{cluster: name, kind: kind, w: rawWatchFor(clients[name], namespace, kind)})
		}
	}
	return startFloor(ctx, ws, namespace, sink, log)
}

// StartDynamicFloor is StartFloor for any kinds, watched with the dynamic
// client: kinds are the resources to watch in namespace, by the NodeID
// slug the sink is given.
func StartDynamicFloor(ctx context.Context, clients map[string]dynamic.Interface, namespace string, kinds map[hub.Kind]schema.GroupVersionResource, sink EventSink, log *slog.Logger) (*Floor, error) {
	var ws []floorWatch
	for _, name := range sortedKeys(clients) {
		for _, kind := range slices.Sorted(maps.Keys(kinds)) {
			ri := clients[name].Resource(kinds[kind]).Namespace(namespace)
			ws = append(ws, floorWatch{cluster: name, kind: kind, w: rawWatch{
				list:  func(ctx context.Context, o metav1.ListOptions) (metav1.ListInterface, error) { return ri.List(ctx, o) },
				watch: ri.Watch,
			}})
		}
	}
	return startFloor(ctx, ws, namespace, sink, log)
}

// floorWatch is one raw watch of the floor: a kind on a cluster.
type floorWatch struct {
	cluster string
	kind    hub.Kind
	w       rawWatch
}

// startFloor gets every watch's starting resource version, then starts
// them.
func startFloor(ctx context.Context, ws []floorWatch, namespace string, sink EventSink, log *slog.Logger) (*Floor, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &Floor{log: log}
	rvs := make([]string, len(ws))
	for i, w := range ws {
		rv, err := w.w.resourceVersion(ctx)
		if err != nil {
			return nil, fmt.Errorf("cluster %q: list %s in %s: %w", w.cluster, w.kind, namespace, err)
		}
		rvs[i] = rv
	}
	for i, w := range ws {
		f.wg.Go(func() { f.run(ctx, w.cluster, w.kind, w.w, rvs[i], sink) })
	}
	return f, nil
}

// Wait blocks until every watch goroutine has returned (after ctx ended).
func (f *Floor) Wait() { f.wg.Wait() }

// run watches from rv, resuming after a closed watch, until ctx ends. Only
// an expired resource version makes it re-list (events in between are lost
// and logged).
func (f *Floor) run(ctx context.Context, cluster string, kind hub.Kind, w rawWatch, rv string, sink EventSink) {
	for ctx.Err() == nil {
		rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{WatchFuncWithContext: w.watch})
		if err != nil {
			f.log.Error("raw watch", "cluster", cluster, "kind", kind, "err", err)
			return
		}
		for ev := range rw.ResultChan() {
			at := time.Now()
			switch ev.Type {
			case watch.Bookmark:
				continue
			case watch.Error:
				f.log.Warn("raw watch error", "cluster", cluster, "kind", kind, "status", fmt.Sprint(ev.Object))
				continue
			}
			sink(cluster, kind, ev, at)
		}
		rw.Stop()
		<-rw.Done()
		if ctx.Err() != nil {
			return
		}
		f.log.Warn("raw watch ended: listing again; events in between are lost", "cluster", cluster, "kind", kind)
		if rv, err = w.resourceVersion(ctx); err != nil {
			f.log.Error("raw watch: list", "cluster", cluster, "kind", kind, "err", err)
			return
		}
	}
}

// rawWatch lists (for a resource version) and watches one kind in one
// namespace.
type rawWatch struct {
	list  func(ctx context.Context, o metav1.ListOptions) (metav1.ListInterface, error)
	watch cache.WatchFuncWithContext
}

func rawWatchFor(c kubernetes.Interface, ns string, kind hub.Kind) rawWatch {
	switch kind {
	case hub.KindDeployment:
		d := c.AppsV1().Deployments(ns)
		return rawWatch{
			list:  func(ctx context.Context, o metav1.ListOptions) (metav1.ListInterface, error) { return d.List(ctx, o) },
			watch: d.Watch,
		}
	case hub.KindService:
		s := c.CoreV1().Services(ns)
		return rawWatch{
			list:  func(ctx context.Context, o metav1.ListOptions) (metav1.ListInterface, error) { return s.List(ctx, o) },
			watch: s.Watch,
		}
	default:
		cm := c.CoreV1().ConfigMaps(ns)
		return rawWatch{
			list:  func(ctx context.Context, o metav1.ListOptions) (metav1.ListInterface, error) { return cm.List(ctx, o) },
			watch: cm.Watch,
		}
	}
}

// resourceVersion lists at most one object: the list's resource version is
// where the watch starts.
func (w rawWatch) resourceVersion(ctx context.Context) (string, error) {
	l, err := w.list(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return "", err
	}
	return l.GetResourceVersion(), nil
}

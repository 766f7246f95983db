package clusters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/pack"
	"github.com/driftwatch/driftwatch/internal/rescue"
)

// informerKey names one informer of a manager.
type informerKey struct {
	namespace string
	kind      hub.Kind
}

func (k informerKey) resource() string { return resourceOf(k.kind) }

// informerState is the health of one informer.
type informerState struct {
	informer cache.SharedIndexInformer
	synced   bool
	err      error
	// class is err's class (err keeps only the message).
	class errorClass
	// errRV is the informer's last synced resource version when err was
	// recorded; a later change means it has listed or watched since.
	errRV string
}

// Manager watches one cluster: informers per managed namespace and kind,
// filtered by the managed-by label, plus a /readyz probe. It turns every
// change into a hub.Event for the shared Sink, reports the cluster's health,
// and serves as the cluster's hub.Backend. A Manager runs once: Run blocks
// until its context ends and every goroutine it started has returned.
type Manager struct {
	// eventsOnce makes events, the correlator of the Kubernetes Events
	// it writes (see RecordEvent), on first use.
	eventsOnce sync.Once
	events     *record.EventCorrelator

	cfg    ClusterConfig
	sink   hub.Sink
	log    *slog.Logger
	health HealthOptions
	now    func() time.Time
	// fieldManager is the field manager of every write
	// (kubeobj.FieldManagerFor of cfg.HubID).
	fieldManager string
	// metrics are shared with the registry's other managers (nil: none).
	metrics *metrics

	restConfig *rest.Config
	client     kubernetes.Interface
	// meta sends the server-side applies, whose answers it takes as
	// metadata only (see applyPatch); nil for a Manager given a client
	// alone (the unit tests' fakes), which then applies with client.
	meta metadata.Interface
	// dyn and mapper serve the kinds outside kindTable (generic.go);
	// generic holds their kindInfo by slug, mapperReset when a miss last
	// reset the mapper, and pending the kinds to watch that the cluster
	// does not serve yet (by slug: why).
	dyn         dynamic.Interface
	mapper      meta.ResettableRESTMapper
	generic     map[hub.Kind]kindInfo
	mapperReset time.Time
	pending     map[hub.Kind]string
	// schemas are the cluster's OpenAPI schemas of the kinds client-go
	// does not know (custom resources), for drift detection.
	schemas *schemaCache
	// discovery sends the discovery requests of a call (see
	// discoveryFor): the connection's transport, its requests ended with
	// the manager's run (boundTransport).
	discovery *http.Client

	rate rateWindow

	mu         sync.Mutex
	informers  map[informerKey]*informerState
	state      hub.ClusterState
	since      time.Time
	lastErr    string
	probeFails int
	probeErr   error
	generation int64
	reported   hub.ClusterHealth
	// fail ends Run with an error (a recovered handler panic).
	fail func(error)
	// gone holds the UIDs of objects the label-filtered watch reported
	// deleted, until a Repair or their return to the cache uses them
	// (bounded by maxGone; see trackGone).
	gone    map[goneKey]goneEntry
	goneSeq uint64
	// writes are the hub's own writes to the cluster, per object (see
	// checkWriter); shared with the cluster's earlier managers.
	writes *writeLog
	// dicts pack the cached objects' bodies, one dictionary per kind;
	// shared with every manager of the registry.
	dicts *pack.Dicts[hub.Kind]
	// sameID names the first object written by our field manager but not
	// by us ("" while none was seen): another hub with our id.
	sameID string
	// foreignLogged holds the other hubs already logged (noteForeign).
	foreignLogged map[string]bool
	// namespaces holds the namespaces checked before their first created
	// object, or being checked (ensureNamespace), under nsMu.
	nsMu       sync.Mutex
	namespaces map[string]*namespaceCheck
	// recreated is when each NodeID was last deleted to be recreated
	// (see recreate), under nsMu.
	recreated map[hub.NodeID]time.Time
	// terminating are the last refusals of writes because a namespace or
	// a CRD is being deleted (see noteTerminating), under nsMu.
	terminating map[string]terminatingNote
	// creds fingerprints the credentials the manager connected with from
	// a kubeconfig file (see credentials); "" for any other source. Under
	// mu.
	creds string

	probeNow chan struct{}
	// released is set when the run's connection is closed (see connect):
	// every later call, and every call it cut, fails with an error that
	// unwraps to hub.ErrRestarting.
	released atomic.Bool
	// accepted is when the apiserver last accepted one of the manager's
	// writes (UnixNano; 0: never): within a probe interval, it stands
	// for a probe (see probeLoop).
	accepted atomic.Int64
	// reportMu serialises health reports (see report).
	reportMu sync.Mutex
	// localSeq numbers generations and reports when nextGen is nil.
	localSeq atomic.Int64
	// nextGen hands out sync generations and report sequence numbers; the
	// registry shares one counter
	// across managers so a restarted cluster's generations keep rising.
	nextGen func() int64
}

// newManager returns a manager for cfg that reports to sink.
func newManager(cfg ClusterConfig, sink hub.Sink, log *slog.Logger, health HealthOptions, nextGen func() int64) *Manager {
	if cfg.ManagedBy == "" {
		cfg.ManagedBy = kubeobj.DefaultManagedBy
	}
	if cfg.Source == "" {
		cfg.Source = "config"
	}
	return &Manager{
		cfg:          cfg,
		sink:         sink,
		log:          log.With("cluster", cfg.ID),
		health:       health.withDefaults(),
		now:          time.Now,
		fieldManager: kubeobj.FieldManagerFor(cfg.HubID),
		writes:       &writeLog{},
		dicts:        &pack.Dicts[hub.Kind]{},
		informers:    make(map[informerKey]*informerState),
		state:        hub.ClusterConnecting,
		since:        time.Now(),
		probeNow:     make(chan struct{}, 1),
		nextGen:      nextGen,
	}
}

// RESTConfig builds the client configuration of a cluster from its
// kubeconfig data (untrusted), the Pod's service account (InCluster), its
// kubeconfig file, or else the default kubeconfig ($KUBECONFIG, merged, or
// ~/.kube/config), in that order (see ClusterConfig.Kubeconfig), with the
// configured rate limit and protobuf for built-in kinds. Errors name the
// cluster, the kubeconfig files tried and the context.
//
// The rate limit is the cluster's own (see ClusterConfig.QPS): the returned
// config's RateLimiter, adaptive unless QPS or Burst is set, and a transport
// wrapper, outside ClusterConfig.WrapTransport, that bounds the requests in
// flight (MaxInFlight) and reads the apiserver's API Priority and Fairness
// headers. Clients made from the config (and its copies) share them. The
// limiter's mode switches are logged by a Manager only.
func RESTConfig(cfg ClusterConfig) (*rest.Config, error) {
	return restConfig(cfg, nil)
}

// restConfig is RESTConfig with the logger of the rate limiter's mode
// switches (nil discards them).
func restConfig(cfg ClusterConfig, log *slog.Logger) (*rest.Config, error) {
	var rc *rest.Config
	var err error
	switch {
	case len(cfg.KubeconfigData) > 0:
		// Inline data comes from outside the hub's configuration (a
		// Cluster API secret): never trusted.
		if rc, err = ParseUntrustedKubeconfig(cfg.KubeconfigData, cfg.KubeconfigPolicy); err != nil {
			return nil, fmt.Errorf("cluster %q: kubeconfig data: %w", cfg.ID, err)
		}
	case cfg.InCluster:
		if rc, err = inClusterRESTConfig(cfg); err != nil {
			return nil, err
		}
	default:
		if rc, err = kubeconfigRESTConfig(cfg); err != nil {
			return nil, err
		}
	}
	rc = rest.CopyConfig(rc)
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	rc.UserAgent = "driftwatch"
	if cfg.WrapTransport != nil {
		rc.Wrap(cfg.WrapTransport)
	}
	newClientLimiter(cfg.QPS, cfg.Burst, log).install(rc)
	return rc, nil
}

// ID returns the cluster id.
func (m *Manager) ID() string { return m.cfg.ID }

// Run connects, starts the informers and the probe, and blocks until ctx ends
// or a handler panics. It returns an error when the cluster cannot be set up
// (bad kubeconfig) or a handler panicked; the registry restarts it then.
func (m *Manager) Run(ctx context.Context) error {
	release, err := m.connect(ctx)
	if err != nil {
		m.setError(hub.ClusterUnreachable, err.Error())
		return err
	}
	defer release()
	return m.run(ctx)
}

// connect builds the cluster's client on its own connection tracker (so
// closing the connections of a stopped manager never touches another's) and
// installs it; release closes every connection it opened. Discovery, which
// client-go sends without a context, ends when life does (boundTransport).
func (m *Manager) connect(life context.Context) (release func(), err error) {
	rc, err := restConfig(m.cfg, m.log)
	if err != nil {
		return nil, err
	}
	creds := ""
	if len(m.cfg.KubeconfigData) == 0 && !m.cfg.InCluster {
		creds = credentials(rc)
	}
	// The tracker dials through the config's own Dial when it has one
	// (an untrusted kubeconfig's, which refuses forbidden addresses).
	conns := newConnTracker(rc.Dial)
	rc.Dial = conns.DialContext
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return closedGuard{rt: rt, closed: &m.released} })
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: client: %w", m.cfg.ID, err)
	}
	release = func() {
		// Set first: a call the closing cuts sees it when it describes
		// its error.
		m.released.Store(true)
		hc.CloseIdleConnections()
		conns.CloseAll()
	}
	client, err := kubernetes.NewForConfigAndClient(rc, hc)
	if err != nil {
		release()
		return nil, fmt.Errorf("cluster %q: client: %w", m.cfg.ID, err)
	}
	dyn, err := dynamic.NewForConfigAndClient(dynamic.ConfigFor(rc), hc)
	if err != nil {
		release()
		return nil, fmt.Errorf("cluster %q: dynamic client: %w", m.cfg.ID, err)
	}
	mc, err := metadata.NewForConfigAndClient(metadata.ConfigFor(rc), hc)
	if err != nil {
		release()
		return nil, fmt.Errorf("cluster %q: metadata client: %w", m.cfg.ID, err)
	}
	dhc := &http.Client{Transport: boundTransport{rt: hc.Transport, life: life}, Timeout: hc.Timeout}
	disc, err := discovery.NewDiscoveryClientForConfigAndClient(rc, dhc)
	if err != nil {
		release()
		return nil, fmt.Errorf("cluster %q: discovery client: %w", m.cfg.ID, err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	m.mu.Lock()
	m.restConfig = rc
	m.creds = creds
	m.client = client
	m.meta = mc
	m.dyn = dyn
	m.mapper = mapper
	m.schemas = newSchemaCache(disc, m.log)
	m.discovery = dhc
	m.mu.Unlock()
	return release, nil
}

// discoveryFor returns an uncached discovery client whose requests end when
// ctx does, besides when the manager's run does: client-go's discovery
// takes no context.
func (m *Manager) discoveryFor(ctx context.Context) (discovery.DiscoveryInterface, error) {
	m.mu.Lock()
	rc, hc := m.restConfig, m.discovery
	m.mu.Unlock()
	if rc == nil || hc == nil {
		return nil, errNotConnected
	}
	return discovery.NewDiscoveryClientForConfigAndClient(rc, &http.Client{Transport: boundTransport{rt: hc.Transport, life: ctx}, Timeout: hc.Timeout})
}

func (m *Manager) run(parent context.Context) error {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	m.mu.Lock()
	m.fail = func(err error) { cancel(err) }
	m.mu.Unlock()
	m.report(true)

	var wg conc.WaitGroup
	defer func() {
		cancel(nil) // every goroutine below ends with ctx
		wg.Wait()
	}()

	var factories []informers.SharedInformerFactory
	if !m.cfg.DisableWatch {
		selector := labels.Set{kubeobj.ManagedByLabel: m.cfg.ManagedBy}.AsSelector().String()
		for _, ns := range m.cfg.Namespaces {
			f := informers.NewSharedInformerFactoryWithOptions(listWatchClient{m.client}, 0, informers.WithNamespace(ns))
			tweak := func(o *metav1.ListOptions) { o.LabelSelector = selector }
			for _, kind := range hub.Kinds() {
				info, err := kindOf(kind)
				if err != nil {
					return fmt.Errorf("cluster %q: watch %s: %w", m.cfg.ID, kind, err)
				}
				inf, err := m.newInformer(f, ns, kind, info, tweak)
				if err != nil {
					return err
				}
				key := informerKey{namespace: ns, kind: kind}
				m.mu.Lock()
				m.informers[key] = &informerState{informer: inf}
				m.mu.Unlock()
				if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
					m.guard("watch error handler", func() { m.watchError(key, err) })
				}); err != nil {
					return fmt.Errorf("cluster %q: %w", m.cfg.ID, err)
				}
				if _, err := inf.AddEventHandler(m.handler(kind)); err != nil {
					return fmt.Errorf("cluster %q: %w", m.cfg.ID, err)
				}
			}
			factories = append(factories, f)
		}
	}
	// The first probe opens the cluster's connection before the
	// informers list: they then share it (HTTP/2) instead of each dialling
	// and handshaking one of its own on an empty pool, which is what
	// starting them all at once did (one connection per informer and the
	// probe, all but one closed again once the handshakes were done).
	connected := make(chan struct{})
	wg.Go(func() { m.guard("health probe", func() { m.probeLoop(ctx, connected) }) })
	select {
	case <-connected:
	case <-time.After(connectWait):
	case <-ctx.Done():
	}
	for _, f := range factories {
		f.StartWithContext(ctx)
	}
	if !m.cfg.DisableWatch && len(m.cfg.Kinds) > 0 {
		tweak := func(o *metav1.ListOptions) {
			o.LabelSelector = labels.Set{kubeobj.ManagedByLabel: m.cfg.ManagedBy}.AsSelector().String()
		}
		if err := m.watchGeneric(ctx, &wg, tweak); err != nil {
			return err
		}
	}
	defer func() {
		// Shutdown waits for every informer goroutine; it must run after ctx
		// is cancelled (the deferred cancel above runs later, so cancel here).
		cancel(nil)
		for _, f := range factories {
			f.Shutdown()
		}
	}()

	m.mu.Lock()
	keys := make([]informerKey, 0, len(m.informers))
	for k := range m.informers {
		keys = append(keys, k)
	}
	m.mu.Unlock()
	for _, key := range keys {
		m.mu.Lock()
		inf := m.informers[key].informer
		m.mu.Unlock()
		wg.Go(func() {
			m.guard("watch cache sync", func() {
				if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
					m.mu.Lock()
					m.informers[key].synced = true
					m.mu.Unlock()
					m.evaluate()
				}
			})
		})
	}
	wg.Go(func() { m.guard("report loop", func() { m.reportLoop(ctx) }) })
	m.evaluate()

	<-ctx.Done()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) && parent.Err() == nil {
		return err
	}
	return nil
}

// newInformer registers with f the informer of one namespace and kind,
// whose transform keeps objects in the compact cache form (cachedObject).
func (m *Manager) newInformer(f informers.SharedInformerFactory, ns string, kind hub.Kind, info kindInfo, tweak func(*metav1.ListOptions)) (cache.SharedIndexInformer, error) {
	shared := &cacheShared{cluster: m.cfg.ID, namespace: ns, kind: kind, info: info, managedBy: m.cfg.ManagedBy, hubID: m.cfg.HubID, fieldManager: m.fieldManager, dicts: m.dicts}
	var setErr error
	inf := f.InformerFor(info.newObject(), func(c kubernetes.Interface, _ time.Duration) cache.SharedIndexInformer {
		inf := info.newInformer(c, ns, tweak)
		setErr = inf.SetTransform(m.guardTransform(string(kind)+" watch cache's transform", shared.compact))
		return inf
	})
	if setErr != nil {
		return nil, fmt.Errorf("cluster %q: watch %s in %q: %w", m.cfg.ID, info.resource, ns, setErr)
	}
	return inf, nil
}

// handler returns the event handler of one kind: it only maps the object to
// its NodeID and hands an event to the sink, after looking for a write by
// another hub with our id (checkWriter). No API calls, no blocking.
func (m *Manager) handler(kind hub.Kind) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) { m.emit(kind, hub.EventAdded, nil, obj, !initial) },
		UpdateFunc: func(old, obj any) {
			m.emit(kind, hub.EventUpdated, old, obj, true)
		},
		DeleteFunc: func(obj any) { m.emit(kind, hub.EventDeleted, nil, obj, false) },
	}
}

// emit hands one watched change to the sink; check says whether it may
// show a write by another hub (not a delete, nor an add of the initial
// list).
func (m *Manager) emit(kind hub.Kind, typ hub.EventType, old, obj any, check bool) {
	m.guard(string(kind)+" event handler", func() { m.emitEvent(kind, typ, old, obj, check) })
}

// emitEvent is emit's work, under its guard.
func (m *Manager) emitEvent(kind hub.Kind, typ hub.EventType, old, obj any, check bool) {
	ev, ok := eventFor(m.cfg.ID, kind, typ, obj, m.now())
	if !ok {
		return
	}
	if check {
		m.checkWriter(kind, old, obj, typ == hub.EventAdded)
	}
	m.trackGone(kind, typ, obj)
	m.rate.add(ev.ObservedAt)
	m.sink.Observe(ev)
}

// guard runs fn, a piece of the manager's own work on one of its
// goroutines or on one that client-go runs for it (an event handler, a
// watch error handler). A panic in fn is recovered, logged with its stack
// and ends the manager's run with it as the error: the registry starts the
// cluster's manager again with backoff and shows the error as the
// cluster's, and the other clusters go on. Without it a panic in a
// client-go callback crashes the hub (client-go's crash handler panics
// again), and one in a goroutine of the run goes unseen until the run
// ends. It returns the panic's error, nil without one.
func (m *Manager) guard(what string, fn func()) error {
	err := rescue.Call(m.log, fmt.Sprintf("cluster %q: the %s", m.cfg.ID, what), fn)
	if err != nil {
		m.mu.Lock()
		fail := m.fail
		m.mu.Unlock()
		if fail != nil {
			fail(err)
		}
	}
	return err
}

// guardTransform wraps an informer's transform (see guard): an object the
// transform panics on fails the manager's run, and the transform returns
// the panic's error, which client-go logs and drops the object for.
func (m *Manager) guardTransform(what string, transform cache.TransformFunc) cache.TransformFunc {
	return func(obj any) (out any, err error) {
		if perr := m.guard(what, func() { out, err = transform(obj) }); perr != nil {
			return nil, perr
		}
		return out, err
	}
}

// eventFor maps an informer object to a hub event. The NodeID comes from the
// node-id annotation when it names this cluster and kind, else from the
// naming convention cluster:namespace/name:kind.
func eventFor(cluster string, kind hub.Kind, typ hub.EventType, obj any, now time.Time) (hub.Event, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
		if obj == nil {
			id, err := idFromKey(cluster, kind, d.Key)
			if err != nil {
				return hub.Event{}, false
			}
			return hub.Event{ID: id, Type: hub.EventDeleted, ObservedAt: now}, true
		}
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return hub.Event{}, false
	}
	ev := hub.Event{
		ID:              NodeIDFor(cluster, kind, acc),
		Type:            typ,
		ResourceVersion: acc.GetResourceVersion(),
		UID:             string(acc.GetUID()),
		ObservedAt:      now,
	}
	if typ != hub.EventDeleted {
		ev.Generation = acc.GetGeneration()
	}
	return ev, true
}

func idFromKey(cluster string, kind hub.Kind, key string) (hub.NodeID, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return hub.NodeID{}, err
	}
	return hub.NewNodeID(cluster, ns, name, kind), nil
}

// NodeIDFor returns the NodeID of a live object of the given kind on cluster:
// from its driftwatch.io/node-id annotation when that names this cluster and
// kind, else derived from namespace and name (the goal compiler's convention).
func NodeIDFor(cluster string, kind hub.Kind, obj metav1.Object) hub.NodeID {
	if c, ok := obj.(*cachedMeta); ok && c.usualNodeID() {
		// A cached object's usual NodeID annotation, if it has one, names
		// it: no need to build and parse it (a watch event's hot path).
		return hub.NewNodeID(cluster, c.Namespace, c.Name, kind)
	}
	if s, ok := obj.GetAnnotations()[kubeobj.NodeIDAnnotation]; ok {
		if id, err := hub.ParseNodeID(s); err == nil && id.Cluster == cluster && id.Kind == kind {
			return id
		}
	}
	return hub.NewNodeID(cluster, obj.GetNamespace(), obj.GetName(), kind)
}

// watchError records an informer's list/watch error.
func (m *Manager) watchError(key informerKey, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	class := classify(err)
	verb := "watch"
	if strings.Contains(err.Error(), "failed to list") || class == classForbidden && strings.Contains(err.Error(), "cannot list") {
		verb = "list"
	}
	m.mu.Lock()
	st := m.informers[key]
	if st != nil {
		st.err = errors.New(describe(m.cfg.ID, verb, key.resource(), key.namespace, err))
		st.class = class
		st.errRV = st.informer.LastSyncResourceVersion()
	}
	m.mu.Unlock()
	m.log.Warn("watch error", "namespace", key.namespace, "kind", key.kind, "err", err)
	if class == classNetwork || class == classOther {
		select {
		case m.probeNow <- struct{}{}:
		default:
		}
	}
	m.evaluate()
}

// connectWait bounds how long a manager's informers wait for the first
// probe to open the cluster's connection before they start anyway (each
// then dials its own while none is open).
const connectWait = 2 * time.Second

// probeLoop probes /readyz every Interval, or every RetryInterval after a
// failure, and at once when a watch reports a network error. While the
// cluster is healthy, a write the apiserver accepted within the last
// Interval stands for the probe (it proves more: the credentials, and
// etcd taking writes), so a cluster the hub is writing to is not probed
// as well; the probe is then due Interval after that write.
// connected is closed once the first probe has returned, whatever it
// found.
func (m *Manager) probeLoop(ctx context.Context, connected chan<- struct{}) {
	firstDone := sync.OnceFunc(func() { close(connected) })
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
			if wait, skip := m.probeCovered(); skip {
				firstDone() // a write of the last run stands for it
				m.evaluate()
				timer.Reset(wait)
				continue
			}
		case <-m.probeNow:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		}
		err := m.probe(ctx)
		firstDone()
		if ctx.Err() != nil {
			return
		}
		m.mu.Lock()
		if err != nil && !answered(err) {
			m.probeFails++
			m.probeErr = err
		} else {
			m.probeFails = 0
			m.probeErr = err
		}
		failing := m.probeFails > 0
		m.mu.Unlock()
		if err != nil && m.kubeconfigChanged() {
			// Refused or unreachable with what the file said when the
			// manager connected, and the file says something else now
			// (a rotated token, a moved server): connect anew with it.
			m.log.Info("kubeconfig changed while the cluster failed its probe: connecting with it", "err", err)
			m.mu.Lock()
			fail := m.fail
			m.mu.Unlock()
			if fail != nil {
				fail(fmt.Errorf("cluster %q: its kubeconfig changed: connecting with it", m.cfg.ID))
			}
			return
		}
		m.evaluate()
		if failing {
			timer.Reset(m.health.RetryInterval)
		} else {
			timer.Reset(m.health.Interval)
		}
	}
}

// probeCovered says whether a due probe can be left out, a write having
// been accepted within Interval while the last probe passed, and if so
// how long until the probe is due again.
func (m *Manager) probeCovered() (time.Duration, bool) {
	at := m.accepted.Load()
	if at == 0 {
		return 0, false
	}
	since := m.now().Sub(time.Unix(0, at))
	if since < 0 || since >= m.health.Interval {
		return 0, false
	}
	m.mu.Lock()
	healthy := m.probeFails == 0 && m.probeErr == nil
	m.mu.Unlock()
	return m.health.Interval - since, healthy
}

// probe GETs /readyz once.
func (m *Manager) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, m.health.Timeout)
	defer cancel()
	body, err := m.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(strings.TrimSpace(string(body)), "ok") {
		return fmt.Errorf("readyz: %s", strings.TrimSpace(string(body)))
	}
	return nil
}

// evaluate derives the cluster state from the probe and the informers, and
// reports it when it changed. Leaving a bad state for synced starts a new
// generation: the hub then re-checks every NodeID of the cluster.
func (m *Manager) evaluate() {
	state, lastErr, changed := m.judge()
	if changed {
		m.log.Log(context.Background(), stateLogLevel(state), "cluster state", "state", state, "err", lastErr)
	}
	m.report(changed)
}

// judge is evaluate's part under m.mu (released even on a panic): it sets
// and returns the state, its error and whether the state changed.
func (m *Manager) judge() (state hub.ClusterState, lastErr string, changed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// problems are the informers' errors but network ones (the probe
	// judges the network); refused those of a 401.
	var problems, refused []string
	allSynced := true
	forbidden := 0
	for _, st := range m.informers {
		if st.err != nil && st.informer.LastSyncResourceVersion() != st.errRV && st.synced {
			st.err = nil
		}
		if st.err != nil {
			switch st.class {
			case classNetwork:
			case classAuth:
				refused = append(refused, st.err.Error())
			case classForbidden:
				forbidden++
				problems = append(problems, st.err.Error())
			default:
				problems = append(problems, st.err.Error())
			}
		}
		if !st.synced {
			allSynced = false
		}
	}
	for _, why := range m.pending {
		problems = append(problems, why)
	}
	sort.Strings(problems)
	sort.Strings(refused)
	state = hub.ClusterSynced
	switch {
	case m.probeFails >= m.health.FailureThreshold:
		state = hub.ClusterUnreachable
		lastErr = describe(m.cfg.ID, "probe", "/readyz", "", m.probeErr)
	case m.probeErr != nil && answered(m.probeErr):
		// The credentials are refused (401), or refused even /readyz,
		// which every identity may read by default (403): the whole API.
		state = hub.ClusterUnauthorized
		lastErr = describeRefused(m.cfg.ID, m.probeErr)
	case len(refused) > 0:
		state = hub.ClusterUnauthorized
		lastErr = strings.Join(refused, "; ")
	case forbidden > 0 && forbidden == len(m.informers):
		// Every list the watch needs is forbidden: nothing can be read.
		state = hub.ClusterUnauthorized
		lastErr = fmt.Sprintf("cluster %q: unauthorized: the credentials may list none of the managed kinds: %s", m.cfg.ID, strings.Join(problems, "; "))
	case len(problems) > 0:
		state = hub.ClusterDegraded
		lastErr = strings.Join(problems, "; ")
	case !allSynced || m.probeFails > 0:
		state = hub.ClusterConnecting
		if m.state != hub.ClusterConnecting && m.state != "" {
			// A short blip keeps the previous state until it is confirmed.
			state = m.state
		}
		if m.probeErr != nil {
			lastErr = describe(m.cfg.ID, "probe", "/readyz", "", m.probeErr)
		}
	}
	changed = state != m.state
	prevState := m.state
	if changed {
		m.state = state
		m.since = m.now()
		// A new generation makes the hub re-check every NodeID of the
		// cluster: on becoming synced, and on becoming usable at all (a
		// cluster degraded from the start by one forbidden kind is still
		// reconciled for every kind it may read).
		wasUsable := prevState == hub.ClusterSynced || prevState == hub.ClusterDegraded
		if state == hub.ClusterSynced || (state == hub.ClusterDegraded && !wasUsable) {
			m.generation = m.next()
		}
	}
	if lastErr != "" || changed {
		m.lastErr = lastErr
	}
	return state, lastErr, changed
}

// stateLogLevel is the level of the log of a change to state: WARN for a
// cluster that cannot be used, or only in part (unreachable, unauthorized,
// degraded), INFO for the others (connecting, and synced: a recovery).
func stateLogLevel(state hub.ClusterState) slog.Level {
	switch state {
	case hub.ClusterUnreachable, hub.ClusterUnauthorized, hub.ClusterDegraded:
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// setError records a state with an error before Run could start informers.
func (m *Manager) setError(state hub.ClusterState, msg string) {
	m.mu.Lock()
	if m.state != state {
		m.since = m.now()
	}
	m.state = state
	m.lastErr = msg
	m.mu.Unlock()
	m.report(true)
}

// Health returns the cluster's current health.
func (m *Manager) Health() hub.ClusterHealth {
	rate, last := m.rate.rate(m.now())
	m.mu.Lock()
	defer m.mu.Unlock()
	return hub.ClusterHealth{
		Cluster:         m.cfg.ID,
		State:           m.state,
		LastError:       m.lastErr,
		Since:           m.since,
		Source:          m.cfg.Source,
		Phase:           m.cfg.Phase,
		EventsPerSecond: rate,
		LastEvent:       last,
		Generation:      m.generation,
	}
}

// report sends the health to the sink when forced or when it changed. Reports
// are serialised (reportMu is held across the send) and numbered, so the hub
// receives them in the order they were taken and can drop any older one: a
// stale "connecting" can never overwrite a newer "synced".
func (m *Manager) report(force bool) {
	m.reportMu.Lock()
	defer m.reportMu.Unlock()
	h := m.Health()
	m.mu.Lock()
	prev := m.reported
	same := prev.State == h.State && prev.LastError == h.LastError && prev.Generation == h.Generation &&
		prev.EventsPerSecond == h.EventsPerSecond && prev.LastEvent.Equal(h.LastEvent) && prev.Phase == h.Phase
	if !force && same {
		m.mu.Unlock()
		return
	}
	m.reported = h
	m.mu.Unlock()
	h.Seq = m.next()
	m.sink.ClusterChanged(h)
}

// next returns the next number of the shared generation and report
// sequence: it keeps rising across restarts of the cluster's manager.
func (m *Manager) next() int64 {
	if m.nextGen != nil {
		return m.nextGen()
	}
	return m.localSeq.Add(1)
}

// reportLoop evaluates the cluster's health every ReportInterval, at the
// interval's boundaries on the wall clock (untilBoundary) rather than
// ReportInterval after the manager started: every manager of the process
// then wakes at the same instants, so a hub of many clusters wakes once an
// interval for all of their reports instead of once for each cluster at
// scattered instants. In an idle fleet those wakeups cost more than the
// reports themselves.
func (m *Manager) reportLoop(ctx context.Context) {
	tickAligned(ctx, m.health.ReportInterval, m.evaluate)
}

// tickAligned calls fn at every boundary of d on the wall clock
// (untilBoundary) until ctx is done. d must be positive.
func tickAligned(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTimer(untilBoundary(time.Now(), d))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
			t.Reset(untilBoundary(time.Now(), d))
		}
	}
}

// untilBoundary is the time from now to the next multiple of d on the wall
// clock (since the zero time): always more than zero and at most d.
func untilBoundary(now time.Time, d time.Duration) time.Duration {
	return now.Truncate(d).Add(d).Sub(now)
}

// informerFor returns the synced informer of a namespace and kind, if any.
func (m *Manager) informerFor(namespace string, kind hub.Kind) cache.SharedIndexInformer {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.informers[informerKey{namespace: namespace, kind: kind}]
	if st == nil || !st.synced {
		return nil
	}
	return st.informer
}

// metadataClient returns the client of the applies' metadata-only answers
// (nil when the Manager has none).
func (m *Manager) metadataClient() metadata.Interface {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.meta
}

// clientset returns the manager's client, or nil before Run connected.
func (m *Manager) clientset() kubernetes.Interface {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.client
}

package clusters

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/clusters/drift"
	"github.com/driftwatch/driftwatch/hub"
)

// Every kind beyond the typed three (kindTable) goes through this file: the
// cluster's REST mapper (discovery) finds its resource and scope, the
// dynamic client reads and writes it as JSON, a dynamic informer per
// namespace (or one for a cluster-scoped kind) watches it by the managed-by
// label, and the compact cache keeps it as JSON bytes (jsonObject). Nothing
// here switches on a kind.

// jsonObject is an object of a kind without a typed client, in the form the
// compact cache keeps: Marshal and Unmarshal are its JSON encoding.
type jsonObject struct {
	unstructured.Unstructured
}

// Marshal returns the object's JSON.
func (o *jsonObject) Marshal() ([]byte, error) { return kubeobj.Marshal(o.Object) }

// Unmarshal decodes JSON into the object (integers as int64, as the
// apiserver's objects hold them).
func (o *jsonObject) Unmarshal(data []byte) error {
	m, err := kubeobj.Unmarshal(data)
	if err != nil {
		return err
	}
	o.Object = m
	return nil
}

// DeepCopyObject implements runtime.Object.
func (o *jsonObject) DeepCopyObject() runtime.Object {
	return &jsonObject{Unstructured: *o.Unstructured.DeepCopy()}
}

var _ protoObject = (*jsonObject)(nil)

// dynamicKindClient adapts a dynamic client of one resource (and namespace)
// to kindClient.
type dynamicKindClient struct {
	c dynamic.ResourceInterface
}

func (d dynamicKindClient) get(ctx context.Context, name string) (runtime.Object, error) {
	obj, err := d.c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return obj, nil
}

func (d dynamicKindClient) patch(ctx context.Context, name string, pt types.PatchType, body []byte, opts metav1.PatchOptions) (runtime.Object, error) {
	obj, err := d.c.Patch(ctx, name, pt, body, opts)
	if err != nil {
		return nil, err
	}
	return obj, nil
}

func (d dynamicKindClient) delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return d.c.Delete(ctx, name, opts)
}

// listWatchDynamic is listWatchClient for the dynamic informers: LIST and
// WATCH, never a watch-list stream (see listWatchClient).
type listWatchDynamic struct {
	dynamic.Interface
}

// IsWatchListSemanticsUnSupported makes client-go's reflectors use LIST and
// WATCH.
func (listWatchDynamic) IsWatchListSemanticsUnSupported() bool { return true }

// mapperResetEvery bounds how often a miss resets the REST mapper (a new
// discovery of the cluster's API groups).
const mapperResetEvery = time.Second

// genericKind returns the kindInfo of a kind outside kindTable, from the
// cluster's REST mapping of gvk, built once per kind and kept.
func (m *Manager) genericKind(slug hub.Kind, gvk schema.GroupVersionKind) (kindInfo, error) {
	m.mu.Lock()
	info, ok := m.generic[slug]
	mapper, dyn := m.mapper, m.dyn
	m.mu.Unlock()
	if ok {
		return info, nil
	}
	if mapper == nil || dyn == nil {
		return kindInfo{}, errNotConnected
	}
	mapping, err := m.mapping(gvk)
	if err != nil {
		return kindInfo{}, err
	}
	info = newGenericKind(mapping, dyn)
	m.mu.Lock()
	if m.generic == nil {
		m.generic = make(map[hub.Kind]kindInfo)
	}
	m.generic[slug] = info
	m.mu.Unlock()
	return info, nil
}

// mapping finds gvk's REST mapping (its version left empty: the cluster's
// preferred one). A kind the mapper does not know resets it (at most once
// per mapperResetEvery) and is looked up again: a CustomResourceDefinition
// may have been established since the last discovery.
func (m *Manager) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m.mu.Lock()
	mapper := m.mapper
	m.mu.Unlock()
	var versions []string
	if gvk.Version != "" {
		versions = []string{gvk.Version}
	}
	gk := gvk.GroupKind()
	if gk.Kind == strings.ToLower(gk.Kind) {
		// A slug's kind is lowercase: the mapper knows it as the
		// singular resource name.
		k, err := mapper.KindFor(schema.GroupVersionResource{Group: gk.Group, Resource: gk.Kind})
		if err == nil {
			gk = k.GroupKind()
		} else if !meta.IsNoMatchError(err) {
			return nil, err
		}
	}
	mp, err := mapper.RESTMapping(gk, versions...)
	if meta.IsNoMatchError(err) && m.resetMapper() {
		mp, err = mapper.RESTMapping(gk, versions...)
	}
	if meta.IsNoMatchError(err) {
		if served := servedVersions(mapper, gk); len(served) > 0 && len(versions) > 0 {
			// The kind in another version: the manifest's is one the
			// cluster no longer (or does not yet) serve.
			return nil, fmt.Errorf("the cluster serves %s only as %s, not %s: change the manifest's apiVersion (a version this Kubernetes removed, or does not have yet?) (%w)",
				kindName(gk.WithVersion("")), strings.Join(served, ", "), gk.WithVersion(versions[0]).GroupVersion(), err)
		}
		// A kind the cluster does not serve (yet: a custom resource whose
		// CustomResourceDefinition is missing or not established).
		return nil, fmt.Errorf("the cluster serves no kind %s: is its CustomResourceDefinition installed and established? (%w)", kindName(gvk), err)
	}
	return mp, err
}

// servedVersions returns the group/versions in which the cluster serves
// gk, its preferred one first; none when it serves gk in no version.
func servedVersions(mapper meta.RESTMapper, gk schema.GroupKind) []string {
	mps, err := mapper.RESTMappings(gk)
	if err != nil {
		return nil
	}
	var out []string
	for _, mp := range mps {
		if gv := mp.GroupVersionKind.GroupVersion().String(); !slices.Contains(out, gv) {
			out = append(out, gv)
		}
	}
	return out
}

// resetMapper forgets the mapper's discovery, unless it did so less than
// mapperResetEvery ago; it reports whether it did.
func (m *Manager) resetMapper() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if !m.mapperReset.IsZero() && now.Sub(m.mapperReset) < mapperResetEvery {
		return false
	}
	m.mapperReset = now
	m.mapper.Reset()
	m.generic = nil
	return true
}

// kindName names a kind for messages: Kind.group/version, or Kind/version
// in the core group.
func kindName(gvk schema.GroupVersionKind) string {
	s := gvk.Kind
	if gvk.Group != "" {
		s += "." + gvk.Group
	}
	if gvk.Version != "" {
		s += "/" + gvk.Version
	}
	return s
}

// newGenericKind returns the kindInfo of a mapped kind, served through dyn.
func newGenericKind(mapping *meta.RESTMapping, dyn dynamic.Interface) kindInfo {
	gvr := mapping.Resource
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	return kindInfo{
		gvk:        mapping.GroupVersionKind,
		resource:   gvr.Resource,
		namespaced: namespaced,
		generic:    true,
		newObject:  func() protoObject { return &jsonObject{} },
		dropStatus: func(obj runtime.Object) {
			// The type meta goes too: the kind puts it back (toUnstructured).
			if o, ok := obj.(*jsonObject); ok {
				delete(o.Object, "status")
				delete(o.Object, "apiVersion")
				delete(o.Object, "kind")
			}
		},
		dynamicClient: func(namespace string) kindClient {
			if !namespaced {
				return dynamicKindClient{dyn.Resource(gvr)}
			}
			return dynamicKindClient{dyn.Resource(gvr).Namespace(namespace)}
		},
		newDynamicInformer: func(namespace string, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
			if !namespaced {
				namespace = metav1.NamespaceAll
			}
			return dynamicinformer.NewFilteredDynamicInformer(listWatchDynamic{dyn}, gvr, namespace, 0, cache.Indexers{}, tweak).Informer()
		},
		progress: genericProgress,
	}
}

// genericProgress reads the rollout progress of an object of a kind outside
// kindTable (see progressOf).
func genericProgress(obj runtime.Object) *hub.Progress {
	var u *unstructured.Unstructured
	switch o := obj.(type) {
	case *jsonObject:
		u = &o.Unstructured
	case *unstructured.Unstructured:
		u = o
	default:
		return nil
	}
	// A cached object keeps what kstatus says of it when it arrived: a
	// failure (stuck) and replica counts; an overdue rollout is judged on
	// fresh reads, which know the spec's deadline (see ReadState).
	return progressOf(u, 0, time.Time{})
}

// SchemaFor returns the schema drift detection compares objects of gvk
// along, as the hub resolves it: client-go's built-in one for the kinds it
// knows, else the one the cluster publishes (a custom resource's CRD
// schema), fetched once per group-version and kept (see schemaCache). When
// the cluster publishes none, or cannot be asked, it returns the zero
// drift.Schema and no error: the kind is then compared without a schema
// (lists by index, maps as structs, nothing counts as added), as the hub
// compares it. It fails only before the manager connected and after its
// run ended.
func (m *Manager) SchemaFor(ctx context.Context, gvk schema.GroupVersionKind) (drift.Schema, error) {
	if s, ok := drift.BuiltinSchema(gvk); ok {
		return s, nil
	}
	if m.released.Load() {
		// Not compared without a schema: the call runs again on the
		// cluster's next manager.
		return drift.Schema{}, errReleased
	}
	m.mu.Lock()
	schemas := m.schemas
	m.mu.Unlock()
	if schemas == nil {
		return drift.Schema{}, errNotConnected
	}
	s, err := schemas.For(ctx, gvk)
	if err != nil {
		m.log.Debug("no schema: comparing without it", "kind", kindName(gvk), "err", err)
		return drift.Schema{}, nil
	}
	return s, nil
}

// kindFor returns the kindInfo of spec's kind: kindTable's entry, or the
// REST mapping of the kind its body (else its slug) names.
func (m *Manager) kindFor(spec hub.NodeSpec) (kindInfo, error) {
	if info, ok := kindTable[spec.Kind]; ok {
		return info, nil
	}
	// Known kinds first: gvkOf reads the body, which every read, compare
	// and write of the kind would otherwise pay for.
	m.mu.Lock()
	info, ok := m.generic[spec.Kind]
	m.mu.Unlock()
	if ok {
		return info, nil
	}
	return m.genericKind(spec.Kind, gvkOf(spec))
}

// gvkOf returns the apiVersion and kind of spec's body, or the group and
// lowercase kind of its slug when it has no body (a prune after a restart).
func gvkOf(spec hub.NodeSpec) schema.GroupVersionKind {
	if len(spec.Body) > 0 {
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := json.Unmarshal(spec.Body, &tm); err == nil && tm.Kind != "" {
			return schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)
		}
	}
	group, kind := spec.Kind.GroupKind()
	return schema.GroupVersionKind{Group: group, Kind: kind}
}

// clientFor returns the kind's client in a namespace.
func (k kindInfo) clientFor(c kubernetes.Interface, namespace string) kindClient {
	if k.generic {
		return k.dynamicClient(namespace)
	}
	return k.client(c, namespace)
}

// pendingRetry is how often the kinds to watch that the cluster does not
// serve yet are looked up again, during pendingFast after the watch
// started, and pendingSlow after that.
const (
	pendingRetry = time.Second
	pendingFast  = time.Minute
	pendingSlow  = 10 * time.Second
)

// watchGeneric starts the informers of cfg.Kinds that kindTable does not
// cover, owned by wg and stopped with ctx; kinds the cluster does not
// serve yet are pending (the cluster is degraded, naming them) and looked
// up again by a goroutine of wg until they are all watched.
func (m *Manager) watchGeneric(ctx context.Context, wg *conc.WaitGroup, tweak func(*metav1.ListOptions)) error {
	var todo []schema.GroupVersionKind
	for _, gvk := range m.cfg.Kinds {
		if _, ok := kindTable[hub.KindSlug(gvk.Group, gvk.Kind)]; !ok {
			todo = append(todo, gvk)
		}
	}
	todo, err := m.startGeneric(ctx, wg, todo, tweak, false)
	if err != nil || len(todo) == 0 {
		return err
	}
	wg.Go(func() {
		m.guard("watch of kinds not served yet", func() { m.watchLater(ctx, wg, todo, tweak) })
	})
	return nil
}

// watchLater starts the informers of the kinds in todo, which the cluster
// did not serve when its watch started, as the cluster comes to serve
// them (see watchGeneric).
func (m *Manager) watchLater(ctx context.Context, wg *conc.WaitGroup, todo []schema.GroupVersionKind, tweak func(*metav1.ListOptions)) {
	started := m.now()
	for len(todo) > 0 {
		wait := pendingRetry
		if m.now().Sub(started) > pendingFast {
			wait = pendingSlow
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		var err error
		if todo, err = m.startGeneric(ctx, wg, todo, tweak, true); err != nil {
			m.log.Error("watch", "err", err)
			return
		}
	}
}

// startGeneric starts the informers of each kind the cluster serves and
// returns the kinds it does not serve yet (recorded in m.pending). late
// says the watch started before: a kind watched from now on starts a new
// generation once synced, so the hub checks the cluster's NodeIDs again.
func (m *Manager) startGeneric(ctx context.Context, wg *conc.WaitGroup, kinds []schema.GroupVersionKind, tweak func(*metav1.ListOptions), late bool) ([]schema.GroupVersionKind, error) {
	var left []schema.GroupVersionKind
	for _, gvk := range kinds {
		slug := hub.KindSlug(gvk.Group, gvk.Kind)
		info, err := m.genericKind(slug, gvk)
		if err != nil {
			left = append(left, gvk)
			m.mu.Lock()
			if m.pending == nil {
				m.pending = make(map[hub.Kind]string)
			}
			m.pending[slug] = describe(m.cfg.ID, "watch", kindName(gvk), "", err)
			m.mu.Unlock()
			continue
		}
		namespaces := m.cfg.Namespaces
		if !info.namespaced {
			namespaces = []string{""}
		}
		for _, ns := range namespaces {
			if err := m.startInformer(ctx, wg, ns, slug, info, tweak, late); err != nil {
				return nil, err
			}
		}
		m.mu.Lock()
		delete(m.pending, slug)
		m.mu.Unlock()
	}
	if late && len(left) < len(kinds) {
		m.evaluate()
	}
	return left, nil
}

// startInformer starts the dynamic informer of one namespace ("" for a
// cluster-scoped kind) and generic kind, and a goroutine of wg that marks it
// synced.
func (m *Manager) startInformer(ctx context.Context, wg *conc.WaitGroup, ns string, slug hub.Kind, info kindInfo, tweak func(*metav1.ListOptions), late bool) error {
	key := informerKey{namespace: ns, kind: slug}
	inf := info.newDynamicInformer(ns, tweak)
	shared := &cacheShared{cluster: m.cfg.ID, namespace: ns, kind: slug, info: info, managedBy: m.cfg.ManagedBy, hubID: m.cfg.HubID, fieldManager: m.fieldManager, dicts: m.dicts}
	if err := inf.SetTransform(m.guardTransform(string(slug)+" watch cache's transform", shared.compact)); err != nil {
		return fmt.Errorf("cluster %q: watch %s in %q: %w", m.cfg.ID, info.resource, ns, err)
	}
	if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		m.guard("watch error handler", func() { m.watchError(key, err) })
	}); err != nil {
		return fmt.Errorf("cluster %q: %w", m.cfg.ID, err)
	}
	if _, err := inf.AddEventHandler(m.handler(slug)); err != nil {
		return fmt.Errorf("cluster %q: %w", m.cfg.ID, err)
	}
	m.mu.Lock()
	m.informers[key] = &informerState{informer: inf}
	m.mu.Unlock()
	wg.Go(func() { inf.RunWithContext(ctx) })
	wg.Go(func() { m.guard("watch cache sync", func() { m.markSynced(ctx, key, inf, late) }) })
	return nil
}

// markSynced waits for the informer of key to sync, then marks it synced
// (see startInformer).
func (m *Manager) markSynced(ctx context.Context, key informerKey, inf cache.SharedIndexInformer, late bool) {
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return
	}
	m.mu.Lock()
	m.informers[key].synced = true
	if late {
		m.generation = m.next()
	}
	m.mu.Unlock()
	m.evaluate()
	if late {
		m.report(true)
	}
}

// namespaceKeeps are objects every namespace gets from the control plane:
// they never keep a namespace driftwatch created from being pruned.
var namespaceKeeps = map[schema.GroupKind]string{
	{Kind: "ServiceAccount"}: "default",
	{Kind: "ConfigMap"}:      "kube-root-ca.crt",
}

// namespaceSkips are kinds whose objects in a namespace are derived from
// others or are records, not objects someone put there to keep.
var namespaceSkips = map[schema.GroupKind]bool{
	{Kind: "Event"}:                                    true,
	{Group: "events.k8s.io", Kind: "Event"}:            true,
	{Kind: "Endpoints"}:                                true,
	{Group: "discovery.k8s.io", Kind: "EndpointSlice"}: true,
}

// unmanagedIn returns an object of namespace that driftwatch does not
// manage and that nothing owns (no owner reference: not a Deployment's
// ReplicaSet or Pod), as "kind name", or "" when there is none: a
// Namespace that holds one is never pruned. It lists every namespaced
// kind the cluster serves that can be listed.
func (m *Manager) unmanagedIn(ctx context.Context, namespace string) (string, error) {
	m.mu.Lock()
	dyn := m.dyn
	m.mu.Unlock()
	if dyn == nil {
		return "", errNotConnected
	}
	disc, err := m.discoveryFor(ctx)
	if err != nil {
		return "", err
	}
	lists, err := disc.ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return "", fmt.Errorf("list the namespaced kinds before a namespace prune: %w", err)
	}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			gk := schema.GroupKind{Group: gv.Group, Kind: r.Kind}
			if namespaceSkips[gk] || strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			list, err := dyn.Resource(gv.WithResource(r.Name)).Namespace(namespace).List(ctx, metav1.ListOptions{Limit: 500})
			if err != nil {
				return "", fmt.Errorf("list %s in namespace %q before its prune: %w", r.Name, namespace, err)
			}
			for _, item := range list.Items {
				switch {
				case item.GetLabels()[kubeobj.ManagedByLabel] == m.cfg.ManagedBy,
					len(item.GetOwnerReferences()) > 0,
					namespaceKeeps[gk] == item.GetName():
					continue
				}
				return fmt.Sprintf("%s %s", r.Kind, item.GetName()), nil
			}
		}
	}
	return "", nil
}

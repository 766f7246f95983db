// Package capi discovers clusters from Cluster API management clusters: it
// watches Cluster objects (v1beta2, or v1beta1 where that is all that is
// served) and their <name>-kubeconfig secrets, and reports each provisioned
// cluster with its kubeconfig so the hub can manage it, each deleted one so
// the hub can let it go, and each rotated kubeconfig so the hub reconnects
// with the new credentials.
//
// Kubeconfig secrets are untrusted input: each is checked with
// clusters.ParseUntrustedKubeconfig under the source's KubeconfigPolicy, and
// a refused one is reported as that cluster's error. Only secrets of type
// cluster.x-k8s.io/secret with the cluster-name label are listed and
// watched, and before they enter the informer cache everything but their
// metadata is dropped, except the "value" key of <name>-kubeconfig secrets:
// the Cluster API CA, etcd and service-account keys stored in the same kind
// of secret are never kept in memory.
package capi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"strings"
	"sync"
	"text/template"

	"github.com/sourcegraph/conc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	//lint:ignore SA1019 v1beta1 is deprecated in favour of v1beta2, which is tried first; it is kept only to read Cluster objects on management clusters that serve nothing newer (servedVersion, provisioned), and goes when Cluster API drops v1beta1.
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/internal/rescue"
)

// Source is one management cluster to discover clusters from.
type Source struct {
	// Name identifies the management cluster in sources ("capi:<name>/<ns>").
	Name string
	// Kubeconfig and Context reach the management cluster: a kubeconfig
	// file, or with Kubeconfig "" the default kubeconfig ($KUBECONFIG,
	// merged, else ~/.kube/config); Context "" means the current context.
	Kubeconfig string
	Context    string
	// InCluster reaches the management cluster through the service account
	// of the Pod the process runs in; Kubeconfig and Context are ignored.
	InCluster bool
	// Namespaces to watch for Cluster objects; empty means all.
	Namespaces []string
	// Selector is an optional label selector over Cluster objects.
	Selector string
	// Labels are given to every discovered cluster, so applications can
	// select them; they win over the Cluster object's own labels.
	Labels map[string]string
	// IDTemplate makes the cluster id from .Namespace and .Name (Go
	// template). Default "{{.Namespace}}-{{.Name}}".
	IDTemplate string
	// KubeconfigPolicy says what the kubeconfig secrets may use (exec
	// plugins, insecure TLS); the zero value is the strictest. Its Origin
	// defaults to `clusterAPI source "<Name>"`.
	KubeconfigPolicy clusters.KubeconfigPolicy
}

// secretType is the type of the secrets Cluster API writes (kubeconfig, CA,
// etcd, service-account keys); listing is narrowed to it by field selector.
const secretType = "cluster.x-k8s.io/secret"

// Discovered is a cluster found on a management cluster.
type Discovered struct {
	// ID is the driftwatch cluster id.
	ID string
	// Namespace and Name of the Cluster object.
	Namespace, Name string
	// Source is "capi:<mgmt>/<namespace>".
	Source string
	// Phase is the Cluster's phase.
	Phase string
	// Labels are the Cluster object's labels with the source's on top.
	Labels map[string]string
	// Kubeconfig is the content of the <name>-kubeconfig secret, accepted
	// by clusters.ParseUntrustedKubeconfig under the source's policy (pass
	// the same policy to clusters.ClusterConfig.KubeconfigPolicy).
	Kubeconfig []byte
	// Err is set when the cluster is provisioned but cannot be used (the
	// secret is missing, invalid or refused by the policy; it names the
	// secret and the reason), or when its id is claimed by several Cluster
	// objects (an *IDCollisionError; Namespace, Name, Phase and Labels are
	// then empty); Kubeconfig is then empty.
	Err error
}

// IDCollisionError is the Err of a Discovered whose id several Cluster
// objects of one source map to (e.g. fleet-x/y and fleet/x-y under the
// default template): none of them is reported up while they collide, so
// neither can silently take the other's place, and the one reported before
// the collision is reported gone first.
type IDCollisionError struct {
	// ID is the cluster id.
	ID string
	// Source is the source's name.
	Source string
	// Clusters are the colliding Cluster objects, "namespace/name", sorted.
	Clusters []string
}

// Error names the id, every Cluster object and the way out.
func (e *IDCollisionError) Error() string {
	return fmt.Sprintf("cluster id %q is claimed by %d Cluster objects of clusterAPI source %q (%s): none of them is managed until one is left (delete or rename the others, or change idTemplate)",
		e.ID, len(e.Clusters), e.Source, strings.Join(e.Clusters, ", "))
}

// Handler receives discoveries. Calls come from one goroutine, in order.
// An id is reported for at most one Cluster object at a time.
type Handler interface {
	// ClusterUp reports a new cluster, a changed one (e.g. a rotated
	// kubeconfig), or one that cannot be used (Err set).
	ClusterUp(d Discovered)
	// ClusterGone reports a cluster that is deleting or deleted.
	ClusterGone(id string)
}

// Discoverer watches one management cluster.
type Discoverer struct {
	src     Source
	handler Handler
	log     *slog.Logger
	idTmpl  *template.Template

	mu sync.Mutex
	// claims are the provisioned Cluster objects, by key namespace/name;
	// byID indexes their keys by cluster id. Only the sync goroutine
	// writes them.
	claims map[string]Discovered
	byID   map[string]map[string]struct{}
	// reported is what the handler was last told is up, by cluster id.
	reported map[string]Discovered

	// secretsSynced, when set (tests), receives the secrets informers'
	// stores once they have synced.
	secretsSynced func(stores []cache.Store)
}

// New returns a discoverer for src.
func New(src Source, h Handler, log *slog.Logger) (*Discoverer, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if src.IDTemplate == "" {
		src.IDTemplate = "{{.Namespace}}-{{.Name}}"
	}
	if src.KubeconfigPolicy.Origin == "" {
		src.KubeconfigPolicy.Origin = fmt.Sprintf("clusterAPI source %q", src.Name)
	}
	tmpl, err := template.New("id").Option("missingkey=error").Parse(src.IDTemplate)
	if err != nil {
		return nil, fmt.Errorf("cluster API source %q: id template: %w", src.Name, err)
	}
	if src.Selector != "" {
		if _, err := labels.Parse(src.Selector); err != nil {
			return nil, fmt.Errorf("cluster API source %q: selector: %w", src.Name, err)
		}
	}
	return &Discoverer{src: src, handler: h, log: log.With("capi", src.Name), idTmpl: tmpl,
		claims: make(map[string]Discovered), byID: make(map[string]map[string]struct{}), reported: make(map[string]Discovered)}, nil
}

// ID returns the cluster id for a Cluster object.
func (d *Discoverer) ID(namespace, name string) (string, error) {
	var b bytes.Buffer
	if err := d.idTmpl.Execute(&b, struct{ Namespace, Name string }{namespace, name}); err != nil {
		return "", err
	}
	return strings.ToLower(b.String()), nil
}

// Run watches until ctx ends, then reports nothing more and returns once its
// goroutines have stopped. It returns an error when the management cluster
// cannot be reached or serves no Cluster API.
func (d *Discoverer) Run(ctx context.Context) error {
	rc, err := clusters.RESTConfig(clusters.ClusterConfig{
		ID: d.src.Name, Kubeconfig: d.src.Kubeconfig, Context: d.src.Context, InCluster: d.src.InCluster,
	})
	if err != nil {
		return err
	}
	rc.ContentType = "" // CRDs speak JSON
	rc.AcceptContentTypes = ""
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("cluster API source %q: %w", d.src.Name, err)
	}
	kc, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("cluster API source %q: %w", d.src.Name, err)
	}
	gvr, err := servedVersion(ctx, kc)
	if err != nil {
		return fmt.Errorf("cluster API source %q: %w", d.src.Name, err)
	}
	d.log.Info("watching Cluster objects", "version", gvr.Version)
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	namespaces := d.src.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	enqueue := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if s, ok := obj.(*corev1.Secret); ok {
			// The field selector cannot match a name suffix: the other
			// Cluster API secrets (CA, etcd, ...) arrive too, data-less.
			if cluster, ok := kubeconfigSecretCluster(s.Name); ok {
				queue.Add(s.Namespace + "/" + cluster)
			}
			return
		}
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			queue.Add(key)
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue}
	type listers struct {
		clusters cache.GenericLister
		secrets  cache.Indexer
		synced   []cache.InformerSynced
	}
	byNS := make(map[string]listers)
	var dynFactories []dynamicinformer.DynamicSharedInformerFactory
	var factories []informers.SharedInformerFactory
	for _, ns := range namespaces {
		df := dynamicinformer.NewFilteredDynamicSharedInformerFactory(listWatchDynamic{dyn}, 0, ns, func(o *metav1.ListOptions) { o.LabelSelector = d.src.Selector })
		ci := df.ForResource(gvr)
		if _, err := ci.Informer().AddEventHandler(handler); err != nil {
			return err
		}
		f := informers.NewSharedInformerFactoryWithOptions(listWatchClient{kc}, 0, informers.WithNamespace(ns),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.LabelSelector = clusterv1.ClusterNameLabel
				o.FieldSelector = fields.OneTermEqualSelector("type", secretType).String()
			}),
			informers.WithTransform(stripSecret))
		si := f.Core().V1().Secrets().Informer()
		if _, err := si.AddEventHandler(handler); err != nil {
			return err
		}
		byNS[ns] = listers{clusters: ci.Lister(), secrets: si.GetIndexer(), synced: []cache.InformerSynced{ci.Informer().HasSynced, si.HasSynced}}
		dynFactories = append(dynFactories, df)
		factories = append(factories, f)
	}
	var wg conc.WaitGroup
	defer wg.Wait()
	defer queue.ShutDown()
	for _, f := range dynFactories {
		f.Start(ctx.Done())
		defer f.Shutdown()
	}
	for _, f := range factories {
		f.Start(ctx.Done())
		defer f.Shutdown()
	}
	var synced []cache.InformerSynced
	for _, l := range byNS {
		synced = append(synced, l.synced...)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return ctx.Err()
	}
	if d.secretsSynced != nil {
		var stores []cache.Store
		for _, l := range byNS {
			stores = append(stores, l.secrets)
		}
		d.secretsSynced(stores)
	}
	lookup := func(key string) (*unstructured.Unstructured, *corev1.Secret, error) {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		l, ok := byNS[ns]
		if !ok {
			l = byNS[metav1.NamespaceAll]
		}
		var cl *unstructured.Unstructured
		obj, err := l.clusters.ByNamespace(ns).Get(name)
		if err == nil {
			cl, _ = obj.(*unstructured.Unstructured)
		}
		var sec *corev1.Secret
		if o, ok, _ := l.secrets.GetByKey(ns + "/" + secret.Name(name, secret.Kubeconfig)); ok {
			sec, _ = o.(*corev1.Secret)
		}
		return cl, sec, nil
	}
	wg.Go(func() {
		for d.work(queue, gvr.Version, lookup) {
		}
	})
	<-ctx.Done()
	return nil
}

// work syncs the next key of the queue (version is the Cluster API
// version served, lookup reads a key's Cluster and kubeconfig secret); it
// returns false once the queue is shut down. A panic in the sync (the
// handler compiles the cluster's desired state) is recovered, logged with
// its stack, and the key is synced again after the queue's backoff: one
// bad Cluster object or secret never ends discovery, and what the handler
// was not told is told at the retry (see settle).
func (d *Discoverer) work(queue workqueue.TypedRateLimitingInterface[string], version string,
	lookup func(key string) (*unstructured.Unstructured, *corev1.Secret, error)) bool {
	key, shutdown := queue.Get()
	if shutdown {
		return false
	}
	defer queue.Done(key)
	if err := rescue.Call(d.log, "cluster API discovery of "+key, func() {
		cl, sec, _ := lookup(key)
		d.sync(key, version, cl, sec)
	}); err != nil {
		queue.AddRateLimited(key)
		return true
	}
	queue.Forget(key)
	return true
}

// servedVersion picks v1beta2 when served, else v1beta1. The discovery
// request ends with ctx (a stopping hub does not wait for an unreachable
// management cluster).
func servedVersion(ctx context.Context, kc kubernetes.Interface) (schema.GroupVersionResource, error) {
	for _, gv := range []schema.GroupVersion{clusterv1.GroupVersion, clusterv1beta1.GroupVersion} {
		err := kc.Discovery().RESTClient().Get().AbsPath("/apis", gv.Group, gv.Version).Do(ctx).Error()
		if err == nil {
			return gv.WithResource("clusters"), nil
		}
		if ctx.Err() != nil {
			return schema.GroupVersionResource{}, ctx.Err()
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("no Cluster API served (cluster.x-k8s.io v1beta2 or v1beta1): are the CRDs installed?")
}

// provisioned reads a Cluster's phase and whether its control plane is
// initialized, for either API version.
func provisioned(version string, u *unstructured.Unstructured) (phase string, ready bool, err error) {
	if version == clusterv1beta1.GroupVersion.Version {
		var c clusterv1beta1.Cluster
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &c); err != nil {
			return "", false, err
		}
		ready = c.Status.ControlPlaneReady || c.Status.Phase == string(clusterv1beta1.ClusterPhaseProvisioned)
		return c.Status.Phase, ready, nil
	}
	var c clusterv1.Cluster
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &c); err != nil {
		return "", false, err
	}
	if i := c.Status.Initialization.ControlPlaneInitialized; i != nil && *i {
		ready = true
	}
	for _, cond := range c.Status.Conditions {
		if cond.Type == clusterv1.ClusterControlPlaneInitializedCondition && cond.Status == metav1.ConditionTrue {
			ready = true
		}
	}
	if c.Status.Phase == string(clusterv1.ClusterPhaseProvisioned) {
		ready = true
	}
	return c.Status.Phase, ready, nil
}

// sync records what one Cluster object claims (nothing when it is gone,
// deleting or not provisioned) and reports the change of every id it
// touches.
func (d *Discoverer) sync(key, version string, cl *unstructured.Unstructured, sec *corev1.Secret) {
	claim, ok := d.claim(key, version, cl, sec)
	if !ok {
		return // undecidable (logged): leave everything as it is
	}
	d.mu.Lock()
	prev, had := d.claims[key]
	if had {
		delete(d.claims, key)
		delete(d.byID[prev.ID], key)
		if len(d.byID[prev.ID]) == 0 {
			delete(d.byID, prev.ID)
		}
	}
	if claim != nil {
		d.claims[key] = *claim
		if d.byID[claim.ID] == nil {
			d.byID[claim.ID] = make(map[string]struct{})
		}
		d.byID[claim.ID][key] = struct{}{}
	}
	d.mu.Unlock()
	if had {
		d.settle(prev.ID)
	}
	if claim != nil && (!had || prev.ID != claim.ID) {
		d.settle(claim.ID)
	}
	if !had && claim == nil {
		// The object claims nothing, and did not: its id is settled all
		// the same (settle is idempotent), as a sync of it that panicked
		// in the handler may have left it reported (see work).
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		if id, err := d.ID(ns, name); err == nil {
			d.settle(id)
		}
	}
}

// claim computes what a Cluster object claims: nil when nothing (gone,
// deleting, not provisioned); ok false when that cannot be decided (its
// id template or status fails, logged).
func (d *Discoverer) claim(key, version string, cl *unstructured.Unstructured, sec *corev1.Secret) (_ *Discovered, ok bool) {
	if cl == nil || cl.GetDeletionTimestamp() != nil {
		return nil, true
	}
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	id, err := d.ID(ns, name)
	if err != nil {
		d.log.Error("cluster id", "cluster", key, "err", err)
		return nil, false
	}
	phase, ready, err := provisioned(version, cl)
	if err != nil {
		d.log.Error("decode Cluster", "cluster", key, "err", err)
		return nil, false
	}
	if !ready {
		// Not provisioned (yet, or any more): nothing to manage.
		return nil, true
	}
	// The Cluster object's labels, with the source's labels on top (an
	// operator can force e.g. env for every discovered cluster).
	lbls := maps.Clone(cl.GetLabels())
	if lbls == nil {
		lbls = map[string]string{}
	}
	maps.Copy(lbls, d.src.Labels)
	disc := Discovered{ID: id, Namespace: ns, Name: name, Source: "capi:" + d.src.Name + "/" + ns, Phase: phase, Labels: lbls}
	secretName := secret.Name(name, secret.Kubeconfig)
	switch {
	case sec == nil:
		disc.Err = fmt.Errorf("cluster %q: kubeconfig secret %s/%s not found", id, ns, secretName)
	case len(sec.Data[secret.KubeconfigDataName]) == 0:
		disc.Err = fmt.Errorf("cluster %q: kubeconfig secret %s/%s has no %q key", id, ns, secretName, secret.KubeconfigDataName)
	default:
		data := sec.Data[secret.KubeconfigDataName]
		if _, err := clusters.ParseUntrustedKubeconfig(data, d.src.KubeconfigPolicy); err != nil {
			disc.Err = fmt.Errorf("cluster %q: kubeconfig secret %s/%s: %w", id, ns, secretName, err)
		} else {
			disc.Kubeconfig = data
		}
	}
	return &disc, true
}

// settle reports what id now is: gone when no Cluster object claims it, the
// claim of the only one, or an *IDCollisionError when several do. A
// collision takes down the cluster reported before it (ClusterGone, then
// ClusterUp with the error), so no connection keeps serving the id. What
// was reported is recorded once the handler returned: after a panic in it,
// the next settle of the id reports it again.
func (d *Discoverer) settle(id string) {
	d.mu.Lock()
	mine := make([]Discovered, 0, len(d.byID[id]))
	for key := range d.byID[id] {
		mine = append(mine, d.claims[key])
	}
	prev, had := d.reported[id]
	d.mu.Unlock()
	var want Discovered
	switch len(mine) {
	case 0:
		if had {
			d.log.Info("cluster gone", "cluster", id)
			d.handler.ClusterGone(id)
			d.mu.Lock()
			delete(d.reported, id)
			d.mu.Unlock()
		}
		return
	case 1:
		want = mine[0]
	default:
		names := make([]string, len(mine))
		for i, c := range mine {
			names[i] = c.Namespace + "/" + c.Name
		}
		sort.Strings(names)
		want = Discovered{ID: id, Source: "capi:" + d.src.Name, Err: &IDCollisionError{ID: id, Source: d.src.Name, Clusters: names}}
	}
	if had && same(prev, want) {
		return
	}
	if had && len(mine) > 1 && !errors.As(prev.Err, new(*IDCollisionError)) {
		// A handler keeps a working connection when told of an error
		// (even after the secret broke): let the first Cluster go, so
		// the id serves neither.
		d.log.Info("cluster gone", "cluster", id, "reason", "id collision")
		d.handler.ClusterGone(id)
	}
	if len(mine) > 1 {
		d.log.Error("cluster id collision: none of the Cluster objects is managed", "cluster", id, "err", want.Err)
	} else {
		d.log.Info("cluster up", "cluster", id, "phase", want.Phase, "err", want.Err)
	}
	d.handler.ClusterUp(want)
	d.mu.Lock()
	d.reported[id] = want
	d.mu.Unlock()
}

// kubeconfigSecretCluster returns the Cluster name of a <name>-kubeconfig
// secret name.
func kubeconfigSecretCluster(secretName string) (string, bool) {
	suffix := secret.Name("", secret.Kubeconfig) // "-kubeconfig"
	cluster, ok := strings.CutSuffix(secretName, suffix)
	return cluster, ok && cluster != ""
}

// stripSecret is the secrets informers' transform: it runs before an object
// enters the cache and keeps the secret's identity, labels and type, plus,
// for a <name>-kubeconfig secret, its "value" key; every other key, the
// annotations (kubectl's last-applied annotation holds the whole secret)
// and managedFields are dropped, so CA and etcd keys never stay in memory.
func stripSecret(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil // e.g. cache.DeletedFinalStateUnknown
	}
	out := &corev1.Secret{
		TypeMeta: s.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: s.Name, Namespace: s.Namespace, UID: s.UID, ResourceVersion: s.ResourceVersion,
			Generation: s.Generation, CreationTimestamp: s.CreationTimestamp, DeletionTimestamp: s.DeletionTimestamp,
			Labels: s.Labels,
		},
		Type: s.Type,
	}
	if _, ok := kubeconfigSecretCluster(s.Name); ok {
		if v, ok := s.Data[secret.KubeconfigDataName]; ok {
			out.Data = map[string][]byte{secret.KubeconfigDataName: v}
		}
	}
	return out, nil
}

func same(a, b Discovered) bool {
	return a.ID == b.ID && a.Namespace == b.Namespace && a.Name == b.Name && a.Phase == b.Phase && bytes.Equal(a.Kubeconfig, b.Kubeconfig) &&
		maps.Equal(a.Labels, b.Labels) && errText(a.Err) == errText(b.Err)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Known returns the ids of the clusters currently reported up (an error
// included), sorted.
func (d *Discoverer) Known() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	ids := make([]string, 0, len(d.reported))
	for id := range d.reported {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

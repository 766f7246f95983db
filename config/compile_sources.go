package config

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/conc/iter"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"github.com/driftwatch/driftwatch/config/manifest"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/pack"
)

// sourceState holds the rendered sources of a Config: each distinct
// request (a source's paths expanded for a cluster) is rendered once and
// kept as the objects' JSON, packed against a dictionary of their kind
// (internal/pack), not as decoded maps. Load renders the variants of the
// file's clusters; CompileCluster renders those of discovered clusters
// when first asked.
type sourceState struct {
	mu      sync.Mutex
	renders map[string]*rendering // by requestKey
	// dicts pack the rendered objects, one dictionary per kind.
	dicts pack.Dicts[k8sschema.GroupVersionKind]
	// scopes are the scopes the CustomResourceDefinitions of every
	// rendering give their kinds: true for namespaced.
	scopes map[k8sschema.GroupKind]bool
	// faults are the sources left out under LoadOptions.IsolateSources,
	// by source id, each with its errors (positioned as ErrorList's).
	faults map[string]ErrorList
	// sandbox renders Helm charts and kustomizations (LoadOptions.RenderSandbox).
	sandbox *manifest.Sandbox
}

// rendering is the result of one request.
type rendering struct {
	objects []sourceObject
	err     error
}

// sourceObject is one rendered object, as small as it can be kept.
type sourceObject struct {
	gvk             k8sschema.GroupVersionKind
	namespace, name string // as rendered
	body            []byte // the rendered object's JSON, packed with dict
	dict            *pack.Dict
	origin          manifest.Origin
}

// newSourceState returns an empty source state.
func newSourceState() *sourceState {
	return &sourceState{renders: map[string]*rendering{}, scopes: map[k8sschema.GroupKind]bool{}}
}

// state returns the config's source state. A Config that Load did not
// make has none: it gets a new one each time (its sources are rendered
// on every use).
func (c *Config) state() *sourceState {
	if c.sources != nil {
		return c.sources
	}
	return newSourceState()
}

// sourceRequest is a source's render request for a cluster, with its
// paths expanded.
type sourceRequest struct {
	req manifest.Request
	key string
}

// pathError is a source path that cannot be expanded for a cluster.
type pathError struct {
	field string // the field, relative to the source: "kustomize", "helm.valuesFiles[1]"
	msg   string
}

func (e *pathError) Error() string { return e.field + ": " + e.msg }

// request expands the source's paths for the cluster.
func (s Source) request(info ClusterInfo) (sourceRequest, error) {
	expand := func(field, p string) (string, error) {
		var err error
		out := pathVar.ReplaceAllStringFunc(p, func(m string) string {
			name := m[2 : len(m)-1]
			if name == "cluster.id" {
				return info.ID
			}
			key := strings.TrimPrefix(name, "cluster.labels.")
			v, ok := info.Labels[key]
			if (!ok || v == "") && err == nil {
				err = &pathError{field: field, msg: fmt.Sprintf("cluster %q has no label %q (%s)", info.ID, key, m)}
			}
			return v
		})
		if err == nil && s.Git != nil {
			return s.gitPath(field, filepath.Clean(out))
		}
		return filepath.Clean(out), err
	}
	var r manifest.Request
	if s.checkout != nil && s.Git != nil {
		// A Git source renders nothing outside its checkout: a kustomize
		// base of ../../elsewhere would reach the hub's other checkouts
		// or the operator's files. A local source is the operator's own
		// and has no root (its overlays may reach a base beside the
		// config's folder: init writes kustomize: ../deploy/...).
		r.Root = s.checkout.Dir
	}
	var err error
	switch s.Kind() {
	case "path":
		r.Path, err = expand("path", s.Path)
	case "kustomize":
		r.Kustomize, err = expand("kustomize", s.Kustomize)
	case "helm":
		h := s.Helm
		r.Helm = &manifest.Helm{ReleaseName: h.ReleaseName, Namespace: h.Namespace, Values: h.Values, KubeVersion: h.KubeVersion}
		switch {
		case h.Repo == "":
			r.Helm.Chart, err = expand("helm.chart", h.Chart)
		case s.checkout == nil:
			err = &pathError{field: "helm.repo", msg: fmt.Sprintf("chart %s of %s was not pulled", h.Chart, h.Repo)}
		default:
			r.Helm.Chart = s.checkout.Archive
		}
		if err != nil {
			break
		}
		for i, f := range h.ValuesFiles {
			p, ferr := expand(fmt.Sprintf("helm.valuesFiles[%d]", i), f)
			if ferr != nil {
				err = ferr
				break
			}
			r.Helm.ValuesFiles = append(r.Helm.ValuesFiles, p)
		}
	}
	if err != nil {
		return sourceRequest{}, fmt.Errorf("source %q: %w", s.ID, err)
	}
	key, jerr := json.Marshal(r) // map keys sorted: equal requests, equal keys
	if jerr != nil {
		return sourceRequest{}, fmt.Errorf("source %q: helm values: %w", s.ID, jerr)
	}
	return sourceRequest{req: r, key: string(key)}, nil
}

// render returns the rendering of a request, rendering it on first use.
// The lock is held while rendering: a request is rendered once.
func (st *sourceState) render(ctx context.Context, r sourceRequest) *rendering {
	st.mu.Lock()
	defer st.mu.Unlock()
	if out, ok := st.renders[r.key]; ok {
		return out
	}
	out := &rendering{}
	req := r.req
	req.Sandbox = st.sandbox
	objs, err := manifest.Render(ctx, req)
	if err != nil {
		out.err = err
	}
	enc := encodeObjects(objs)
	batches := map[k8sschema.GroupVersionKind]*pack.Batch{} // see pack.Batch
	out.objects = make([]sourceObject, 0, len(objs))
	for i, o := range objs {
		u, e := o.Object, &enc[i]
		if e.err != nil {
			out.err = fmt.Errorf("%s: %s %s: %w", o.Origin, e.gvk.Kind, e.name, e.err)
			break
		}
		gvk := e.gvk
		b := batches[gvk]
		if b == nil {
			b = st.dicts.For(gvk, e.body).Batch()
			batches[gvk] = b
		}
		out.objects = append(out.objects, sourceObject{gvk: gvk, namespace: e.namespace, name: e.name, body: b.Pack(e.body), dict: b.Dict(), origin: o.Origin})
		if gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition" {
			group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
			scope, _, _ := unstructured.NestedString(u.Object, "spec", "scope")
			if group != "" && kind != "" {
				st.scopes[k8sschema.GroupKind{Group: group, Kind: kind}] = scope != "Cluster"
			}
		}
	}
	if out.err != nil {
		out.objects = nil
	}
	st.renders[r.key] = out
	return out
}

// encoded is a rendered object's kind, namespace and name, and its JSON
// encoding or why it has none.
type encoded struct {
	gvk             k8sschema.GroupVersionKind
	namespace, name string
	body            []byte
	err             error
}

// encodeObjects encodes rendered objects as JSON, in parallel when there
// are many (see eachObject).
func encodeObjects(objs []manifest.Object) []encoded {
	encode := func(o *manifest.Object) encoded {
		u := o.Object
		body, err := kubeobj.Marshal(u.Object)
		return encoded{gvk: u.GroupVersionKind(), namespace: u.GetNamespace(), name: u.GetName(), body: body, err: err}
	}
	out := make([]encoded, len(objs))
	eachObject(len(objs), func(i int) { out[i] = encode(&objs[i]) })
	return out
}

// namespaced reports whether objects of the kind are namespaced: as
// kustomize's built-in OpenAPI data knows the Kubernetes kinds, else as a
// CustomResourceDefinition of a source says, else true.
func (st *sourceState) namespaced(gvk k8sschema.GroupVersionKind) bool {
	if ns, found := openapi.IsNamespaceScoped(kyaml.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}); found {
		return ns
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if ns, found := st.scopes[gvk.GroupKind()]; found {
		return ns
	}
	return true
}

// placed is a source object where it goes on a cluster.
type placed struct {
	src       *Source
	obj       *sourceObject
	id        hub.NodeID
	namespace string // "" for a cluster-scoped object
}

// place expands a source for a cluster, renders it (once per distinct
// request) and places its objects.
func (c *Config) place(s *Source, info ClusterInfo) ([]placed, error) {
	r, err := s.request(info)
	if err != nil {
		return nil, err
	}
	st := c.state()
	res := st.render(context.Background(), r)
	if res.err != nil {
		return nil, fmt.Errorf("source %q: %s: %w", s.ID, c.RelPath(s.location(r.req)), res.err)
	}
	defNS := s.Namespace
	if s.Helm != nil {
		defNS = s.Helm.Namespace
	}
	if defNS == "" {
		defNS = "default"
	}
	out := make([]placed, 0, len(res.objects))
	slugs := map[k8sschema.GroupVersionKind]hub.Kind{} // one string per kind, shared by its NodeIDs
	for i := range res.objects {
		o := &res.objects[i]
		ns := ""
		if st.namespaced(o.gvk) {
			ns = cmp.Or(o.namespace, defNS)
		}
		slug, ok := slugs[o.gvk]
		if !ok {
			slug = hub.KindSlug(o.gvk.Group, o.gvk.Kind)
			slugs[o.gvk] = slug
		}
		out = append(out, placed{src: s, obj: o, namespace: ns, id: hub.NewNodeID(info.ID, ns, o.name, slug)})
	}
	return out, nil
}

// location is the path a request renders from.
func (s Source) location(r manifest.Request) string {
	switch {
	case r.Helm != nil && s.Helm != nil && s.Helm.Repo != "" && s.checkout != nil:
		return fmt.Sprintf("chart %s %s from %s", s.Helm.Chart, s.checkout.Ref, s.Helm.Repo)
	case r.Helm != nil:
		return r.Helm.Chart
	case r.Kustomize != "":
		return r.Kustomize
	}
	return r.Path
}

// RelPath returns a path relative to the config file's folder when it is
// inside that folder, else p as it is (for messages and the plan).
func (c *Config) RelPath(p string) string {
	base, err := filepath.Abs(filepath.Dir(c.Path))
	if err != nil {
		return p
	}
	if rel, err := filepath.Rel(base, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}

// owner names who wants an object, for duplicate messages.
func (p placed) owner() string {
	at := p.obj.origin.String()
	if at == "" {
		return fmt.Sprintf("source %q", p.src.ID)
	}
	return fmt.Sprintf("source %q (%s)", p.src.ID, at)
}

// wantedBy is who wants an object on a cluster: an application (its id)
// or a placed source object.
type wantedBy struct {
	app string
	src *placed
}

// String names who wants the object, as owner does.
func (w wantedBy) String() string {
	if w.src != nil {
		return w.src.owner()
	}
	return fmt.Sprintf("application %q", w.app)
}

// describeObject names an object for messages: Kind namespace/name.
func describeObject(gvk k8sschema.GroupVersionKind, id hub.NodeID) string {
	return gvk.Kind + " " + id.Resource
}

// DuplicateError is two sources, or a source and an application, that
// want the same object on a cluster.
type DuplicateError struct {
	// ID is the object's NodeID.
	ID hub.NodeID
	// Object names the object (Kind namespace/name).
	Object string
	// First and Second name who want it: `application "web"`, `source
	// "shop" (base/db.yaml:3)`.
	First, Second string
	// SecondSource is the index in Config.Sources of the second one.
	SecondSource int
}

// Error says which object is wanted twice, and by whom.
func (e *DuplicateError) Error() string {
	return fmt.Sprintf("%s on cluster %q is in %s and in %s", e.Object, e.ID.Cluster, e.First, e.Second)
}

// placeCluster places every source targeting the cluster, and reports a
// NodeID that two of them, or an application and a source, both want.
func (c *Config) placeCluster(info ClusterInfo) ([]placed, error) {
	// The applications' objects are looked up only when a source places
	// one: most clusters of a large config have no source.
	// Who wants each object is named only for a duplicate's message.
	var owners map[hub.NodeID]wantedBy
	appOwners := func(objects int) map[hub.NodeID]wantedBy {
		apps := c.AppsFor(info)
		owners = make(map[hub.NodeID]wantedBy, objects+3*len(apps))
		for _, a := range apps {
			for _, k := range appKinds(a) {
				owners[hub.NewNodeID(info.ID, a.Namespace, a.ID, k)] = wantedBy{app: a.ID}
			}
		}
		return owners
	}
	var out []placed
	for i := range c.Sources {
		s := &c.Sources[i]
		if !s.Matches(info) || c.faulty(s.ID) {
			continue
		}
		ps, err := c.place(s, info)
		if err != nil {
			return nil, err
		}
		if len(ps) > 0 && owners == nil {
			owners = appOwners(len(ps))
		}
		for j := range ps {
			p := &ps[j]
			if first, dup := owners[p.id]; dup {
				return nil, &DuplicateError{ID: p.id, Object: describeObject(p.obj.gvk, p.id), First: first.String(), Second: p.owner(), SecondSource: i}
			}
			owners[p.id] = wantedBy{src: p}
		}
		if out == nil {
			out = ps // one source's alone: not copied
		} else {
			out = append(out, ps...)
		}
	}
	return out, nil
}

// appKinds are the kinds an application compiles to.
func appKinds(a Application) []hub.Kind {
	kinds := []hub.Kind{hub.KindDeployment}
	if a.Service != nil {
		kinds = append(kinds, hub.KindService)
	}
	if len(a.Config) > 0 {
		kinds = append(kinds, hub.KindConfigMap)
	}
	return kinds
}

// compileSources compiles the source objects of one cluster.
func (c *Config) compileSources(info ClusterInfo) ([]hub.NodeSpec, error) {
	ps, err := c.placeCluster(info)
	if err != nil {
		return nil, err
	}
	ignore := map[string]*hub.IgnoreSet{}
	for _, p := range ps {
		if _, ok := ignore[p.src.ID]; !ok {
			ignore[p.src.ID] = c.ignoreSet(p.src.Ignore)
		}
	}
	out := make([]hub.NodeSpec, len(ps))
	errs := make([]error, len(ps))
	// A relaunch over thousands of manifests on one cluster waits for
	// this before its first rows: each object is decoded, marked and
	// encoded again on its own.
	eachObject(len(ps), func(i int) {
		out[i], errs[i] = c.sourceSpec(ps[i], info, ignore[ps[i].src.ID])
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parallelSpecs is how many objects eachObject takes before it spreads
// them over the cores.
const parallelSpecs = 64

// eachObject calls fn for every index of n objects: on this goroutine when
// there are fewer than parallelSpecs, else on every core (a panic in one
// is re-raised here, once all are done).
func eachObject(n int, fn func(i int)) {
	if n < parallelSpecs {
		for i := range n {
			fn(i)
		}
		return
	}
	iter.ForEachIdx(make([]struct{}, n), func(i int, _ *struct{}) { fn(i) })
}

// pruneKinds are the kinds a source never prunes unless its prune section
// says so, by group and kind.
func pruneKinds(p SourcePrune) map[k8sschema.GroupKind]bool {
	return map[k8sschema.GroupKind]bool{
		{Kind: "Namespace"}: p.Namespaces,
		{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: p.CustomResourceDefinitions,
		{Kind: "PersistentVolumeClaim"}:                                   p.PersistentVolumeClaims,
	}
}

// serverFields are the metadata fields the apiserver sets, never part of
// a desired object.
func serverFields() []string {
	return []string{"creationTimestamp", "resourceVersion", "uid", "managedFields", "generation", "selfLink",
		"deletionTimestamp", "deletionGracePeriodSeconds"}
}

// isServerField reports whether a metadata field is one of serverFields.
func isServerField(field string) bool {
	return slices.Contains(serverFields(), field)
}

// sourceSpec builds the NodeSpec of a placed object.
func (c *Config) sourceSpec(p placed, info ClusterInfo, ignore *hub.IgnoreSet) (hub.NodeSpec, error) {
	s, o := p.src, p.obj
	body, err := o.dict.Unpack(o.body)
	if err != nil {
		return hub.NodeSpec{}, fmt.Errorf("source %q: %s: %w", s.ID, describeObject(o.gvk, p.id), err)
	}
	id := p.id.String()
	var entries [6]metaEntry
	e := c.sourceEdit(p, id, entries[:0])
	var secs int64
	if body, secs, err = e.apply(body); err != nil {
		return hub.NodeSpec{}, fmt.Errorf("source %q: %s: %w", s.ID, describeObject(o.gvk, p.id), err)
	}
	deadline := DefaultProgressDeadline
	if s.ProgressDeadlineSeconds > 0 {
		deadline = time.Duration(s.ProgressDeadlineSeconds) * time.Second
	} else if secs > 0 {
		deadline = time.Duration(secs) * time.Second
	}
	return hub.NodeSpec{
		ID:               p.id,
		Namespace:        p.namespace,
		Name:             o.name,
		Kind:             p.id.Kind,
		Application:      s.ID,
		Policy:           c.SourcePolicy(*s, info),
		ProgressDeadline: deadline,
		Body:             body,
		Hash:             hashBody(body),
		Ignore:           ignore,
		Order:            applyOrder(o.gvk.GroupKind()),
		Revision:         revisionOf(s),
	}, nil
}

// sourceEdit is what the compile changes in a placed object whose
// NodeID's text is id: its namespace, the labels that mark it managed and
// name its source, the annotations that name its NodeID and hub (and
// disable its pruning where its kind is guarded and its source does not
// enable it, and allow its recreation when its source does). Its entries
// are appended to buf (of capacity 6: one edit an object, with no
// allocation of its own).
func (c *Config) sourceEdit(p placed, id string, buf []metaEntry) metaEdit {
	s, gvk := p.src, p.obj.gvk
	buf = append(buf,
		metaEntry{key: kubeobj.ManagedByLabel, value: cmp.Or(c.Hub.ManagedBy, kubeobj.DefaultManagedBy)},
		metaEntry{key: kubeobj.ApplicationLabel, value: s.ID},
		metaEntry{key: kubeobj.NodeIDAnnotation, value: id},
		metaEntry{key: kubeobj.HubAnnotation, value: cmp.Or(c.Hub.ID, DefaultHubID)})
	if enabled, guarded := pruneKinds(s.Prune)[gvk.GroupKind()]; guarded && !enabled {
		buf = append(buf, metaEntry{key: PruneAnnotation, value: PruneDisabled, ifAbsent: true})
	}
	if s.Recreate {
		buf = append(buf, metaEntry{key: kubeobj.RecreateAnnotation, value: kubeobj.RecreateEnabled, ifAbsent: true})
	}
	return metaEdit{
		namespace:   p.namespace,
		labels:      sortEntries(buf[:2]),
		annotations: sortEntries(buf[2:]),
		deadline:    s.ProgressDeadlineSeconds <= 0 && gvk.Kind == "Deployment" && gvk.Group == "apps",
	}
}

// metaStrings returns metadata.<field> of u (labels or annotations) as a
// map whose entries the caller sets, in place: the object's own map when
// it holds strings only (a null value is made "", as Get makes it), else a
// new one that replaces it. Either way the object ends as
// u.Set<Field>(u.Get<Field>() plus the caller's entries) leaves it: a
// field of another type, or with a value that is neither a string nor
// null, is dropped as Get drops it, and a metadata that is not a map is
// left as it is (the entries go to a map the object does not hold).
func metaStrings(u *unstructured.Unstructured, field string) map[string]any {
	v, found := u.Object["metadata"]
	meta, ok := v.(map[string]any)
	switch {
	case !found:
		meta = map[string]any{}
		u.Object["metadata"] = meta
	case !ok:
		return map[string]any{}
	}
	if cur, ok := meta[field].(map[string]any); ok && cur != nil && stringsOrNull(cur) {
		return cur
	}
	fresh := map[string]any{}
	meta[field] = fresh
	return fresh
}

// stringsOrNull reports whether every value of m is a string or null, and
// makes each null "".
func stringsOrNull(m map[string]any) bool {
	for k, v := range m {
		switch v.(type) {
		case string:
		case nil:
			m[k] = ""
		default:
			return false
		}
	}
	return true
}

// revisionOf is the revision a source's objects carry: its Git
// checkout's, else "".
func revisionOf(s *Source) string {
	if co, ok := s.Checkout(); ok {
		return co.Revision()
	}
	return ""
}

// applyOrder is the apply phase of a source object (hub.NodeSpec.Order), as
// Flux and kubectl order an apply: Namespaces and CustomResourceDefinitions
// first (what the other objects live in or are), admission webhooks and
// policies last (so they never block the objects applied with them), the
// rest between.
func applyOrder(gk k8sschema.GroupKind) uint8 {
	switch {
	case gk == k8sschema.GroupKind{Kind: "Namespace"},
		gk == k8sschema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:
		return 0
	case gk.Group == "admissionregistration.k8s.io":
		return 2
	}
	return 1
}

// Kinds returns the distinct group, version and kinds of the source
// objects on a cluster, sorted by group, version and kind: the kinds the
// cluster's watch must cover beyond the applications'. A cluster that is
// not in the file is matched by id only; use KindsFor when its labels are
// known. A source that does not render for the cluster adds nothing (its
// error is CompileCluster's).
func (c *Config) Kinds(clusterID string) []k8sschema.GroupVersionKind {
	return c.KindsFor(c.infoOf(clusterID))
}

// KindsFor returns the kinds of the source objects on the cluster, as
// Kinds.
func (c *Config) KindsFor(info ClusterInfo) []k8sschema.GroupVersionKind {
	seen := map[k8sschema.GroupVersionKind]bool{}
	for i := range c.Sources {
		if !c.Sources[i].Matches(info) {
			continue
		}
		ps, err := c.place(&c.Sources[i], info)
		if err != nil {
			continue
		}
		for _, p := range ps {
			seen[p.obj.gvk] = true
		}
	}
	return slices.SortedFunc(maps.Keys(seen), func(a, b k8sschema.GroupVersionKind) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Version, b.Version), cmp.Compare(a.Kind, b.Kind))
	})
}

// sourceNamespaces returns the namespaces of the namespaced source objects
// on the cluster (unsorted, each once: a watch config keeps the list).
func (c *Config) sourceNamespaces(info ClusterInfo) []string {
	var ns []string
	seen := map[string]bool{}
	for i := range c.Sources {
		if !c.Sources[i].Matches(info) {
			continue
		}
		ps, err := c.place(&c.Sources[i], info)
		if err != nil {
			continue
		}
		for _, p := range ps {
			if p.namespace != "" && !seen[p.namespace] {
				seen[p.namespace] = true
				ns = append(ns, p.namespace)
			}
		}
	}
	return ns
}

// infoOf returns the ClusterInfo of a cluster of the file, or one with the
// id alone.
func (c *Config) infoOf(clusterID string) ClusterInfo {
	if cl, ok := c.Cluster(clusterID); ok {
		return cl.Info()
	}
	return ClusterInfo{ID: clusterID}
}

// SourceObjects returns the number of objects each source has on the
// cluster and their kinds (Kind or Kind.group, sorted), by source id, for
// `driftwatch check`. A source that does not render for the cluster is
// left out.
func (c *Config) SourceObjects(info ClusterInfo) map[string]SourceSummary {
	out := map[string]SourceSummary{}
	for i := range c.Sources {
		s := &c.Sources[i]
		if !s.Matches(info) {
			continue
		}
		ps, err := c.place(s, info)
		if err != nil {
			continue
		}
		kinds := map[string]bool{}
		for _, p := range ps {
			k := p.obj.gvk.Kind
			if g := p.obj.gvk.Group; g != "" {
				k += "." + g
			}
			kinds[k] = true
		}
		out[s.ID] = SourceSummary{Objects: len(ps), Kinds: slices.Sorted(maps.Keys(kinds))}
	}
	return out
}

// SourceSummary is what a source puts on one cluster.
type SourceSummary struct {
	// Objects is the number of objects.
	Objects int
	// Kinds are their kinds, as Kind or Kind.group, sorted.
	Kinds []string
}

// SourceFaults returns the sources left out of the desired state because
// they cannot be used (see LoadOptions.IsolateSources), by source id, each
// with its errors; nil when there are none (always, without the option).
func (c *Config) SourceFaults() map[string]ErrorList {
	if c.sources == nil || len(c.sources.faults) == 0 {
		return nil
	}
	return maps.Clone(c.sources.faults)
}

// faulty reports whether a source was left out (see SourceFaults).
func (c *Config) faulty(id string) bool {
	return c.sources != nil && c.sources.faults[id] != nil
}

// sourceFault reports a problem of source i at (pos, field): an error of
// the file, or under IsolateSources a fault of the source, which is then
// left out of the desired state.
func (d *decoder) sourceFault(i int, at child, format string, args ...any) {
	if !d.opts.IsolateSources {
		d.errorf(at.pos, at.field, format, args...)
		return
	}
	st := d.cfg.state()
	id := d.cfg.Sources[i].ID
	e := &Error{File: d.file, Line: at.pos.line, Column: at.pos.col, Field: at.field, Msg: fmt.Sprintf(format, args...)}
	for _, prev := range st.faults[id] {
		if *prev == *e {
			return
		}
	}
	if st.faults == nil {
		st.faults = map[string]ErrorList{}
	}
	st.faults[id] = append(st.faults[id], e)
}

// renderSources renders the sources for the file's clusters once the file
// is otherwise valid, and reports, at the source's path, kustomize or
// helm field, every source that does not render, a cluster without a
// label its paths use, an object two sources (or a source and an
// application) want on one cluster, and a namespace a cluster with an
// explicit list does not manage.
func (d *decoder) renderSources(clusterAt map[string]int) {
	if len(d.cfg.Sources) == 0 {
		return
	}
	cfg := d.cfg
	st := cfg.state()
	failed := make([]bool, len(cfg.Sources))
	for i := range cfg.Sources {
		s, src := &cfg.Sources[i], d.srcs[i]
		if cfg.faulty(s.ID) {
			failed[i] = true // its Git checkout failed
			continue
		}
		reported := map[string]bool{}
		for _, k := range d.sourceTargets(i, clusterAt) {
			info := cfg.Clusters[k].Info()
			r, err := s.request(info)
			if err != nil {
				failed[i] = true
				at := src.at
				if pe := (*pathError)(nil); errors.As(err, &pe) {
					at = d.fieldOf(src, pe.field)
					err = fmt.Errorf("%s", pe.msg)
				}
				d.sourceFault(i, at, "%v", err)
				continue
			}
			if reported[r.key] {
				continue
			}
			if res := st.render(context.Background(), r); res.err != nil {
				failed[i] = true
				reported[r.key] = true
				d.sourceFault(i, src.at, "%s: %v", cfg.RelPath(s.location(r.req)), res.err)
			}
		}
	}
	for k, cl := range cfg.Clusters {
		if first, ok := clusterAt[cl.ID]; !ok || first != k {
			continue
		}
		// A duplicate is reported at the second source; isolated, that
		// source is left out and the cluster placed again without it.
		for range len(cfg.Sources) + 1 {
			_, err := cfg.placeCluster(cl.Info())
			de := (*DuplicateError)(nil)
			if !errors.As(err, &de) || failed[de.SecondSource] && !d.opts.IsolateSources {
				break
			}
			src := d.srcs[de.SecondSource]
			d.sourceFault(de.SecondSource, src.at, "%v", de)
			if !d.opts.IsolateSources {
				break
			}
			failed[de.SecondSource] = true
		}
		if !d.clusters[k].nsList {
			continue
		}
		for i := range cfg.Sources {
			s := &cfg.Sources[i]
			if failed[i] || !s.Matches(cl.Info()) {
				continue
			}
			ps, err := cfg.place(s, cl.Info())
			if err != nil {
				continue
			}
			for _, p := range ps {
				if _, found := slices.BinarySearch(cl.Namespaces, p.namespace); p.namespace != "" && !found {
					src := d.srcs[i]
					d.sourceFault(i, src.at, "namespace %q of %s (%s) is not managed on cluster %q (%s.namespaces: %s)",
						p.namespace, describeObject(p.obj.gvk, p.id), p.obj.origin, cl.ID, d.clusters[k].field, strings.Join(cl.Namespaces, ", "))
					break
				}
			}
		}
	}
}

// fieldOf returns the field of a source that a pathError names.
func (d *decoder) fieldOf(src srcSrc, field string) child {
	full := joinField(src.field, field)
	if full == src.at.field {
		return src.at
	}
	return child{field: full, pos: src.at.pos}
}

package clusters

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"math"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/pack"
)

// lastAppliedAnnotation is dropped from cached objects: it can be as large as
// the object and driftwatch never reads it.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// cacheShared is what every object of one informer has in common: the
// compact form points at it instead of repeating it.
type cacheShared struct {
	cluster   string
	namespace string
	kind      hub.Kind
	info      kindInfo
	// managedBy and hubID are the values of our ownership marks.
	managedBy string
	hubID     string
	// fieldManager is the hub's own field manager (kubeobj.FieldManagerFor).
	fieldManager string
	// dicts pack the bodies, one dictionary per kind shared by every
	// informer of the registry (nil: bodies are kept unpacked).
	dicts *pack.Dicts[hub.Kind]
	// progresses interns the rollout progress of the informer's objects
	// (see internProgress), under progressMu.
	progressMu sync.Mutex
	progresses map[hub.Progress]*hub.Progress
}

// maxInternedProgress bounds the progress values an informer interns.
const maxInternedProgress = 256

// internProgress returns a shared copy of p: the objects of one informer
// mostly share a few progress values (ready and desired counts, a state),
// and a cached object's progress is never changed (reads copy it), so
// they can share one record instead of one each. A value with a reason or
// a message (an object's own words), or past maxInternedProgress distinct
// values, is kept as it is.
func (s *cacheShared) internProgress(p *hub.Progress) *hub.Progress {
	if p == nil || p.Stuck != "" || p.Message != "" {
		return p
	}
	s.progressMu.Lock()
	defer s.progressMu.Unlock()
	if q, ok := s.progresses[*p]; ok {
		return q
	}
	if len(s.progresses) >= maxInternedProgress {
		return p
	}
	if s.progresses == nil {
		s.progresses = make(map[hub.Progress]*hub.Progress)
	}
	s.progresses[*p] = p
	return p
}

// Which ownership marks an object carries with their usual value (see
// cachedObject.marks).
const (
	markLabel  uint8 = 1 << iota // ManagedByLabel = cacheShared.managedBy
	markHub                      // HubAnnotation = cacheShared.hubID
	markNodeID                   // NodeIDAnnotation = the NodeID derived from the name
	// markOwnCreated: the latest write of our field manager (ownWrite) is
	// the object's creation (within a second of its creationTimestamp).
	markOwnCreated
	// markRetain: the object is annotated never to be pruned
	// (kubeobj.PruneAnnotation = kubeobj.PruneDisabled).
	markRetain
)

// unusualMarks holds an object's ownership marks when they are not the
// usual ones (another value, or a namespace other than the informer's).
type unusualMarks struct {
	namespace string
	labels    map[string]string
	annots    map[string]string
	// otherHub is the field manager of another driftwatch hub found in
	// the object's managedFields ("" when none).
	otherHub string
}

// cachedObject is the compact form in which a watch cache keeps a live
// object: the identity and ownership fields the handlers, the expectations
// and the ownership checks read, the rollout Progress, and the rest of the
// object as its encoding (body: protobuf for the typed kinds, JSON for the
// others), packed against a dictionary of its kind (internal/pack: the
// objects of a kind look alike, so a body of several hundred bytes packs to
// a few dozen), unpacked and decoded only when a reconcile reads it
// (ReadState). The transform (compactor) builds it before the object
// enters the store; it drops what drift detection never reads: the status
// (Progress is kept), the last-applied annotation, our own managedFields
// entries and status-subresource entries (entries of other managers that
// touched spec or metadata stay, for the detection of who owns what). The
// fields it keeps apart (name, namespace, uid, resourceVersion, generation
// and the ownership marks) are cut from the body and put back on decode.
//
// A cachedObject is immutable once built; GetObjectMeta returns a new
// ObjectMeta with the identity fields and the ownership marks (labels and
// annotations hold only those), which is all the informer's key functions
// and our handlers read.
type cachedObject struct {
	shared            *cacheShared
	name              string
	uid               types.UID
	resourceVersion   string
	generation        int64
	deletionTimestamp *metav1.Time
	progress          *hub.Progress
	unusual           *unusualMarks
	marks             uint8
	// ownWrite is when our field manager last wrote the object (the
	// latest Time of its managedFields entries, in Unix seconds; 0 when
	// it never did). It fits in the padding after marks; see
	// Manager.checkWriter.
	ownWrite uint32
	// data holds, in one allocation, the identity strings (name, uid and
	// resourceVersion are its first bytes, in that order) and the body:
	// the encoding, packed with dict (unpacked when dict is nil).
	data string
	dict *pack.Dict
}

// body returns the (packed) encoding: data after the identity strings.
func (c *cachedObject) body() string {
	return c.data[len(c.name)+len(c.uid)+len(c.resourceVersion):]
}

var (
	_ runtime.Object            = (*cachedObject)(nil)
	_ metav1.ObjectMetaAccessor = (*cachedObject)(nil)
)

// GetObjectKind implements runtime.Object: a cached object has no type
// meta of its own.
func (c *cachedObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object. A cachedObject is immutable, so
// the copy shares the body and the shared fields.
func (c *cachedObject) DeepCopyObject() runtime.Object {
	cp := *c
	return &cp
}

// GetObjectMeta implements metav1.ObjectMetaAccessor (meta.Accessor): the
// identity fields in a new ObjectMeta, and the ownership marks as its labels
// and annotations, built only when they are asked for (the informer's key
// functions and resource-version checks, which call this at every event,
// never read them).
func (c *cachedObject) GetObjectMeta() metav1.Object {
	return &cachedMeta{
		ObjectMeta: metav1.ObjectMeta{
			Name:              c.name,
			Namespace:         c.namespace(),
			UID:               c.uid,
			ResourceVersion:   c.resourceVersion,
			Generation:        c.generation,
			DeletionTimestamp: c.deletionTimestamp,
		},
		c: c,
	}
}

// cachedMeta is a cachedObject's metadata as GetObjectMeta returns it: a
// copy the caller owns, whose labels and annotations (the ownership marks)
// are filled in on their first Get or Set.
type cachedMeta struct {
	metav1.ObjectMeta
	c *cachedObject
	// marked is set once Labels and Annotations hold the marks (or what
	// a Set put there).
	marked bool
}

// fill puts the ownership marks in Labels and Annotations, once.
func (m *cachedMeta) fill() {
	if !m.marked {
		m.marked = true
		m.Labels, m.Annotations = m.c.ownershipMarks()
	}
}

// GetLabels returns the ownership labels (see cachedObject.ownershipMarks).
func (m *cachedMeta) GetLabels() map[string]string { m.fill(); return m.Labels }

// SetLabels replaces the copy's labels.
func (m *cachedMeta) SetLabels(labels map[string]string) { m.fill(); m.Labels = labels }

// GetAnnotations returns the ownership annotations.
func (m *cachedMeta) GetAnnotations() map[string]string { m.fill(); return m.Annotations }

// SetAnnotations replaces the copy's annotations.
func (m *cachedMeta) SetAnnotations(annotations map[string]string) {
	m.fill()
	m.Annotations = annotations
}

// usualNodeID reports whether the object's NodeID is the one its name
// gives: its ownership marks are the usual ones, so a NodeID annotation, if
// any, names the object itself (see setMarks).
func (m *cachedMeta) usualNodeID() bool { return m.c.unusual == nil }

// retained reports whether the object is annotated never to be pruned.
func (c *cachedObject) retained() bool { return c.marks&markRetain != 0 }

func (c *cachedObject) namespace() string {
	if c.unusual != nil {
		return c.unusual.namespace
	}
	return c.shared.namespace
}

// ownershipMarks returns the object's ownership labels and annotations (nil
// maps when it carries none).
func (c *cachedObject) ownershipMarks() (labels, annots map[string]string) {
	if c.unusual != nil {
		return c.unusual.labels, c.unusual.annots
	}
	if c.marks&markLabel != 0 {
		labels = map[string]string{kubeobj.ManagedByLabel: c.shared.managedBy}
	}
	if c.marks&(markHub|markNodeID) != 0 {
		annots = make(map[string]string, 2)
		if c.marks&markHub != 0 {
			annots[kubeobj.HubAnnotation] = c.shared.hubID
		}
		if c.marks&markNodeID != 0 {
			annots[kubeobj.NodeIDAnnotation] = hub.NewNodeID(c.shared.cluster, c.shared.namespace, c.name, c.shared.kind).String()
		}
	}
	return labels, annots
}

// object decodes the cached object into a new typed object the caller owns:
// the body with the identity fields and ownership marks put back. Its status
// is empty (see progress).
func (c *cachedObject) object() (protoObject, error) {
	obj := c.shared.info.newObject()
	body := []byte(c.body())
	if c.dict != nil {
		var err error
		if body, err = c.dict.Unpack(body); err != nil {
			return nil, fmt.Errorf("decode cached %s %s: %w", c.shared.info.resource, c.name, err)
		}
	}
	if err := obj.Unmarshal(body); err != nil {
		return nil, fmt.Errorf("decode cached %s %s: %w", c.shared.info.resource, c.name, err)
	}
	obj.SetName(c.name)
	obj.SetNamespace(c.namespace())
	obj.SetUID(c.uid)
	obj.SetResourceVersion(c.resourceVersion)
	obj.SetGeneration(c.generation)
	labels, annots := c.ownershipMarks()
	if len(labels) > 0 {
		all := obj.GetLabels()
		if all == nil {
			all = make(map[string]string, len(labels))
		}
		for k, v := range labels {
			all[k] = v
		}
		obj.SetLabels(all)
	}
	if len(annots) > 0 {
		all := obj.GetAnnotations()
		if all == nil {
			all = make(map[string]string, len(annots))
		}
		for k, v := range annots {
			all[k] = v
		}
		obj.SetAnnotations(all)
	}
	return obj, nil
}

// ownershipKeys are the label and annotation keys the compact form keeps
// out of the body.
var ownershipLabelKeys, ownershipAnnotationKeys = []string{kubeobj.ManagedByLabel}, []string{kubeobj.HubAnnotation, kubeobj.NodeIDAnnotation}

// compact is the informers' transform: it turns a typed object into its
// cachedObject, mutating the object (the informer hands it over before it
// enters the store). Tombstones and objects already compact pass unchanged.
func (s *cacheShared) compact(obj any) (any, error) {
	switch obj.(type) {
	case *cachedObject, cache.DeletedFinalStateUnknown:
		return obj, nil
	}
	po, ok := obj.(protoObject)
	if !ok {
		u, isU := obj.(*unstructured.Unstructured)
		if !isU {
			return obj, nil
		}
		// A dynamic informer's object: kept as JSON.
		po = &jsonObject{Unstructured: *u}
	}
	name, uid, rv := po.GetName(), string(po.GetUID()), po.GetResourceVersion()
	c := &cachedObject{
		shared:            s,
		name:              name,
		uid:               types.UID(uid),
		resourceVersion:   rv,
		generation:        po.GetGeneration(),
		deletionTimestamp: po.GetDeletionTimestamp(),
	}
	if s.info.progress != nil {
		c.progress = s.internProgress(s.info.progress(po))
	}
	labels, annots := po.GetLabels(), po.GetAnnotations()
	var own uint32
	var otherHub string
	if jo, ok := po.(*jsonObject); ok {
		own, otherHub = jo.compactManagedFields(s.fieldManager)
	} else {
		managed := po.GetManagedFields()
		own, otherHub = writers(managed, s.fieldManager)
		if kept := compactManagedFields(managed, s.fieldManager); len(kept) != len(managed) {
			po.SetManagedFields(kept)
		}
	}
	c.ownWrite = own
	if created := unixSeconds(po.GetCreationTimestamp().Time); own != 0 && max(own, created)-min(own, created) <= 1 {
		// The apiserver stamps the two a moment apart: maybe a second.
		c.marks |= markOwnCreated
	}
	c.setMarks(po.GetNamespace(), labels, annots, otherHub)
	for _, k := range ownershipLabelKeys {
		delete(labels, k)
	}
	for _, k := range ownershipAnnotationKeys {
		delete(annots, k)
	}
	delete(annots, lastAppliedAnnotation)
	if len(labels) == 0 {
		labels = nil
	}
	if len(annots) == 0 {
		annots = nil
	}
	po.SetLabels(labels)
	po.SetAnnotations(annots)
	if s.info.dropStatus != nil {
		s.info.dropStatus(po)
	}
	po.SetName("")
	po.SetNamespace("")
	po.SetUID("")
	po.SetResourceVersion("")
	po.SetGeneration(0)
	body, err := po.Marshal()
	if err != nil {
		return nil, fmt.Errorf("cluster %q: cache %s %s/%s: %w", s.cluster, s.info.resource, s.namespace, c.name, err)
	}
	if s.dicts != nil {
		c.dict = s.dicts.For(s.kind, body)
		body = c.dict.AppendPack(nil, body)
	}
	c.setData(body)
	return c, nil
}

// setData puts the identity strings and the (packed) body in data, one
// allocation of the cache's own: the decoded object's strings go with the
// rest of it (kept, each would hold on to the memory of the decode around
// it).
func (c *cachedObject) setData(body []byte) {
	var b strings.Builder
	b.Grow(len(c.name) + len(c.uid) + len(c.resourceVersion) + len(body))
	b.WriteString(c.name)
	b.WriteString(string(c.uid))
	b.WriteString(c.resourceVersion)
	b.Write(body)
	c.data = b.String()
	at := 0
	c.name, at = c.data[at:at+len(c.name)], at+len(c.name)
	c.uid, at = types.UID(c.data[at:at+len(c.uid)]), at+len(c.uid)
	c.resourceVersion = c.data[at : at+len(c.resourceVersion)]
}

// setMarks records the ownership marks: as bits when they are the usual
// ones, else as an unusualMarks (which also holds otherHub, the field
// manager of another hub that wrote the object, when there is one).
func (c *cachedObject) setMarks(namespace string, labels, annots map[string]string, otherHub string) {
	s := c.shared
	usual := namespace == s.namespace && otherHub == ""
	marks := c.marks &^ markRetain
	if annots[kubeobj.PruneAnnotation] == kubeobj.PruneDisabled {
		marks |= markRetain
	}
	if v, ok := labels[kubeobj.ManagedByLabel]; ok {
		marks |= markLabel
		usual = usual && v == s.managedBy
	}
	if v, ok := annots[kubeobj.HubAnnotation]; ok {
		marks |= markHub
		usual = usual && v == s.hubID
	}
	if v, ok := annots[kubeobj.NodeIDAnnotation]; ok {
		marks |= markNodeID
		usual = usual && v == hub.NewNodeID(s.cluster, namespace, c.name, s.kind).String()
	}
	if usual {
		c.marks = marks
		return
	}
	c.marks = marks & (markOwnCreated | markRetain)
	u := &unusualMarks{namespace: namespace, otherHub: otherHub}
	for _, k := range ownershipLabelKeys {
		if v, ok := labels[k]; ok {
			if u.labels == nil {
				u.labels = make(map[string]string, 1)
			}
			u.labels[k] = v
		}
	}
	for _, k := range ownershipAnnotationKeys {
		if v, ok := annots[k]; ok {
			if u.annots == nil {
				u.annots = make(map[string]string, 2)
			}
			u.annots[k] = v
		}
	}
	c.unusual = u
}

// compactManagedFields keeps the managedFields entries drift detection may
// need: those of other managers that touched spec or metadata. Our own
// entries (self's: we know what we applied) and status-subresource entries
// go; an entry whose fields are only status goes too. It returns nil when
// nothing is kept.
func compactManagedFields(entries []metav1.ManagedFieldsEntry, self string) []metav1.ManagedFieldsEntry {
	var kept []metav1.ManagedFieldsEntry
	for _, e := range entries {
		if keepEntry(e.Manager, e.Subresource, onlyStatus(e.FieldsV1), self) {
			kept = append(kept, e)
		}
	}
	return kept
}

// keepEntry reports whether compactManagedFields keeps an entry of manager
// (of subresource, whose fields are only status or not).
func keepEntry(manager, subresource string, statusOnly bool, self string) bool {
	return manager != self && subresource != "status" && !statusOnly
}

// compactManagedFields is writers and compactManagedFields on the raw
// entries of a dynamic informer's object, which it cuts in place: the
// unstructured accessors convert every entry, its fields included, to read
// a manager's name and time (about a hundred allocations an object).
func (o *jsonObject) compactManagedFields(self string) (own uint32, otherHub string) {
	meta, _ := o.Object["metadata"].(map[string]any)
	entries, _ := meta["managedFields"].([]any)
	if len(entries) == 0 {
		return 0, ""
	}
	facts := make([]metav1.ManagedFieldsEntry, len(entries))
	var kept []any
	for i, e := range entries {
		m, _ := e.(map[string]any)
		f := &facts[i]
		f.Manager, _ = m["manager"].(string)
		f.Subresource, _ = m["subresource"].(string)
		if ts, ok := m["time"].(string); ok {
			if t, err := time.Parse(time.RFC3339, ts); err == nil {
				f.Time = &metav1.Time{Time: t}
			}
		}
		fields, _ := m["fieldsV1"].(map[string]any)
		_, status := fields["f:status"]
		if keepEntry(f.Manager, f.Subresource, status && len(fields) == 1, self) {
			kept = append(kept, e)
		}
	}
	switch {
	case len(kept) == 0:
		delete(meta, "managedFields")
	case len(kept) < len(entries):
		meta["managedFields"] = kept
	}
	return writers(facts, self)
}

// onlyStatus reports whether a FieldsV1 set holds nothing but status fields.
func onlyStatus(f *metav1.FieldsV1) bool {
	if f == nil {
		return false
	}
	raw := f.GetRawBytes()
	if !bytes.Contains(raw, []byte(`"f:status"`)) {
		return false
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return false
	}
	for k := range top {
		if k != "f:status" {
			return false
		}
	}
	return true
}

// writers reads two facts from an object's managedFields: when self (our
// field manager) last wrote it (the latest Time of its entries, in Unix
// seconds; 0 when it never did), and the field manager of another
// driftwatch hub that wrote it ("" when none). The name kubeobj.FieldManager
// never counts as another hub's: a hub with the default id uses it, and a
// hub with an id of its own may find its own entries of before it had one
// under it.
func writers(entries []metav1.ManagedFieldsEntry, self string) (own uint32, otherHub string) {
	for _, e := range entries {
		switch {
		case e.Manager == self:
			if e.Time != nil {
				own = max(own, unixSeconds(e.Time.Time))
			}
		case otherHub == "" && e.Manager != kubeobj.FieldManager && kubeobj.IsHubFieldManager(e.Manager):
			otherHub = e.Manager
		}
	}
	return own, otherHub
}

// unixSeconds is t in Unix seconds as ownWrite holds them (0 for times
// before 1970, and the managedFields times of this century fit).
func unixSeconds(t time.Time) uint32 {
	s := t.Unix()
	if s <= 0 || s > math.MaxUint32 {
		return 0
	}
	return uint32(s)
}

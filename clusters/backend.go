package clusters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/clusters/drift"
	"github.com/driftwatch/driftwatch/hub"
)

// Repair actions (hub.RepairResult.Action).
const (
	actionApply       = "apply"
	actionRemoveApply = "remove+apply"
)

// errNotConnected is the cause of backend calls before the manager
// connected.
var errNotConnected = errors.New("not connected")

// errReleased is the cause of backend calls on a manager whose run ended
// and closed its connection (its cluster's manager restarted).
var errReleased = errors.New("its connection is closed")

var _ hub.Backend = (*Manager)(nil)

// backendError is the error of one backend call. Its text names the
// cluster, the verb, the resource and the namespace (see describe); it
// unwraps to the client error and, when RBAC denied the call, to
// hub.ErrForbidden, or when a deletion in progress refused it (its
// namespace or CustomResourceDefinition terminating), to
// hub.ErrTerminating.
type backendError struct {
	msg string
	err error
	// conflict marks a write whose precondition met a concurrent change
	// (see conflictError).
	conflict bool
	// restarting marks a call on a manager that was not connected, or
	// whose connection closed (see Manager.resourceError).
	restarting bool
}

func (e *backendError) Error() string { return e.msg }

func (e *backendError) Unwrap() []error {
	if e.restarting {
		return []error{e.err, hub.ErrRestarting}
	}
	if terminating(e.err) != "" {
		return []error{e.err, hub.ErrTerminating}
	}
	if apierrors.IsForbidden(e.err) {
		return []error{e.err, hub.ErrForbidden}
	}
	if meta.IsNoMatchError(e.err) {
		return []error{e.err, hub.ErrKindNotServed}
	}
	switch classify(e.err) {
	case classAuth:
		return []error{e.err, hub.ErrUnreachable, hub.ErrUnauthorized}
	case classNetwork, classTLS:
		if !errors.Is(e.err, context.Canceled) {
			return []error{e.err, hub.ErrUnreachable}
		}
	}
	return []error{e.err}
}

// callError describes a failed call on the object of spec.
func (m *Manager) callError(verb string, spec hub.NodeSpec, err error) error {
	return m.resourceError(verb, resourceOf(spec.Kind)+" "+spec.Name, spec.Namespace, err)
}

// resourceError describes a failed call on any resource. A call that
// failed on a manager not connected yet, or whose connection its run's end
// closed (before or during the call), unwraps to hub.ErrRestarting
// whatever its cause: the loop runs it again on the cluster's current
// manager.
func (m *Manager) resourceError(verb, resource, namespace string, err error) error {
	if m.released.Load() || errors.Is(err, errNotConnected) {
		return &backendError{msg: describeRestarting(m.cfg.ID, verb, resource, namespace, err), err: err, restarting: true}
	}
	return &backendError{msg: describe(m.cfg.ID, verb, resource, namespace, err), err: err}
}

// ReadState reads spec's object: from the synced informer cache when fresh is
// false (its compact form decoded into a copy: cached objects are never
// modified), else, or when the cache is not synced, with a GET. Either way
// the live object keeps only the managedFields entries of other managers
// that touched spec or metadata (see compactManagedFields); a cached read's
// live object has no status either (State.Progress carries what the loop
// needs of it). An object
// that does not exist is State{Exists: false} without an error; Fresh then
// says whether the apiserver said so or the label-filtered cache.
func (m *Manager) ReadState(ctx context.Context, spec hub.NodeSpec, fresh bool) (hub.State, error) {
	kind, err := m.kindFor(spec)
	if err != nil {
		return hub.State{}, m.callError("read", spec, err)
	}
	if !fresh {
		if c, watched, err := m.cachedOf(spec); watched {
			if err != nil {
				return hub.State{}, m.callError("read cached", spec, err)
			}
			if c == nil {
				return hub.State{}, nil
			}
			obj, err := c.object()
			if err != nil {
				return hub.State{}, m.callError("read cached", spec, err)
			}
			var progress *hub.Progress
			if c.progress != nil {
				p := *c.progress
				progress = &p
			}
			return m.stateOf(kind, spec, obj, progress, false)
		}
	}
	c := m.clientset()
	if c == nil {
		return hub.State{}, m.callError("get", spec, errNotConnected)
	}
	obj, err := kind.clientFor(c, spec.Namespace).get(ctx, spec.Name)
	if apierrors.IsNotFound(err) {
		return hub.State{Fresh: true}, nil
	}
	if err != nil {
		return hub.State{}, m.callError("get", spec, err)
	}
	var progress *hub.Progress
	if u, ok := obj.(*unstructured.Unstructured); ok && kind.generic {
		// Fresh: an overdue rollout is judged against the spec's deadline.
		progress = progressOf(u, spec.ProgressDeadline, m.now())
	} else if kind.progress != nil {
		progress = kind.progress(obj)
	}
	if acc, err := meta.Accessor(obj); err == nil {
		acc.SetManagedFields(compactManagedFields(acc.GetManagedFields(), m.fieldManager))
	}
	return m.stateOf(kind, spec, obj, progress, true)
}

// stateOf describes a live typed object with its rollout progress. obj is
// the caller's (a cached object's decoded copy, or a GET's answer): its
// managedFields are moved to the State's live object (newLiveState).
func (m *Manager) stateOf(kind kindInfo, spec hub.NodeSpec, obj runtime.Object, progress *hub.Progress, fresh bool) (hub.State, error) {
	ls, err := newLiveState(kind, obj)
	if err != nil {
		return hub.State{}, m.callError("convert", spec, err)
	}
	live := ls.obj
	st := hub.State{
		Exists:     true,
		Fresh:      fresh,
		Version:    live.GetResourceVersion(),
		Owned:      m.owns(live),
		Deleting:   live.GetDeletionTimestamp() != nil,
		Finalizers: live.GetFinalizers(),
		Progress:   progress,
		Live:       ls,
	}
	if live.GetAnnotations()[kubeobj.PruneAnnotation] == kubeobj.PruneDisabled {
		st.Retain = fmt.Sprintf("its %s annotation is %q", kubeobj.PruneAnnotation, kubeobj.PruneDisabled)
	}
	return st, nil
}

// liveOf returns the live object a ReadState put in st, or nil when st says
// the object does not exist.
func (m *Manager) liveOf(spec hub.NodeSpec, st hub.State) (*unstructured.Unstructured, error) {
	if !st.Exists {
		return nil, nil
	}
	live := LiveObject(st)
	if live == nil {
		return nil, m.callError("read", spec, fmt.Errorf("state holds %T, not a live object", st.Live))
	}
	return live, nil
}

// DetectDrift classifies how st's live object differs from spec (see
// drift.ClassifyWith), along the schema of its kind (SchemaFor):
// differences spec's ignore rules cover are set apart in Drift.Ignored. A
// manager rule reads the managedFields st's object keeps (ownersOf), those
// of the very object compared: a GET could name the manager of a later
// change.
func (m *Manager) DetectDrift(ctx context.Context, spec hub.NodeSpec, st hub.State) (hub.Drift, error) {
	return m.detectDrift(ctx, spec, st, nil)
}

// DetectDriftWith is DetectDrift along s, the schema SchemaFor returned
// for the kind of spec's object: a caller that compares many objects
// (diff) resolves each kind's schema once, and renders the objects along
// the same schema it classified them with.
func (m *Manager) DetectDriftWith(ctx context.Context, spec hub.NodeSpec, st hub.State, s drift.Schema) (hub.Drift, error) {
	return m.detectDrift(ctx, spec, st, &s)
}

// detectDrift is DetectDrift along sch, or along SchemaFor's schema when
// sch is nil.
func (m *Manager) detectDrift(ctx context.Context, spec hub.NodeSpec, st hub.State, sch *drift.Schema) (hub.Drift, error) {
	live, err := m.liveOf(spec, st)
	if err != nil {
		return hub.Drift{}, err
	}
	if live == nil || live.GetDeletionTimestamp() != nil {
		// Missing or being deleted: there is nothing to compare, so the
		// desired object is only checked to be there, not decoded (a
		// cold sync classifies every object so before creating it).
		body, err := spec.JSON()
		if err != nil {
			return hub.Drift{}, m.callError("compare", spec, err)
		}
		if len(body) == 0 {
			return hub.Drift{}, m.callError("compare", spec, errors.New("no desired object"))
		}
		return drift.ClassifyWith(nil, live, m.cfg.ManagedBy, drift.Ignore{}, drift.Schema{})
	}
	desired, err := kubeobj.Object(spec)
	if err != nil {
		return hub.Drift{}, m.callError("compare", spec, err)
	}
	if desired == nil {
		return hub.Drift{}, m.callError("compare", spec, errors.New("no desired object"))
	}
	ig := drift.Ignore{Rules: spec.Ignore.For(spec.Kind), Self: m.fieldManager}
	if len(ig.Rules) > 0 {
		ig.Owners = func() ([]drift.FieldOwner, error) { return ownersOf(st) }
	}
	if sch == nil {
		s, err := m.SchemaFor(ctx, desired.GroupVersionKind())
		if err != nil {
			return hub.Drift{}, m.callError("compare", spec, err)
		}
		sch = &s
	}
	d, err := drift.ClassifyWith(desired, live, m.cfg.ManagedBy, ig, *sch)
	if err != nil {
		// Manager rules matched nothing: the fields stay drift.
		m.log.Debug("ignore rules: managedFields unavailable", "node", spec.ID.String(), "err", err)
	}
	return d, nil
}

// cachedOf looks spec's object up in the watch cache: watched says whether
// an informer covers it, c is nil when the cache does not hold it.
func (m *Manager) cachedOf(spec hub.NodeSpec) (c *cachedObject, watched bool, err error) {
	if m.released.Load() {
		return nil, true, errReleased // its caches stopped with its run
	}
	inf := m.informerFor(spec.Namespace, spec.Kind)
	if inf == nil {
		return nil, false, nil
	}
	item, ok, err := inf.GetIndexer().GetByKey(cacheKey(spec.Namespace, spec.Name))
	if err != nil || !ok {
		return nil, true, err
	}
	c, ok = item.(*cachedObject)
	if !ok {
		return nil, true, fmt.Errorf("cache holds %T", item)
	}
	return c, true, nil
}

// Attribute says which field manager changed d's fields last, and when
// (see drift.Attribute), from the managedFields of st's object: the state d
// was classified from, whether it came from the watch cache (which keeps
// every entry attribution reads: it skips our own, and a status entry owns
// no field drift is found in) or from a GET. It sends no request: a later
// read could name someone who changed the object after the drift was seen,
// and a cache behind a fresh read would name no one. A drift without
// fields, or a missing object, has no attribution.
func (m *Manager) Attribute(_ context.Context, spec hub.NodeSpec, st hub.State, d hub.Drift) (*hub.Attribution, error) {
	if len(d.Fields) == 0 || !st.Exists {
		return nil, nil
	}
	if _, err := m.liveOf(spec, st); err != nil {
		return nil, err
	}
	owners, err := ownersOf(st)
	if err != nil {
		return nil, m.callError("read managedFields of", spec, err)
	}
	if owners == nil {
		return nil, nil
	}
	return drift.Attribute(d, owners, m.fieldManager), nil
}

// ownersOf turns the managedFields entries the live object of st from
// ReadState keeps (those of other managers that touched spec or metadata)
// into field owners; nil when it kept none. Drift classification,
// attribution and a repair's taken-over fields all read the object the
// drift was classified from, never a later read of it.
func ownersOf(st hub.State) ([]drift.FieldOwner, error) {
	mf := managedFieldsOf(st)
	if len(mf) == 0 {
		return nil, nil
	}
	return fieldOwners(mf)
}

// fieldOwners turns managedFields entries into field owners.
func fieldOwners(entries []metav1.ManagedFieldsEntry) ([]drift.FieldOwner, error) {
	owners := make([]drift.FieldOwner, 0, len(entries))
	for _, e := range entries {
		o := drift.FieldOwner{Manager: e.Manager, Operation: string(e.Operation)}
		if e.Time != nil {
			o.Time = e.Time.Time
		}
		if e.FieldsV1 != nil {
			paths, err := drift.FieldsV1Paths(e.FieldsV1.GetRawBytes())
			if err != nil {
				return nil, fmt.Errorf("manager %q: %w", e.Manager, err)
			}
			o.Fields = paths
		}
		owners = append(owners, o)
	}
	return owners, nil
}

// conflictRetries bounds the immediate retries of a write whose
// precondition met a concurrent change (see isPreconditionConflict and
// isPatchNotApplicable): each retry reads the object fresh, recomputes the
// write and sends it again; the last conflict is the call's error.
const conflictRetries = 3

// Repair makes spec's object match spec.Body again. It refuses an object
// whose driftwatch.io/hub annotation names another hub (the error unwraps
// to hub.ErrOwnedByOther), as the state the loop read shows it and as a
// non-forced apply finds it (a conflict over that annotation).
//
// When d lists entries someone added inside what we own, or spec has ignore
// rules, the write depends on the live object: Repair GETs it (bypassing
// the watch cache), classifies it again, removes the added entries with a
// JSON patch guarded by the resourceVersion it read (server-side apply alone
// would keep them), adding in the same patch the items of ours missing from
// a list it removes from (a replaced entry, see repairEdits; the action is
// still "remove+apply"), and keeps in the applied body the live value of every
// field an ignore rule covers (drift.Pin), the apply then guarded by the
// resourceVersion those values came from. A write whose precondition met a
// concurrent change is retried at once from a fresh read, up to
// conflictRetries times (counted in driftwatch_write_conflicts_total).
//
// The apply is a server-side apply with the hub's field manager
// (kubeobj.FieldManagerFor). The repair of an object st holds, when it
// needs no fresh read, is one forced apply pinned to the resourceVersion of
// st's object, the one whose hub annotation was checked (see apply): a
// change since, another hub's takeover included, makes it a conflict,
// retried from a fresh read; the fields it takes over from other managers
// are named from the managedFields of st's object (takenOver). Any other
// apply goes without force first; on a conflict with other field managers
// it records the conflicts and applies with force. A missing namespace is
// created: before the manager's first create in it (ensureNamespace, once
// for every worker creating objects there), and again if it was deleted
// since.
//
// When st came from the label-filtered cache and said the object was gone,
// and the applied object has the UID the watch last saw before it left the
// cache, the object had lost our label rather than been deleted: the result's
// Class is then hub.DriftUnlabelled.
func (m *Manager) Repair(ctx context.Context, spec hub.NodeSpec, st hub.State, d hub.Drift) (hub.RepairResult, error) {
	res := hub.RepairResult{Action: actionApply}
	kind, err := m.kindFor(spec)
	if err != nil {
		return res, m.callError("apply", spec, err)
	}
	if len(spec.Body) == 0 {
		return res, m.callError("apply", spec, errors.New("no desired object"))
	}
	live, err := m.liveOf(spec, st)
	if err != nil {
		return res, err
	}
	if live != nil {
		if err := m.refuseOther("apply", spec, live); err != nil {
			return res, err
		}
	}
	c := m.clientset()
	if c == nil {
		return res, m.callError("apply", spec, errNotConnected)
	}
	if live == nil {
		// Only a create is refused while a deletion is in progress.
		if err := m.stillTerminating(spec, kind); err != nil {
			return res, err
		}
	}
	key := goneKey{kind: spec.Kind, namespace: spec.Namespace, name: spec.Name}
	// Taken before the apply: the watch may deliver the applied object's
	// add event, which drops the record, before the apply call returns.
	goneUID := m.takeGone(key)
	// A removal needs current JSON pointers, and pinned values must be the
	// live ones, not those of a cached read (an autoscaler may have
	// changed them since).
	remove := hasAddedEntries(d)
	fresh := remove || len(spec.Ignore.For(spec.Kind)) > 0
	if remove {
		// A remove-then-apply pair either completes or is not started:
		// never begin it once the caller gave up, and once the removal
		// went through, finish with the apply even if the caller is
		// cancelled meanwhile (a hub shutting down), bounded by
		// pairGrace.
		if err := ctx.Err(); err != nil {
			m.restoreGone(key, goneUID)
			return res, m.callError("apply", spec, err)
		}
	}
	writeCtx := ctx
	var stopPair context.CancelFunc
	defer func() {
		if stopPair != nil {
			stopPair()
		}
	}()
	if live == nil {
		m.ensureNamespace(ctx, c, spec)
	}
	kc := kind.clientFor(c, spec.Namespace)
	var out runtime.Object
	for attempt := 0; ; attempt++ {
		body, removed, err := spec.Body, false, error(nil)
		// An edit of an object the state holds, the hub's own checks
		// passed on it (refuseOther above), is applied at once with
		// force, pinned to that object's resourceVersion: one write
		// instead of a refused apply and a forced one. The pin keeps
		// the guard of the refused apply: the write lands only on the
		// very object whose hub annotation was checked.
		pinned := !fresh && live != nil && live.GetResourceVersion() != ""
		switch {
		case fresh:
			body, removed, err = m.freshBody(writeCtx, kc, kind, spec, key, remove)
		case pinned:
			body, err = pinBody(spec, live.GetResourceVersion())
			if err != nil {
				err = m.callError("apply", spec, err)
			}
		}
		if removed && stopPair == nil {
			res.Action = actionRemoveApply
			writeCtx, stopPair = pairContext(ctx)
		}
		if err == nil {
			out, res.Conflicts, err = m.apply(writeCtx, c, kind, spec, body, key, pinned)
			if pinned && err == nil {
				res.Conflicts = m.takenOver(st, d)
			}
		}
		if err == nil {
			break
		}
		if !isConflictError(err) {
			m.restoreGone(key, goneUID)
			m.noteTerminating(spec, kind, err)
			if fields, ok := immutableFields(err); ok {
				return m.recreate(ctx, kc, spec, live, fields, err)
			}
			return res, err
		}
		if attempt == conflictRetries {
			m.metrics.conflict(m.cfg.ID, conflictGaveUp)
			m.log.Info("write conflict: giving up", "node", spec.ID.String(), "attempts", attempt+1, "err", err)
			m.restoreGone(key, goneUID)
			return res, err
		}
		m.metrics.conflict(m.cfg.ID, conflictRetried)
		m.log.Info("write conflict: retrying from a fresh read", "node", spec.ID.String(), "attempt", attempt+1, "err", err)
		fresh = true
	}
	acc, err := meta.Accessor(out)
	if err != nil {
		return res, m.callError("apply", spec, err)
	}
	res.Version = acc.GetResourceVersion()
	if !st.Fresh && !st.Exists && goneUID != "" && string(acc.GetUID()) == goneUID {
		res.Class = hub.DriftUnlabelled
		res.Fields = []hub.FieldDiff{{Path: "metadata.labels." + kubeobj.ManagedByLabel,
			Desired: m.cfg.ManagedBy, Actual: "<removed or changed>"}}
	}
	return res, nil
}

// refuseOther refuses a write to a live object whose driftwatch.io/hub
// annotation names another hub.
func (m *Manager) refuseOther(verb string, spec hub.NodeSpec, live metav1.Object) error {
	annots := live.GetAnnotations()
	if !kubeobj.OwnedByOther(annots, m.cfg.HubID) {
		return nil
	}
	return m.callError(verb, spec, fmt.Errorf("refusing: %w", hub.OwnedByOtherError{Hub: annots[kubeobj.HubAnnotation]}))
}

// liveObject converts a typed object the caller owns to its unstructured
// form without managedFields, and returns those apart.
func liveObject(kind kindInfo, obj runtime.Object) (*unstructured.Unstructured, []metav1.ManagedFieldsEntry, error) {
	var mf []metav1.ManagedFieldsEntry
	if acc, err := meta.Accessor(obj); err == nil {
		mf = acc.GetManagedFields()
		acc.SetManagedFields(nil)
	}
	live, err := kind.toUnstructured(obj)
	return live, mf, err
}

// freshBody GETs spec's object for a write that depends on it. It refuses
// an object of another hub, classifies the object again, removes the entries
// someone else added when remove is set (a JSON patch guarded by a test of
// the resourceVersion it read; entries an ignore rule covers, such as an
// injected sidecar, stay), adding in the same patch the items of ours that
// a list with such an entry lacks (a replaced entry, see repairEdits), and
// returns spec.Body with the live value of every field an ignore rule
// covers (drift.Pin) and, when it pinned any, the resourceVersion those
// values came from: the apply then fails with a conflict rather than write
// a value someone changed meanwhile. removed reports whether the removal
// went through. A missing object needs neither: spec.Body is returned.
func (m *Manager) freshBody(ctx context.Context, kc kindClient, kind kindInfo, spec hub.NodeSpec, key goneKey, remove bool) (body []byte, removed bool, err error) {
	obj, err := kc.get(ctx, spec.Name)
	if apierrors.IsNotFound(err) {
		return spec.Body, false, nil
	}
	if err != nil {
		return nil, false, m.callError("get", spec, err)
	}
	live, mf, err := liveObject(kind, obj)
	if err != nil {
		return nil, false, m.callError("convert", spec, err)
	}
	if err := m.refuseOther("apply", spec, live); err != nil {
		return nil, false, err
	}
	desired, err := kubeobj.Object(spec)
	if err != nil {
		return nil, false, m.callError("compare", spec, err)
	}
	ig := drift.Ignore{Rules: spec.Ignore.For(spec.Kind), Self: m.fieldManager,
		Owners: func() ([]drift.FieldOwner, error) { return fieldOwners(mf) }}
	sch, err := m.SchemaFor(ctx, desired.GroupVersionKind())
	if err != nil {
		return nil, false, m.callError("compare", spec, err)
	}
	d, _ := drift.ClassifyWith(desired, live, m.cfg.ManagedBy, ig, sch)
	var pointers []string
	var items []listItem
	if remove {
		if pointers, items, err = repairEdits(d.Fields, desired.Object); err != nil {
			return nil, false, m.callError("patch", spec, err)
		}
	}
	if len(pointers) > 0 {
		rv := live.GetResourceVersion()
		patch, err := repairPatch(rv, pointers, items)
		if err != nil {
			return nil, false, m.callError("patch", spec, err)
		}
		m.beginWrite(key)
		out, err := kc.patch(ctx, spec.Name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: m.fieldManager})
		m.endWrite(key, out, err)
		switch {
		case isPatchNotApplicable(err), isPreconditionConflict(err), apierrors.IsNotFound(err):
			return nil, false, m.conflictError("patch", spec, fmt.Errorf("the object changed since it was read at resourceVersion %s: %w", rv, err))
		case err != nil:
			return nil, false, m.callError("patch", spec, err)
		}
		removed = true
		if live, _, err = liveObject(kind, out); err != nil {
			return nil, true, m.callError("convert", spec, err)
		}
	}
	if len(d.Ignored) == 0 {
		return spec.Body, removed, nil
	}
	fields := make([][]string, 0, len(d.Ignored))
	for _, f := range d.Ignored {
		fields = append(fields, f.Segments)
	}
	if !drift.PinWith(desired.Object, live.Object, fields, sch) {
		return spec.Body, removed, nil
	}
	desired.SetResourceVersion(live.GetResourceVersion())
	if body, err = kubeobj.EncodeBody(desired); err != nil {
		return nil, removed, m.callError("apply", spec, err)
	}
	return body, removed, nil
}

// pairGrace bounds the apply that completes a remove-then-apply pair after
// the caller's context has ended (cancelled, or past its deadline).
const pairGrace = time.Second

// pairContext returns the context of the apply that completes a
// remove-then-apply pair: ctx's deadline and values, but not its
// cancellation; once ctx ends, the apply has pairGrace left.
func pairContext(ctx context.Context) (context.Context, context.CancelFunc) {
	pc, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(pairGrace, cancel) })
	return pc, func() { stop(); cancel() }
}

// hasAddedEntries reports whether d lists entries that must be removed
// before an apply.
func hasAddedEntries(d hub.Drift) bool {
	for _, f := range d.Fields {
		if f.Added && f.Pointer != "" {
			return true
		}
	}
	return false
}

// listItem is an item of ours that a repair's JSON patch adds at the end
// of a live list.
type listItem struct {
	// list is the JSON pointer of the list in the live object.
	list string
	// value is the item, as the desired object has it.
	value any
}

// repairEdits returns what a repair's JSON patch changes, from the fields
// of a fresh drift: the pointers of the entries someone else added, to
// remove, and the items of ours missing from a list that holds such an
// entry, to add, taken from desired (the desired object).
//
// An item of ours that is missing while another took its place (a Service
// port whose number someone changed by hand: our entry, keyed by port and
// protocol, is gone, and one with its name is there) cannot be repaired by
// a removal and an apply, in either order: removing the other entry first
// can empty a list the apiserver requires ("spec.ports: Required value"),
// applying ours first duplicates a field that must be unique ("Duplicate
// value"). One JSON patch that removes the one and adds the other passes
// validation, which sees only its result. Items missing from a list nobody
// added to are left to the apply.
func repairEdits(fields []hub.FieldDiff, desired map[string]any) (remove []string, add []listItem, err error) {
	var lists map[string]bool
	for _, f := range fields {
		if !f.Added || f.Pointer == "" {
			continue
		}
		remove = append(remove, f.Pointer)
		if i := strings.LastIndexByte(f.Pointer, '/'); i > 0 {
			if lists == nil {
				lists = make(map[string]bool)
			}
			lists[f.Pointer[:i]] = true
		}
	}
	for _, f := range fields {
		if f.ListPointer == "" || !lists[f.ListPointer] {
			continue
		}
		v, ok := valueAt(desired, f.DesiredPointer)
		if !ok {
			return nil, nil, fmt.Errorf("%s: the desired object has no item at %s", f.Path, f.DesiredPointer)
		}
		add = append(add, listItem{list: f.ListPointer, value: v})
	}
	return remove, add, nil
}

// valueAt returns the value at a JSON pointer (RFC 6901) in obj.
func valueAt(obj map[string]any, pointer string) (any, bool) {
	if pointer == "" {
		return obj, true
	}
	if pointer[0] != '/' {
		return nil, false
	}
	var cur any = obj
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// repairPatch builds the JSON patch (RFC 6902) of a repair, guarded by a
// test of the resourceVersion: it adds each of items at the end of its
// list, then removes the entries at pointers, list items from the highest
// index down so earlier removals do not shift later pointers. The
// additions go first because appending to a list shifts no pointer, while
// a removal could shift the pointer of a list inside a later item.
func repairPatch(resourceVersion string, pointers []string, items []listItem) ([]byte, error) {
	type valueOp struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	type removeOp struct {
		Op   string `json:"op"`
		Path string `json:"path"`
	}
	ops := make([]any, 0, 1+len(items)+len(pointers))
	ops = append(ops, valueOp{Op: "test", Path: "/metadata/resourceVersion", Value: resourceVersion})
	for _, it := range items {
		ops = append(ops, valueOp{Op: "add", Path: it.list + "/-", Value: it.value})
	}
	ps := append([]string(nil), pointers...)
	sort.SliceStable(ps, func(i, j int) bool { return pointerLess(ps[j], ps[i]) })
	for _, p := range ps {
		ops = append(ops, removeOp{Op: "remove", Path: p})
	}
	return json.Marshal(ops)
}

// pointerLess orders JSON pointers so that numeric segments compare as
// numbers.
func pointerLess(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] == bs[i] {
			continue
		}
		ai, aerr := strconv.Atoi(as[i])
		bi, berr := strconv.Atoi(bs[i])
		if aerr == nil && berr == nil {
			return ai < bi
		}
		return as[i] < bs[i]
	}
	return len(as) < len(bs)
}

// hubAnnotationField is the field path of the driftwatch.io/hub annotation
// in an apply conflict (see conflictsOf).
const hubAnnotationField = "metadata.annotations." + kubeobj.HubAnnotation

// apply server-side applies body (spec's object) with the hub's field
// manager: without force first, then with force on a conflict with other
// field managers (returning the conflicts it took over), unless the
// driftwatch.io/hub annotation is among them and names another hub; a
// missing namespace is created first. A conflict with the body's
// resourceVersion (a pinned apply) is a conflict error (isConflictError).
//
// pinned is a body pinned to the resourceVersion of an object Repair
// checked (pinBody): it is applied once, with force, and a NotFound answer
// (its namespace gone) is a conflict error too, so the retry's unpinned
// apply creates the namespace. An object deleted since is created, as an
// unpinned apply creates it (TestApiserverConflictAnswers).
func (m *Manager) apply(ctx context.Context, c kubernetes.Interface, kind kindInfo, spec hub.NodeSpec, body []byte, key goneKey, pinned bool) (runtime.Object, []hub.Conflict, error) {
	kc := kind.clientFor(c, spec.Namespace)
	patch := func(force bool) (runtime.Object, error) {
		m.beginWrite(key)
		out, err := m.applyPatch(ctx, kc, kind, spec, body, metav1.PatchOptions{FieldManager: m.fieldManager, Force: &force})
		m.endWrite(key, out, err)
		return out, err
	}
	var conflicts []hub.Conflict
	out, err := patch(pinned)
	if !pinned && isFieldConflict(err) {
		conflicts = conflictsOf(err)
		if slices.ContainsFunc(conflicts, func(c hub.Conflict) bool { return c.Field == hubAnnotationField }) {
			// Another writer set the annotation to another value: never
			// take an object over from another hub.
			obj, gerr := kc.get(ctx, spec.Name)
			if gerr != nil && !apierrors.IsNotFound(gerr) {
				return nil, conflicts, m.callError("get", spec, gerr)
			}
			if gerr == nil {
				if acc, aerr := meta.Accessor(obj); aerr == nil {
					if rerr := m.refuseOther("apply", spec, acc); rerr != nil {
						return nil, conflicts, rerr
					}
				}
			}
		}
		out, err = patch(true)
	}
	if !pinned && spec.Namespace != "" && isNamespaceNotFound(err) {
		if cerr := m.createNamespace(ctx, c, spec.Namespace); cerr != nil && !apierrors.IsAlreadyExists(cerr) {
			return nil, conflicts, m.resourceError("create", "namespace "+spec.Namespace, "", cerr)
		}
		out, err = patch(true)
	}
	if isPreconditionConflict(err) || pinned && apierrors.IsNotFound(err) {
		return nil, conflicts, m.conflictError("apply", spec, err)
	}
	if err != nil {
		return nil, conflicts, m.callError("apply", spec, err)
	}
	if acc, err := meta.Accessor(out); err == nil {
		acc.SetManagedFields(nil)
	}
	return out, conflicts, nil
}

// applyPatch sends a server-side apply of body and returns the apiserver's
// answer as metadata only (a PartialObjectMetadata: the identity, the
// resourceVersion and the managedFields, which is all a write's caller
// reads), asked for with the metadata client's Accept header
// (as=PartialObjectMetadata): the apiserver then encodes, and the hub
// decodes, the object's metadata instead of the whole object, which for a
// large object (a CRD, a ConfigMap of hundreds of KB) is most of a
// repair's traffic. A Manager without a metadata client (the unit tests'
// fakes) applies through kc and takes its whole answer.
func (m *Manager) applyPatch(ctx context.Context, kc kindClient, kind kindInfo, spec hub.NodeSpec, body []byte, opts metav1.PatchOptions) (runtime.Object, error) {
	mc := m.metadataClient()
	if mc == nil {
		return kc.patch(ctx, spec.Name, types.ApplyPatchType, body, opts)
	}
	nri := mc.Resource(kind.gvr())
	var ri metadata.ResourceInterface = nri
	if kind.namespaced {
		ri = nri.Namespace(spec.Namespace)
	}
	out, err := ri.Patch(ctx, spec.Name, types.ApplyPatchType, body, opts)
	if err != nil {
		return nil, err // never a typed nil in the interface
	}
	return out, nil
}

// pinBody returns spec.Body with metadata.resourceVersion set to rv. Only
// the object's top level and its metadata are decoded; every other field
// is carried over as the JSON it is (validated, compacted): every edit
// repair pins its apply, and decoding a whole Deployment into maps and
// encoding it again took several times as long (BenchmarkPinBody).
func pinBody(spec hub.NodeSpec, rv string) ([]byte, error) {
	body, err := spec.JSON()
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if len(body) > 0 {
		if err := json.Unmarshal(body, &top); err != nil {
			return nil, fmt.Errorf("node %s: decode desired object: %w", spec.ID, err)
		}
	}
	if top == nil {
		return nil, errors.New("no desired object")
	}
	var meta map[string]json.RawMessage
	if raw, ok := top["metadata"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, fmt.Errorf("node %s: decode desired object's metadata: %w", spec.ID, err)
		}
	}
	if meta == nil {
		meta = make(map[string]json.RawMessage, 1)
	}
	if meta["resourceVersion"], err = json.Marshal(rv); err != nil {
		return nil, err
	}
	if top["metadata"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	return json.Marshal(top)
}

// takenOver lists the fields a forced apply of d's repair takes over from
// other field managers, as the managedFields of st's object (the object
// the apply is pinned to, with the entries ReadState keeps: those of other
// managers that touched spec or metadata) name them: each drifted field another
// manager owns (the field, a field inside it, or the entry holding it). It
// is what the apiserver's conflict answer to an unforced apply would list,
// without sending one.
func (m *Manager) takenOver(st hub.State, d hub.Drift) []hub.Conflict {
	if len(d.Fields) == 0 {
		return nil
	}
	owners, err := ownersOf(st)
	if err != nil || owners == nil {
		return nil
	}
	var out []hub.Conflict
	for _, f := range d.Fields {
		for _, o := range owners {
			if o.Manager == m.fieldManager || !drift.OwnsAny(o.Fields, f.Path) {
				continue
			}
			out = append(out, hub.Conflict{Field: f.Path, Manager: o.Manager})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

// isNamespaceNotFound reports whether err says the object's namespace does
// not exist.
func isNamespaceNotFound(err error) bool {
	if !apierrors.IsNotFound(err) {
		return false
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Details != nil && st.Status().Details.Kind != "" {
		return st.Status().Details.Kind == "namespaces"
	}
	return strings.Contains(err.Error(), "namespaces")
}

// conflictsOf extracts the conflicting fields and managers from an apply
// conflict error.
func conflictsOf(err error) []hub.Conflict {
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Details == nil {
		return []hub.Conflict{{Field: "", Manager: err.Error()}}
	}
	var out []hub.Conflict
	for _, c := range st.Status().Details.Causes {
		mgr := c.Message
		if i := strings.Index(mgr, `"`); i >= 0 {
			if j := strings.Index(mgr[i+1:], `"`); j >= 0 {
				mgr = mgr[i+1 : i+1+j]
			}
		}
		out = append(out, hub.Conflict{Manager: mgr, Field: strings.TrimPrefix(c.Field, ".")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

// Delete deletes the object st describes, with background propagation and
// the UID and resourceVersion of the object as preconditions. It refuses an
// object whose driftwatch.io/hub annotation names another hub (the error
// unwraps to hub.ErrOwnedByOther), one without our managed-by label
// (st.Owned false), and one whose node-id annotation names another NodeID.
// When the resourceVersion precondition meets a concurrent change, it reads
// the object fresh, checks it again and retries, up to conflictRetries
// times; an object replaced since st was read (another UID) is not deleted
// (the call fails with a conflict). A missing object is not an error.
func (m *Manager) Delete(ctx context.Context, spec hub.NodeSpec, st hub.State) error {
	if !st.Exists {
		return nil
	}
	if !st.Owned {
		if live := LiveObject(st); live != nil {
			if err := m.refuseOther("delete", spec, live); err != nil {
				return err
			}
		}
		return m.callError("delete", spec, fmt.Errorf("refusing: it does not carry the label %s=%s", kubeobj.ManagedByLabel, m.cfg.ManagedBy))
	}
	live, err := m.liveOf(spec, st)
	if err != nil {
		return err
	}
	kind, err := m.kindFor(spec)
	if err != nil {
		return m.callError("delete", spec, err)
	}
	owned := true
	for attempt := 0; ; attempt++ {
		if err := m.refuseOther("delete", spec, live); err != nil {
			return err
		}
		if !owned {
			return m.callError("delete", spec, fmt.Errorf("refusing: it does not carry the label %s=%s", kubeobj.ManagedByLabel, m.cfg.ManagedBy))
		}
		if got := live.GetAnnotations()[kubeobj.NodeIDAnnotation]; got != spec.ID.String() {
			return m.callError("delete", spec, fmt.Errorf("refusing: its %s annotation is %q, not %q",
				kubeobj.NodeIDAnnotation, got, spec.ID.String()))
		}
		if live.GetAnnotations()[kubeobj.PruneAnnotation] == kubeobj.PruneDisabled {
			return m.callError("delete", spec, fmt.Errorf("refusing: its %s annotation is %q: %w",
				kubeobj.PruneAnnotation, kubeobj.PruneDisabled, hub.ErrRefused))
		}
		if kind.generic && kind.gvk.Group == "" && kind.gvk.Kind == "Namespace" {
			if other, err := m.unmanagedIn(ctx, spec.Name); err != nil {
				return m.callError("delete", spec, err)
			} else if other != "" {
				return m.callError("delete", spec, fmt.Errorf("refusing: the namespace holds %s, which driftwatch does not manage: %w", other, hub.ErrRefused))
			}
		}
		c := m.clientset()
		if c == nil {
			return m.callError("delete", spec, errNotConnected)
		}
		kc := kind.clientFor(c, spec.Namespace)
		var pre metav1.Preconditions
		uid := live.GetUID()
		if uid != "" {
			pre.UID = &uid
		}
		if rv := live.GetResourceVersion(); rv != "" {
			pre.ResourceVersion = &rv
		}
		prop := metav1.DeletePropagationBackground
		err := kc.delete(ctx, spec.Name, metav1.DeleteOptions{PropagationPolicy: &prop, Preconditions: &pre})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil
		case !isPreconditionConflict(err):
			return m.callError("delete", spec, err)
		case attempt == conflictRetries:
			m.metrics.conflict(m.cfg.ID, conflictGaveUp)
			return m.conflictError("delete", spec, err)
		}
		obj, gerr := kc.get(ctx, spec.Name)
		if apierrors.IsNotFound(gerr) {
			return nil
		}
		if gerr != nil {
			return m.callError("get", spec, gerr)
		}
		fresh, _, cerr := liveObject(kind, obj)
		if cerr != nil {
			return m.callError("convert", spec, cerr)
		}
		if fresh.GetUID() != uid {
			m.metrics.conflict(m.cfg.ID, conflictGaveUp)
			return m.conflictError("delete", spec, fmt.Errorf("replaced since it was read (uid %s, now %s): %w", uid, fresh.GetUID(), err))
		}
		m.metrics.conflict(m.cfg.ID, conflictRetried)
		m.log.Info("write conflict: retrying the delete from a fresh read", "node", spec.ID.String(), "attempt", attempt+1, "err", err)
		live, owned = fresh, fresh.GetLabels()[kubeobj.ManagedByLabel] == m.cfg.ManagedBy
	}
}

// owns reports whether a live object carries this cluster's ownership marks:
// our managed-by label, and no hub annotation naming another hub.
func (m *Manager) owns(obj metav1.Object) bool {
	return obj.GetLabels()[kubeobj.ManagedByLabel] == m.cfg.ManagedBy && !kubeobj.OwnedByOther(obj.GetAnnotations(), m.cfg.HubID)
}

var _ hub.OwnedLister = (*Manager)(nil)

// ListOwned lists, from the synced watch caches, every object that carries
// our label and this hub's id annotation (objects without the annotation
// are not listed), but those annotated never to be pruned
// (kubeobj.PruneAnnotation): the hub never deletes them, and one that left
// a source was retained with a feed line saying so, so showing it again as
// an orphan (or pruning it with hub.pruneOrphans, which the annotation
// would refuse at every scan) would contradict that. Without a hub id it
// lists nothing.
//
// Objects of another hub are never listed (so never taken for orphans):
// those whose annotation names another hub, and those another hub's field
// manager wrote. They are counted in driftwatch_foreign_objects, and each
// other hub is logged once. Once the watch saw our own field manager write
// an object this hub did not write (another hub with the same id; see
// checkWriter), ListOwned refuses with an error that unwraps to
// hub.ErrOwnedByOther: that hub's objects cannot be told from ours.
func (m *Manager) ListOwned(context.Context) ([]hub.SpecRef, error) {
	if m.cfg.HubID == "" {
		return nil, nil
	}
	if m.released.Load() {
		return nil, m.resourceError("list owned", "objects", "", errReleased) // its caches stopped with its run
	}
	m.mu.Lock()
	type src struct {
		kind hub.Kind
		inf  cache.SharedIndexInformer
	}
	var infs []src
	for key, st := range m.informers {
		if st.synced {
			infs = append(infs, src{key.kind, st.informer})
		}
	}
	sameID := m.sameID
	m.mu.Unlock()
	var out []hub.SpecRef
	foreign := 0
	byHub, byManager := map[string]int{}, map[string]int{}
	for _, s := range infs {
		for _, item := range s.inf.GetIndexer().List() {
			acc, err := meta.Accessor(item)
			if err != nil || acc.GetLabels()[kubeobj.ManagedByLabel] != m.cfg.ManagedBy {
				continue
			}
			owner, ok := acc.GetAnnotations()[kubeobj.HubAnnotation]
			switch {
			case !ok:
				continue
			case owner != m.cfg.HubID:
				foreign++
				byHub[owner]++
				continue
			}
			c, compact := item.(*cachedObject)
			if compact && c.unusual != nil && c.unusual.otherHub != "" {
				foreign++
				byManager[c.unusual.otherHub]++
				continue
			}
			if compact && c.retained() || !compact && acc.GetAnnotations()[kubeobj.PruneAnnotation] == kubeobj.PruneDisabled {
				// Never pruned, so never an orphan: a prune that met it
				// retained it and ended its management with a feed line.
				continue
			}
			id := NodeIDFor(m.cfg.ID, s.kind, acc)
			out = append(out, hub.SpecRef{ID: id, Namespace: acc.GetNamespace(), Name: acc.GetName(), Kind: s.kind})
		}
	}
	m.metrics.setForeign(m.cfg.ID, foreign)
	for h, n := range byHub {
		m.noteForeign("otherHub", h, n)
	}
	for mgr, n := range byManager {
		m.noteForeign("otherFieldManager", mgr, n)
	}
	if sameID != "" {
		return nil, m.resourceError("list owned", "objects", "", fmt.Errorf(
			"refusing: another hub with this hub's id %q writes to this cluster (field manager %q wrote %s, and this hub did not): %w",
			m.cfg.HubID, m.fieldManager, sameID, hub.ErrOwnedByOther))
	}
	return out, nil
}

// cacheKey is the informer cache key of a namespaced object.
func cacheKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// maxGone bounds the UIDs a manager remembers of objects that left its
// cache.
const maxGone = 4096

// goneKey names an object that left the label-filtered cache.
type goneKey struct {
	kind            hub.Kind
	namespace, name string
}

// goneEntry is the UID an object had when it left the cache.
type goneEntry struct {
	uid string
	seq uint64
}

// trackGone records the UID of an object the watch reported deleted (it may
// only have lost our label), and forgets it when the object is back in the
// cache. Handlers call it before the event reaches the sink, so a Repair
// started by the event finds the record.
func (m *Manager) trackGone(kind hub.Kind, typ hub.EventType, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if obj == nil {
		return
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	key := goneKey{kind: kind, namespace: acc.GetNamespace(), name: acc.GetName()}
	m.mu.Lock()
	defer m.mu.Unlock()
	if typ != hub.EventDeleted {
		delete(m.gone, key)
		return
	}
	if acc.GetUID() == "" {
		return
	}
	m.putGoneLocked(key, string(acc.GetUID()))
}

// putGoneLocked records a UID, evicting the oldest record when full.
func (m *Manager) putGoneLocked(key goneKey, uid string) {
	if m.gone == nil {
		m.gone = make(map[goneKey]goneEntry)
	}
	if _, ok := m.gone[key]; !ok && len(m.gone) >= maxGone {
		var oldest goneKey
		oldestSeq := uint64(0)
		for k, e := range m.gone {
			if oldestSeq == 0 || e.seq < oldestSeq {
				oldest, oldestSeq = k, e.seq
			}
		}
		delete(m.gone, oldest)
	}
	m.goneSeq++
	m.gone[key] = goneEntry{uid: uid, seq: m.goneSeq}
}

// takeGone returns and forgets the UID recorded for key ("" when none).
func (m *Manager) takeGone(key goneKey) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.gone[key]
	if !ok {
		return ""
	}
	delete(m.gone, key)
	return e.uid
}

// restoreGone puts back a UID a failed Repair took, unless a newer record
// exists, so the retry can still tell a lost label from a delete.
func (m *Manager) restoreGone(key goneKey, uid string) {
	if uid == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.gone[key]; !ok {
		m.putGoneLocked(key, uid)
	}
}

package intent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
)

// Labels of the ConfigMaps a ConfigMapStore writes, besides
// kubeobj.ManagedByLabel.
const (
	// LabelHub carries the hub id: replicas of one hub share its records.
	LabelHub = "driftwatch.io/hub"
	// LabelIntent carries the record kind: paused, policies, holds,
	// decommissions or applied.
	LabelIntent = "driftwatch.io/intent"
	// LabelCluster carries the cluster of a sharded ConfigMap
	// (decommissions and applied).
	LabelCluster = "driftwatch.io/cluster"
	// LabelSwitchTimesOf carries the hub id on the ConfigMap of switch
	// times (when each pause and policy override was set). It is not
	// LabelHub: a driftwatch from before switch times lists every
	// ConfigMap labelled with its hub and refuses a kind it does not know,
	// so replicas of both versions can share the records while a hub is
	// upgraded or rolled back.
	LabelSwitchTimesOf = "driftwatch.io/switch-times-of"
	// LabelSwitchNotesOf carries the hub id on the ConfigMap of switch
	// notes (who paused each cluster and why, who set each policy
	// override and why, who placed each hold),
	// apart from LabelHub for the same reason as LabelSwitchTimesOf.
	LabelSwitchNotesOf = "driftwatch.io/switch-notes-of"
)

// Record kinds, the values of LabelIntent.
const (
	kindPaused        = "paused"
	kindPolicies      = "policies"
	kindHolds         = "holds"
	kindDecommissions = "decommissions"
	kindApplied       = "applied"
)

// configMapShards is how many ConfigMaps per cluster hold its applied (and
// its decommission) records. A ConfigMap holds at most 1 MiB, about 3,500
// applied records; 16 shards hold over 50,000 per cluster. A record's
// shard is a hash of its NodeID, so that any replica finds it without an
// index; changing this number is a schema change.
const configMapShards = 16

// ConfigMapOptions configure NewConfigMapStore. The zero value is ready to
// use.
type ConfigMapOptions struct {
	// ManagedBy is the value of the app.kubernetes.io/managed-by label on
	// the ConfigMaps. Default kubeobj.DefaultManagedBy ("driftwatch").
	ManagedBy string
	// FieldManager is the field manager of every write. Default
	// kubeobj.FieldManager ("driftwatch").
	FieldManager string
	// Timeout bounds each request of a method other than
	// NewConfigMapStore. Default 30s.
	Timeout time.Duration
}

// ConfigMapStore is a hub.IntentStore kept in ConfigMaps of one namespace,
// shared by every replica of a hub: a replica that takes over finds the
// pauses, holds, policy overrides, pending decommissions and applied
// references the others recorded. It is safe for concurrent use, and
// several stores (one per replica) may write the same hub's records at
// once.
//
// # Layout
//
// The ConfigMaps are named after the hub id and labelled
// app.kubernetes.io/managed-by, driftwatch.io/hub and driftwatch.io/intent
// (the record kind):
//
//	driftwatch-<hub>-paused                      cluster -> true
//	driftwatch-<hub>-switch-times                paused/<cluster>, policy/<application> -> time set
//	driftwatch-<hub>-switch-notes                paused/<cluster>, policy/<application>, hold/<scope>/<name> -> who set it, why
//	driftwatch-<hub>-policies                    application -> policy, a JSON string
//	driftwatch-<hub>-holds                       "scope/name" -> hold
//	driftwatch-<hub>-decommissions-<cluster>-<n> NodeID -> decommission record
//	driftwatch-<hub>-applied-<cluster>-<n>       NodeID -> spec reference
//
// Values are the JSON records of the state file (see Store); a switch
// time is a JSON RFC 3339 time. The switch times are labelled
// LabelSwitchTimesOf and the switch notes LabelSwitchNotesOf instead of
// LabelHub and LabelIntent (see there), and both are read by name. A
// switch's note is written before its record and deleted after it, as a
// switch time is; a hold's note names the hold by its start (Since), so
// that a note left by a hold that expired is never read as another's. Applied and
// decommission records, which can number many thousands, are sharded: per
// cluster (labelled driftwatch.io/cluster), so that replicas that own
// different clusters write different ConfigMaps, and within a cluster into
// 16 ConfigMaps by a hash of the NodeID, since one ConfigMap holds at most
// 1 MiB. A ConfigMap is created on its first record and deleted when its
// last record is.
//
// Data keys may hold only letters, digits, '-', '_' and '.', so a key is
// the record's identity with every other byte (and '_') written as _XX in
// upper-case hex: prod-eu:shop/api:deployment is
// prod-eu_3Ashop_2Fapi_3Adeployment. An identity whose escaped form exceeds
// the 253-byte key limit is keyed by sha256.<hex> of it instead; the record
// itself names its identity, and Load checks that every key matches its
// record.
//
// # Concurrent writers
//
// Every write changes single keys, so it is a JSON merge patch of those
// keys: the API server applies it to the ConfigMap's current version under
// its own optimistic concurrency (a compare-and-swap in etcd), so writes of
// two replicas never overwrite each other's keys and never need a
// read-modify-write from the client. Writes of one store to the same
// ConfigMap are batched (group commit): while one patch is in flight the
// others queue, and the next patch carries all of them; every write is
// durable (acknowledged by the API server) when its method returns. A
// ConfigMap is created with Create when the patch finds none (a concurrent
// create is retried as a patch), and an emptied one is deleted with a
// resourceVersion precondition, so a record another replica added
// meanwhile is never deleted with it.
//
// # Corrupt records
//
// As with the state file, Load reads everything or nothing: a record that
// does not decode, whose key does not match it, or that sits in the wrong
// ConfigMap, fails Load with an error wrapping ErrCorrupt that names each
// such ConfigMap and key; nothing is deleted or rewritten, and writes to
// other keys leave it in place. Fix or delete the key with kubectl.
//
// # Permissions
//
// The store needs get, list, create, patch and delete on configmaps in its
// namespace, and nothing else.
type ConfigMapStore struct {
	cs        kubernetes.Interface
	namespace string
	hubID     string
	opts      ConfigMapOptions

	// ctx is cancelled by Close: it ends in-flight requests.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	writers map[string]*groupWriter // by ConfigMap name
	closed  bool
}

var _ hub.IntentStore = (*ConfigMapStore)(nil)

// NewConfigMapStore returns the store of hub hubID in namespace. hubID must
// be a DNS label (as config requires of hub.id). It lists the hub's
// ConfigMaps once, bounded by ctx, so that a missing namespace, missing
// permissions or an unreachable API server are reported now rather than at
// the first write. ctx bounds only this call: the store's own requests run
// until Close.
func NewConfigMapStore(ctx context.Context, cs kubernetes.Interface, namespace, hubID string, opts ConfigMapOptions) (*ConfigMapStore, error) {
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return nil, fmt.Errorf("intent configmaps: namespace %q: %s", namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Label(hubID); len(errs) > 0 {
		return nil, fmt.Errorf("intent configmaps: hub id %q: %s", hubID, strings.Join(errs, "; "))
	}
	if opts.ManagedBy == "" {
		opts.ManagedBy = kubeobj.DefaultManagedBy
	}
	if errs := validation.IsValidLabelValue(opts.ManagedBy); len(errs) > 0 {
		return nil, fmt.Errorf("intent configmaps: managed-by %q: %s", opts.ManagedBy, strings.Join(errs, "; "))
	}
	if opts.FieldManager == "" {
		opts.FieldManager = kubeobj.FieldManager
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	s := &ConfigMapStore{cs: cs, namespace: namespace, hubID: hubID, opts: opts, writers: make(map[string]*groupWriter)}
	if _, err := cs.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{LabelSelector: s.selector(), Limit: 1}); err != nil {
		return nil, fmt.Errorf("intent configmaps in namespace %s: list: %w", namespace, err)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Namespace returns the namespace of the store's ConfigMaps.
func (s *ConfigMapStore) Namespace() string { return s.namespace }

// Close ends in-flight requests; later writes fail. It is idempotent and
// returns nil.
func (s *ConfigMapStore) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	return nil
}

// selector selects the hub's ConfigMaps.
func (s *ConfigMapStore) selector() string {
	return labels.SelectorFromSet(labels.Set{kubeobj.ManagedByLabel: s.opts.ManagedBy, LabelHub: s.hubID}).String()
}

// location is where a record lives: its ConfigMap, that ConfigMap's
// labels, and its key.
type location struct {
	name   string
	labels map[string]string
	key    string
}

// locate returns the location of the record of kind with identity id; for
// decommissions and applied, cluster is the NodeID's cluster.
func (s *ConfigMapStore) locate(kind, cluster, id string) location {
	name := "driftwatch-" + s.hubID + "-" + kind
	lbl := map[string]string{kubeobj.ManagedByLabel: s.opts.ManagedBy, LabelHub: s.hubID, LabelIntent: kind}
	if kind == kindDecommissions || kind == kindApplied {
		c := clusterPart(cluster)
		h := fnv.New32a()
		_, _ = h.Write([]byte(id))
		name += fmt.Sprintf("-%s-%02d", c, h.Sum32()%configMapShards)
		lbl[LabelCluster] = c
	}
	return location{name: name, labels: lbl, key: dataKey(id)}
}

// clusterPart is a cluster id as it appears in ConfigMap names and labels:
// the id itself when it is a DNS label no longer than 40 bytes (config
// requires DNS labels), else "x" and a hash of it.
func clusterPart(cluster string) string {
	if len(cluster) <= 40 && len(validation.IsDNS1123Label(cluster)) == 0 {
		return cluster
	}
	sum := sha256.Sum256([]byte(cluster))
	return "x" + hex.EncodeToString(sum[:10])
}

// dataKey returns the ConfigMap data key of an identity: letters, digits
// and '-' as they are, every other byte as _XX; sha256.<hex> when that is
// longer than a key may be.
func dataKey(id string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-':
			b.WriteByte(c)
		default:
			b.WriteByte('_')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xF])
		}
	}
	if b.Len() > validation.DNS1123SubdomainMaxLength || b.Len() == 0 {
		sum := sha256.Sum256([]byte(id))
		return "sha256." + hex.EncodeToString(sum[:])
	}
	return b.String()
}

// write stores val (nil: deletes the key) at loc; what names the operation
// in errors.
func (s *ConfigMapStore) write(what string, loc location, val any) error {
	var v *string
	if val != nil {
		data, err := json.Marshal(val)
		if err != nil {
			return fmt.Errorf("intent configmap %s/%s: %s: %w", s.namespace, loc.name, what, err)
		}
		str := string(data)
		v = &str
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("intent configmap %s/%s: %s: store closed", s.namespace, loc.name, what)
	}
	w := s.writers[loc.name]
	if w == nil {
		w = &groupWriter{pending: make(map[string]*string), linger: groupLinger}
		s.writers[loc.name] = w
	}
	s.mu.Unlock()
	err := w.do(loc.key, v, func(batch map[string]*string) error {
		return s.flush(loc.name, loc.labels, batch)
	})
	if err != nil {
		return fmt.Errorf("intent configmap %s/%s: %s: %w", s.namespace, loc.name, what, err)
	}
	return nil
}

// maxCreateRaces bounds how often flush retries after losing a race with
// another replica that creates or deletes the same ConfigMap.
const maxCreateRaces = 5

// flush applies batch (key -> value, nil deletes) to ConfigMap name: a
// merge patch, a create when there is none, and a delete when it became
// empty.
func (s *ConfigMapStore) flush(name string, lbl map[string]string, batch map[string]*string) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.Timeout)
	defer cancel()
	cms := s.cs.CoreV1().ConfigMaps(s.namespace)
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": lbl}, "data": batch})
	if err != nil {
		return err
	}
	for range maxCreateRaces {
		cm, err := cms.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: s.opts.FieldManager})
		switch {
		case err == nil:
			if len(cm.Data) > 0 || len(cm.BinaryData) > 0 {
				return nil
			}
			// Emptied: delete it unless someone wrote it since.
			rv := cm.ResourceVersion
			err := cms.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
			if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				return nil
			}
			return fmt.Errorf("delete empty: %w", err)
		case !apierrors.IsNotFound(err):
			return err
		}
		data := make(map[string]string, len(batch))
		for k, v := range batch {
			if v != nil {
				data[k] = *v
			}
		}
		if len(data) == 0 {
			return nil // only deletes, and there is nothing to delete from
		}
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.namespace, Labels: lbl}, Data: data}
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: s.opts.FieldManager})
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		// Another replica created it: patch it.
	}
	return fmt.Errorf("created and deleted concurrently %d times in a row", maxCreateRaces)
}

// SetPaused records a cluster's pause, made at at with its note; false
// deletes it (see setNoted).
func (s *ConfigMapStore) SetPaused(cluster string, paused bool, at time.Time, note hub.SwitchNote) error {
	what := fmt.Sprintf("set paused %q", cluster)
	if cluster == "" {
		return fmt.Errorf("intent configmaps: %s: empty cluster", what)
	}
	var val any
	if paused {
		val = true
	}
	return s.setNoted(what, s.locate(kindPaused, "", cluster), switchPaused+cluster, val, at, note)
}

// SetPolicy records an application's policy override, set at at with its
// note; "" deletes it (see setNoted).
func (s *ConfigMapStore) SetPolicy(app string, p hub.Policy, at time.Time, note hub.SwitchNote) error {
	what := fmt.Sprintf("set policy %q", app)
	if app == "" {
		return fmt.Errorf("intent configmaps: %s: empty application", what)
	}
	var val any
	if p != "" {
		val = p
	}
	return s.setNoted(what, s.locate(kindPolicies, "", app), switchPolicy+app, val, at, note)
}

// setNoted writes a switch (see setSwitch) with its note: the note before
// the switch's record (an empty note deletes an earlier one) and, when the
// switch is deleted (val nil), deleted after it, so a replica never reads
// a switch with another's note.
func (s *ConfigMapStore) setNoted(what string, loc location, id string, val any, at time.Time, note hub.SwitchNote) error {
	notes := s.switchNotes(id)
	if val != nil {
		var rec any
		if note != (hub.SwitchNote{}) {
			rec = switchNoteRecord{Switch: id, By: note.By, Reason: note.Reason}
		}
		if err := s.write(what, notes, rec); err != nil {
			return err
		}
	}
	if err := s.setSwitch(what, loc, id, val, at); err != nil || val != nil {
		return err
	}
	return s.write(what, notes, nil)
}

// Switch time keys, before the cluster or application id.
const (
	switchPaused = "paused/"
	switchPolicy = "policy/"
)

// setSwitch writes a switch's record (val; nil deletes it) at loc and the
// time it was set under key in the switch times' ConfigMap: the time
// before the record (a switch is never read with an older time than its
// own), deleted after a deleted record. A replica that holds the same
// switch and reads a different time takes it as the switch set again.
func (s *ConfigMapStore) setSwitch(what string, loc location, key string, val any, at time.Time) error {
	times := s.switchTimes()
	times.key = dataKey(key)
	if val == nil {
		if err := s.write(what, loc, nil); err != nil {
			return err
		}
		return s.write(what, times, nil)
	}
	var stamp any
	if !at.IsZero() {
		stamp = at.UTC()
	}
	if err := s.write(what, times, stamp); err != nil {
		return err
	}
	return s.write(what, loc, val)
}

// switchTimes locates the ConfigMap of switch times (key unset).
func (s *ConfigMapStore) switchTimes() location {
	return location{
		name:   "driftwatch-" + s.hubID + "-switch-times",
		labels: map[string]string{kubeobj.ManagedByLabel: s.opts.ManagedBy, LabelSwitchTimesOf: s.hubID},
	}
}

// Switch note keys, before the cluster, the application or the hold
// target: a pause's note is under switchPaused and an override's under
// switchPolicy (as their times), a hold's under switchHold.
const switchHold = "hold/"

// switchNoteRecord is a switch's note in the ConfigMap of switch notes:
// who set it and, for a pause or an override, why (a hold's reason is in
// its record).
// Since names the hold it is the note of.
type switchNoteRecord struct {
	Switch string    `json:"switch"`
	By     string    `json:"by,omitempty"`
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since,omitzero"`
}

// switchNotes locates the note of a switch ("paused/<cluster>",
// "policy/<application>", "hold/<target>") in the ConfigMap of switch
// notes; "" locates the ConfigMap.
func (s *ConfigMapStore) switchNotes(id string) location {
	loc := location{
		name:   "driftwatch-" + s.hubID + "-switch-notes",
		labels: map[string]string{kubeobj.ManagedByLabel: s.opts.ManagedBy, LabelSwitchNotesOf: s.hubID},
	}
	if id != "" {
		loc.key = dataKey(id)
	}
	return loc
}

// getByName reads a ConfigMap of the store read by name (nil without it),
// with a function that wraps a record's error in its name and key, and the
// error of a ConfigMap whose binaryData is set.
func (s *ConfigMapStore) getByName(ctx context.Context, loc location) (*corev1.ConfigMap, func(key string, err error) error, []error, error) {
	cm, err := s.cs.CoreV1().ConfigMaps(s.namespace).Get(ctx, loc.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, nil, nil
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("intent configmaps in namespace %s: get %s: %w", s.namespace, loc.name, err)
	}
	fail := func(key string, err error) error {
		return &configMapRecordError{namespace: cm.Namespace, name: cm.Name, key: key, err: err}
	}
	var bad []error
	if len(cm.BinaryData) > 0 {
		bad = append(bad, fail("", errors.New("binaryData is not used by driftwatch")))
	}
	return cm, fail, bad, nil
}

// loadSwitchNotes reads the notes of the pauses, overrides and holds of in (none
// without the ConfigMap) and returns the errors of the records that do not
// load. Notes of clusters not paused in in (a deletion half written) and
// of holds not in in, or of another hold on the same target (a note left
// by one that expired), are left out.
func (s *ConfigMapStore) loadSwitchNotes(ctx context.Context, in *hub.Intent) ([]error, error) {
	cm, fail, bad, err := s.getByName(ctx, s.switchNotes(""))
	if cm == nil || err != nil {
		return nil, err
	}
	holds := make(map[string]int, len(in.Holds))
	for i, hd := range in.Holds {
		holds[hd.Target.String()] = i
	}
	for _, key := range slices.Sorted(maps.Keys(cm.Data)) {
		var r switchNoteRecord
		if err := decode([]byte(cm.Data[key]), &r); err != nil {
			bad = append(bad, fail(key, err))
			continue
		}
		if dataKey(r.Switch) != key {
			bad = append(bad, fail(key, fmt.Errorf("record is for %q, whose key is %s", r.Switch, dataKey(r.Switch))))
			continue
		}
		// The switch times' ConfigMap has the times (At stays zero here).
		if c, ok := strings.CutPrefix(r.Switch, switchPaused); ok && c != "" {
			noteRecord{ID: c, By: r.By, Reason: r.Reason}.addTo(in.Paused[c], in.PausedAt, in.PauseNotes)
		} else if app, ok := strings.CutPrefix(r.Switch, switchPolicy); ok && app != "" {
			_, set := in.Policies[app]
			noteRecord{ID: app, By: r.By, Reason: r.Reason}.addTo(set, in.PolicySetAt, in.PolicyNotes)
		} else if t, ok := strings.CutPrefix(r.Switch, switchHold); ok && t != "" {
			if i, held := holds[t]; held && in.Holds[i].Since.Equal(r.Since) {
				in.Holds[i].By = r.By
			}
		} else {
			bad = append(bad, fail(key, fmt.Errorf("%q: not a switch (%s<cluster>, %s<application> or %s<scope>/<name>)", r.Switch, switchPaused, switchPolicy, switchHold)))
		}
	}
	return bad, nil
}

// loadSwitchTimes reads the time each pause and policy override of in was
// set (none without the ConfigMap) and returns the errors of the records
// that do not load. Times of switches not in in (a deletion half written)
// are left out.
func (s *ConfigMapStore) loadSwitchTimes(ctx context.Context, in *hub.Intent) ([]error, error) {
	cm, fail, bad, err := s.getByName(ctx, s.switchTimes())
	if cm == nil || err != nil {
		return nil, err
	}
	for _, key := range slices.Sorted(maps.Keys(cm.Data)) {
		var at time.Time
		if err := decode([]byte(cm.Data[key]), &at); err != nil {
			bad = append(bad, fail(key, err))
			continue
		}
		id, err := unescapeKey(key)
		if err != nil {
			bad = append(bad, fail(key, err))
			continue
		}
		if c, ok := strings.CutPrefix(id, switchPaused); ok && c != "" {
			if in.Paused[c] {
				in.PausedAt[c] = at
			}
		} else if app, ok := strings.CutPrefix(id, switchPolicy); ok && app != "" {
			if _, set := in.Policies[app]; set {
				in.PolicySetAt[app] = at
			}
		} else {
			bad = append(bad, fail(key, fmt.Errorf("%q: not a switch (%s<cluster> or %s<application>)", id, switchPaused, switchPolicy)))
		}
	}
	return bad, nil
}

// PutHold records a hold, replacing one on the same target. The target must
// be valid (hub.HoldTarget.Valid).
func (s *ConfigMapStore) PutHold(h hub.Hold) error {
	what := "put hold " + h.Target.String()
	if err := h.Target.Valid(); err != nil {
		return fmt.Errorf("intent configmaps: %s: %w", what, err)
	}
	// Who placed it is in its note, not its record: a replica of a version
	// before notes refuses a record with a field it does not know.
	var note any
	if h.By != "" {
		note = switchNoteRecord{Switch: switchHold + h.Target.String(), By: h.By, Since: h.Since}
	}
	if err := s.write(what, s.switchNotes(switchHold+h.Target.String()), note); err != nil {
		return err
	}
	rec := holdRecord{Scope: h.Target.Scope, Name: h.Target.Name, Reason: h.Reason, Since: h.Since, Until: h.Until}
	return s.write(what, s.locate(kindHolds, "", h.Target.String()), rec)
}

// DeleteHold deletes the hold on a target; none is not an error, an invalid
// target is.
func (s *ConfigMapStore) DeleteHold(t hub.HoldTarget) error {
	what := "delete hold " + t.String()
	if err := t.Valid(); err != nil {
		return fmt.Errorf("intent configmaps: %s: %w", what, err)
	}
	if err := s.write(what, s.locate(kindHolds, "", t.String()), nil); err != nil {
		return err
	}
	return s.write(what, s.switchNotes(switchHold+t.String()), nil)
}

// DeleteExpiredHold deletes the hold on h's target only while the stored
// one still ends at h.Until: a compare-and-delete (see compareAndDelete),
// so that a hold renewed on the target by any replica stays. Its note goes
// with it while the note is still that hold's. None is not an error, an
// invalid target is.
func (s *ConfigMapStore) DeleteExpiredHold(h hub.Hold) error {
	what := "delete expired hold " + h.Target.String()
	if err := h.Target.Valid(); err != nil {
		return fmt.Errorf("intent configmaps: %s: %w", what, err)
	}
	deleted, err := s.compareAndDelete(what, s.locate(kindHolds, "", h.Target.String()), func(val []byte) (bool, error) {
		var rec holdRecord
		err := decode(val, &rec)
		return err == nil && rec.Until.Equal(h.Until), err // else renewed since
	})
	if err != nil || !deleted {
		return err
	}
	_, err = s.compareAndDelete(what, s.switchNotes(switchHold+h.Target.String()), func(val []byte) (bool, error) {
		var rec switchNoteRecord
		err := decode(val, &rec)
		return err == nil && rec.Since.Equal(h.Since), err // else a later hold's
	})
	return err
}

// compareAndDelete deletes the record at loc while match says it is the
// one to delete: a JSON patch that tests the value read and removes it,
// read again when another replica changed it in between. deleted is false
// when there is no such record or match refused it.
func (s *ConfigMapStore) compareAndDelete(what string, loc location, match func(val []byte) (bool, error)) (deleted bool, err error) {
	fail := func(err error) error {
		return fmt.Errorf("intent configmap %s/%s: %s: %w", s.namespace, loc.name, what, err)
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.Timeout)
	defer cancel()
	cms := s.cs.CoreV1().ConfigMaps(s.namespace)
	path := "/data/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(loc.key)
	for range maxCreateRaces {
		cm, err := cms.Get(ctx, loc.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fail(err)
		}
		val, ok := cm.Data[loc.key]
		if !ok {
			return false, nil
		}
		if ok, err := match([]byte(val)); err != nil || !ok {
			if err != nil {
				err = fail(fmt.Errorf("key %s: %w", loc.key, err))
			}
			return false, err
		}
		patch, err := json.Marshal([]map[string]any{
			{"op": "test", "path": path, "value": val},
			{"op": "remove", "path": path},
		})
		if err != nil {
			return false, fail(err)
		}
		_, err = cms.Patch(ctx, loc.name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: s.opts.FieldManager})
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		case apierrors.IsInvalid(err):
			continue // the test failed: changed since the read
		default:
			return false, fail(err)
		}
	}
	return false, fail(fmt.Errorf("changed by others %d times in a row", maxCreateRaces))
}

// PutDecommission records a pending decommission, replacing one of the same
// NodeID.
func (s *ConfigMapStore) PutDecommission(d hub.DecommissionRecord) error {
	what := "put decommission " + d.Ref.ID.String()
	if err := validID(d.Ref.ID); err != nil {
		return fmt.Errorf("intent configmaps: %s: %w", what, err)
	}
	rec := decommissionRecord{Ref: toRef(d.Ref), Since: d.Since, Orphan: d.Orphan}
	return s.write(what, s.locate(kindDecommissions, d.Ref.ID.Cluster, d.Ref.ID.String()), rec)
}

// DeleteDecommission deletes a decommission record; none is not an error.
func (s *ConfigMapStore) DeleteDecommission(id hub.NodeID) error {
	what := "delete decommission " + id.String()
	if err := validID(id); err != nil {
		return fmt.Errorf("intent configmaps: %s: %w", what, err)
	}
	return s.write(what, s.locate(kindDecommissions, id.Cluster, id.String()), nil)
}

// PutApplied records an applied spec, replacing one of the same NodeID.
func (s *ConfigMapStore) PutApplied(r hub.SpecRef) error {
	what := "put applied " + r.ID.String()
	if err := validID(r.ID); err != nil {
		return fmt.Errorf("intent configmaps: %s: %w", what, err)
	}
	return s.write(what, s.locate(kindApplied, r.ID.Cluster, r.ID.String()), toRef(r))
}

// DeleteApplied deletes an applied record; none is not an error.
func (s *ConfigMapStore) DeleteApplied(id hub.NodeID) error {
	what := "delete applied " + id.String()
	if err := validID(id); err != nil {
		return fmt.Errorf("intent configmaps: %s: %w", what, err)
	}
	return s.write(what, s.locate(kindApplied, id.Cluster, id.String()), nil)
}

// maxRecordErrors bounds how many corrupt records a Load error lists.
const maxRecordErrors = 10

// Load lists the hub's ConfigMaps and decodes every record. The maps are
// never nil; Holds are ordered by target ("scope/name") and Decommissions
// by NodeID text. Corrupt records fail it with an error wrapping ErrCorrupt
// that names each ConfigMap and key (up to 10, then a count).
func (s *ConfigMapStore) Load() (hub.Intent, error) {
	return s.load(s.selector())
}

// LoadOverrides reads only the operator's overrides (pauses, policy
// overrides, holds): the ConfigMaps of those kinds, not the per-cluster
// shards of applied and decommission records, which replicas re-reading
// the intent every lease would otherwise list again and again. It
// implements hub.OverridesLoader.
func (s *ConfigMapStore) LoadOverrides() (hub.Intent, error) {
	sel := labels.SelectorFromSet(labels.Set{kubeobj.ManagedByLabel: s.opts.ManagedBy, LabelHub: s.hubID}).String() +
		"," + LabelIntent + " in (" + kindPaused + "," + kindPolicies + "," + kindHolds + ")"
	return s.load(sel)
}

// load reads the records of the ConfigMaps selector matches.
func (s *ConfigMapStore) load(selector string) (hub.Intent, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.Timeout)
	defer cancel()
	in := newIntent()
	var bad []error
	opts := metav1.ListOptions{LabelSelector: selector, Limit: 250}
	for {
		list, err := s.cs.CoreV1().ConfigMaps(s.namespace).List(ctx, opts)
		if err != nil {
			return hub.Intent{}, fmt.Errorf("intent configmaps in namespace %s: list: %w", s.namespace, err)
		}
		for i := range list.Items {
			bad = append(bad, s.loadConfigMap(&list.Items[i], &in)...)
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	badTimes, err := s.loadSwitchTimes(ctx, &in)
	if err != nil {
		return hub.Intent{}, err
	}
	bad = append(bad, badTimes...)
	badNotes, err := s.loadSwitchNotes(ctx, &in)
	if err != nil {
		return hub.Intent{}, err
	}
	bad = append(bad, badNotes...)
	if len(bad) > 0 {
		n := len(bad)
		if n > maxRecordErrors {
			bad = append(bad[:maxRecordErrors], fmt.Errorf("%d more", n-maxRecordErrors))
		}
		return hub.Intent{}, fmt.Errorf("intent configmaps in namespace %s: %w: %d bad record(s): %w; nothing was changed: fix or delete them", s.namespace, ErrCorrupt, n, errors.Join(bad...))
	}
	slices.SortFunc(in.Holds, func(a, b hub.Hold) int { return strings.Compare(a.Target.String(), b.Target.String()) })
	slices.SortFunc(in.Decommissions, func(a, b hub.DecommissionRecord) int {
		return strings.Compare(a.Ref.ID.String(), b.Ref.ID.String())
	})
	return in, nil
}

// configMapRecordError is a record of a ConfigMap that does not load.
type configMapRecordError struct {
	namespace, name, key string
	err                  error
}

// Error names the ConfigMap and key.
func (e *configMapRecordError) Error() string {
	if e.key == "" {
		return fmt.Sprintf("configmap %s/%s: %v", e.namespace, e.name, e.err)
	}
	return fmt.Sprintf("configmap %s/%s key %q: %v", e.namespace, e.name, e.key, e.err)
}

// Unwrap returns the decoding error.
func (e *configMapRecordError) Unwrap() error { return e.err }

// loadConfigMap decodes the records of one ConfigMap into in and returns
// the errors of those that do not load, in key order.
func (s *ConfigMapStore) loadConfigMap(cm *corev1.ConfigMap, in *hub.Intent) []error {
	fail := func(key string, err error) error {
		return &configMapRecordError{namespace: cm.Namespace, name: cm.Name, key: key, err: err}
	}
	kind := cm.Labels[LabelIntent]
	var decodeRec func(key, val string) (identity, cluster string, err error)
	switch kind {
	case kindPaused:
		decodeRec = func(key, val string) (string, string, error) {
			var paused bool
			if err := decode([]byte(val), &paused); err != nil {
				return "", "", err
			}
			id, err := unescapeKey(key)
			if err != nil {
				return "", "", err
			}
			if paused {
				in.Paused[id] = true
			}
			return id, "", nil
		}
	case kindPolicies:
		decodeRec = func(key, val string) (string, string, error) {
			var p hub.Policy
			if err := decode([]byte(val), &p); err != nil {
				return "", "", err
			}
			if p != hub.PolicyRepair && p != hub.PolicyWarn {
				return "", "", fmt.Errorf("policy %q: want %s or %s", p, hub.PolicyRepair, hub.PolicyWarn)
			}
			app, err := unescapeKey(key)
			if err != nil {
				return "", "", err
			}
			in.Policies[app] = p
			return app, "", nil
		}
	case kindHolds:
		decodeRec = func(_, val string) (string, string, error) {
			var r holdRecord
			if err := decode([]byte(val), &r); err != nil {
				return "", "", err
			}
			t := hub.HoldTarget{Scope: r.Scope, Name: r.Name}
			if err := t.Valid(); err != nil {
				return "", "", err
			}
			in.Holds = append(in.Holds, hub.Hold{Target: t, Reason: r.Reason, Since: r.Since, Until: r.Until})
			return t.String(), "", nil
		}
	case kindDecommissions:
		decodeRec = func(_, val string) (string, string, error) {
			var r decommissionRecord
			if err := decode([]byte(val), &r); err != nil {
				return "", "", err
			}
			if err := validID(r.Ref.ID); err != nil {
				return "", "", err
			}
			in.Decommissions = append(in.Decommissions, hub.DecommissionRecord{Ref: r.Ref.ref(), Since: r.Since, Orphan: r.Orphan})
			return r.Ref.ID.String(), r.Ref.ID.Cluster, nil
		}
	case kindApplied:
		decodeRec = func(_, val string) (string, string, error) {
			var r refRecord
			if err := decode([]byte(val), &r); err != nil {
				return "", "", err
			}
			if err := validID(r.ID); err != nil {
				return "", "", err
			}
			if _, dup := in.Applied[r.ID]; dup {
				return "", "", fmt.Errorf("second record for %s", r.ID)
			}
			in.Applied[r.ID] = r.ref()
			return r.ID.String(), r.ID.Cluster, nil
		}
	default:
		return []error{fail("", fmt.Errorf("label %s=%q: not a record kind of this driftwatch", LabelIntent, kind))}
	}
	var errs []error
	if len(cm.BinaryData) > 0 {
		errs = append(errs, fail("", errors.New("binaryData is not used by driftwatch")))
	}
	for _, key := range slices.Sorted(maps.Keys(cm.Data)) {
		id, cluster, err := decodeRec(key, cm.Data[key])
		if err == nil {
			loc := s.locate(kind, cluster, id)
			switch {
			case loc.key != key:
				err = fmt.Errorf("record is for %s, whose key is %s", id, loc.key)
			case loc.name != cm.Name:
				err = fmt.Errorf("record for %s belongs in configmap %s", id, loc.name)
			}
		}
		if err != nil {
			errs = append(errs, fail(key, err))
		}
	}
	return errs
}

// unescapeKey returns the identity of a data key written by dataKey; a
// hashed key or one that is not in canonical form is an error.
func unescapeKey(key string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c != '_' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(key) {
			return "", errors.New("key ends inside an escape")
		}
		n, err := hex.DecodeString(key[i+1 : i+3])
		if err != nil {
			return "", fmt.Errorf("key escape %q: %w", key[i:i+3], err)
		}
		b.WriteByte(n[0])
		i += 2
	}
	id := b.String()
	if dataKey(id) != key {
		return "", fmt.Errorf("key is not the canonical key %s of %q", dataKey(id), id)
	}
	return id, nil
}

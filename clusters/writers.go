package clusters

import (
	"errors"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/driftwatch/driftwatch/hub"
)

// Two hubs on one cluster.
//
// A hub never writes an object whose driftwatch.io/hub annotation names
// another hub, and writes under a field manager of its own
// (kubeobj.FieldManagerFor), so hubs with different ids are told apart by the
// annotation and by managedFields. Two hubs with the same id (the default
// one, typically) carry the same annotation and the same field manager:
// nothing on an object tells their objects apart, and each would take the
// other's for its own orphans. What does tell them apart is a write: the
// watch shows every write to an object carrying our marks, and the
// managedFields Time of our field manager moves with each write by that
// name. The backend records the writes it makes (beginWrite, endWrite, in
// the cluster's writeLog); a watched write by our field manager that it
// did not make is another hub with our id (checkWriter). It is reported
// (logged once, counted in driftwatch_same_id_writes_total), and from then
// on ListOwned refuses to list orphans on the cluster: the other hub's
// objects that it did not write while we watched cannot be told from ours.
//
// The check is cheap: the cache keeps our field manager's latest write time
// in the padding of its compact form (cachedObject.ownWrite), and a write
// costs one map update. Its limits: a write in the same second as one of
// ours is not seen, an idle other hub is seen only once it writes, and a
// replica of this hub that still writes while another takes its cluster
// over looks like one.

// writeLog records the hub's own writes to one cluster. A Registry keeps
// one per cluster across restarts of its manager, so that a write a
// previous manager still had on the wire is not taken for another hub's.
type writeLog struct {
	mu     sync.Mutex
	writes map[goneKey]*ownWrite
	seq    uint64
}

// ownWrite is what a writeLog knows of the hub's writes to one object.
type ownWrite struct {
	// inflight counts writes on the wire: their watch events may arrive
	// before the call returns.
	inflight int
	// at is the latest managedFields Time (Unix seconds) of our field
	// manager that one of our writes returned.
	at uint32
	// uncertain is set when a write failed without an answer from the
	// apiserver (it may have landed): the next change counts as ours.
	uncertain bool
	// seen is the latest write time of our field manager the watch showed
	// while the record was kept.
	seen uint32
	seq  uint64
}

// settled reports whether the record is no longer needed: no write on the
// wire, none that may have landed unseen, and the watch has shown the
// latest one that returned (or none returned a time: each failed with an
// answer, so none landed). The watch shows an object's changes in order,
// and checkWriter looks only at a write time that moved, so no later event
// can carry one of the record's writes.
func (w *ownWrite) settled() bool {
	return w.inflight == 0 && !w.uncertain && w.seen >= w.at
}

// beginWrite records that a write of ours to key is about to be sent.
func (m *Manager) beginWrite(key goneKey) {
	l := m.writes
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entryLocked(key).inflight++
}

// endWrite records the end of a write begun with beginWrite: the object it
// returned (nil when it failed) and its error; an accepted write's time is
// kept for the probe (Manager.accepted).
func (m *Manager) endWrite(key goneKey, out runtime.Object, err error) {
	if err == nil {
		m.accepted.Store(m.now().UnixNano())
	}
	var at uint32
	if out != nil {
		if acc, aerr := meta.Accessor(out); aerr == nil {
			at, _ = writers(acc.GetManagedFields(), m.fieldManager)
		}
	}
	l := m.writes
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.entryLocked(key)
	w.inflight = max(w.inflight-1, 0)
	w.at = max(w.at, at)
	var status apierrors.APIStatus
	if err != nil && !errors.As(err, &status) {
		w.uncertain = true // no answer: it may have landed
	}
	if w.settled() {
		delete(l.writes, key) // its echo came before the call returned
	}
}

// entryLocked returns key's record, making one (and evicting the oldest
// idle one when there are maxGone) if needed.
func (l *writeLog) entryLocked(key goneKey) *ownWrite {
	if w, ok := l.writes[key]; ok {
		return w
	}
	if l.writes == nil {
		l.writes = make(map[goneKey]*ownWrite)
	}
	if len(l.writes) >= maxGone {
		var oldest goneKey
		var oldestSeq uint64
		for k, w := range l.writes {
			if w.inflight == 0 && (oldestSeq == 0 || w.seq < oldestSeq) {
				oldest, oldestSeq = k, w.seq
			}
		}
		if oldestSeq != 0 {
			delete(l.writes, oldest)
		}
	}
	l.seq++
	w := &ownWrite{seq: l.seq}
	l.writes[key] = w
	return w
}

// ours reports whether a watched write time of our field manager on key
// comes from one of our writes (one on the wire, one that returned that
// time or a later one, or one that failed without an answer: that one
// counts once). A record is dropped once settled, so the log holds only
// writes whose echo is still to come, not one record per object written.
func (l *writeLog) ours(key goneKey, at uint32) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.writes[key]
	if w == nil {
		return false
	}
	w.seen = max(w.seen, at)
	ours := w.inflight > 0 || at <= w.at
	if !ours && w.uncertain {
		w.uncertain, ours = false, true
	}
	if ours && w.settled() {
		delete(l.writes, key) // the echo of the latest write: done
	}
	return ours
}

// checkWriter looks at a watched change of an object for a write by our
// field manager that we did not make: on an update, our field manager's
// write time moved; on an add (after the initial list), the object was
// created by our field manager. Only objects carrying our label and a
// node-id annotation count (what a hub applies).
func (m *Manager) checkWriter(kind hub.Kind, old, obj any, added bool) {
	c, ok := obj.(*cachedObject)
	if !ok || c.ownWrite == 0 || m.cfg.Replicated {
		return
	}
	labels, annots := c.ownershipMarks()
	if labels[kubeobj.ManagedByLabel] != m.cfg.ManagedBy || annots[kubeobj.NodeIDAnnotation] == "" {
		return
	}
	if added {
		if c.marks&markOwnCreated == 0 {
			return
		}
	} else if o, ok := old.(*cachedObject); !ok || c.ownWrite <= o.ownWrite {
		return
	}
	key := goneKey{kind: kind, namespace: c.namespace(), name: c.name}
	if m.writes.ours(key, c.ownWrite) {
		return
	}
	m.mu.Lock()
	if g, ok := m.gone[key]; added && ok && g.uid == string(c.uid) {
		m.mu.Unlock()
		return // back in the cache (its label restored), not created
	}
	first := m.sameID == ""
	if first {
		m.sameID = fmt.Sprintf("%s %s/%s", resourceOf(kind), key.namespace, key.name)
	}
	m.mu.Unlock()
	m.metrics.sameIDWrite(m.cfg.ID)
	if first {
		m.log.Warn("two hubs on one cluster: another writer uses this hub's field manager; give each hub its own hub.id (orphans are no longer listed on this cluster)",
			"fieldManager", m.fieldManager, "hub", m.cfg.HubID, "object", m.sameID,
			"at", time.Unix(int64(c.ownWrite), 0).UTC())
	}
}

// noteForeign logs, once per manager and other hub, that objects of
// another hub live on the cluster.
func (m *Manager) noteForeign(what, who string, n int) {
	m.mu.Lock()
	if m.foreignLogged == nil {
		m.foreignLogged = make(map[string]bool)
	}
	seen := m.foreignLogged[what+"\x00"+who]
	m.foreignLogged[what+"\x00"+who] = true
	m.mu.Unlock()
	if seen {
		return
	}
	m.log.Warn("two hubs on one cluster: objects of another hub carry this hub's managed-by label; they are left alone",
		what, who, "objects", n, "hub", m.cfg.HubID)
}

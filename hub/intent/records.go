package intent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/driftwatch/driftwatch/hub"
)

// The records as stored: the file format, with explicit JSON names, so that
// it changes only with the schema version.
type (
	// holdRecord is a hub.Hold.
	holdRecord struct {
		Scope  hub.HoldScope `json:"scope"`
		Name   string        `json:"name"`
		Reason string        `json:"reason,omitempty"`
		// By is in the state file's records (schema 2); a ConfigMapStore
		// keeps it in the hold's note instead.
		By    string    `json:"by,omitempty"`
		Since time.Time `json:"since"`
		Until time.Time `json:"until"`
	}
	// refRecord is a hub.SpecRef.
	refRecord struct {
		ID          hub.NodeID `json:"id"`
		Namespace   string     `json:"namespace,omitempty"`
		Name        string     `json:"name"`
		Kind        hub.Kind   `json:"kind"`
		Application string     `json:"application,omitempty"`
		Hash        string     `json:"hash,omitempty"`
		Policy      hub.Policy `json:"policy,omitempty"`
	}
	// noteRecord is when a switch was set, by whom and why: a cluster's
	// pause (hub.Intent's PausedAt and PauseNotes) or an application's
	// policy override (PolicySetAt and PolicyNotes). ID is the cluster or
	// the application, as its key.
	noteRecord struct {
		ID     string    `json:"id"`
		At     time.Time `json:"at,omitzero"`
		By     string    `json:"by,omitempty"`
		Reason string    `json:"reason,omitempty"`
	}
	// decommissionRecord is a hub.DecommissionRecord.
	decommissionRecord struct {
		Ref    refRecord `json:"ref"`
		Since  time.Time `json:"since"`
		Orphan bool      `json:"orphan,omitempty"`
	}
)

// toRef converts a hub.SpecRef to its stored form.
func toRef(r hub.SpecRef) refRecord {
	return refRecord{ID: r.ID, Namespace: r.Namespace, Name: r.Name, Kind: r.Kind, Application: r.Application, Hash: r.Hash, Policy: r.Policy}
}

// ref converts the stored form back to a hub.SpecRef.
func (r refRecord) ref() hub.SpecRef {
	return hub.SpecRef{ID: r.ID, Namespace: r.Namespace, Name: r.Name, Kind: r.Kind, Application: r.Application, Hash: r.Hash, Policy: r.Policy}
}

// decode decodes one JSON value strictly: no unknown field, nothing after it.
func decode(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("data after the JSON value")
	}
	return nil
}

// put stores v as JSON under key in bucket.
func put(tx *bolt.Tx, bucket, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return tx.Bucket([]byte(bucket)).Put([]byte(key), data)
}

// del deletes key from bucket (a missing key is not an error).
func del(tx *bolt.Tx, bucket, key string) error {
	return tx.Bucket([]byte(bucket)).Delete([]byte(key))
}

// SetPaused records a cluster's pause with when it was made and its note,
// in one transaction; false deletes both.
func (s *Store) SetPaused(cluster string, paused bool, at time.Time, note hub.SwitchNote) error {
	what := fmt.Sprintf("set paused %q", cluster)
	if cluster == "" {
		return fmt.Errorf("state file %s: %s: empty cluster", s.path, what)
	}
	return s.update(what, func(tx *bolt.Tx) error {
		if !paused {
			if err := del(tx, bucketPauseNotes, cluster); err != nil {
				return err
			}
			return del(tx, bucketPaused, cluster)
		}
		if err := put(tx, bucketPauseNotes, cluster, toNote(cluster, at, note)); err != nil {
			return err
		}
		return put(tx, bucketPaused, cluster, true)
	})
}

// toNote is a switch's stored note.
func toNote(id string, at time.Time, note hub.SwitchNote) noteRecord {
	if !at.IsZero() {
		at = at.UTC()
	}
	return noteRecord{ID: id, At: at, By: note.By, Reason: note.Reason}
}

// addTo sets the switch's time in times and its note in notes when set
// says the switch is set (a note left by a switch half deleted is not).
func (r noteRecord) addTo(set bool, times map[string]time.Time, notes map[string]hub.SwitchNote) {
	if !set {
		return
	}
	if !r.At.IsZero() {
		times[r.ID] = r.At
	}
	if note := (hub.SwitchNote{By: r.By, Reason: r.Reason}); note != (hub.SwitchNote{}) {
		notes[r.ID] = note
	}
}

// SetPolicy records an application's policy override with when it was set
// and its note, in one transaction; "" deletes both.
func (s *Store) SetPolicy(app string, p hub.Policy, at time.Time, note hub.SwitchNote) error {
	what := fmt.Sprintf("set policy %q", app)
	if app == "" {
		return fmt.Errorf("state file %s: %s: empty application", s.path, what)
	}
	return s.update(what, func(tx *bolt.Tx) error {
		if p == "" {
			if err := del(tx, bucketPolicyNotes, app); err != nil {
				return err
			}
			return del(tx, bucketPolicies, app)
		}
		if err := put(tx, bucketPolicyNotes, app, toNote(app, at, note)); err != nil {
			return err
		}
		return put(tx, bucketPolicies, app, p)
	})
}

// PutHold records a hold, replacing one on the same target. The target must
// be valid (hub.HoldTarget.Valid).
func (s *Store) PutHold(h hub.Hold) error {
	what := "put hold " + h.Target.String()
	if err := h.Target.Valid(); err != nil {
		return fmt.Errorf("state file %s: %s: %w", s.path, what, err)
	}
	rec := holdRecord{Scope: h.Target.Scope, Name: h.Target.Name, Reason: h.Reason, By: h.By, Since: h.Since, Until: h.Until}
	return s.update(what, func(tx *bolt.Tx) error {
		return put(tx, bucketHolds, h.Target.String(), rec)
	})
}

// DeleteHold deletes the hold on a target; none is not an error, an invalid
// target is.
func (s *Store) DeleteHold(t hub.HoldTarget) error {
	what := "delete hold " + t.String()
	if err := t.Valid(); err != nil {
		return fmt.Errorf("state file %s: %s: %w", s.path, what, err)
	}
	return s.update(what, func(tx *bolt.Tx) error {
		return del(tx, bucketHolds, t.String())
	})
}

// DeleteExpiredHold deletes the hold on h's target only while the stored
// one still ends at h.Until (in one transaction): a hold renewed on the
// target stays. None is not an error, an invalid target is.
func (s *Store) DeleteExpiredHold(h hub.Hold) error {
	what := "delete expired hold " + h.Target.String()
	if err := h.Target.Valid(); err != nil {
		return fmt.Errorf("state file %s: %s: %w", s.path, what, err)
	}
	key := h.Target.String()
	return s.update(what, func(tx *bolt.Tx) error {
		v := tx.Bucket([]byte(bucketHolds)).Get([]byte(key))
		if v == nil {
			return nil
		}
		var rec holdRecord
		if err := decode(v, &rec); err != nil {
			return err
		}
		if !rec.Until.Equal(h.Until) {
			return nil // renewed since
		}
		return del(tx, bucketHolds, key)
	})
}

// PutDecommission records a pending decommission, replacing one of the same
// NodeID.
func (s *Store) PutDecommission(d hub.DecommissionRecord) error {
	what := "put decommission " + d.Ref.ID.String()
	if err := validID(d.Ref.ID); err != nil {
		return fmt.Errorf("state file %s: %s: %w", s.path, what, err)
	}
	rec := decommissionRecord{Ref: toRef(d.Ref), Since: d.Since, Orphan: d.Orphan}
	return s.update(what, func(tx *bolt.Tx) error {
		return put(tx, bucketDecommissions, d.Ref.ID.String(), rec)
	})
}

// DeleteDecommission deletes a decommission record; none is not an error.
func (s *Store) DeleteDecommission(id hub.NodeID) error {
	what := "delete decommission " + id.String()
	if err := validID(id); err != nil {
		return fmt.Errorf("state file %s: %s: %w", s.path, what, err)
	}
	return s.update(what, func(tx *bolt.Tx) error {
		return del(tx, bucketDecommissions, id.String())
	})
}

// PutApplied records an applied spec, replacing one of the same NodeID.
// Concurrent calls are committed together in one durable transaction (a
// group commit); each returns once the transaction holding its record did.
func (s *Store) PutApplied(r hub.SpecRef) error {
	what := "put applied " + r.ID.String()
	if err := validID(r.ID); err != nil {
		return fmt.Errorf("state file %s: %s: %w", s.path, what, err)
	}
	data, err := json.Marshal(toRef(r))
	if err != nil {
		return fmt.Errorf("state file %s: %s: %w", s.path, what, err)
	}
	val := string(data)
	return s.writeApplied(what, r.ID.String(), &val)
}

// DeleteApplied deletes an applied record; none is not an error. It is
// group-committed like PutApplied.
func (s *Store) DeleteApplied(id hub.NodeID) error {
	what := "delete applied " + id.String()
	if err := validID(id); err != nil {
		return fmt.Errorf("state file %s: %s: %w", s.path, what, err)
	}
	return s.writeApplied(what, id.String(), nil)
}

// writeApplied sets (val non-nil) or deletes key in the applied bucket
// through the group commit.
func (s *Store) writeApplied(what, key string, val *string) error {
	err := s.applied.do(key, val, func(batch map[string]*string) error {
		return s.guard(func() error {
			return s.db.Update(func(tx *bolt.Tx) error {
				b := tx.Bucket([]byte(bucketApplied))
				for k, v := range batch {
					var err error
					if v == nil {
						err = b.Delete([]byte(k))
					} else {
						err = b.Put([]byte(k), []byte(*v))
					}
					if err != nil {
						return err
					}
				}
				return nil
			})
		})
	})
	if err != nil && !errors.Is(err, ErrCorrupt) {
		return fmt.Errorf("state file %s: %s: %w", s.path, what, err)
	}
	return err
}

// newIntent returns an Intent whose maps are empty, not nil, as Load
// returns them.
func newIntent() hub.Intent {
	return hub.Intent{
		Paused:      make(map[string]bool),
		PausedAt:    make(map[string]time.Time),
		PauseNotes:  make(map[string]hub.SwitchNote),
		Policies:    make(map[string]hub.Policy),
		PolicySetAt: make(map[string]time.Time),
		PolicyNotes: make(map[string]hub.SwitchNote),
		Applied:     make(map[hub.NodeID]hub.SpecRef),
	}
}

// validID reports a NodeID whose text form would not parse back.
func validID(id hub.NodeID) error {
	if !id.Valid() {
		return fmt.Errorf("%w %q", hub.ErrInvalidNodeID, id.String())
	}
	return nil
}

// Load reads everything stored, in one read transaction. The maps are never
// nil; Holds are ordered by target ("scope/name") and Decommissions by
// NodeID text. A record that does not decode, or whose key does not match
// it, is an error wrapping ErrCorrupt that names its bucket and key.
func (s *Store) Load() (hub.Intent, error) {
	in := newIntent()
	err := s.view(func(tx *bolt.Tx) error {
		return loadAll(tx, &in)
	})
	var re *recordError
	switch {
	case err == nil:
		return in, nil
	case errors.As(err, &re):
		return hub.Intent{}, corrupt(s.path, err)
	case errors.Is(err, ErrCorrupt):
		return hub.Intent{}, err
	default:
		return hub.Intent{}, fmt.Errorf("state file %s: load: %w", s.path, err)
	}
}

// recordError is a record that does not decode.
type recordError struct {
	bucket, key string
	err         error
}

// Error names the bucket and key.
func (e *recordError) Error() string {
	return fmt.Sprintf("bucket %s key %q: %v", e.bucket, e.key, e.err)
}

// Unwrap returns the decoding error.
func (e *recordError) Unwrap() error { return e.err }

// each decodes every record of a bucket with fn, wrapping its errors with
// the bucket and key.
func each(tx *bolt.Tx, bucket string, fn func(key string, val []byte) error) error {
	b := tx.Bucket([]byte(bucket))
	if b == nil {
		return &recordError{bucket: bucket, err: errors.New("no bucket")}
	}
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			return &recordError{bucket: bucket, key: string(k), err: errors.New("nested bucket, want a record")}
		}
		if err := fn(string(k), v); err != nil {
			return &recordError{bucket: bucket, key: string(k), err: err}
		}
		return nil
	})
}

// eachNote decodes every note of a bucket (keyed by its ID) with fn.
func eachNote(tx *bolt.Tx, bucket string, fn func(r noteRecord)) error {
	return each(tx, bucket, func(k string, v []byte) error {
		var r noteRecord
		if err := decode(v, &r); err != nil {
			return err
		}
		if r.ID != k {
			return fmt.Errorf("record is for %q", r.ID)
		}
		fn(r)
		return nil
	})
}

// loadAll reads every bucket into in.
func loadAll(tx *bolt.Tx, in *hub.Intent) error {
	if err := each(tx, bucketPaused, func(k string, v []byte) error {
		var paused bool
		if err := decode(v, &paused); err != nil {
			return err
		}
		if paused {
			in.Paused[k] = true
		}
		return nil
	}); err != nil {
		return err
	}
	if err := eachNote(tx, bucketPauseNotes, func(r noteRecord) {
		r.addTo(in.Paused[r.ID], in.PausedAt, in.PauseNotes)
	}); err != nil {
		return err
	}
	if err := each(tx, bucketPolicies, func(k string, v []byte) error {
		var p hub.Policy
		if err := decode(v, &p); err != nil {
			return err
		}
		in.Policies[k] = p
		return nil
	}); err != nil {
		return err
	}
	if err := eachNote(tx, bucketPolicyNotes, func(r noteRecord) {
		_, set := in.Policies[r.ID]
		r.addTo(set, in.PolicySetAt, in.PolicyNotes)
	}); err != nil {
		return err
	}
	if err := each(tx, bucketHolds, func(k string, v []byte) error {
		var r holdRecord
		if err := decode(v, &r); err != nil {
			return err
		}
		t := hub.HoldTarget{Scope: r.Scope, Name: r.Name}
		if err := t.Valid(); err != nil {
			return err
		}
		if t.String() != k {
			return fmt.Errorf("record is for %s", t)
		}
		in.Holds = append(in.Holds, hub.Hold{Target: t, Reason: r.Reason, By: r.By, Since: r.Since, Until: r.Until})
		return nil
	}); err != nil {
		return err
	}
	if err := each(tx, bucketDecommissions, func(k string, v []byte) error {
		id, err := hub.ParseNodeID(k)
		if err != nil {
			return err
		}
		var r decommissionRecord
		if err := decode(v, &r); err != nil {
			return err
		}
		if r.Ref.ID != id {
			return fmt.Errorf("record is for %s", r.Ref.ID)
		}
		in.Decommissions = append(in.Decommissions, hub.DecommissionRecord{Ref: r.Ref.ref(), Since: r.Since, Orphan: r.Orphan})
		return nil
	}); err != nil {
		return err
	}
	return each(tx, bucketApplied, func(k string, v []byte) error {
		id, err := hub.ParseNodeID(k)
		if err != nil {
			return err
		}
		var r refRecord
		if err := decode(v, &r); err != nil {
			return err
		}
		if r.ID != id {
			return fmt.Errorf("record is for %s", r.ID)
		}
		in.Applied[id] = r.ref()
		return nil
	})
}

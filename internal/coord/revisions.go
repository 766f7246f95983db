package coord

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// RevisionsAnnotation holds, on the hub's revisions Lease, the revision
// of each Git source the replicas last applied (JSON, see
// AppliedRevision).
const RevisionsAnnotation = "driftwatch.io/applied-revisions"

// kindRevisions is the KindLabel of the revisions Lease.
const kindRevisions = "revisions"

// maxRevisionsBytes bounds the revisions record read back: it is read from
// the coordination cluster, where anyone with write access to the
// namespace can change it.
const maxRevisionsBytes = 64 << 10

// revisionsName is the name of the hub's revisions Lease.
func revisionsName(hubID string) string { return hubID + "-revisions" }

// AppliedRevision is the commit of a Git source that a replica of the hub
// applied last (recorded before its desired state moves to the commit), so
// that no replica taking a cluster over applies an older commit: one that
// starts from an old cache while the repository is unreachable, say.
type AppliedRevision struct {
	// Source is the source's id; URL and Ref its repository and ref.
	Source string `json:"source"`
	URL    string `json:"url"`
	Ref    string `json:"ref"`
	// Commit is the commit applied.
	Commit string `json:"commit"`
	// Replica recorded it, at At (its wall clock).
	Replica string    `json:"replica"`
	At      time.Time `json:"at"`
}

// AppliedRevisions reads the revisions record of the hub from the
// coordination cluster (not from a cache: a takeover reads what the last
// owner wrote), by source id; empty when none was recorded. A record that
// does not parse is an error naming the Lease.
func (c *Coordinator) AppliedRevisions(ctx context.Context) (map[string]AppliedRevision, error) {
	ctx, cancel := context.WithTimeout(ctx, c.callTimeout())
	defer cancel()
	l, err := c.opts.Client.CoordinationV1().Leases(c.opts.Namespace).Get(ctx, revisionsName(c.opts.HubID), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return map[string]AppliedRevision{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the applied revisions (Lease %s/%s): %w", c.opts.Namespace, revisionsName(c.opts.HubID), err)
	}
	return parseRevisions(l)
}

// parseRevisions decodes the record of a revisions Lease.
func parseRevisions(l *coordv1.Lease) (map[string]AppliedRevision, error) {
	out := map[string]AppliedRevision{}
	raw := l.Annotations[RevisionsAnnotation]
	if raw == "" {
		return out, nil
	}
	if len(raw) > maxRevisionsBytes {
		return nil, fmt.Errorf("applied revisions (Lease %s/%s): annotation %s is %d bytes, over the %d-byte limit", l.Namespace, l.Name, RevisionsAnnotation, len(raw), maxRevisionsBytes)
	}
	var list []AppliedRevision
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		return nil, fmt.Errorf("applied revisions (Lease %s/%s): annotation %s: %w", l.Namespace, l.Name, RevisionsAnnotation, err)
	}
	for _, r := range list {
		if r.Source == "" || r.Commit == "" {
			return nil, fmt.Errorf("applied revisions (Lease %s/%s): annotation %s: an entry without source or commit", l.Namespace, l.Name, RevisionsAnnotation)
		}
		out[r.Source] = r
	}
	return out, nil
}

// RecordRevisions records revs in the hub's revisions record (creating its
// Lease when needed), each replacing the entry of its source. A record
// that does not parse is replaced, with a warning.
func (c *Coordinator) RecordRevisions(ctx context.Context, revs []AppliedRevision) error {
	if len(revs) == 0 {
		return nil
	}
	return c.updateRevisions(ctx, func(cur map[string]AppliedRevision) {
		for _, r := range revs {
			cur[r.Source] = r
		}
	})
}

// UndoRevisions takes back a RecordRevisions of ours whose desired state
// did not go into force: each source whose entry is still the one in ours
// gets its entry in prev back (none: removed). An entry another replica
// wrote since is kept.
func (c *Coordinator) UndoRevisions(ctx context.Context, ours []AppliedRevision, prev map[string]AppliedRevision) error {
	if len(ours) == 0 {
		return nil
	}
	return c.updateRevisions(ctx, func(cur map[string]AppliedRevision) {
		for _, r := range ours {
			if e, ok := cur[r.Source]; !ok || e.Commit != r.Commit || e.Replica != r.Replica || !e.At.Equal(r.At) {
				continue
			}
			if p, ok := prev[r.Source]; ok {
				cur[r.Source] = p
			} else {
				delete(cur, r.Source)
			}
		}
	})
}

// updateRevisions edits the hub's revisions record, with the Lease's
// resourceVersion as a precondition (retried on conflict).
func (c *Coordinator) updateRevisions(ctx context.Context, edit func(map[string]AppliedRevision)) error {
	ctx, cancel := context.WithTimeout(ctx, 5*c.callTimeout())
	defer cancel()
	leases := c.opts.Client.CoordinationV1().Leases(c.opts.Namespace)
	name := revisionsName(c.opts.HubID)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		create := apierrors.IsNotFound(err)
		if err != nil && !create {
			return err
		}
		if create {
			l = c.newLease(name, kindRevisions)
			delete(l.Annotations, IncarnationAnnotation)
		} else {
			l = l.DeepCopy()
		}
		cur, perr := parseRevisions(l)
		if perr != nil {
			c.log.Warn("coordination: applied revisions record unreadable, replaced", "err", perr)
			cur = map[string]AppliedRevision{}
		}
		edit(cur)
		list := make([]AppliedRevision, 0, len(cur))
		for _, id := range slices.Sorted(maps.Keys(cur)) {
			list = append(list, cur[id])
		}
		b, err := json.Marshal(list)
		if err != nil {
			return err
		}
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations[RevisionsAnnotation] = string(b)
		now := metav1.NewMicroTime(time.Now())
		l.Spec.RenewTime = &now
		if create {
			_, err = leases.Create(ctx, l, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(coordv1.Resource("leases"), name, err)
			}
			return err
		}
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("record the applied revisions (Lease %s/%s): %w", c.opts.Namespace, name, err)
	}
	return nil
}

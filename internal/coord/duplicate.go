package coord

import (
	"errors"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
)

// ErrDuplicateReplica is wrapped by Run's error when another live process
// holds this replica's id: Run then returns without joining.
var ErrDuplicateReplica = errors.New("already in use by another live process")

// joinVerdict is what a joining replica does about a membership Lease of
// its own id that another process (another incarnation) wrote.
type joinVerdict int

const (
	// joinWait: not decided yet, look again by the returned time.
	joinWait joinVerdict = iota
	// joinTake: the Lease did not change for a lease duration: the
	// process that wrote it is gone (it crashed, or is partitioned past
	// its lease), the Lease is taken over.
	joinTake
	// joinDuplicate: the Lease changed while this replica watched it:
	// another live process uses this replica id.
	joinDuplicate
)

// sighting is a joining replica's first sight of a membership Lease of its
// own id written by another incarnation: which incarnation, the renew
// time it carried, and when this replica saw it, by its monotonic clock.
type sighting struct {
	inc, renew string
	at         time.Time
}

// judge decides about the membership Lease l of this replica's id,
// written by another incarnation, at now. The first call records it; a
// later one finds a duplicate when the Lease's incarnation or renew time
// changed since (its process renews it: it is alive), and takes it over
// once it stayed unchanged for lease (or its own, longer, lease duration):
// the rule by which the other replicas judge a replica gone, so a crashed
// process's successor waits no longer than they would. The returned time
// is when to judge again (joinWait only).
func (s *sighting) judge(l *coordv1.Lease, now time.Time, lease time.Duration) (joinVerdict, time.Time) {
	inc, renew := l.Annotations[IncarnationAnnotation], renewOf(l)
	if s.at.IsZero() {
		*s = sighting{inc: inc, renew: renew, at: now}
	} else if inc != s.inc || renew != s.renew {
		return joinDuplicate, time.Time{}
	}
	if l.Spec.LeaseDurationSeconds != nil {
		lease = max(lease, time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second)
	}
	if until := s.at.Add(lease); now.Before(until) {
		return joinWait, until
	}
	return joinTake, time.Time{}
}

// renewOf returns a Lease's renew time as text ("" when unset): compared
// for equality only, never against a clock.
func renewOf(l *coordv1.Lease) string {
	if l.Spec.RenewTime == nil {
		return ""
	}
	return l.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
}

package bench

import (
	"errors"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/driftwatch/driftwatch/clusters/drift"
	"github.com/driftwatch/driftwatch/hub"
)

// Sample is one drift and what was seen of it. Times are zero until seen.
type Sample struct {
	Step
	// Start is when the drift call started.
	Start time.Time
	// Err is set when the drift call failed (or a later drift of the same
	// object superseded it before it was repaired).
	Err error
	// Floor is the first raw watch event showing the drift.
	Floor time.Time
	// Observed is when the hub's own watch delivered the event its
	// classification started from (hub.Repair.ObservedAt; for a poll, when
	// the resync's reconcile began).
	Observed time.Time
	// Detect is when the hub classified the drift.
	Detect time.Time
	// Applied is when the hub's repair apply returned.
	Applied time.Time
	// Repair is the first raw watch event showing the object as desired
	// again.
	Repair time.Time
}

// errSuperseded marks a drift whose object drifted again before the raw
// watch saw it repaired.
var errSuperseded = errors.New("superseded by a later drift of the same object")

// Tracker pairs planned drifts with the raw watch's events and the hub's
// drift records. It is safe for concurrent use.
type Tracker struct {
	managedBy string
	done      chan struct{}

	mu      sync.Mutex
	pending map[hub.NodeID]*Sample
	samples []*Sample
	left    int // expected samples neither repaired nor failed
}

// NewTracker returns a tracker expecting expect drifts; Done is closed once
// every one of them was repaired or failed. managedBy is the managed-by
// label value the hub applies.
func NewTracker(expect int, managedBy string) *Tracker {
	if managedBy == "" {
		managedBy = kubeobj.DefaultManagedBy
	}
	t := &Tracker{managedBy: managedBy, done: make(chan struct{}), pending: make(map[hub.NodeID]*Sample), left: expect}
	if expect <= 0 {
		close(t.done)
	}
	return t
}

// Done is closed once every expected drift was repaired or failed.
func (t *Tracker) Done() <-chan struct{} { return t.done }

// Begin registers a drift about to be made, starting its clock. Call it
// before the drift call, so no event of the drift can arrive first.
func (t *Tracker) Begin(st Step) *Sample {
	s := &Sample{Step: st}
	t.mu.Lock()
	if old := t.pending[st.Target.ID]; old != nil && old.Repair.IsZero() && old.Err == nil {
		old.Err = errSuperseded
		t.resolveLocked()
	}
	t.pending[st.Target.ID] = s
	t.samples = append(t.samples, s)
	s.Start = time.Now()
	t.mu.Unlock()
	return s
}

// Fail records that the drift call of s failed.
func (t *Tracker) Fail(s *Sample, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.Err != nil || !s.Repair.IsZero() {
		return
	}
	s.Err = err
	if t.pending[s.Target.ID] == s {
		delete(t.pending, s.Target.ID)
	}
	t.resolveLocked()
}

func (t *Tracker) resolveLocked() {
	t.left--
	if t.left == 0 {
		close(t.done)
	}
}

// Record takes one of the hub's drift records (hub.Options.OnRecord).
func (t *Tracker) Record(rep hub.Repair) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.pending[rep.ID]
	if s == nil || s.Err != nil || rep.ClassifiedAt.Before(s.Start) {
		return
	}
	if s.Detect.IsZero() {
		s.Detect = rep.ClassifiedAt
		if !rep.ObservedAt.Before(s.Start) {
			s.Observed = rep.ObservedAt
		}
	}
	if s.Applied.IsZero() && !rep.AppliedAt.IsZero() {
		s.Applied = rep.AppliedAt
	}
	t.forgetLocked(s)
}

// Event takes one raw watch event on cluster, received at at.
func (t *Tracker) Event(cluster string, kind hub.Kind, ev watch.Event, at time.Time) {
	obj, ok := ev.Object.(interface {
		runtime.Object
		GetNamespace() string
		GetName() string
	})
	if !ok {
		return
	}
	id := hub.NewNodeID(cluster, obj.GetNamespace(), obj.GetName(), kind)
	t.mu.Lock()
	s := t.pending[id]
	if s == nil || s.Err != nil || !s.Repair.IsZero() || at.Before(s.Start) {
		t.mu.Unlock()
		return
	}
	desired := s.Target.Desired
	t.mu.Unlock()

	// Only the objects with a drift in flight are compared: the watch
	// stays cheap for everything else.
	asDesired := false
	if ev.Type != watch.Deleted {
		// The managedFields stay out of the conversion (they are most of
		// it, and no desired object has any): the raw watch is the
		// bench's instrument, whose garbage lands on the heap of the hub
		// it measures. The object is the watch's own, read by this
		// goroutine alone, and gets its entries back.
		// (An unstructured object's entries are maps already: it is
		// converted as it is.)
		var mf []metav1.ManagedFieldsEntry
		acc, typed := obj.(metav1.Object)
		if _, u := obj.(runtime.Unstructured); u {
			typed = false
		}
		if typed {
			mf = acc.GetManagedFields()
			acc.SetManagedFields(nil)
		}
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if typed {
			acc.SetManagedFields(mf)
		}
		if err == nil {
			asDesired = drift.Classify(desired, &unstructured.Unstructured{Object: content}, t.managedBy).InSync()
		}
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending[id] != s || s.Err != nil || !s.Repair.IsZero() {
		return
	}
	switch {
	case s.Floor.IsZero():
		if !asDesired {
			s.Floor = at
		}
	case asDesired:
		s.Repair = at
		t.resolveLocked()
		t.forgetLocked(s)
	}
}

// forgetLocked stops tracking s once everything about it was seen.
func (t *Tracker) forgetLocked(s *Sample) {
	if !s.Repair.IsZero() && !s.Detect.IsZero() && !s.Applied.IsZero() && t.pending[s.Target.ID] == s {
		delete(t.pending, s.Target.ID)
	}
}

// Samples returns copies of every sample so far, in the order they began.
func (t *Tracker) Samples() []Sample {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Sample, len(t.samples))
	for i, s := range t.samples {
		out[i] = *s
	}
	return out
}

package hub

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fakeObject is one object of the fake backend: its content must equal the
// spec's Hash to be in sync.
type fakeObject struct {
	content  string
	version  int
	owned    bool
	deleting bool
	id       int // identity (a UID)
	added    bool
	stuck    string
	foreign  bool // carries another hub's id
	retain   string
	// refuse makes a delete fail with ErrRefused (a Namespace holding
	// objects we do not manage).
	refuse bool
}

// fakeBackend is an in-memory Backend with a watch cache that lags behind
// the truth until the test (or auto mode) lets it catch up, so every
// ordering of writes, events and cache reads can be produced on purpose.
// It is backend-neutral: no unstructured objects anywhere.
type fakeBackend struct {
	sink Sink

	mu      sync.Mutex
	truth   map[NodeID]*fakeObject
	cache   map[NodeID]*fakeObject
	nextVer int
	nextUID int
	// lastUID is the identity an object had when it left the cache.
	lastUID map[NodeID]int
	// auto makes every write visible in the cache at once and delivers
	// its event (like an informer on a fast loopback).
	auto bool

	calls   []string
	quiet   bool // no call log (benchmarks)
	repairs map[NodeID]int
	deletes map[NodeID]int

	// Hooks, called without the lock held.
	onRead   func(id NodeID, fresh bool)
	onRepair func(id NodeID)
	// onBody is called by Repair with the body the write applies.
	onBody  func(id NodeID, body []byte)
	readErr func(id NodeID) error
	// onWrite is called inside every write (Repair, Delete) with the
	// write's context; an error fails the write.
	onWrite func(ctx context.Context, id NodeID) error
	// onAttribute is called by Attribute, without the lock.
	onAttribute func(id NodeID)
	// onList is called by ListOwned; listErr, when set, makes it fail.
	onList  func()
	listErr func() error
	repErr  func(id NodeID) error
	attrib  *Attribution
}

func newFake(auto bool) *fakeBackend {
	return &fakeBackend{
		truth: make(map[NodeID]*fakeObject), cache: make(map[NodeID]*fakeObject),
		lastUID: make(map[NodeID]int), repairs: make(map[NodeID]int), deletes: make(map[NodeID]int),
		auto: auto,
	}
}

func (b *fakeBackend) Backend(string) (Backend, bool) { return b, true }

func (b *fakeBackend) log(s string) {
	if !b.quiet {
		b.calls = append(b.calls, s)
	}
}

// put writes an object's truth as an outside writer would (kubectl), and in
// auto mode makes it visible and delivers its event.
func (b *fakeBackend) put(id NodeID, mutate func(o *fakeObject)) {
	b.mu.Lock()
	o := b.truth[id]
	if o == nil {
		b.nextUID++
		o = &fakeObject{id: b.nextUID, owned: true}
		b.truth[id] = o
	}
	mutate(o)
	b.nextVer++
	o.version = b.nextVer
	auto := b.auto
	b.mu.Unlock()
	if auto {
		b.catchUp(id)
	}
}

// remove deletes an object's truth (kubectl delete).
func (b *fakeBackend) remove(id NodeID) {
	b.mu.Lock()
	delete(b.truth, id)
	auto := b.auto
	b.mu.Unlock()
	if auto {
		b.catchUp(id)
	}
}

// catchUp makes the cache show the truth of one object and delivers the
// watch event, as an informer does (cache first, then the handler). An
// object that is not owned leaves the label-filtered cache.
func (b *fakeBackend) catchUp(id NodeID) {
	b.mu.Lock()
	t := b.truth[id]
	ev := Event{ID: id, ObservedAt: time.Now()}
	switch {
	case t == nil || !t.owned:
		if c := b.cache[id]; c != nil {
			b.lastUID[id] = c.id
		}
		delete(b.cache, id)
		ev.Type = EventDeleted
	default:
		c := *t
		b.cache[id] = &c
		ev.Type = EventUpdated
		ev.ResourceVersion = strconv.Itoa(t.version)
	}
	sink := b.sink
	b.mu.Unlock()
	if sink != nil {
		sink.Observe(ev)
	}
}

func stateOf(o *fakeObject, fresh bool) State {
	if o == nil {
		return State{Fresh: fresh}
	}
	st := State{Exists: true, Fresh: fresh, Version: strconv.Itoa(o.version), Owned: o.owned, Deleting: o.deleting, Retain: o.retain, Live: *o}
	if o.stuck != "" {
		st.Progress = &Progress{Ready: 0, Desired: 1, Stuck: o.stuck}
	}
	return st
}

func (b *fakeBackend) ReadState(_ context.Context, spec NodeSpec, fresh bool) (State, error) {
	if b.onRead != nil {
		b.onRead(spec.ID, fresh)
	}
	if b.readErr != nil {
		if err := b.readErr(spec.ID); err != nil {
			return State{}, err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.log("read " + spec.ID.Name() + " fresh=" + strconv.FormatBool(fresh))
	if fresh {
		return stateOf(b.truth[spec.ID], true), nil
	}
	return stateOf(b.cache[spec.ID], false), nil
}

func (b *fakeBackend) DetectDrift(_ context.Context, spec NodeSpec, st State) (Drift, error) {
	if !st.Exists {
		return Drift{Class: DriftMissing}, nil
	}
	o := st.Live.(fakeObject)
	switch {
	case o.deleting:
		return Drift{Class: DriftDeleting}, nil
	case !o.owned:
		return Drift{Class: DriftUnlabelled, Fields: []FieldDiff{{Path: "owner", Desired: "us", Actual: "<none>"}}}, nil
	case o.content != spec.Hash:
		f := FieldDiff{Path: "content", Desired: spec.Hash, Actual: o.content}
		// A rule naming the manager the fake attributes drift to covers it.
		b.mu.Lock()
		a := b.attrib
		b.mu.Unlock()
		for _, r := range spec.Ignore.For(spec.Kind) {
			if a != nil && slices.Contains(r.Managers, a.Manager) {
				return Drift{Class: DriftNone, Ignored: []IgnoredField{{FieldDiff: f, Rule: r.Name, Manager: a.Manager}}}, nil
			}
		}
		return Drift{Class: DriftModified, Fields: []FieldDiff{f}}, nil
	case o.added:
		return Drift{Class: DriftAdded, Fields: []FieldDiff{{Path: "extra", Actual: "x", Added: true}}}, nil
	}
	return Drift{Class: DriftNone}, nil
}

func (b *fakeBackend) Attribute(_ context.Context, spec NodeSpec, _ State, _ Drift) (*Attribution, error) {
	if b.onAttribute != nil {
		b.onAttribute(spec.ID)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	o := b.truth[spec.ID]
	// Like managedFields: once we re-applied, we own the field and the
	// other writer is no longer visible.
	if b.attrib == nil || o == nil || o.content == spec.Hash {
		return nil, nil
	}
	a := *b.attrib
	return &a, nil
}

func (b *fakeBackend) Repair(ctx context.Context, spec NodeSpec, st State, _ Drift) (RepairResult, error) {
	if b.onRepair != nil {
		b.onRepair(spec.ID)
	}
	if b.onBody != nil {
		b.onBody(spec.ID, spec.Body)
	}
	if b.onWrite != nil {
		if err := b.onWrite(ctx, spec.ID); err != nil {
			return RepairResult{}, err
		}
	}
	if b.repErr != nil {
		if err := b.repErr(spec.ID); err != nil {
			return RepairResult{}, err
		}
	}
	b.mu.Lock()
	b.log("repair " + spec.ID.Name())
	b.repairs[spec.ID]++
	var res RepairResult
	o := b.truth[spec.ID]
	if o == nil {
		b.nextUID++
		o = &fakeObject{id: b.nextUID}
		b.truth[spec.ID] = o
	} else if !st.Fresh && !st.Exists && b.lastUID[spec.ID] == o.id {
		res.Class = DriftUnlabelled
	}
	o.content, o.owned, o.added = spec.Hash, true, false
	b.nextVer++
	o.version = b.nextVer
	res.Version = strconv.Itoa(o.version)
	res.Action = "apply"
	auto := b.auto
	b.mu.Unlock()
	if auto {
		b.catchUp(spec.ID)
	}
	return res, nil
}

func (b *fakeBackend) Delete(ctx context.Context, spec NodeSpec, st State) error {
	if b.onWrite != nil {
		if err := b.onWrite(ctx, spec.ID); err != nil {
			return err
		}
	}
	b.mu.Lock()
	b.log("delete " + spec.ID.Name())
	o := b.truth[spec.ID]
	if !st.Owned {
		b.mu.Unlock()
		return errors.New("refusing to delete an object we do not own")
	}
	if o == nil {
		b.mu.Unlock()
		return nil
	}
	if strconv.Itoa(o.version) != st.Version {
		b.mu.Unlock()
		return errors.New("precondition failed: version changed")
	}
	if o.refuse {
		b.mu.Unlock()
		return fmt.Errorf("refusing: it holds objects we do not manage: %w", ErrRefused)
	}
	b.deletes[spec.ID]++
	if o.stuck != "" { // a finalizer holds it
		o.deleting = true
		b.nextVer++
		o.version = b.nextVer
	} else {
		delete(b.truth, spec.ID)
	}
	auto := b.auto
	b.mu.Unlock()
	if auto {
		b.catchUp(spec.ID)
	}
	return nil
}

// ListOwned lists the objects carrying our marks (owned, of this hub).
func (b *fakeBackend) ListOwned(context.Context) ([]SpecRef, error) {
	if b.onList != nil {
		b.onList()
	}
	if b.listErr != nil {
		if err := b.listErr(); err != nil {
			return nil, err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []SpecRef
	for id, o := range b.truth {
		if o.owned && !o.foreign {
			out = append(out, SpecRef{ID: id, Namespace: id.Namespace(), Name: id.Name(), Kind: id.Kind})
		}
	}
	return out, nil
}

func (b *fakeBackend) repairCount(id NodeID) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.repairs[id]
}

func (b *fakeBackend) deleteCount(id NodeID) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.deletes[id]
}

func (b *fakeBackend) exists(id NodeID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.truth[id] != nil
}

// fixture is a hub over a fake backend, running inside a synctest bubble.
type fixture struct {
	t      *testing.T
	h      *Hub
	b      *fakeBackend
	cancel context.CancelFunc
	done   chan struct{}
}

func spec(cluster, name, content string) NodeSpec {
	id := NewNodeID(cluster, "shop", name, KindConfigMap)
	return NodeSpec{ID: id, Namespace: "shop", Name: name, Kind: KindConfigMap, Application: name,
		Policy: PolicyRepair, Hash: content}
}

// start runs a hub over b. It must be called inside synctest.Test.
func start(t *testing.T, b *fakeBackend, opts Options) *fixture {
	t.Helper()
	return startPrepared(t, b, opts, nil)
}

// startPrepared is start with prepare (when not nil) called on the hub
// before it runs.
func startPrepared(t *testing.T, b *fakeBackend, opts Options, prepare func(h *Hub)) *fixture {
	t.Helper()
	if opts.Workers == 0 {
		opts.Workers = 2
	}
	if opts.Resync == 0 {
		opts.Resync = -1
	}
	h := New(opts)
	b.sink = h
	h.SetBackends(b)
	if prepare != nil {
		prepare(h)
	}
	ctx, cancel := context.WithCancel(t.Context())
	f := &fixture{t: t, h: h, b: b, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		if err := h.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(f.stop)
	return f
}

func (f *fixture) stop() {
	f.cancel()
	<-f.done
}

func (f *fixture) ready(cluster string, gen, seq int64) {
	f.h.ClusterChanged(ClusterHealth{Cluster: cluster, State: ClusterSynced, Generation: gen, Seq: seq})
}

func (f *fixture) node(id NodeID) NodeStatus {
	f.t.Helper()
	n, ok := f.h.Snapshot().Node(id)
	if !ok {
		f.t.Fatalf("node %s not in the snapshot", id)
	}
	return n
}

func (f *fixture) steps(id NodeID, step Step) int {
	c := 0
	for _, e := range f.node(id).Timeline {
		if e.Step == step {
			c++
		}
	}
	return c
}

package coord

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeLease is the lease duration of the tests on a fake coordination
// cluster: they run in a synctest bubble, so time costs nothing.
const fakeLease = 10 * time.Second

// fakeCoordination is a fake coordination cluster for tests in a synctest
// bubble: a fake clientset whose Leases get resource versions and
// optimistic concurrency (an update or a delete with a stale version
// fails with a conflict), a switch that makes every call fail, as when the
// apiserver is down, and one that makes every write fail as a write into a
// namespace that does not exist.
type fakeCoordination struct {
	cs          *fake.Clientset
	down        atomic.Bool
	noNamespace atomic.Bool

	mu sync.Mutex
	rv int64
}

var leasesResource = coordv1.SchemeGroupVersion.WithResource("leases")

func newFakeCoordination() *fakeCoordination {
	f := &fakeCoordination{cs: fake.NewClientset()}
	tr := f.cs.Tracker()
	// current returns the stored Lease (nil when absent).
	current := func(ns, name string) *coordv1.Lease {
		o, err := tr.Get(leasesResource, ns, name)
		if err != nil {
			return nil
		}
		return o.(*coordv1.Lease)
	}
	f.cs.PrependReactor("create", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		l := a.(k8stesting.CreateAction).GetObject().(*coordv1.Lease).DeepCopy()
		f.rv++
		l.ResourceVersion = strconv.FormatInt(f.rv, 10)
		if err := tr.Create(leasesResource, l, a.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, l.DeepCopy(), nil
	})
	f.cs.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		l := a.(k8stesting.UpdateAction).GetObject().(*coordv1.Lease).DeepCopy()
		cur := current(a.GetNamespace(), l.Name)
		if cur == nil {
			return true, nil, apierrors.NewNotFound(leasesResource.GroupResource(), l.Name)
		}
		if l.ResourceVersion != "" && l.ResourceVersion != cur.ResourceVersion {
			return true, nil, apierrors.NewConflict(leasesResource.GroupResource(), l.Name, errors.New("the object has been modified"))
		}
		f.rv++
		l.ResourceVersion = strconv.FormatInt(f.rv, 10)
		if err := tr.Update(leasesResource, l, a.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, l.DeepCopy(), nil
	})
	f.cs.PrependReactor("delete", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		d := a.(k8stesting.DeleteAction)
		cur := current(a.GetNamespace(), d.GetName())
		if cur == nil {
			return true, nil, apierrors.NewNotFound(leasesResource.GroupResource(), d.GetName())
		}
		if p := d.GetDeleteOptions().Preconditions; p != nil && p.ResourceVersion != nil && *p.ResourceVersion != cur.ResourceVersion {
			return true, nil, apierrors.NewConflict(leasesResource.GroupResource(), d.GetName(), errors.New("precondition failed"))
		}
		return true, nil, tr.Delete(leasesResource, a.GetNamespace(), d.GetName())
	})
	// Prepended last, so it runs first.
	f.cs.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if f.down.Load() {
			return true, nil, errors.New("connection refused (test: coordination apiserver down)")
		}
		if f.noNamespace.Load() && (a.GetVerb() == "create" || a.GetVerb() == "update") {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, a.GetNamespace())
		}
		return false, nil, nil
	})
	return f
}

// lease returns a stored Lease (nil when absent).
func (f *fakeCoordination) lease(t *testing.T, name string) *coordv1.Lease {
	t.Helper()
	o, err := f.cs.Tracker().Get(leasesResource, testNS, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return o.(*coordv1.Lease)
}

// syncBuffer is a log sink goroutines may write while a test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fakeNode is one coordinator running on a fake coordination cluster.
type fakeNode struct {
	id     string
	c      *Coordinator
	h      *events
	logs   *syncBuffer
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
}

// startFakeNode runs a coordinator for replica id with the desired hash
// hash over clusters until the test ends (or stop); edit, when given,
// changes its options.
func startFakeNode(t *testing.T, f *fakeCoordination, id, hash string, clusters []string, edit ...func(*Options)) *fakeNode {
	t.Helper()
	n := &fakeNode{id: id, h: &events{owned: make(map[string]bool)}, logs: &syncBuffer{}, reg: prometheus.NewRegistry(), done: make(chan error, 1)}
	opts := Options{
		Client: f.cs, Namespace: testNS, HubID: testHub, ReplicaID: id, LeaseDuration: fakeLease,
		Handler: n.h, Registerer: n.reg, DesiredHash: hash,
		Logger: slog.New(slog.NewTextHandler(n.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, e := range edit {
		e(&opts)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	c.SetAddress(id + ".example:8080")
	c.SetClusters(clusters)
	n.c = c
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() { n.done <- c.Run(ctx) }()
	t.Cleanup(func() { n.stop() })
	return n
}

// stop ends the node's Run and returns its error (idempotent).
func (n *fakeNode) stop() error {
	n.cancel()
	err, ok := <-n.done
	if ok {
		close(n.done)
	}
	return err
}

// owned returns the clusters the node's handler owns.
func (n *fakeNode) owned() []string {
	o, _, _, _ := n.h.snapshot()
	return o
}

// settle lets the bubble's time run for d: the nodes renew, watch and
// claim meanwhile.
func settle(d time.Duration) { time.Sleep(d) }

// sameSet reports whether a and b hold the same clusters.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

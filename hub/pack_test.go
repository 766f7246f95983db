package hub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/driftwatch/driftwatch/internal/pack"
)

// bodyRecorder is a fake backend that records the bodies of the specs it
// is handed.
type bodyRecorder struct {
	*fakeBackend
	mu     sync.Mutex
	bodies map[NodeID][][]byte
}

func (b *bodyRecorder) Backend(string) (Backend, bool) { return b, true }

func (b *bodyRecorder) record(spec NodeSpec) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bodies[spec.ID] = append(b.bodies[spec.ID], spec.Body)
}

func (b *bodyRecorder) ReadState(ctx context.Context, spec NodeSpec, fresh bool) (State, error) {
	b.record(spec)
	return b.fakeBackend.ReadState(ctx, spec, fresh)
}

func (b *bodyRecorder) Repair(ctx context.Context, spec NodeSpec, st State, d Drift) (RepairResult, error) {
	b.record(spec)
	return b.fakeBackend.Repair(ctx, spec, st, d)
}

// bodySpec is spec with a JSON body of its own, like the objects of one kind.
func bodySpec(name string) NodeSpec {
	s := spec("c1", name, "v1")
	s.Body = fmt.Appendf(nil, `{"apiVersion":"v1","data":{"LOG_LEVEL":"info","MODE":"bench","NAME":%q},"kind":"ConfigMap",`+
		`"metadata":{"annotations":{"driftwatch.io/hub":"bench","driftwatch.io/node-id":%q},`+
		`"labels":{"app":%q,"app.kubernetes.io/managed-by":"driftwatch","driftwatch.io/application":"mixed-cm"},"name":%q,"namespace":"shop"}}`,
		name, s.ID.String(), name, name)
	return s
}

// TestDesiredBodiesPacked: the hub keeps the desired bodies packed (the
// specs of its snapshots have none, and read it back with JSON and
// Object), while the backends and Desired get the Body; the caller's
// specs are not changed.
func TestDesiredBodiesPacked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &bodyRecorder{fakeBackend: newFake(true), bodies: map[NodeID][][]byte{}}
		f := start(t, b.fakeBackend, Options{})
		f.h.SetBackends(b)
		var specs []NodeSpec
		for i := range 20 {
			specs = append(specs, bodySpec(fmt.Sprintf("cm-%02d", i)))
		}
		want := make(map[NodeID][]byte)
		for _, s := range specs {
			want[s.ID] = bytes.Clone(s.Body)
		}
		f.h.SetDesired(specs)
		f.ready("c1", 1, 1)
		synctest.Wait()
		for i, s := range specs {
			if !bytes.Equal(s.Body, want[s.ID]) {
				t.Fatalf("the caller's spec %s changed", s.ID)
			}
			n := f.node(s.ID)
			if n.Spec == nil || n.Spec.Body != nil {
				t.Fatalf("%s: snapshot spec %+v, want a packed body", s.ID, n.Spec)
			}
			if i > 0 && len(n.Spec.packed)*4 > len(s.Body) {
				t.Errorf("%s: %d bytes packed to %d", s.ID, len(s.Body), len(n.Spec.packed))
			}
			if body, err := n.Spec.JSON(); err != nil || !bytes.Equal(body, want[s.ID]) {
				t.Errorf("%s: JSON() = %s, %v", s.ID, body, err)
			}
			if d, ok := f.h.Desired(s.ID); !ok || !bytes.Equal(d.Body, want[s.ID]) || d.packed != nil {
				t.Errorf("%s: Desired body %s", s.ID, d.Body)
			}
			b.mu.Lock()
			got := b.bodies[s.ID]
			b.mu.Unlock()
			if len(got) == 0 {
				t.Fatalf("%s: the backend never got the spec", s.ID)
			}
			for _, body := range got {
				if !bytes.Equal(body, want[s.ID]) {
					t.Errorf("%s: the backend got body %s", s.ID, body)
				}
			}
		}
	})
}

// TestPackedBodyCorrupt: a packed body that does not unpack fails the
// pass with an error (JSON and Object report it too) and the NodeID shows
// it; the backend never sees the spec.
func TestPackedBodyCorrupt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &bodyRecorder{fakeBackend: newFake(true), bodies: map[NodeID][][]byte{}}
		f := start(t, b.fakeBackend, Options{})
		f.h.SetBackends(b)
		s, fine := bodySpec("broken"), bodySpec("fine")
		f.h.SetDesired([]NodeSpec{s, fine})
		synctest.Wait() // parked: the cluster is not ready
		f.h.mu.Lock()
		kept := f.h.nodes.at(s.ID).spec
		kept.packed = kept.packed[:len(kept.packed)/2]
		f.h.mu.Unlock()
		f.ready("c1", 1, 1)
		synctest.Wait()
		if _, err := kept.JSON(); !errors.Is(err, pack.ErrCorrupt) {
			t.Errorf("JSON: %v", err)
		}
		if n := f.node(s.ID); n.Status != StatusFailed || !strings.Contains(n.Reason, "corrupt") {
			t.Errorf("broken: %s (%s)", n.Status, n.Reason)
		}
		if n := f.node(fine.ID); n.Status == StatusFailed {
			t.Errorf("fine: %s (%s)", n.Status, n.Reason)
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.bodies[s.ID]) != 0 {
			t.Errorf("the backend got the broken spec %d times", len(b.bodies[s.ID]))
		}
	})
}

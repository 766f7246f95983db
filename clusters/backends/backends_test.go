package backends

import (
	"context"
	"errors"
	"testing"

	"github.com/driftwatch/driftwatch/hub"
)

// stub is a backend that counts its writes and sees the context they get.
type stub struct {
	hub.Backend // nil: reads are not called
	name        string
	writes      *int
	ctxErr      *error
}

func (s stub) Repair(ctx context.Context, _ hub.NodeSpec, _ hub.State, _ hub.Drift) (hub.RepairResult, error) {
	*s.writes++
	*s.ctxErr = ctx.Err()
	return hub.RepairResult{}, nil
}

func (s stub) Delete(ctx context.Context, _ hub.NodeSpec, _ hub.State) error {
	*s.writes++
	*s.ctxErr = ctx.Err()
	return nil
}

// set is a hub.Backends of fixed backends.
type set map[string]hub.Backend

func (s set) Backend(id string) (hub.Backend, bool) { b, ok := s[id]; return b, ok }

// fence lets writes through while open; a write let through gets a
// context the fence has already ended when endEarly is set.
type fence struct {
	open, endEarly bool
	done           int
}

func (f *fence) Guard(ctx context.Context, _ string) (context.Context, func(), error) {
	if !f.open {
		return nil, nil, errors.New("claim not held")
	}
	wctx, cancel := context.WithCancel(ctx)
	if f.endEarly {
		cancel()
	}
	return wctx, func() { f.done++; cancel() }, nil
}

// TestMux: the first set with the id serves it; an id no set has is not
// found.
func TestMux(t *testing.T) {
	var n int
	var cerr error
	ws, cl := stub{name: "ws", writes: &n, ctxErr: &cerr}, stub{name: "cluster", writes: &n, ctxErr: &cerr}
	m := Mux{set{"files": ws}, set{"files": cl, "prod": cl}}
	if b, ok := m.Backend("files"); !ok || b.(stub).name != "ws" {
		t.Errorf("files: %v %v, want the workspace (first set)", b, ok)
	}
	if b, ok := m.Backend("prod"); !ok || b.(stub).name != "cluster" {
		t.Errorf("prod: %v %v, want the cluster", b, ok)
	}
	if _, ok := m.Backend("gone"); ok {
		t.Error("gone: found")
	}
}

// TestFenced: writes run only while the fence is open, fail as
// ErrUnreachable when it is not, get the fence's context, and release the
// fence when they return; ListOwned passes through only when the backend
// has it.
func TestFenced(t *testing.T) {
	var n int
	var cerr error
	f := &fence{}
	b, ok := Fenced{Set: set{"prod": stub{writes: &n, ctxErr: &cerr}}, Fence: f}.Backend("prod")
	if !ok {
		t.Fatal("prod not found")
	}
	if _, ok := (Fenced{Set: set{}, Fence: f}).Backend("prod"); ok {
		t.Error("found a backend the set lacks")
	}
	ctx := context.Background()
	if _, err := b.Repair(ctx, hub.NodeSpec{}, hub.State{}, hub.Drift{}); !errors.Is(err, hub.ErrUnreachable) {
		t.Errorf("repair behind a closed fence: %v, want ErrUnreachable", err)
	}
	if err := b.Delete(ctx, hub.NodeSpec{}, hub.State{}); !errors.Is(err, hub.ErrUnreachable) {
		t.Errorf("delete behind a closed fence: %v, want ErrUnreachable", err)
	}
	if n != 0 {
		t.Fatalf("%d writes behind a closed fence", n)
	}
	f.open = true
	if _, err := b.Repair(ctx, hub.NodeSpec{}, hub.State{}, hub.Drift{}); err != nil || n != 1 || f.done != 1 {
		t.Errorf("repair behind an open fence: err %v, writes %d, released %d", err, n, f.done)
	}
	f.endEarly = true
	if err := b.Delete(ctx, hub.NodeSpec{}, hub.State{}); err != nil || !errors.Is(cerr, context.Canceled) || f.done != 2 {
		t.Errorf("delete whose fence closed: err %v, its context %v, released %d; want the write to see the fence's end", err, cerr, f.done)
	}
	if _, err := b.(hub.OwnedLister).ListOwned(ctx); err == nil {
		t.Error("ListOwned of a backend that cannot list: no error")
	}
}

// diagnosing is a stub with a Diagnoser.
type diagnosing struct{ stub }

func (diagnosing) Diagnose(context.Context, hub.NodeSpec) ([]string, error) {
	return []string{"pod web-1: not scheduled"}, nil
}

// TestFencedDiagnose: a diagnosis is a read, passed through whatever the
// fence says; a backend without one says nothing.
func TestFencedDiagnose(t *testing.T) {
	f := &fence{} // closed
	b, _ := Fenced{Set: set{"prod": diagnosing{}}, Fence: f}.Backend("prod")
	lines, err := b.(hub.Diagnoser).Diagnose(context.Background(), hub.NodeSpec{})
	if err != nil || len(lines) != 1 || lines[0] != "pod web-1: not scheduled" {
		t.Errorf("behind a closed fence: %q %v", lines, err)
	}
	b, _ = Fenced{Set: set{"prod": stub{}}, Fence: f}.Backend("prod")
	if lines, err := b.(hub.Diagnoser).Diagnose(context.Background(), hub.NodeSpec{}); lines != nil || err != nil {
		t.Errorf("a backend without a Diagnoser: %q %v", lines, err)
	}
}

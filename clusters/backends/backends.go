// Package backends puts the hub's backends side by side: Mux finds a
// NodeID's backend among several sets (the Terraform workspaces, then the
// Kubernetes clusters), and Fenced puts a set's writes behind a fence (a
// replica writes to a cluster only while it holds the cluster's claim).
// Both implement hub.Backends; adding a backend is one more set in a Mux.
package backends

import (
	"context"
	"fmt"

	"github.com/driftwatch/driftwatch/hub"
)

// Mux finds a NodeID's backend in its sets, in order: the first set that
// has a backend of that id serves it.
type Mux []hub.Backends

// Backend implements hub.Backends.
func (m Mux) Backend(id string) (hub.Backend, bool) {
	for _, set := range m {
		if b, ok := set.Backend(id); ok {
			return b, true
		}
	}
	return nil, false
}

// Fence guards a write to a cluster: Guard returns a context that ends when
// the write may no longer go on (the claim given up or run out) and a
// function to call when the write returned, or an error when the write
// may not start. internal/coord's Coordinator is one.
type Fence interface {
	Guard(ctx context.Context, cluster string) (context.Context, func(), error)
}

// Fenced hands out the backends of Set with their writes (Repair, Delete)
// behind Fence, checked right before each write and cancelling it the
// moment the fence closes. Reads are not fenced. A write refused by the
// fence fails as hub.ErrUnreachable (retried like an outage).
type Fenced struct {
	Set   hub.Backends
	Fence Fence
}

// Backend implements hub.Backends.
func (f Fenced) Backend(id string) (hub.Backend, bool) {
	b, ok := f.Set.Backend(id)
	if !ok {
		return nil, false
	}
	return fenced{Backend: b, cluster: id, fence: f.Fence}, true
}

// fenced is one backend behind the fence.
type fenced struct {
	hub.Backend
	cluster string
	fence   Fence
}

// Repair implements hub.Backend behind the fence.
func (f fenced) Repair(ctx context.Context, spec hub.NodeSpec, st hub.State, d hub.Drift) (hub.RepairResult, error) {
	wctx, done, err := f.fence.Guard(ctx, f.cluster)
	if err != nil {
		return hub.RepairResult{}, fmt.Errorf("repair %s: %w: %w", spec.ID, hub.ErrUnreachable, err)
	}
	defer done()
	return f.Backend.Repair(wctx, spec, st, d)
}

// Delete implements hub.Backend behind the fence.
func (f fenced) Delete(ctx context.Context, spec hub.NodeSpec, st hub.State) error {
	wctx, done, err := f.fence.Guard(ctx, f.cluster)
	if err != nil {
		return fmt.Errorf("delete %s: %w: %w", spec.ID, hub.ErrUnreachable, err)
	}
	defer done()
	return f.Backend.Delete(wctx, spec, st)
}

// ListOwned implements hub.OwnedLister when the backend does.
func (f fenced) ListOwned(ctx context.Context) ([]hub.SpecRef, error) {
	l, ok := f.Backend.(hub.OwnedLister)
	if !ok {
		return nil, fmt.Errorf("cluster %q: the backend cannot list its objects", f.cluster)
	}
	return l.ListOwned(ctx)
}

// Diagnose implements hub.Diagnoser when the backend does (a read: not
// fenced); a backend that cannot diagnose has nothing to say.
func (f fenced) Diagnose(ctx context.Context, spec hub.NodeSpec) ([]string, error) {
	d, ok := f.Backend.(hub.Diagnoser)
	if !ok {
		return nil, nil
	}
	return d.Diagnose(ctx, spec)
}

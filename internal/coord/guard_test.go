package coord

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// recorder is a Handler that counts Disown calls.
type recorder struct{ disowned atomic.Int32 }

func (r *recorder) Own(string)    {}
func (r *recorder) Disown(string) { r.disowned.Add(1) }

// newTestCoordinator returns a coordinator that holds a claim on "c1"
// after a renewal that started now (no API calls are made).
func newTestCoordinator(t *testing.T) (*Coordinator, *recorder) {
	t.Helper()
	rec := &recorder{}
	never := kubernetes.NewForConfigOrDie(&rest.Config{Host: "http://127.0.0.1:1"}) // never called
	c, err := New(Options{Client: never, Namespace: "driftwatch", HubID: "hub", ReplicaID: "r1",
		LeaseDuration: 3 * time.Second, Handler: rec})
	if err != nil {
		t.Fatal(err)
	}
	c.renewStart = time.Now()
	c.validUntil = c.renewStart.Add(c.opts.RenewDeadline)
	cl := &claim{lease: &coordv1.Lease{}}
	cl.ctx, cl.cancel = context.WithCancel(context.Background())
	c.claims["c1"] = cl
	return c, rec
}

func TestGuard(t *testing.T) {
	tests := []struct {
		name    string
		cluster string
		after   time.Duration // since the last renewal started
		wantErr bool
	}{
		{"held and fresh", "c1", 0, false},
		{"held, just before the renew deadline", "c1", 2*time.Second - time.Millisecond, false},
		{"held, at the renew deadline", "c1", 2 * time.Second, true},
		{"held, paused past the lease", "c1", 10 * time.Second, true},
		{"not held", "c2", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, _ := newTestCoordinator(t)
				time.Sleep(tt.after)
				ctx, done, err := c.Guard(t.Context(), tt.cluster)
				if (err != nil) != tt.wantErr {
					t.Fatalf("Guard after %v: err %v, want error %v", tt.after, err, tt.wantErr)
				}
				if err != nil {
					if !errors.Is(err, ErrNotOwner) {
						t.Fatalf("Guard: %v does not wrap ErrNotOwner", err)
					}
					return
				}
				defer done()
				if ctx.Err() != nil {
					t.Fatalf("write context ended at once: %v", ctx.Err())
				}
			})
		})
	}
}

// TestGuardWriteOutlivesValidity: a write that started while the claim was
// valid has its context ended when the validity runs out without a
// renewal.
func TestGuardWriteOutlivesValidity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newTestCoordinator(t)
		ctx, done, err := c.Guard(t.Context(), "c1")
		if err != nil {
			t.Fatal(err)
		}
		defer done()
		time.Sleep(c.opts.RenewDeadline - time.Millisecond)
		if ctx.Err() != nil {
			t.Fatalf("write context ended before the renew deadline: %v", ctx.Err())
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("write context at the renew deadline: %v, want deadline exceeded", ctx.Err())
		}
	})
}

// TestDropClaimWaitsForWrites: giving a claim up cancels the writes in
// flight and waits for them to return before the handler stops managing
// the cluster; no write starts after it.
func TestDropClaimWaitsForWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, rec := newTestCoordinator(t)
		ctx, done, err := c.Guard(t.Context(), "c1")
		if err != nil {
			t.Fatal(err)
		}
		dropped := make(chan struct{})
		go func() {
			c.dropClaim("c1", "test")
			close(dropped)
		}()
		synctest.Wait()
		if ctx.Err() == nil {
			t.Fatal("the write in flight was not cancelled")
		}
		if rec.disowned.Load() != 0 {
			t.Fatal("the cluster was disowned while a write was in flight")
		}
		if _, _, err := c.Guard(t.Context(), "c1"); !errors.Is(err, ErrNotOwner) {
			t.Fatalf("Guard after the claim was given up: %v, want ErrNotOwner", err)
		}
		done()
		<-dropped
		if rec.disowned.Load() != 1 {
			t.Fatalf("disowned %d times, want 1", rec.disowned.Load())
		}
	})
}

package hub

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// refusedErr is a backend refusal, as a Terraform workspace's for a
// resource released from its configuration.
type refusedErr struct{}

func (refusedErr) Error() string        { return "released: never repaired" }
func (refusedErr) Is(target error) bool { return target == ErrRefused }

// A repair the backend refuses for good (ErrRefused) shows as warn-only
// with the refusal as its reason, and is not retried: a manual repair that
// met it is spent, and the next drift is only reported.
func TestRefusedRepairIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFake(true)
		var tries atomic.Int32
		var refuse atomic.Bool
		b.repErr = func(id NodeID) error {
			if !refuse.Load() {
				return nil // the first apply
			}
			tries.Add(1)
			return fmt.Errorf("workspace %q: %s: repair refused: %w", id.Cluster, id.Name(), refusedErr{})
		}
		f := start(t, b, Options{})
		released := spec("c1", "released", "v1")
		released.Policy = PolicyWarn
		f.h.SetDesired([]NodeSpec{released})
		f.ready("c1", 1, 1)
		synctest.Wait()
		refuse.Store(true)
		b.put(released.ID, func(o *fakeObject) { o.content = "edited" })
		synctest.Wait()
		if got := f.node(released.ID).Status; got != StatusWarnOnly {
			t.Fatalf("before the manual repair: %s, want warn-only", got)
		}
		if err := f.h.RepairNow(released.ID); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		n := f.node(released.ID)
		if n.Status != StatusWarnOnly || !strings.Contains(n.Reason, "repair refused: released") {
			t.Errorf("after the refused repair: %s %q, want warn-only with the refusal", n.Status, n.Reason)
		}
		if got := tries.Load(); got != 1 {
			t.Errorf("the backend was asked %d times, want once (a refusal is not retried)", got)
		}
		if got := f.steps(released.ID, StepFailed); got != 0 {
			t.Errorf("%d failed steps, want none", got)
		}
	})
}

package coord

import (
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestOnOtherHash: a replica is told when another live replica publishes
// another desired-state hash (a Git source may have moved there), once per
// change of the set of other hashes, not at every renewal; a panic in the
// callback is logged and the loop goes on.
func TestOnOtherHash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeCoordination()
		clusters := fakeClusters(4)
		var aCalls, bCalls atomic.Int32
		startFakeNode(t, f, "a", "h1", clusters, onOther(func() { aCalls.Add(1) }))
		settle(time.Second)
		if n := aCalls.Load(); n != 0 {
			t.Errorf("a alone: %d calls, want 0", n)
		}
		b := startFakeNode(t, f, "b", "h2", clusters, onOther(func() { bCalls.Add(1); panic("boom") }))
		settle(fakeLease)
		if na, nb := aCalls.Load(), bCalls.Load(); na != 1 || nb != 1 {
			t.Errorf("a (h1) and b (h2): calls %d and %d, want 1 each (once, not per renewal)", na, nb)
		}
		if !strings.Contains(b.logs.String(), "OnOtherHash panicked") {
			t.Errorf("b's panic not logged:\n%s", b.logs)
		}
		// b caught up: nothing to tell; b moves again: a is told again.
		b.c.SetDesiredHash("h1")
		settle(fakeLease)
		b.c.SetDesiredHash("h3")
		settle(fakeLease)
		if n := aCalls.Load(); n != 2 {
			t.Errorf("after b moved to h1 then h3: a had %d calls, want 2", n)
		}
		if got := otherHashes("a", "h1", map[string]member{"a": {hash: "h1"}, "b": {hash: "h3"}, "c": {hash: "h2"}, "d": {hash: "h3"}, "e": {}}); got != "h2,h3" {
			t.Errorf("otherHashes = %q, want h2,h3", got)
		}
	})
}

// onOther sets Options.OnOtherHash.
func onOther(f func()) func(*Options) { return func(o *Options) { o.OnOtherHash = f } }

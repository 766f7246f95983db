package coord

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/driftwatch/driftwatch/internal/rescue"
)

// TestCyclePanicStopsTheReplica: a panic in a cycle (here in the Handler's
// Own) is recovered and logged with its stack, and Run returns it as an
// error (the app then stops the replica) instead of dying silently while
// the process lives on; the other replica takes every cluster over once
// the stopped one's membership expires.
func TestCyclePanicStopsTheReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeCoordination()
		clusters := fakeClusters(8)
		if len(Assign("b", clusters, []string{"a", "b"})) == 0 {
			t.Fatal("b's share is empty: pick other clusters")
		}
		a := startFakeNode(t, f, "a", "h1", clusters)
		settle(time.Second)
		if !sameSet(a.owned(), clusters) {
			t.Fatalf("a owns %v, want every cluster", a.owned())
		}
		b := startFakeNode(t, f, "b", "h1", clusters, func(o *Options) { o.Handler = panickingHandler{} })
		var err error
		select {
		case err = <-b.done:
			b.done <- err // for stop
		case <-time.After(3 * fakeLease):
			t.Fatalf("b still runs three lease durations after joining: its panic was not returned; a owns %v\n%s", a.owned(), b.logs)
		}
		if pe, ok := errors.AsType[*rescue.PanicError](err); !ok || pe.What != "the coordination cycle" || !strings.Contains(err.Error(), `replica "b"`) {
			t.Fatalf("b's Run = %v, want the cycle's panic, naming the replica", err)
		}
		logs := b.logs.String()
		if !strings.Contains(logs, "panic recovered") || !strings.Contains(logs, "panic_test.go") {
			t.Errorf("b's panic is not logged with its stack:\n%s", logs)
		}
		settle(2 * fakeLease)
		if !sameSet(a.owned(), clusters) || a.c.Ready() != nil {
			t.Errorf("a after b stopped: owns %v (ready: %v), want every cluster", a.owned(), a.c.Ready())
		}
		if got := b.stop(); got != err {
			t.Errorf("b's stop: %v, want its Run's error", got)
		}
	})
}

// panickingHandler is a Handler whose Own panics.
type panickingHandler struct{}

func (panickingHandler) Own(cluster string) { panic("own " + cluster + ": boom (test)") }
func (panickingHandler) Disown(string)      {}

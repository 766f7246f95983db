package bench

import (
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// TestSyncWatch: the hook's reports count the NodeIDs in sync now (in sync
// or repaired), whatever order their statuses come in.
func TestSyncWatch(t *testing.T) {
	w := newSyncWatch()
	a := hub.NewNodeID("c1", "ns", "a", hub.KindConfigMap)
	b := hub.NewNodeID("c1", "ns", "b", hub.KindConfigMap)
	now := time.Now()
	for _, r := range []struct {
		id   hub.NodeID
		st   hub.Status
		want int
	}{
		{a, hub.StatusUnknown, 0},
		{a, hub.StatusInSync, 1},
		{b, hub.StatusInSync, 2},
		{b, hub.StatusDrifted, 1},
		{b, hub.StatusRepaired, 2},
		{b, hub.StatusInSync, 2},
		{a, hub.StatusFailed, 1},
	} {
		w.onStatus(r.id, r.st, now)
		if got := w.count(); got != r.want {
			t.Fatalf("after %s %s: %d in sync, want %d", r.id, r.st, got, r.want)
		}
		select {
		case <-w.changed:
		default:
			t.Fatalf("after %s %s: no change signalled", r.id, r.st)
		}
	}
	// Stopped, it holds nothing and counts nothing more.
	w.stop()
	w.onStatus(a, hub.StatusInSync, now)
	if w.status != nil || w.count() != 0 {
		t.Errorf("a stopped watch holds %d statuses, counts %d", len(w.status), w.count())
	}
}

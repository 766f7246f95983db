package tui

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/driftwatch/driftwatch/hub"
)

// readerSource is a fakeSource of a remote hub: its snapshots carry no
// desired objects, and Node reads one (specs by NodeID; err fails it).
type readerSource struct {
	*fakeSource
	mu    sync.Mutex
	specs map[hub.NodeID]*hub.NodeSpec
	err   error
	asked []string
}

func (r *readerSource) Node(_ context.Context, id hub.NodeID) (hub.NodeStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, id.String())
	if r.err != nil {
		return hub.NodeStatus{}, r.err
	}
	return hub.NodeStatus{ID: id, Spec: r.specs[id]}, nil
}

// remoteSnapshot is the fixture as a remote hub's snapshot: no Spec.
func remoteSnapshot() (*hub.Snapshot, map[hub.NodeID]*hub.NodeSpec) {
	s := fixture()
	specs := map[hub.NodeID]*hub.NodeSpec{}
	for i := range s.Nodes {
		if s.Nodes[i].Spec != nil {
			specs[s.Nodes[i].ID] = s.Nodes[i].Spec
			s.Nodes[i].Spec = nil
		}
	}
	return s, specs
}

// TestNodeViewReadsDesiredFromRemoteHub: over a hub whose snapshots carry
// no desired objects (attach), the node view reads the one it shows, once
// per NodeID and revision, and shows its summary as over an in-process
// hub; a read that fails says why; a source that cannot read says it is
// not available.
func TestNodeViewReadsDesiredFromRemoteHub(t *testing.T) {
	inv := nid("prod-eu:casehub/inventory:deployment")
	s, specs := remoteSnapshot()
	src := &readerSource{fakeSource: newFakeSource(), specs: specs}
	m := New(src, Options{NoColor: true, Now: fixedClock})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 60})
	m.Update(snapshotMsg{snap: s})
	showNode(t, m, s, inv)
	out := m.View().Content
	for _, want := range []string{"DESIRED", "apps/v1 Deployment casehub/inventory", "policy repair"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the node view:\n%s", want, out)
		}
	}
	if len(src.asked) != 1 || src.asked[0] != inv.String() {
		t.Fatalf("asked %q, want the shown NodeID once", src.asked)
	}

	// The same revision again: not read again; a new revision: read.
	s.Seq++
	_, cmd := m.Update(snapshotMsg{snap: s})
	runCmd(m, cmd)
	if len(src.asked) != 1 {
		t.Fatalf("read again at the same revision: %q", src.asked)
	}
	for i := range s.Nodes {
		if s.Nodes[i].ID == inv {
			s.Nodes[i].Revision = "abc1234567890 release 2"
		}
	}
	s.Seq++
	_, cmd = m.Update(snapshotMsg{snap: s})
	if out := m.View().Content; !strings.Contains(out, "reading the desired object from the hub") {
		t.Errorf("while reading, the node view does not say so:\n%s", out)
	}
	runCmd(m, cmd)
	if len(src.asked) != 2 || !strings.Contains(m.View().Content, "apps/v1 Deployment casehub/inventory") {
		t.Fatalf("a new revision: asked %q\n%s", src.asked, m.View().Content)
	}

	// A read that fails says why.
	src.err = errors.New("hub http://hub:7070: 503 Service Unavailable")
	press(t, m, "esc")
	showNode(t, m, s, nid("prod-eu:casehub/inventory:service"))
	if out := m.View().Content; !strings.Contains(out, "the desired object could not be read: hub http://hub:7070: 503 Service Unavailable") {
		t.Errorf("a failed read is not said:\n%s", out)
	}

	// A source that cannot read: not available, nothing asked.
	plain, _ := newFixtureModel(t, 160, 60, Options{})
	showNode(t, plain, s, inv)
	if out := plain.View().Content; !strings.Contains(out, "desired object not available here") {
		t.Errorf("without a reader:\n%s", out)
	}
}

// TestNodeText: the node view as plain text for describe: the same
// sections, no escape sequence (the cluster's text cleaned, no colour),
// no line ending in blanks, the Spec given used (a remote hub's), and the
// cluster's pause and the holds over the NodeID from the snapshot.
func TestNodeText(t *testing.T) {
	inv := nid("prod-eu:casehub/inventory:deployment")
	s, specs := remoteSnapshot()
	n, _ := s.Node(inv)
	n.Reason = "edited by \x1b]0;evil\x07someone"
	n.Spec = specs[inv]
	s.Holds = []hub.Hold{{Target: hub.HoldTarget{Scope: hub.HoldNode, Name: inv.String()}, Reason: "INC-7", Since: ago(time.Minute), Until: fixedNow.Add(time.Hour)}}
	out := NodeText(s, n, 100, fixedNow)
	for _, want := range []string{"node        prod-eu:casehub/inventory:deployment", "hold        node prod-eu:casehub/inventory:deployment", "INC-7",
		"TIMELINE", "DESIRED\n  apps/v1 Deployment casehub/inventory"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("an escape sequence in\n%q", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasSuffix(l, " ") {
			t.Errorf("a line ends in blanks: %q", l)
		}
	}
}

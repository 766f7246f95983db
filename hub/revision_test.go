package hub

import (
	"testing"
	"time"
)

// A spec whose body is unchanged keeps the revision that last changed it,
// and is not counted as changed; a changed body takes its new revision.
// SetSourceRevisions shows the Git sources in the snapshot.
func TestRevisionIsNotAChange(t *testing.T) {
	h := New(Options{})
	s := spec("c1", "web", "v1")
	s.Revision = "aaa first"
	if changed, _, err := h.ReplaceDesired([]NodeSpec{s}, DesiredOptions{}); err != nil || len(changed) != 1 {
		t.Fatalf("first: changed %v, err %v", changed, err)
	}
	s.Revision = "bbb unrelated"
	changed, removed, err := h.ReplaceDesired([]NodeSpec{s}, DesiredOptions{})
	if err != nil || len(changed)+len(removed) != 0 {
		t.Fatalf("same body, new revision: changed %v, removed %v, err %v", changed, removed, err)
	}
	snap := h.Snapshot()
	if n, _ := snap.Node(s.ID); n.Revision != "aaa first" {
		t.Errorf("revision %q, want the one that last changed the body", n.Revision)
	}
	s.Hash, s.Revision = "v2", "ccc change"
	if changed, _, _ := h.ReplaceDesired([]NodeSpec{s}, DesiredOptions{}); len(changed) != 1 {
		t.Fatalf("new body: changed %v", changed)
	}
	h.SetSourceRevisions([]SourceRevision{{ID: "web", URL: "https://h/r.git", Commit: "ccc", LastFetch: time.Unix(5, 0)}})
	snap = h.Snapshot()
	if n, _ := snap.Node(s.ID); n.Revision != "ccc change" {
		t.Errorf("revision %q after a change, want ccc change", n.Revision)
	}
	if len(snap.Revisions) != 1 || snap.Revisions[0].Commit != "ccc" {
		t.Errorf("snapshot revisions: %+v", snap.Revisions)
	}
}

package driftgen

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/driftwatch/driftwatch/hub"
)

// TestFileTargets: a target with a File is edited or deleted, never sent
// to a cluster, and Pick chooses only file actions for it.
func TestFileTargets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "motd.txt")
	if err := os.WriteFile(path, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tgt := Target{ID: hub.NodeID{Cluster: "files", Resource: "local_file.motd", Kind: "local_file"}, Kind: "local_file", File: path}
	g := New(nil, 7)
	seen := make(map[Action]bool)
	for range 64 {
		_, a := g.Pick([]Target{tgt})
		if !slices.Contains(fileActions(), a) {
			t.Fatalf("Pick chose %s for a file", a)
		}
		seen[a] = true
	}
	if !seen[ActionEdit] || !seen[ActionDelete] {
		t.Fatalf("Pick over 64 draws chose %v, want both edits and deletes", seen)
	}

	if d := g.Do(t.Context(), tgt, ActionEdit); d.Err != nil {
		t.Fatalf("edit: %v", d.Err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != EditedContent {
		t.Fatalf("after edit: %q, %v; want %q", b, err, EditedContent)
	}
	if d := g.Do(t.Context(), tgt, ActionDelete); d.Err != nil {
		t.Fatalf("delete: %v", d.Err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("after delete: stat = %v, want not exist", err)
	}
	if d := g.Do(t.Context(), tgt, ActionScale); d.Err == nil {
		t.Fatal("scale of a file: no error")
	}
}

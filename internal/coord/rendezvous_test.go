package coord

import (
	"fmt"
	"slices"
	"testing"
)

func TestOwner(t *testing.T) {
	tests := []struct {
		name    string
		cluster string
		members []string
		want    string
	}{
		{"no members", "c1", nil, ""},
		{"one member", "c1", []string{"r1"}, "r1"},
		{"order does not matter", "c1", []string{"r3", "r1", "r2"}, Owner("c1", []string{"r1", "r2", "r3"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Owner(tt.cluster, tt.members); got != tt.want {
				t.Fatalf("Owner(%q, %v) = %q, want %q", tt.cluster, tt.members, got, tt.want)
			}
		})
	}
}

// clusterIDs returns n cluster ids.
func clusterIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("cluster-%03d", i)
	}
	return out
}

// TestAssignPartition: every cluster has exactly one owner, and the shares
// are balanced within a wide margin.
func TestAssignPartition(t *testing.T) {
	clusters := clusterIDs(600)
	for _, members := range [][]string{{"a"}, {"a", "b"}, {"a", "b", "c"}, {"hub-0", "hub-1", "hub-2", "hub-3", "hub-4"}} {
		seen := make(map[string]string)
		for _, m := range members {
			share := Assign(m, clusters, members)
			want := len(clusters) / len(members)
			if len(share) < want/2 || len(share) > want*3/2 {
				t.Errorf("members %v: %s owns %d of %d clusters, want about %d", members, m, len(share), len(clusters), want)
			}
			for _, c := range share {
				if o, dup := seen[c]; dup {
					t.Fatalf("members %v: %s owned by %s and %s", members, c, o, m)
				}
				seen[c] = m
			}
		}
		if len(seen) != len(clusters) {
			t.Fatalf("members %v: %d of %d clusters owned", members, len(seen), len(clusters))
		}
	}
}

// TestAssignMovesOnlyTheShare: a member joining takes clusters only from
// others (no cluster moves between two members that stay), and a member
// leaving hands out only its own clusters.
func TestAssignMovesOnlyTheShare(t *testing.T) {
	clusters := clusterIDs(300)
	tests := []struct {
		name          string
		before, after []string
	}{
		{"join", []string{"a", "b", "c"}, []string{"a", "b", "c", "d"}},
		{"leave", []string{"a", "b", "c", "d"}, []string{"a", "c", "d"}},
		{"first", []string{"a"}, []string{"a", "b"}},
		{"last", []string{"a", "b"}, []string{"b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			moved := 0
			for _, c := range clusters {
				was, is := Owner(c, tt.before), Owner(c, tt.after)
				if was == is {
					continue
				}
				moved++
				joined := !slices.Contains(tt.before, is)
				left := !slices.Contains(tt.after, was)
				if !joined && !left {
					t.Errorf("%s moved from %s to %s, neither of which joined or left", c, was, is)
				}
			}
			if moved == 0 {
				t.Fatalf("no cluster moved from %v to %v", tt.before, tt.after)
			}
			bigger := max(len(tt.before), len(tt.after))
			if limit := 2 * len(clusters) / bigger; moved > limit {
				t.Fatalf("%d of %d clusters moved from %v to %v, want at most %d", moved, len(clusters), tt.before, tt.after, limit)
			}
		})
	}
}

package config

import "testing"

// TestLocator: errors found after Load are positioned at the value of
// their field, through anchors, aliases and merge keys, or at the nearest
// enclosing field the file has.
func TestLocator(t *testing.T) {
	src := `hub:
  id: edge
  coordination:
    namespace: driftwatch
    kubeconfig: /k
defaults: &prod
  kubeconfig: /prod.yaml
  labels: {env: prod}
clusters:
  - id: a
    kubeconfig: /a.yaml
    context: "a-ctx"
  - <<: *prod
    id: b
  - id: c
    context: &ctx c-ctx
  - id: d
    context: *ctx
    kubeconfig:
`
	l := NewLocator("c.yaml", []byte(src))
	tests := []struct {
		field     string
		line, col int
	}{
		{"hub.coordination.kubeconfig", 5, 17},
		{"clusters[0].kubeconfig", 11, 17},
		{"clusters[0].context", 12, 14},
		{"clusters[1].kubeconfig", 7, 15},  // merged: where the anchor's value is
		{"clusters[1].labels[env]", 8, 17}, // inside a flow mapping
		{"clusters[1].context", 13, 5},     // absent: the entry
		{"clusters[2].context", 16, 19},    // an anchored value
		{"clusters[3].context", 16, 19},    // an alias: the anchor's value
		{"clusters[3].kubeconfig", 19, 5},  // null: its key
		{"clusters[9].kubeconfig", 10, 3},  // no such entry: the list
		{"nope", 1, 1},                     // no such field: the top
	}
	for _, tt := range tests {
		line, col := l.Position(tt.field)
		if line != tt.line || col != tt.col {
			t.Errorf("%s at %d:%d, want %d:%d", tt.field, line, col, tt.line, tt.col)
		}
	}
	e := l.Errorf("clusters[0].context", "context %q is not in kubeconfig %s", "a-ctx", "/a.yaml")
	if got, want := e.Error(), `c.yaml:12:14: clusters[0].context: context "a-ctx" is not in kubeconfig /a.yaml`; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
	if line, col := NewLocator("bad.yaml", []byte("a: [")).Position("a"); line != 0 || col != 0 {
		t.Errorf("a file that does not parse: %d:%d, want no position", line, col)
	}
}

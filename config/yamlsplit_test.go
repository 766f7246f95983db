package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/internal/benchconfig"
	yaml "go.yaml.in/yaml/v3"
)

// sameTree reports where a and b differ, comments aside, or "" when they
// do not: kinds, styles, tags, values, anchors, lines and columns, and
// what each alias refers to.
func sameTree(a, b *yaml.Node, path string) string {
	switch {
	case a.Kind != b.Kind, a.Style != b.Style, a.Tag != b.Tag, a.Value != b.Value, a.Anchor != b.Anchor:
		return fmt.Sprintf("%s: %v %v %q %q &%s != %v %v %q %q &%s", path, a.Kind, a.Style, a.Tag, a.Value, a.Anchor, b.Kind, b.Style, b.Tag, b.Value, b.Anchor)
	case a.Line != b.Line, a.Column != b.Column:
		return fmt.Sprintf("%s: at %d:%d != %d:%d", path, a.Line, a.Column, b.Line, b.Column)
	case (a.Alias == nil) != (b.Alias == nil):
		return path + ": alias on one side only"
	case a.Alias != nil && (a.Alias.Line != b.Alias.Line || a.Alias.Column != b.Alias.Column):
		return path + ": aliases to other nodes"
	case len(a.Content) != len(b.Content):
		return fmt.Sprintf("%s: %d children != %d", path, len(a.Content), len(b.Content))
	}
	for i := range a.Content {
		if d := sameTree(a.Content[i], b.Content[i], fmt.Sprintf("%s/%d", path, i)); d != "" {
			return d
		}
	}
	return ""
}

// splitApps returns a config of n generated applications between head
// and tail, each odd one using an anchor of the one before it.
func splitApps(head string, n int, tail string) string {
	var b strings.Builder
	b.WriteString(head)
	for i := range n {
		benchconfig.App(&b, i, true)
	}
	b.WriteString(tail)
	return b.String()
}

// splitCases are files parseSplit is tried on: split says whether it must
// cut them (with n 2); the others it may refuse, but what it gives must be
// the whole file's tree.
var splitCases = []struct {
	name  string
	data  string
	split bool
}{
	{"generated", splitApps(benchClusters, 40, ""), true},
	{"comment after the key and a trailing section", splitApps("hub: {id: x}\napplications: # the apps\n\n# first\n", 30, "clusters:\n  - id: dev\n    kubeconfig: /k\n"), true},
	{"items at column 0", "applications:\n- id: a\n  image: x\n# c\n- id: b\n  env:\n  - x\n-\n- id: c\n  ports: [1,\n    2]\nclusters: []\n", true},
	{"block scalars", "applications:\n  - id: a\n    script: |\n      - not an item\n\n      two\n      three\n# col 0\n  - id: b\n    s: >-\n     folded\n  - |2\n     keep\n  - id: c\n", true},
	{"quoted scalar over an item line", "applications:\n  - id: a\n  - name: \"one\n  - two\"\n  - id: c\n  - id: d\n", false},
	{"single quotes over an item line", "applications:\n  - id: a\n  - name: 'one\n  - two'\n  - id: c\n  - id: d\n", false},
	{"flow list over an item line", "applications:\n  - id: a\n  - [x,\n  - y]\n  - id: c\n  - id: d\n", false},
	{"flow map over an item line", "applications:\n  - id: a\n  - {x: 1,\n  - y: 2}\n  - id: c\n  - id: d\n", false},
	{"aliases within items", "applications:\n  - &a {id: a}\n  - *a\n  - id: b\n  - &c x\n  - [*c, *c]\n  - id: d\n", true},
	{"alias to an earlier piece", "applications:\n  - &a {id: a}\n  - id: b\n  - id: c\n  - id: d\n  - *a\n", false},
	{"anchor in the head", "defaults: &d {image: x}\napplications:\n  - <<: *d\n    id: a\n  - <<: *d\n    id: b\n  - id: c\n", false},
	{"anchor in the head, unused", "hub: &h {id: x}\napplications:\n  - id: a\n  - id: b\n  - id: c\n", true},
	{"tail uses an item's anchor", "applications:\n  - id: a\n  - id: &b b\n  - id: c\nother: *b\n", false},
	{"second document", "a: 1\n---\nhub: {id: x}\napplications:\n  - id: a\n  - id: b\n  - id: c\n...\n---\nb: 2\n", true},
	{"two keys", "applications:\n  - id: a\n  - id: b\napplications:\n  - id: c\n  - id: d\n", false},
	{"quoted key before a quoted scalar", "\"applications\":\nx: \"foo\napplications:\n  - id: a\n  - id: b\n  - id: c\nbar\"\n", false},
	{"a mapping, not a list", "applications:\n  a: 1\n  b: 2\n", false},
	{"flow list value", "applications:\n  [a, b]\n", false},
	{"anchored list", "applications: &l\n  - id: a\n  - id: b\n", false},
	{"carriage returns", "applications:\r\n  - id: a\r\n  - id: b\r\n  - id: c\r\n", false},
	{"tab", "applications:\n  - id: a\n\t- id: b\n  - id: c\n", false},
	{"key inside the items", "applications:\n  - id: a\n  - id: b\n  bad: 1\n  - id: c\n", false},
	{"less indented line", "applications:\n    - id: a\n    - id: b\n  - id: c\n    - id: d\n", false},
	{"plain scalar at column 0", "applications:\n- a\n-b\n- c\n- d\n", false},
	{"empty items", "applications:\n  -\n  -\n  -\n", true},
	{"column 0 comment in a block scalar", "applications:\n  - id: a\n    script: |\n      one\n# col 0\n      two\n  - id: b\n  - id: c\n", false},
	{"syntax error in an item", "applications:\n  - id: a\n  - id: [b\n  - id: c\n  - id: d\n", false},
	{"no applications", "hub: {id: x}\nclusters: []\n", false},
}

// TestParseSplit parses each case in 2 to 6 pieces and requires the tree
// of the whole file whenever parseSplit gives one, and a cut for the
// files it must cut.
func TestParseSplit(t *testing.T) {
	for _, c := range splitCases {
		t.Run(c.name, func(t *testing.T) {
			whole, werr := parseWhole([]byte(c.data))
			for n := 2; n <= 6; n++ {
				docs, ok := parseSplit([]byte(c.data), c.data, n)
				if n == 2 && ok != c.split && c.split {
					t.Fatalf("parseSplit(2) ok = %v, want %v", ok, c.split)
				}
				if !ok {
					continue
				}
				if werr != nil {
					t.Fatalf("parseSplit(%d) gave a tree; the whole file does not parse: %v", n, werr)
				}
				if len(docs) != len(whole) {
					t.Fatalf("parseSplit(%d): %d documents, whole file %d", n, len(docs), len(whole))
				}
				for i := range docs {
					if d := sameTree(docs[i], whole[i], fmt.Sprintf("doc %d", i)); d != "" {
						t.Fatalf("parseSplit(%d) differs from the whole file's tree at %s", n, d)
					}
				}
			}
		})
	}
}

// TestParseSplitCuts checks where a generated file is cut: n pieces at
// item lines, none before an item that uses an alias.
func TestParseSplitCuts(t *testing.T) {
	data := []byte(splitApps(benchClusters, 300, "notifications: []\n"))
	for _, n := range []int{2, 4, 16} {
		l, ok := layout(data, n)
		if !ok || len(l.cuts) != n {
			t.Fatalf("layout(%d): ok %v, %d cuts", n, ok, len(l.cuts))
		}
		for _, cut := range l.cuts {
			line := string(data[l.starts[cut]:l.starts[cut+1]])
			if !strings.HasPrefix(line, "  - id: app-") {
				t.Fatalf("layout(%d) cuts before %q", n, line)
			}
		}
		if got := string(data[l.starts[l.end]:]); got != "notifications: []\n" {
			t.Fatalf("layout(%d): the list ends before %q", n, got)
		}
	}
	// Every odd application uses the anchor of the one before it: the
	// cuts fall before even ones.
	for _, cut := range mustLayout(t, data, 8).cuts[1:] {
		if strings.Contains(itemText(data, cut), "*") {
			t.Fatalf("cut before an item that uses an alias: %q", itemText(data, cut))
		}
	}
	docs, ok := parseSplit(data, string(data), 8)
	whole, err := parseWhole(data)
	if !ok || err != nil {
		t.Fatalf("parseSplit ok %v, whole file %v", ok, err)
	}
	if d := sameTree(docs[0], whole[0], "doc"); d != "" {
		t.Fatal(d)
	}
}

// mustLayout is layout that fails the test when data cannot be cut.
func mustLayout(t *testing.T, data []byte, n int) splitLayout {
	t.Helper()
	l, ok := layout(data, n)
	if !ok {
		t.Fatalf("layout(%d) cannot cut", n)
	}
	return l
}

// itemText is the item of data that starts at line i.
func itemText(data []byte, i int) string {
	lines := strings.SplitAfter(string(data), "\n")
	var b strings.Builder
	b.WriteString(lines[i])
	for _, l := range lines[i+1:] {
		if strings.HasPrefix(l, "  - ") || !strings.HasPrefix(l, " ") {
			break
		}
		b.WriteString(l)
	}
	return b.String()
}

// FuzzParseSplit requires of any input that when parseSplit gives a tree
// the whole file parses to the same.
func FuzzParseSplit(f *testing.F) {
	for _, c := range splitCases {
		f.Add(c.data, 2)
	}
	f.Fuzz(func(t *testing.T, data string, n int) {
		n = 2 + (n&0xff)%6
		docs, ok := parseSplit([]byte(data), data, n)
		if !ok {
			return
		}
		whole, err := parseWhole([]byte(data))
		if err != nil {
			t.Fatalf("parseSplit gave a tree; the whole file does not parse: %v", err)
		}
		if len(docs) != len(whole) {
			t.Fatalf("%d documents, whole file %d", len(docs), len(whole))
		}
		for i := range docs {
			if d := sameTree(docs[i], whole[i], "doc"); d != "" {
				t.Fatal(d)
			}
		}
	})
}

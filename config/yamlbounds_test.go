package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/lexer"
)

// keys returns n lines "<indent>k<i>: v", starting at key from.
func keys(indent string, from, n int) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, "%sk%d: v\n", indent, i)
	}
	return b.String()
}

// boundsTests are shapes of input at and beyond the limits, with the error
// that bounds and treeBounds give ("" for none).
func boundsTests() []struct{ name, src, want string } {
	const max = maxMappingKeys
	return []struct{ name, src, want string }{
		{name: "keys at the limit", src: keys("", 0, max)},
		{name: "one key too many", src: keys("", 0, max+1),
			want: fmt.Sprintf("x.yaml:%d:1: a mapping has more than %d keys", max+1, max)},
		{name: "nested mapping", src: "a:\n  b:\n" + keys("    ", 0, max+1) + "c: d\n",
			want: fmt.Sprintf("x.yaml:%d:5: a mapping has more than %d keys", max+3, max)},
		{name: "one mapping per list item", src: "- " + keys("  ", 0, max)[2:] + "- " + keys("  ", 0, max)[2:]},
		{name: "in a list item", src: "- " + keys("  ", 0, max+1)[2:],
			want: fmt.Sprintf("x.yaml:%d:3: a mapping has more than %d keys", max+1, max)},
		{name: "an indentless list between keys", src: keys("", 0, max/2) + "l:\n- a\n- b: c\n  d: e\n" + keys("", max, max/2),
			want: fmt.Sprintf("x.yaml:%d:1: a mapping has more than %d keys", max+4, max)},
		{name: "block scalars between keys", src: strings.Repeat("k: |\n  text\n\n", max+1),
			want: fmt.Sprintf("x.yaml:%d:1: a mapping has more than %d keys", 3*max+1, max)},
		{name: "anchors and tags on keys", src: "&a k: v\n!!str t: v\n" + keys("", 0, max-1),
			want: fmt.Sprintf("x.yaml:%d:1: a mapping has more than %d keys", max+1, max)},
		{name: "explicit keys", src: strings.Repeat("? k\n: v\n", max+1),
			want: fmt.Sprintf("x.yaml:%d:1: a mapping has more than %d keys", 2*max+1, max)},
		{name: "a flow mapping", src: "a: {" + strings.Repeat("k: v, ", 2*max) + "}\n"},
		{name: "a mapping per document", src: keys("", 0, max) + "---\n" + keys("", 0, max)},
		{name: "flow nesting at the limit", src: strings.Repeat("[", maxNesting) + strings.Repeat("]", maxNesting)},
		{name: "flow nesting too deep", src: "a: " + strings.Repeat("[", maxNesting) + strings.Repeat("]", maxNesting),
			want: fmt.Sprintf("x.yaml:1:%d: nested more than %d levels deep", maxNesting+3, maxNesting)},
		{name: "block lists too deep", src: strings.Repeat("- ", maxNesting+1) + "x\n",
			want: fmt.Sprintf("x.yaml:1:%d: nested more than %d levels deep", 2*maxNesting+1, maxNesting)},
		{name: "block mappings too deep", src: nestedMappings(maxNesting + 1),
			want: fmt.Sprintf("x.yaml:%d:%d: nested more than %d levels deep", maxNesting+1, maxNesting+1, maxNesting)},
		{name: "block mappings at the limit", src: nestedMappings(maxNesting)},
	}
}

// TestBounds checks which shapes bounds refuses in goccy/go-yaml's tokens,
// and where it says so.
func TestBounds(t *testing.T) {
	for _, tt := range boundsTests() {
		t.Run(tt.name, func(t *testing.T) {
			w := &walker{file: "x.yaml"}
			ok := w.bounds(lexer.Tokenize(tt.src))
			got := ""
			if len(w.errs) > 0 {
				got = w.errs.Error()
			}
			if got != tt.want || ok != (tt.want == "") {
				t.Errorf("bounds = %v, %q; want %q", ok, got, tt.want)
			}
		})
	}
}

// TestTreeBounds checks that treeBounds refuses the same shapes in the
// node tree as bounds does in the tokens, at the same positions but for
// explicit keys (`? k`), which the tree places at the key, not at the '?'.
func TestTreeBounds(t *testing.T) {
	for _, tt := range boundsTests() {
		if tt.name == "explicit keys" {
			tt.want = strings.Replace(tt.want, ":1: a mapping", ":3: a mapping", 1)
		}
		t.Run(tt.name, func(t *testing.T) {
			docs, err := parseDocuments([]byte(tt.src), tt.src)
			if err != nil {
				t.Fatal(err)
			}
			w := &walker{file: "x.yaml", text: source{data: []byte(tt.src)}}
			ok := w.treeBounds(docs)
			got := ""
			if len(w.errs) > 0 {
				got = w.errs.Error()
			}
			if got != tt.want || ok != (tt.want == "") {
				t.Errorf("treeBounds = %v, %q; want %q", ok, got, tt.want)
			}
		})
	}
}

// nestedMappings returns n block mappings, each the value of the one
// before: "a:\n a:\n  a:\n ...".
func nestedMappings(n int) string {
	var b strings.Builder
	for i := range n - 1 {
		fmt.Fprintf(&b, "%sa:\n", strings.Repeat(" ", i))
	}
	fmt.Fprintf(&b, "%sa: x\n", strings.Repeat(" ", n-1))
	return b.String()
}

// TestParseBounds checks that Parse refuses a wide mapping before
// reading the file, with the error's position.
func TestParseBounds(t *testing.T) {
	src := "clusters:\n  - id: a\n    kubeconfig: k\napplications:\n  - id: x\n    namespace: ns\n    clusters: [a]\n    image: nginx\n    env:\n" +
		keys("      ", 0, maxMappingKeys+1)
	list := parseErrors(t, src)
	want := fmt.Sprintf("config.yaml:%d:7: a mapping has more than %d keys", 10+maxMappingKeys, maxMappingKeys)
	if list.Error() != want {
		t.Errorf("Parse error = %q, want %q", list.Error(), want)
	}
}

package config

import (
	"fmt"
	"runtime"
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
			ok, _ := w.treeBounds(docs)
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

// aliasedEnvConfig is a config of apps applications after a first one
// whose env (keys keys) is anchored, each using it as env: *e.
func aliasedEnvConfig(keys, apps int) string {
	var b strings.Builder
	b.WriteString("clusters:\n  - id: a\n    kubeconfig: k\napplications:\n  - {id: first, namespace: ns, clusters: [a], image: i, env: &e {")
	for i := range keys {
		fmt.Fprintf(&b, "K%d: v, ", i)
	}
	b.WriteString("}}\n")
	for i := range apps {
		fmt.Fprintf(&b, "  - {id: a%d, namespace: ns, clusters: [a], image: i, env: *e}\n", i)
	}
	return b.String()
}

// TestAliasesBoundedByFileSize parses a 23 KiB config whose env of 1,000
// keys is used by 200 applications (200,000 entries once expanded): it is
// refused at the alias that crosses the limit before anything is decoded,
// allocating a small multiple of its size (without the bound, decoding
// it allocates about 70 MiB, and quadratically more as it grows).
func TestAliasesBoundedByFileSize(t *testing.T) {
	src := aliasedEnvConfig(1000, 200)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Parse("config.yaml", []byte(src), testOptions())
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	if alloc > 400*uint64(len(src)) {
		t.Errorf("a %d KiB config allocated %d MiB while parsing (x%d)", len(src)>>10, alloc>>20, alloc/uint64(len(src)))
	}
	if err == nil || !strings.Contains(err.Error(), "config.yaml:") || !strings.Contains(err.Error(), "aliases expand to more than") {
		t.Fatalf("error = %v, want the aliases refused at their file and line", err)
	}
	t.Logf("%d bytes, %d KiB allocated: %v", len(src), alloc>>10, err)

	// Nested aliases (a "billion laughs", 10^9 nodes) are counted once
	// per anchor: refused at once.
	lol := "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 1; i < 10; i++ {
		lol += fmt.Sprintf("l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", "))
	}
	_, err = Parse("config.yaml", []byte(lol), testOptions())
	if err == nil || !strings.Contains(err.Error(), "aliases expand to more than") {
		t.Errorf("nested aliases: error = %v, want them refused", err)
	}
}

// TestAliasesSharedByManyApplications loads a realistic config that
// shares one env block of 20 keys among 500 applications: within the
// budget, it loads, every application with the 20 keys.
func TestAliasesSharedByManyApplications(t *testing.T) {
	var b strings.Builder
	b.WriteString("clusters:\n  - id: a\n    kubeconfig: k\napplications:\n")
	for i := range 500 {
		fmt.Fprintf(&b, "  - id: app%d\n    namespace: ns\n    clusters: [a]\n    image: nginx\n", i)
		if i > 0 {
			b.WriteString("    env: *common\n")
			continue
		}
		b.WriteString("    env: &common\n")
		for k := range 20 {
			fmt.Fprintf(&b, "      KEY_%d: value-%d\n", k, k)
		}
	}
	cfg, err := Parse("config.yaml", []byte(b.String()), testOptions())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(cfg.Applications) != 500 || len(cfg.Applications[499].Env) != 20 {
		t.Errorf("%d applications, the last with %d env keys", len(cfg.Applications), len(cfg.Applications[499].Env))
	}
}

package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fastCases are files parseFast is tried on; fast says whether it must
// read them itself. Whatever it reads must be the library's tree.
var fastCases = []struct {
	name string
	data string
	fast bool
}{
	{"generated", string(benchApps(50)), true},
	{"comments, blank lines and a modeline", "# yaml-language-server: $schema=x\n\n# c\nhub:   # the hub\n  id: x # id\n\n    # deeper comment\nclusters:\n  - id: a  \n", true},
	{"items at odd columns", "a:\n  -   b: 1\n      c: 2\n  -\n    d: 3\n  -  e\n", true},
	{"a list on a dash's line", "a:\n  - - no\n", false},
	{"items of scalars and flows", "a:\n  - x\n  - \"y\"\n  - 'z'\n  - [1, 2]\n  - {k: v}\n  - []\n  - {}\n", true},
	{"an item alone over a block", "a:\n  -\n    b: 1\n  -\n    - c\n", true},
	{"tags of plain scalars", "a: [1, 0, 012, 0x1F, 1_000, 1.5, .5, .inf, -.Inf, +1, -2, 2001-12-14, 1e3, 089, ~, null, Null, true, False, yes, on, y, n, o, 99999999999999999999]\nb: 2001-12-14t21:59:43.10-05:00\nc: 123456789012345678\nd: 1234567890123456789\n", true},
	{"keywords and keys", "true: 1\n8080: x\n~: y\n<<: {a: b}\n.5: z\n", true},
	{"single quotes doubled", "a: 'it''s'\nb: ['x''y', 'z']\nc: ''\nd: \"\"\n", true},
	{"plain scalars with indicators inside", "a: it's a \"b\" c, d [e] {f}\nb: http://x:80/y#z\nc: -1\nd: a -b\ne: ?x\nf: :x\ng: a#b\n", true},
	{"a top level indented", "  a: 1\n  b: 2\n", true},
	{"a sequence at the top", "- a\n- b: 1\n  c: 2\n", true},
	{"an empty value", "a:\nb: 1\n", false},
	{"an empty value at the end", "a: 1\nb:", false},
	{"an indentless sequence", "a:\n- x\n- y\n", false},
	{"a multi-line plain scalar", "a: one\n  two\nb: 1\n", false},
	{"a continuation after a comment", "a: one\n  # c\n  two\n", false},
	{"a block scalar", "a: |\n  x\n", false},
	{"an anchor and an alias", "a: &x 1\nb: *x\n", false},
	{"a tag", "a: !!str 1\n", false},
	{"an escape", "a: \"x\\ny\"\n", false},
	{"a quote over two lines", "a: \"x\n  y\"\n", false},
	{"a flow over two lines", "a: [1,\n  2]\n", false},
	{"a nested flow", "a: [[1]]\n", false},
	{"a flow with a trailing comma", "a: [1, ]\n", false},
	{"a flow key without a value", "a: {b, c: d}\n", false},
	{"a flow value with a colon", "a: {b: c:d}\n", false},
	{"a quoted key", "\"a\": 1\n", false},
	{"a value that is a mapping", "a: b: c\n", false},
	{"a key without a space after its colon", "a:b\n", false},
	{"a document marker", "---\na: 1\n", false},
	{"a directive", "%YAML 1.1\n---\na: 1\n", false},
	{"a tab", "a:\t1\n", false},
	{"a carriage return", "a: 1\r\nb: 2\r\n", false},
	{"a byte outside ASCII", "a: caf\xc3\xa9\n", false},
	{"a complex key", "? a\n: b\n", false},
	{"bad indentation", "a:\n    b: 1\n  c: 2\n", false},
	{"a dedent inside a sequence", "a:\n    - x\n  - y\n", false},
	{"a comment glued to a quote", "a: \"x\"#c\n", false},
	{"text after a quote", "a: \"x\" y\n", false},
	{"only comments", "# nothing\n\n", false},
	{"empty", "", false},
	{"a scalar document", "hello\n", false},
	{"a long key", strings.Repeat("k", fastMaxKey+1) + ": 1\n", false},
	{"deep nesting", deepMapping(fastMaxDepth + 2), false},
}

// deepMapping returns n mappings each nested in the one before.
func deepMapping(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i) + "k:\n")
	}
	b.WriteString(strings.Repeat(" ", n) + "v: 1\n")
	return b.String()
}

// checkFast parses data with parseFast and the library, and fails when
// parseFast gives a tree the library does not.
func checkFast(t *testing.T, data []byte) bool {
	t.Helper()
	doc, ok := parseFast(string(data))
	if !ok {
		return false
	}
	whole, err := parseWhole(data)
	if err != nil {
		t.Fatalf("parseFast gave a tree; the library refuses the file: %v", err)
	}
	if len(whole) != 1 {
		t.Fatalf("parseFast gave one document; the library %d", len(whole))
	}
	if d := sameTree(doc, whole[0], "doc"); d != "" {
		t.Fatal(d)
	}
	return true
}

func TestParseFast(t *testing.T) {
	for _, c := range fastCases {
		t.Run(c.name, func(t *testing.T) {
			if got := checkFast(t, []byte(c.data)); got != c.fast {
				t.Errorf("parseFast read it: %v, want %v", got, c.fast)
			}
		})
	}
}

// TestParseFastOnTheRepositorysYAML holds parseFast to the library on
// every YAML file of the repository (configs, examples, manifests,
// golden files), and requires it to read the shipped examples that keep
// to its part of YAML, so that a change that makes it give up on them is
// seen.
func TestParseFastOnTheRepositorysYAML(t *testing.T) {
	root := filepath.Join("..")
	read := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || (!strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".yml")) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		t.Run(path, func(t *testing.T) {
			if checkFast(t, data) {
				read++
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if read < 10 {
		t.Errorf("parseFast read %d of the repository's YAML files, want at least 10", read)
	}
}

// TestParseFastReadsLargeConfigs requires parseFast to read the generated
// configs the parse benchmarks measure, with and without comments.
func TestParseFastReadsLargeConfigs(t *testing.T) {
	for name, data := range map[string][]byte{
		"10000 applications": benchApps(10000),
		"1 MB":               benchConfig(1<<20, false),
	} {
		t.Run(name, func(t *testing.T) {
			if !checkFast(t, data) {
				t.Error("parseFast gave up on it")
			}
		})
	}
}

// FuzzParseFast requires of any input that when parseFast gives a tree
// the library parses the file to the same.
func FuzzParseFast(f *testing.F) {
	for _, c := range fastCases {
		f.Add(c.data)
	}
	for _, c := range splitCases {
		f.Add(c.data)
	}
	f.Fuzz(func(t *testing.T, data string) {
		checkFast(t, []byte(data))
	})
}

// TestParseFastBlankLinesAllocateLittle: a file of blank lines (hostile
// input within the size limit) must not make parseFast reserve a line
// record for each of them.
func TestParseFastBlankLinesAllocateLittle(t *testing.T) {
	data := []byte(strings.Repeat("\n", 1<<20) + "a: 1\n")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if !checkFast(t, data) {
		t.Fatal("parseFast gave up on it")
	}
	runtime.ReadMemStats(&after)
	// parseWhole's share is in the figure too; a record a line would be
	// 32 MiB more.
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("parsing 1 MiB of blank lines allocated %d MiB, want at most 16", got>>20)
	}
}

// TestParsedConfigKeepsOneCopy: the strings a config keeps share the
// memory of its content (Data), so a config without its applications
// keeps one copy of the file, not the file and a second copy that its
// cluster ids would pin.
func TestParsedConfigKeepsOneCopy(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	data := benchApps(600) // parsed whole: under splitMinBytes
	size := len(data)
	if size >= splitMinBytes {
		t.Fatalf("the file is %d bytes, want under %d", size, splitMinBytes)
	}
	cfg, err := Parse("bench.yaml", data, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	kept := cfg.WithoutDesired()
	cfg, data = nil, nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	if got := int64(after.HeapAlloc) - int64(before.HeapAlloc); got > int64(size)*3/2 {
		t.Errorf("a config of %d bytes keeps %d bytes of heap, want under 1.5 times its size", size, got)
	}
	if len(kept.Clusters) != 3 {
		t.Fatalf("%d clusters kept", len(kept.Clusters))
	}
}

package config

import (
	"slices"
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// TestAliasesResolve checks that an alias refers to the last anchor of its
// name before it, nested anchors included, and that an alias inside the
// node it refers to is refused, however deep.
func TestAliasesResolve(t *testing.T) {
	src := `clusters:
  - id: a
    kubeconfig: k
    labels: &l {env: one}
  - id: b
    kubeconfig: k
    labels: *l
  - &c
    id: c
    kubeconfig: k
    labels: &l {env: two}
  - id: d
    kubeconfig: k
    labels: *l
applications:
  - id: x
    namespace: ns
    selector: env=two
    image: nginx
`
	cfg, err := Parse("config.yaml", []byte(src), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"one", "one", "two", "two"} {
		if got := cfg.Clusters[i].Labels["env"]; got != want {
			t.Errorf("clusters[%d] env = %q, want %q", i, got, want)
		}
	}

	list := parseErrors(t, "hub: &h\n  ignore:\n    - &r\n      name: *h\n")
	want := "config.yaml:4:13: hub.ignore[0].name: alias *h is inside the node it refers to"
	if !slices.ContainsFunc(list, func(e *Error) bool { return e.Error() == want }) {
		t.Errorf("errors =\n%v\nwant among them %q", list, want)
	}
}

// TestScalarKinds checks that scalars are typed as goccy/go-yaml, which
// parsed configs before go.yaml.in/yaml/v3, types them: the type decides
// which fields accept a value and how errors describe it.
func TestScalarKinds(t *testing.T) {
	goccyKind := func(n ast.Node) valueKind {
		for {
			switch v := n.(type) {
			case *ast.TagNode:
				n = v.Value
				continue
			case *ast.AnchorNode:
				n = v.Value
				continue
			case nil, *ast.NullNode:
				return kindNull
			case *ast.IntegerNode:
				return kindInt
			case *ast.FloatNode:
				return kindFloat
			case *ast.InfinityNode, *ast.NanNode:
				return kindInfNaN
			case *ast.BoolNode:
				return kindBool
			case *ast.StringNode:
				return kindStr
			case *ast.LiteralNode:
				return kindBlock
			case *ast.MappingNode:
				return kindMap
			case *ast.SequenceNode:
				return kindSeq
			}
			t.Fatalf("goccy node %T", n)
		}
	}
	for _, s := range []string{
		"3", "-3", "+3", "0", "-0", "00", "017", "08", "0x1F", "0X1F", "-0x1", "0o17", "0b101", "1_000", "1__0", "_1",
		"9223372036854775808", "18446744073709551615", "18446744073709551616", "-9223372036854775809",
		"1.10", ".5", "1.", "+.5", "0.1e2", "-1.5e-3", "1_0.5", "1e3", "1e+3", "1e400", "1e",
		".inf", "-.inf", "+.inf", ".Inf", ".nan", ".NaN", "NaN", "inf",
		"true", "True", "TRUE", "tRue", "false", "yes", "no", "on", "off", "y", "n",
		"~", "null", "Null", "NULL", "", "2001-12-14", "2001-12-14T21:59:43Z", "12:30", "1:20:30", "<<",
		"'3'", `"3"`, "'a'", "!!str 3", `!!int "3"`, "!foo 3", "!foo bar", "!!str", "!!null ''", "&a 3", "!!float 3", "!!bool yes", "!!str +.inf", "!!str .inf", "!!str 1.5", "!!str 1e3", "!!str true", "!!str ~",
		"|\n  text", ">\n  text", "|-\n  3", "{a: 1}", "[1]",
	} {
		src := "k: " + s + "\n"
		f, err := parser.ParseBytes([]byte(src), 0)
		if err != nil {
			t.Fatalf("goccy: %q: %v", src, err)
		}
		want := goccyKind(f.Docs[0].Body.(*ast.MappingNode).Values[0].Value)
		docs, err := parseDocuments([]byte(src), src)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if got := kindOf(docs[0].Content[0].Content[1]); got != want {
			t.Errorf("%q: kind %d, goccy/go-yaml's %d", s, got, want)
		}
	}
}

// TestSyntaxErrorOfYAMLv3 checks the error of a file that goccy/go-yaml
// accepts but go.yaml.in/yaml/v3 refuses (a list after a scalar value): the
// latter's, with its line, and an error that both refuse: goccy/go-yaml's.
func TestSyntaxErrorOfYAMLv3(t *testing.T) {
	src := "clusters:\n  - id: a\n    kubeconfig: k\n      - a: b\n"
	if _, err := parser.ParseBytes([]byte(src), 0); err != nil {
		t.Fatalf("goccy/go-yaml refuses %q, the case needs one it accepts: %v", src, err)
	}
	list := parseErrors(t, src)
	if want := "config.yaml:4:0: yaml: mapping values are not allowed in this context"; list.Error() != want {
		t.Errorf("errors =\n%v\nwant %q", list, want)
	}

	list = parseErrors(t, "hub:\n  id: [a, b\nclusters: []\n")
	if want := "config.yaml:3:1: yaml: ',' or ']' must be specified"; list.Error() != want {
		t.Errorf("errors =\n%v\nwant %q", list, want)
	}
}

// TestYAMLv3Leniency checks what go.yaml.in/yaml/v3 refuses but configs
// could say before: an alias to no anchor before it, wherever it is
// (reported where it is read, and pointed at by a Locator all the same),
// and a %YAML 1.2 directive.
func TestYAMLv3Leniency(t *testing.T) {
	src := "hub: {id: *x}\nclusters: [*b, &b {id: b, kubeconfig: k}, *b]\napplications:\n  - {<<: *c, id: a, namespace: n, clusters: [b], image: i}\n  - *x\n"
	want := `config.yaml:1:11: hub.id: unknown alias *x
config.yaml:2:12: clusters[0]: unknown alias *b
config.yaml:2:12: clusters[0].id: required field is missing
config.yaml:2:12: clusters[0].context: required without kubeconfig: name the context of $KUBECONFIG or ~/.kube/config to use (or set kubeconfig, or inCluster: true)
config.yaml:2:24: clusters[2].id: duplicate cluster id "b" (first at line 2)
config.yaml:4:10: applications[0]: unknown alias *c
config.yaml:5:5: applications[1]: unknown alias *x
config.yaml:5:5: applications[1].id: required field is missing
config.yaml:5:5: applications[1].namespace: required field is missing
config.yaml:5:5: applications[1].image: required field is missing
config.yaml:5:5: applications[1]: one of clusters or selector is required`
	if list := parseErrors(t, src); list.Error() != want {
		t.Errorf("errors =\n%v\nwant\n%s", list, want)
	}
	l := NewLocator("config.yaml", []byte(src))
	if line, col := l.Position("clusters[2].kubeconfig"); line != 2 || col != 39 {
		t.Errorf("clusters[2].kubeconfig at %d:%d, want 2:39", line, col)
	}

	if _, err := Parse("config.yaml", []byte("%YAML 1.2\n---\n"+validMinimal), testOptions()); err != nil {
		t.Errorf("with %%YAML 1.2: %v", err)
	}
}

// validMinimal is a small valid config.
const validMinimal = "clusters:\n  - id: a\n    kubeconfig: k\napplications:\n  - id: x\n    namespace: ns\n    clusters: [a]\n    image: nginx\n"

// TestValuePositions checks that a value with an anchor or a tag is placed
// after them (the parser places it at them), on lines with characters of
// more than one byte too, and that a block mapping is placed at its first
// key, anchor included.
func TestValuePositions(t *testing.T) {
	src := "hub: &h {id: a}\nclusters:\n  - &c\n    &k id: b\n    kubeconfig: !!str 7\n  - {id: \"é\", kubeconfig: &z [1], context: !!str &y x}\n"
	l := NewLocator("config.yaml", []byte(src))
	for field, want := range map[string][2]int{
		"hub":                    {1, 9},
		"clusters[0]":            {4, 5},
		"clusters[0].kubeconfig": {5, 23},
		"clusters[1].kubeconfig": {6, 30},
		"clusters[1].context":    {6, 53},
	} {
		if line, col := l.Position(field); line != want[0] || col != want[1] {
			t.Errorf("%s at %d:%d, want %d:%d", field, line, col, want[0], want[1])
		}
	}
}

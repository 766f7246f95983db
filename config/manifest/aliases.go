package manifest

import (
	"bytes"

	yamlv3 "go.yaml.in/yaml/v3"
)

// aliasBaseline is the number of nodes YAML aliases may add to one Render
// whatever its size; aliasPerByte is how many more each byte of YAML read
// (a file, a rendered template) allows. A document without aliases has at
// most about one node per byte, so aliases may at most triple what a
// source decodes to, however its documents are split (the YAML library's
// own bound is per document).
const (
	aliasBaseline = 1 << 16
	aliasPerByte  = 2
)

// aliasBudget counts the nodes YAML aliases add to one Render.
type aliasBudget struct {
	// read is the bytes of YAML read so far; added, the nodes the
	// aliases of its documents expand to.
	read, added int
}

// allowed is the number of nodes aliases may add to what was read so far.
func (b *aliasBudget) allowed() int { return aliasBaseline + aliasPerByte*b.read }

// mayAlias reports whether a document may hold an alias: it has an
// anchor and an alias indicator somewhere.
func mayAlias(data []byte) bool {
	return bytes.IndexByte(data, '&') >= 0 && bytes.IndexByte(data, '*') >= 0
}

// countAliases adds the nodes the aliases of one document expand to,
// counted on its node tree before anything is decoded (in time and memory
// linear in the document), and fails at o once the budget is spent. ok is
// false when go.yaml.in/yaml/v3 does not parse the document: the caller
// counts it once decoded (countValue).
func (b *aliasBudget) countAliases(data []byte, o Origin) (ok bool, err error) {
	var n yamlv3.Node
	if yamlv3.Unmarshal(data, &n) != nil {
		return false, nil
	}
	added, _ := AliasExpansion([]*yamlv3.Node{&n}, b.allowed()-b.added)
	return true, b.add(added, o)
}

// AliasExpansion returns how many nodes the aliases under roots add when
// they are decoded: each alias adds the nodes of the node it names, the
// aliases inside that node expanded (each anchor's size counted once, so
// in time linear in the tree; an alias inside the node it names counts
// one, the decoder refuses it). Past limit it stops and returns the alias
// that crossed it (over), added then being more than limit; over is nil
// within it. Render bounds its sources with it, and the config package
// its files.
func AliasExpansion(roots []*yamlv3.Node, limit int) (added int, over *yamlv3.Node) {
	sizes := map[*yamlv3.Node]int{}
	var size func(n *yamlv3.Node) int
	size = func(n *yamlv3.Node) int {
		if n.Kind == yamlv3.AliasNode {
			if n.Alias == nil {
				return 1
			}
			s, ok := sizes[n.Alias]
			if !ok {
				sizes[n.Alias] = 1
				s = size(n.Alias)
				sizes[n.Alias] = s
			}
			return s
		}
		s := 1
		for _, c := range n.Content {
			if s += size(c); s > limit {
				return limit + 1 // saturated: a chain may double at each step
			}
		}
		return s
	}
	var walk func(n *yamlv3.Node) bool
	walk = func(n *yamlv3.Node) bool {
		if n.Kind == yamlv3.AliasNode {
			if added += size(n); added > limit {
				over = n
				return false
			}
			return true
		}
		for _, c := range n.Content {
			if !walk(c) {
				return false
			}
		}
		return true
	}
	for _, r := range roots {
		if !walk(r) {
			break
		}
	}
	return added, over
}

// countValue adds the nodes of a decoded document that countAliases could
// not count, all of them: what its aliases added is not told apart.
func (b *aliasBudget) countValue(v any, o Origin) error {
	limit := b.allowed() - b.added
	n := 0
	var walk func(v any)
	walk = func(v any) {
		if n > limit {
			return
		}
		n++
		switch t := v.(type) {
		case map[string]any:
			for _, e := range t {
				walk(e)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(v)
	return b.add(n, o)
}

// add adds n nodes and fails at o past the budget.
func (b *aliasBudget) add(n int, o Origin) error {
	b.added += n
	if b.added > b.allowed() {
		return errorAt(o, "YAML aliases expand to more than %d nodes in this source (%d, and %d more per byte of YAML read): refused", b.allowed(), aliasBaseline, aliasPerByte)
	}
	return nil
}

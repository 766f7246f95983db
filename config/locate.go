package config

import (
	"fmt"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Locator positions errors found after Load, about what a valid config
// names (its kubeconfigs, say), as Load positions its own: at the value of
// the field they are about. It reads the file again, so make one only when
// there is an error to report.
type Locator struct {
	file string
	text source
	root *yaml.Node
}

// maxLocateDepth bounds merge keys followed by Locate.
const maxLocateDepth = 16

// NewLocator parses data, the config file read from path (as given to
// Parse). Data that does not parse gives a Locator whose errors have no
// position.
func NewLocator(path string, data []byte) *Locator {
	l := &Locator{file: path, text: source{data: data}}
	docs, _, err := parseTree(data, string(data))
	if err != nil {
		return l
	}
	for _, doc := range docs {
		if len(doc.Content) > 0 && !emptyNode(doc.Content[0]) {
			l.root = doc.Content[0]
			break
		}
	}
	return l
}

// Errorf returns an error about field (a path as Error.Field spells it,
// e.g. "clusters[2].context") at the position of its value, or of the
// nearest enclosing field the file has when it does not have this one.
func (l *Locator) Errorf(field, format string, args ...any) *Error {
	line, col := l.Position(field)
	return &Error{File: l.file, Line: line, Column: col, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Position returns the line and column (1-based) of field's value, or of
// the nearest enclosing field the file has; 0, 0 when the file does not
// parse.
func (l *Locator) Position(field string) (line, col int) {
	if l.root == nil {
		return 0, 0
	}
	n := l.resolve(l.root)
	at := l.text.posOf(n)
	for _, seg := range fieldSegments(field) {
		var next, key *yaml.Node
		if i, err := strconv.Atoi(seg); err == nil {
			if n != nil && n.Kind == yaml.SequenceNode && i >= 0 && i < len(n.Content) {
				next = n.Content[i]
			}
		} else {
			key, next = l.lookup(n, seg, 0)
		}
		if next == nil && key == nil {
			break
		}
		n = l.resolve(next)
		switch {
		case n != nil:
			at = l.text.posOf(n)
		case key != nil:
			at = rawPos(key) // a null value: point at its key
		}
		if n == nil {
			break
		}
	}
	return at.line, at.col
}

// fieldSegments splits a field path into names and indexes:
// "clusters[2].context" gives clusters, 2, context.
func fieldSegments(field string) []string {
	var out []string
	for part := range strings.SplitSeq(field, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			out = append(out, name)
		}
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			out = append(out, idx)
			_, rest, _ = strings.Cut(after, "[")
		}
	}
	return out
}

// lookup returns the key and value of name in the mapping n, following
// merge keys (explicit keys win); nil, nil when it has none.
func (l *Locator) lookup(n *yaml.Node, name string, depth int) (*yaml.Node, *yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if isMergeKey(k) {
			merges = append(merges, v)
			continue
		}
		if r := l.resolve(k); r != nil && r.Kind == yaml.ScalarNode && r.Value == name {
			return k, v
		}
	}
	if depth >= maxLocateDepth {
		return nil, nil
	}
	for _, m := range merges {
		targets := []*yaml.Node{l.resolve(m)}
		if t := targets[0]; t != nil && t.Kind == yaml.SequenceNode {
			targets = t.Content
		}
		for _, t := range targets {
			if k, v := l.lookup(l.resolve(t), name, depth+1); k != nil {
				return k, v
			}
		}
	}
	return nil, nil
}

// resolve follows an alias to the node holding a value; nil for a null
// value or an alias inside the node it refers to.
func (l *Locator) resolve(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode {
		if n.Alias == nil || inside(n, n.Alias) {
			return nil
		}
		n = n.Alias
	}
	if kindOf(n) == kindNull {
		return nil
	}
	return n
}

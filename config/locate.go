package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Locator positions errors found after Load, about what a valid config
// names (its kubeconfigs, say), as Load positions its own: at the value of
// the field they are about. It reads the file again, so make one only when
// there is an error to report.
type Locator struct {
	file    string
	root    ast.Node
	anchors []locAnchor
}

// locAnchor is an anchor (&name) of the file, in file order.
type locAnchor struct {
	name   string
	offset int
	value  ast.Node
}

// maxLocateDepth bounds aliases and merge keys followed by Locate.
const maxLocateDepth = 16

// NewLocator parses data, the config file read from path (as given to
// Parse). Data that does not parse gives a Locator whose errors have no
// position.
func NewLocator(path string, data []byte) *Locator {
	l := &Locator{file: path}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return l
	}
	for _, doc := range f.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if _, ok := doc.Body.(*ast.CommentNode); ok {
			continue
		}
		l.root = doc.Body
		break
	}
	if l.root != nil {
		ast.Walk(visitFunc(func(n ast.Node) ast.Visitor {
			if a, ok := n.(*ast.AnchorNode); ok && a.Name != nil {
				l.anchors = append(l.anchors, locAnchor{name: a.Name.GetToken().Value, offset: offsetOf(a), value: a.Value})
			}
			return nil // the same visitor
		}), l.root)
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
	at := posOf(n)
	for _, seg := range fieldSegments(field) {
		var next, key ast.Node
		if i, err := strconv.Atoi(seg); err == nil {
			if seq, ok := n.(*ast.SequenceNode); ok && i >= 0 && i < len(seq.Values) {
				next = seq.Values[i]
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
			at = posOf(n)
		case key != nil:
			at = posOf(key) // a null value: point at its key
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
func (l *Locator) lookup(n ast.Node, name string, depth int) (ast.Node, ast.Node) {
	var values []*ast.MappingValueNode
	switch v := n.(type) {
	case *ast.MappingNode:
		values = v.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{v}
	default:
		return nil, nil
	}
	var merges []ast.Node
	for _, mv := range values {
		if mv.Key == nil {
			continue
		}
		if mv.Key.IsMergeKey() {
			merges = append(merges, mv.Value)
			continue
		}
		var kn ast.Node = mv.Key
		if mk, ok := kn.(*ast.MappingKeyNode); ok {
			kn = mk.Value
		}
		if k := l.resolve(kn); k != nil && k.GetToken() != nil && k.GetToken().Value == name {
			return mv.Key, mv.Value
		}
	}
	if depth >= maxLocateDepth {
		return nil, nil
	}
	for _, m := range merges {
		targets := []ast.Node{l.resolve(m)}
		if seq, ok := targets[0].(*ast.SequenceNode); ok {
			targets = seq.Values
		}
		for _, t := range targets {
			if k, v := l.lookup(l.resolve(t), name, depth+1); k != nil {
				return k, v
			}
		}
	}
	return nil, nil
}

// resolve follows anchors, tags and aliases to the node holding a value;
// nil for a null value or an unknown alias.
func (l *Locator) resolve(n ast.Node) ast.Node {
	for range maxLocateDepth {
		switch v := n.(type) {
		case nil, *ast.NullNode:
			return nil
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		case *ast.AliasNode:
			if v.Value == nil {
				return nil
			}
			name, off := v.Value.GetToken().Value, offsetOf(v)
			var found ast.Node
			for _, a := range l.anchors {
				if a.name == name && a.offset < off {
					found = a.value
				}
			}
			if found == nil {
				return nil
			}
			n = found
		default:
			return n
		}
	}
	return nil
}

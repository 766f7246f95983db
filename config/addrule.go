package config

import (
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// AddIgnoreRule returns the config file data with rule appended to the
// `ignore:` list of application app, leaving every other line (comments,
// blank lines, formatting) as it was. rule is YAML of the form
//
//	ignore:
//	  - name: ...
//	    managers: [...]
//
// (what the TUI proposes): an `ignore:` line, then the list items indented
// by two spaces. An application without `ignore:` gets one after its last
// line; an existing block list gets the items after its last item. A flow
// list (`ignore: []`) is refused: edit it by hand. path names the file in
// errors.
func AddIgnoreRule(path string, data []byte, app, rule string) ([]byte, error) {
	ruleLines := strings.Split(strings.TrimRight(rule, "\n"), "\n")
	if len(ruleLines) < 2 || strings.TrimSpace(ruleLines[0]) != "ignore:" {
		return nil, fmt.Errorf("%s: add ignore rule: the rule must start with an ignore: line and hold items", path)
	}
	w := &walker{file: path}
	file, err := w.parseGoccy(data, parser.ParseComments)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", path, err)
	case file == nil:
		return nil, w.errs
	}
	if len(file.Docs) == 0 || file.Docs[0].Body == nil {
		return nil, fmt.Errorf("%s: empty config", path)
	}
	top := mappingValues(file.Docs[0].Body)
	appsNode := valueOf(top, "applications")
	seq, ok := appsNode.(*ast.SequenceNode)
	if !ok || seq.IsFlowStyle {
		return nil, fmt.Errorf("%s: applications: not a block list", path)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	// endBefore is the line (1-based) where what follows the applications
	// list starts: the next top-level key, or past the end.
	endBefore := len(lines) + 1
	for _, mv := range top {
		if l := mv.Key.GetToken().Position.Line; l > seq.GetToken().Position.Line && l < endBefore {
			endBefore = l
		}
	}
	for i, item := range seq.Values {
		fields := mappingValues(item)
		id, _ := goccyScalar(valueOf(fields, "id"))
		if id != app || len(fields) == 0 {
			continue
		}
		itemEnd := endBefore
		if i+1 < len(seq.Entries) {
			itemEnd = seq.Entries[i+1].GetToken().Position.Line
		}
		keyCol := fields[0].Key.GetToken().Position.Column
		for j, mv := range fields {
			if mv.Key.GetToken().Position.Line >= itemEnd {
				continue
			}
			if k, _ := goccyScalar(mv.Key); k != "ignore" {
				continue
			}
			list, ok := mv.Value.(*ast.SequenceNode)
			if !ok || list.IsFlowStyle {
				return nil, fmt.Errorf("%s: applications[%d].ignore: not a block list: add the rule by hand", path, i)
			}
			end := itemEnd
			if j+1 < len(fields) {
				end = fields[j+1].Key.GetToken().Position.Line
			}
			at := lastContentLine(lines, list.GetToken().Position.Line, end, list.GetToken().Position.Column)
			return insertLines(lines, at, ruleLines[1:], list.GetToken().Position.Column-1, 2), nil
		}
		at := lastContentLine(lines, fields[0].Key.GetToken().Position.Line, itemEnd, keyCol)
		return insertLines(lines, at, ruleLines, keyCol-1, 0), nil
	}
	return nil, fmt.Errorf("%s: no application %q", path, app)
}

// mappingValues are the entries of a block or flow mapping (nil for other
// nodes).
func mappingValues(n ast.Node) []*ast.MappingValueNode {
	switch m := n.(type) {
	case *ast.MappingNode:
		return m.Values
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{m}
	}
	return nil
}

// valueOf is the value of key in a mapping's entries (nil when absent).
func valueOf(values []*ast.MappingValueNode, key string) ast.Node {
	for _, mv := range values {
		if k, _ := goccyScalar(mv.Key); k == key {
			return mv.Value
		}
	}
	return nil
}

// goccyScalar returns the text of a scalar node; numbers and booleans give
// their source text.
func goccyScalar(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		if v.Value == nil {
			return "", true
		}
		return v.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return v.GetToken().Value, true
	}
	return "", false
}

// lastContentLine returns the last line (1-based) in [from, before) that
// belongs to a node starting at column col: not blank, and not a comment
// indented less than col (that one heads what follows).
func lastContentLine(lines []string, from, before, col int) int {
	last := from
	for l := from; l < before && l <= len(lines); l++ {
		text := strings.TrimRight(lines[l-1], "\r\n")
		trimmed := strings.TrimLeft(text, " ")
		if trimmed == "" {
			continue
		}
		if strings.HasPrefix(trimmed, "#") && len(text)-len(trimmed) < col-1 {
			continue
		}
		last = l
	}
	return last
}

// insertLines inserts add after line at (1-based), each with drop leading
// spaces removed and indent spaces added.
func insertLines(lines []string, at int, add []string, indent, drop int) []byte {
	var b strings.Builder
	for i, l := range lines {
		if i == at-1 && !strings.HasSuffix(l, "\n") {
			l += "\n"
		}
		b.WriteString(l)
		if i == at-1 {
			for _, a := range add {
				a = strings.TrimPrefix(a, strings.Repeat(" ", drop))
				b.WriteString(strings.Repeat(" ", indent) + a + "\n")
			}
		}
	}
	return []byte(b.String())
}

package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// This file holds a small typed reader over the goccy/go-yaml AST. Reading the
// AST ourselves (instead of letting a YAML library decode into structs) is
// what lets Load report every problem at once, each with the line and column
// of the node it is about: unknown fields, wrong types and bad values alike.
// schema.go reads mappings into the config's structs with it.

// pos is a 1-based line and column in the config file.
type pos struct{ line, col int }

// maxAliasDepth bounds alias and merge-key resolution.
const maxAliasDepth = 32

// maxMergedEntries bounds how many entries merge keys may expand to in one
// document, so that nested merges of aliases (a "billion laughs") cannot
// blow up.
const maxMergedEntries = 10000

// anchor is an `&name` definition, kept so aliases can be resolved.
type anchor struct {
	name   string
	offset int // where the anchor starts
	end    int // where its value's last token starts
	value  ast.Node
	parent int // the index of the innermost anchor around it, or -1
}

// walker reads one YAML document and collects errors.
type walker struct {
	file string
	errs ErrorList
	seen map[Error]bool // errs, for deduplication
	// anchors are the anchors of the document by name, each name's in
	// file order.
	anchors map[string][]anchor
	// merged counts the entries merge keys expanded to (maxMergedEntries).
	merged int
}

// errorf records a problem at p. The same problem found twice (a bad alias
// is resolved by each reader of its value) is recorded once.
func (w *walker) errorf(p pos, field, format string, args ...any) {
	e := Error{File: w.file, Line: p.line, Column: p.col, Field: field, Msg: fmt.Sprintf(format, args...)}
	if w.seen[e] {
		return
	}
	if w.seen == nil {
		w.seen = map[Error]bool{}
	}
	w.seen[e] = true
	w.errs = append(w.errs, &e)
}

// syntaxError converts a parser error into an Error with its position.
func (w *walker) syntaxError(err error) {
	var ye yaml.Error
	if errors.As(err, &ye) {
		p := tokenPos(ye.GetToken())
		w.errorf(p, "", "yaml: %s", ye.GetMessage())
		return
	}
	w.errorf(pos{}, "", "yaml: %v", err)
}

// collectAnchors records every anchor of root, in one walk of the tree.
func (w *walker) collectAnchors(root ast.Node) {
	v := &anchorVisitor{}
	ast.Walk(v.at(-1), root)
	// A nested anchor's value ends inside its parent's: it comes after
	// its parent in walk order, so one pass from the end carries every
	// end outwards.
	all := v.anchors
	for i := len(all) - 1; i >= 0; i-- {
		if p := all[i].parent; p >= 0 {
			all[p].end = max(all[p].end, all[i].end)
		}
	}
	w.anchors = map[string][]anchor{}
	for _, a := range all {
		w.anchors[a.name] = append(w.anchors[a.name], a)
	}
	for _, as := range w.anchors {
		slices.SortStableFunc(as, func(a, b anchor) int { return a.offset - b.offset })
	}
}

// anchorVisitor collects the anchors of a tree and where their values
// end.
type anchorVisitor struct {
	anchors []anchor
}

// at returns the visitor of the nodes inside the value of anchor i (-1:
// inside no anchor).
func (v *anchorVisitor) at(i int) visitFunc {
	return func(n ast.Node) ast.Visitor {
		if i >= 0 {
			v.anchors[i].end = max(v.anchors[i].end, offsetOf(n))
		}
		a, ok := n.(*ast.AnchorNode)
		if !ok || a.Name == nil {
			return nil // the same visitor
		}
		v.anchors = append(v.anchors, anchor{name: a.Name.GetToken().Value, offset: offsetOf(a), value: a.Value, parent: i})
		return v.at(len(v.anchors) - 1)
	}
}

// visitFunc is an ast.Visitor that visits the children of a node with
// the visitor it returns, or with itself when it returns nil.
type visitFunc func(ast.Node) ast.Visitor

// Visit calls f on a non-nil n.
func (f visitFunc) Visit(n ast.Node) ast.Visitor {
	if n == nil {
		return nil
	}
	if next := f(n); next != nil {
		return next
	}
	return f
}

func offsetOf(n ast.Node) int {
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position.Offset
	}
	return 0
}

func tokenPos(tk *token.Token) pos {
	if tk == nil || tk.Position == nil {
		return pos{}
	}
	return pos{line: tk.Position.Line, col: tk.Position.Column}
}

// posOf returns where a node starts as a user would point at it: a block
// mapping starts at its first key (the parser's own token is the first ':').
func posOf(n ast.Node) pos {
	switch v := n.(type) {
	case nil:
		return pos{}
	case *ast.DocumentNode:
		if v.Body == nil {
			return pos{1, 1}
		}
		return posOf(v.Body)
	case *ast.MappingNode:
		if v.IsFlowStyle || len(v.Values) == 0 {
			return tokenPos(v.Start)
		}
		return posOf(v.Values[0])
	case *ast.MappingValueNode:
		return posOf(v.Key)
	case *ast.MappingKeyNode:
		return tokenPos(v.Start)
	case *ast.LiteralNode:
		return tokenPos(v.Start)
	}
	return tokenPos(n.GetToken())
}

// resolve follows anchors, aliases and tags to the node holding the value.
// It returns nil for a null value or an unknown alias (reported).
func (w *walker) resolve(n ast.Node, field string) ast.Node {
	for range maxAliasDepth {
		switch v := n.(type) {
		case nil, *ast.NullNode:
			return nil
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		case *ast.AliasNode:
			name := ""
			if v.Value != nil {
				name = v.Value.GetToken().Value
			}
			a, ok := w.anchorBefore(name, offsetOf(v))
			switch {
			case !ok:
				w.errorf(posOf(v), field, "unknown alias *%s", name)
				return nil
			case offsetOf(v) <= a.end:
				w.errorf(posOf(v), field, "alias *%s is inside the node it refers to", name)
				return nil
			}
			n = a.value
		default:
			return n
		}
	}
	w.errorf(posOf(n), field, "aliases nested too deeply")
	return nil
}

// anchorBefore returns the last anchor called name defined before offset,
// as YAML specifies.
func (w *walker) anchorBefore(name string, offset int) (anchor, bool) {
	as := w.anchors[name]
	i, _ := slices.BinarySearchFunc(as, offset, func(a anchor, offset int) int {
		if a.offset < offset {
			return -1
		}
		return 1
	})
	if i == 0 {
		return anchor{}, false
	}
	return as[i-1], true
}

// describe names the YAML type of a resolved node for type errors.
func describe(n ast.Node) string {
	switch v := n.(type) {
	case nil:
		return "null"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.IntegerNode:
		return "integer " + v.GetToken().Value
	case *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "number " + v.GetToken().Value
	case *ast.BoolNode:
		return "boolean " + v.GetToken().Value
	case *ast.StringNode:
		return strconv.Quote(v.Value)
	case *ast.LiteralNode:
		return "a block string"
	}
	return n.Type().String()
}

// scalar returns the text of a scalar node. Numbers and booleans give their
// source text, so `version: 1.10` reads as "1.10".
func scalar(n ast.Node) (string, bool) {
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

// entry is one key of a mapping with its (unresolved) value.
type entry struct {
	key    string
	keyPos pos
	value  ast.Node
}

// entries returns the keys of a mapping node in file order, expanding merge
// keys (`<<: *defaults`); explicit keys win over merged ones. A duplicate
// key is reported and the first one kept. ok is false when n is not a
// mapping (reported).
func (w *walker) entries(n ast.Node, field string, depth int) ([]entry, bool) {
	var values []*ast.MappingValueNode
	switch v := n.(type) {
	case *ast.MappingNode:
		values = v.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{v}
	default:
		w.errorf(posOf(n), field, "want a mapping, got %s", describe(n))
		return nil, false
	}
	var merged []entry
	explicit := make([]entry, 0, len(values))
	index := make(map[string]int, len(values)) // key -> position in explicit
	for _, mv := range values {
		if _, ok := mv.Key.(*ast.MergeKeyNode); ok {
			if depth >= maxAliasDepth {
				w.errorf(posOf(mv), field, "merge keys nested too deeply")
				continue
			}
			merged = append(merged, w.mergeEntries(mv.Value, posOf(mv), field, depth+1)...)
			continue
		}
		kn := ast.Node(mv.Key)
		if mk, ok := kn.(*ast.MappingKeyNode); ok {
			kn = mk.Value
		}
		key, ok := scalar(w.resolve(kn, field))
		if !ok {
			w.errorf(posOf(mv), field, "mapping keys must be strings")
			continue
		}
		e := entry{key: key, keyPos: posOf(mv.Key), value: mv.Value}
		if i, dup := index[key]; dup {
			w.errorf(e.keyPos, joinField(field, key), "duplicate key (first at line %d)", explicit[i].keyPos.line)
			continue
		}
		index[key] = len(explicit)
		explicit = append(explicit, e)
	}
	for _, m := range merged {
		if _, ok := index[m.key]; !ok {
			index[m.key] = len(explicit)
			explicit = append(explicit, m)
		}
	}
	return explicit, true
}

// mergeEntries expands the value of a merge key at p: a mapping or a list
// of mappings, where earlier mappings win.
func (w *walker) mergeEntries(n ast.Node, p pos, field string, depth int) []entry {
	var values []ast.Node
	if seq, ok := w.resolve(n, field).(*ast.SequenceNode); ok {
		values = seq.Values
	} else {
		values = []ast.Node{n}
	}
	var out []entry
	have := map[string]bool{}
	for _, v := range values {
		r := w.resolve(v, field)
		if r == nil {
			if _, alias := v.(*ast.AliasNode); !alias { // a bad alias is reported
				w.errorf(p, field, "merge key (<<) needs a mapping or a list of mappings")
			}
			continue
		}
		es, _ := w.entries(r, field, depth)
		if w.merged > maxMergedEntries {
			return out // reported once, below
		}
		if w.merged += len(es); w.merged > maxMergedEntries {
			w.errorf(p, field, "merge keys expand to more than %d entries", maxMergedEntries)
			return out
		}
		for _, e := range es {
			if !have[e.key] {
				have[e.key] = true
				out = append(out, e)
			}
		}
	}
	return out
}

// object is a mapping with a known set of fields.
type object struct {
	w      *walker
	field  string
	pos    pos
	fields map[string]entry
}

// object reads n as a mapping whose keys must be among known; unknown keys
// are reported with a did-you-mean hint. It returns nil when n is not a
// mapping (reported). A null n gives an empty object.
func (w *walker) object(n ast.Node, field string, p pos, known ...string) *object {
	o := &object{w: w, field: field, pos: p, fields: map[string]entry{}}
	n = w.resolve(n, field)
	if n == nil {
		return o
	}
	o.pos = posOf(n)
	es, ok := w.entries(n, field, 0)
	if !ok {
		return nil
	}
	for _, e := range es {
		if !slices.Contains(known, e.key) {
			msg := "unknown field"
			if s := suggest(e.key, known); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			w.errorf(e.keyPos, joinField(field, e.key), "%s", msg)
			continue
		}
		o.fields[e.key] = e
	}
	return o
}

// child is a field's resolved value with its path and position. node is nil
// when the field is absent or null.
type child struct {
	node  ast.Node
	field string
	pos   pos
	set   bool // the key is present (even if null)
}

// get returns the named field.
func (o *object) get(name string) child {
	f := joinField(o.field, name)
	e, ok := o.fields[name]
	if !ok {
		return child{field: f, pos: o.pos}
	}
	n := o.w.resolve(e.value, f)
	p := posOf(n)
	if n == nil {
		p = e.keyPos
	}
	return child{node: n, field: f, pos: p, set: true}
}

// required reports a missing or null field and returns false.
func (o *object) required(c child) bool {
	if c.node != nil {
		return true
	}
	if c.set {
		o.w.errorf(c.pos, c.field, "must not be empty")
	} else {
		o.w.errorf(c.pos, c.field, "required field is missing")
	}
	return false
}

// str reads a scalar field as a string.
func (w *walker) str(c child) (string, bool) {
	if c.node == nil {
		return "", false
	}
	s, ok := scalar(c.node)
	if !ok {
		w.errorf(c.pos, c.field, "want a string, got %s", describe(c.node))
	}
	return s, ok
}

// boolean reads a true/false field.
func (w *walker) boolean(c child) (bool, bool) {
	if c.node == nil {
		return false, false
	}
	v, ok := c.node.(*ast.BoolNode)
	if !ok {
		w.errorf(c.pos, c.field, "want true or false, got %s", describe(c.node))
		return false, false
	}
	return v.Value, true
}

// int reads an integer field and checks it against [lo, hi].
func (w *walker) int(c child, lo, hi int64) (int64, bool) {
	if c.node == nil {
		return 0, false
	}
	v, ok := c.node.(*ast.IntegerNode)
	if !ok {
		w.errorf(c.pos, c.field, "want an integer, got %s", describe(c.node))
		return 0, false
	}
	var i int64
	switch x := v.Value.(type) {
	case int64:
		i = x
	case uint64:
		if x > math.MaxInt64 {
			w.errorf(c.pos, c.field, "%d is out of range", x)
			return 0, false
		}
		i = int64(x)
	}
	unbounded := hi == math.MaxInt32 || hi == math.MaxInt64
	switch {
	case (i < lo || i > hi) && !unbounded:
		w.errorf(c.pos, c.field, "%d is out of range: must be between %d and %d", i, lo, hi)
	case i < lo:
		w.errorf(c.pos, c.field, "%d is too small: must be at least %d", i, lo)
	case i > hi:
		w.errorf(c.pos, c.field, "%d is too large: must be at most %d", i, hi)
	default:
		return i, true
	}
	return 0, false
}

// positive reads a number (integer or decimal) that must be > 0.
func (w *walker) positive(c child) (float64, bool) {
	if c.node == nil {
		return 0, false
	}
	var f float64
	switch v := c.node.(type) {
	case *ast.IntegerNode:
		switch x := v.Value.(type) {
		case int64:
			f = float64(x)
		case uint64:
			f = float64(x)
		}
	case *ast.FloatNode:
		f = v.Value
	default:
		w.errorf(c.pos, c.field, "want a number, got %s", describe(c.node))
		return 0, false
	}
	if !(f > 0) || math.IsInf(f, 0) || f > math.MaxFloat32 {
		w.errorf(c.pos, c.field, "%s must be a positive number", c.node.GetToken().Value)
		return 0, false
	}
	return f, true
}

// duration reads a Go duration such as 5m or 90s that must be > 0.
func (w *walker) duration(c child) (time.Duration, bool) {
	s, ok := w.str(c)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if _, nerr := strconv.ParseFloat(s, 64); err != nil && nerr == nil && s != "0" {
		w.errorf(c.pos, c.field, "duration %q has no unit: want a Go duration such as 90s or 5m", s)
		return 0, false
	}
	if err != nil {
		w.errorf(c.pos, c.field, "invalid duration %q: want a Go duration such as 90s or 5m", s)
		return 0, false
	}
	if d <= 0 {
		w.errorf(c.pos, c.field, "duration %q must be positive", s)
		return 0, false
	}
	return d, true
}

// item is one element of a list with its path and position.
type item struct {
	node  ast.Node
	field string
	pos   pos
}

// list reads a list field; nil when absent, null or not a list (reported).
func (w *walker) list(c child) ([]item, bool) {
	if c.node == nil {
		return nil, false
	}
	seq, ok := c.node.(*ast.SequenceNode)
	if !ok {
		w.errorf(c.pos, c.field, "want a list, got %s", describe(c.node))
		return nil, false
	}
	items := make([]item, 0, len(seq.Values))
	for i, v := range seq.Values {
		f := fmt.Sprintf("%s[%d]", c.field, i)
		r := w.resolve(v, f)
		p := posOf(r)
		if r == nil {
			p = posOf(v)
		}
		items = append(items, item{node: r, field: f, pos: p})
	}
	return items, true
}

// strList reads a list of strings.
func (w *walker) strList(c child) ([]string, []item, bool) {
	items, ok := w.list(c)
	if !ok {
		return nil, nil, false
	}
	var vals []string
	var kept []item
	for _, it := range items {
		s, ok := w.str(child{node: it.node, field: it.field, pos: it.pos, set: true})
		if it.node == nil {
			w.errorf(it.pos, it.field, "must not be empty")
			continue
		}
		if ok {
			vals = append(vals, s)
			kept = append(kept, it)
		}
	}
	return vals, kept, true
}

// kv is one key of a string map with positions for its key and value.
type kv struct {
	key, value string
	keyPos     pos
	valuePos   pos
	field      string
}

// strMap reads a mapping of strings to strings. Every value must be a scalar;
// a null value reads as "".
func (w *walker) strMap(c child) ([]kv, bool) {
	if c.node == nil {
		return nil, false
	}
	es, ok := w.entries(c.node, c.field, 0)
	if !ok {
		return nil, false
	}
	out := make([]kv, 0, len(es))
	for _, e := range es {
		f := mapField(c.field, e.key)
		v := w.resolve(e.value, f)
		s := ""
		vp := e.keyPos
		if v != nil {
			vp = posOf(v)
			var ok bool
			if s, ok = scalar(v); !ok {
				w.errorf(vp, f, "want a string, got %s", describe(v))
				continue
			}
		}
		out = append(out, kv{key: e.key, value: s, keyPos: e.keyPos, valuePos: vp, field: f})
	}
	return out, true
}

// joinField appends a field name to a path.
func joinField(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// mapField appends a map key to a path, Kubernetes style: labels[env].
func mapField(path, key string) string { return path + "[" + key + "]" }

// suggest returns the known name closest to s, or "" when none is close
// enough to be a likely typo.
func suggest(s string, known []string) string {
	best, bestD, bestExact := "", math.MaxInt, math.MaxInt
	ls := strings.ToLower(s)
	for _, k := range known {
		// Case differences count as no difference; the case-sensitive
		// distance only breaks ties.
		d, exact := editDistance(ls, strings.ToLower(k)), editDistance(s, k)
		if len(ls) >= 3 && strings.HasPrefix(strings.ToLower(k), ls) {
			d = min(d, 1) // an abbreviation, such as mem for memory
		}
		if d < bestD || d == bestD && exact < bestExact {
			best, bestD, bestExact = k, d, exact
		}
	}
	if best == "" || bestD > max(2, len(best)/3) || bestD >= len(best) || bestD >= len(s) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := 1
			if a[i-1] == b[j-1] {
				sub = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+sub)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	goccy "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/token"
	yaml "go.yaml.in/yaml/v3"
)

// This file holds a small typed reader over the node tree of
// go.yaml.in/yaml/v3. Reading the tree ourselves (instead of letting a YAML
// library decode into structs) is what lets Load report every problem at
// once, each with the line and column of the node it is about: unknown
// fields, wrong types and bad values alike. schema.go reads mappings into
// the config's structs with it; yamlbounds.go parses the file.

// pos is a 1-based line and column in the config file.
type pos struct{ line, col int }

// maxAliasDepth bounds how deep merge keys may nest (<<: *a, where a has
// a merge key of its own, and so on).
const maxAliasDepth = 32

// maxMergedEntries bounds how many entries merge keys may expand to in one
// document, so that nested merges of aliases (a "billion laughs") cannot
// blow up.
const maxMergedEntries = 10000

// walker reads one YAML document and collects errors.
type walker struct {
	file string
	errs ErrorList
	seen map[Error]bool // errs, for deduplication
	// text is the file parsed, for positions inside nodes.
	text source
	// unknown are the aliases that refer to no anchor before them, by
	// position: the YAML parser refuses them, so parseYAML parses them
	// as nulls (~) and resolve reports them where they are read.
	unknown map[pos]string
	// merged counts the entries merge keys expanded to (maxMergedEntries).
	merged int
	// kept are the strings the walker handed out (keep), each once.
	kept map[string]string
	// schemas are the schemas of the struct types read so far (see
	// schemaOf): the walker's own, so that the walkers of a parallel
	// decode share nothing.
	schemas map[reflect.Type]*schema
}

// keep returns s as a string of its own, one copy per distinct value read
// by this walker. The parser's values are substrings of the file's text
// (parseFast): a config value kept as one, or a NodeSpec field compiled
// from it, would hold the whole text for the hub's life (about 70 bytes
// per object of a config that lists every object). Repeated values (a
// namespace, a policy, a label) share their copy.
func (w *walker) keep(s string) string {
	if s == "" {
		return ""
	}
	if k, ok := w.kept[s]; ok {
		return k
	}
	if w.kept == nil {
		w.kept = make(map[string]string)
	}
	k := strings.Clone(s)
	w.kept[k] = k
	return k
}

// errorf records a problem at p. The same problem found twice (a bad alias
// is resolved by each reader of its value) is recorded once.
func (w *walker) errorf(p pos, field, format string, args ...any) {
	w.addError(&Error{File: w.file, Line: p.line, Column: p.col, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// addError records e unless the same problem is recorded already.
func (w *walker) addError(e *Error) {
	if w.seen[*e] {
		return
	}
	if w.seen == nil {
		w.seen = map[Error]bool{}
	}
	w.seen[*e] = true
	w.errs = append(w.errs, e)
}

// syntaxError converts an error of the goccy/go-yaml parser into an Error
// with its position.
func (w *walker) syntaxError(err error) {
	var ye goccy.Error
	if errors.As(err, &ye) {
		p := tokenPos(ye.GetToken())
		w.errorf(p, "", "yaml: %s", ye.GetMessage())
		return
	}
	w.errorf(pos{}, "", "yaml: %v", err)
}

func tokenPos(tk *token.Token) pos {
	if tk == nil || tk.Position == nil {
		return pos{}
	}
	return pos{line: tk.Position.Line, col: tk.Position.Column}
}

// rawPos returns where the parser says a node starts: at its anchor or tag
// when it has one, at the first key of a block mapping, at the first '-'
// of a block list.
func rawPos(n *yaml.Node) pos {
	if n == nil {
		return pos{}
	}
	return pos{n.Line, n.Column}
}

// source is the text of a YAML file, to find where a node's value starts
// after its anchor and tag.
type source struct {
	data []byte
	// lines are where each line starts, and ascii whether it is ASCII
	// alone (a column is then a byte offset); made when first needed.
	lines []int
	ascii []bool
	// last is the last position offset found on a line that is not
	// ASCII, from which the next one on the line is found.
	last    pos
	lastOff int
}

// posOf returns where the value of a node starts as a user would point at
// it: after its anchor and tag, at the first key of a block mapping.
func (s *source) posOf(n *yaml.Node) pos {
	switch {
	case n == nil:
		return pos{}
	case n.Kind == yaml.DocumentNode:
		if len(n.Content) == 0 {
			return pos{1, 1}
		}
		return s.posOf(n.Content[0])
	case n.Anchor == "" && n.Style&yaml.TaggedStyle == 0:
		return rawPos(n)
	}
	return s.skipProperties(rawPos(n), n.Anchor != "", n.Style&yaml.TaggedStyle != 0)
}

// offset returns the byte offset of p (whose column counts characters),
// or -1 when p is not in the text.
func (s *source) offset(p pos) int {
	if s.lines == nil {
		s.lines, s.ascii = append(s.lines, 0), append(s.ascii, true)
		for i, c := range s.data {
			switch {
			case c == '\n':
				s.lines, s.ascii = append(s.lines, i+1), append(s.ascii, true)
			case c >= utf8.RuneSelf:
				s.ascii[len(s.ascii)-1] = false
			}
		}
	}
	if p.line < 1 || p.line > len(s.lines) || p.col < 1 {
		return -1
	}
	i, col := s.lines[p.line-1], 1
	if s.ascii[p.line-1] {
		i += p.col - 1
		if i > len(s.data) {
			return -1
		}
		return i
	}
	if s.last.line == p.line && s.last.col <= p.col {
		// Positions are mostly asked for in file order: go on from the
		// last one rather than from the start of a long line.
		i, col = s.lastOff, s.last.col
	}
	for ; col < p.col; col++ {
		if i >= len(s.data) {
			return -1
		}
		_, size := utf8.DecodeRune(s.data[i:])
		i += size
	}
	s.last, s.lastOff = p, i
	return i
}

// skipProperties returns where the value of a node at p starts: after its
// anchor (&name) when it has one and its tag (!tag) when it has one, and
// the white space and comments around them.
func (s *source) skipProperties(p pos, anchor, tag bool) pos {
	i := s.offset(p)
	if i < 0 {
		return p
	}
	at := p
	for i < len(s.data) {
		switch c := s.data[i]; {
		case c == '\n':
			at.line, at.col = at.line+1, 1
			i++
		case c == ' ' || c == '\t' || c == '\r':
			at.col++
			i++
		case c == '#':
			for i < len(s.data) && s.data[i] != '\n' {
				i++
			}
		case c == '&' && anchor, c == '!' && tag:
			anchor, tag = anchor && c != '&', tag && c != '!'
			for i < len(s.data) && !strings.ContainsRune(" \t\r\n,[]{}", rune(s.data[i])) {
				_, size := utf8.DecodeRune(s.data[i:])
				at.col++
				i += size
			}
		default:
			return at
		}
	}
	return at
}

// posOf returns where the value of n starts (see source.posOf).
func (w *walker) posOf(n *yaml.Node) pos { return w.text.posOf(n) }

// The types of YAML values that the decoder tells apart.
type valueKind uint8

const (
	kindNull   valueKind = iota
	kindMap              // a mapping
	kindSeq              // a list
	kindBool             // true or false
	kindInt              // an integer
	kindFloat            // a decimal number, such as 1.5
	kindInfNaN           // .inf, -.inf or .nan
	kindStr              // a plain or quoted string
	kindBlock            // a | or > block string
	kindAlias            // an alias (unresolved)
)

// kindOf returns the type of n. Plain scalars are typed as the YAML 1.2
// core schema says, less a few forms that read as strings: numbers with an
// exponent but no decimal point (1e3), +.inf, integers with an upper-case
// base prefix (0X1F) and timestamps. A standard tag (!!str 3) does not
// change the type: the value is typed as it is written; a scalar with a
// local tag (!foo 3) is a string. (This is how goccy/go-yaml, which parsed
// configs before, types them.)
func kindOf(n *yaml.Node) valueKind {
	if n == nil {
		return kindNull
	}
	switch n.Kind {
	case yaml.MappingNode:
		return kindMap
	case yaml.SequenceNode:
		return kindSeq
	case yaml.AliasNode:
		return kindAlias
	case yaml.DocumentNode:
		return kindMap
	}
	switch {
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return kindBlock
	case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
		return kindStr
	case n.Style&yaml.TaggedStyle != 0:
		if !strings.HasPrefix(n.Tag, "!!") {
			return kindStr // a local tag, !foo
		}
		return plainKind(n.Value)
	}
	switch n.Tag {
	case "!!null":
		return kindNull
	case "!!str":
		return kindStr
	case "!!bool":
		return kindBool
	case "!!int":
		if strings.ContainsAny(n.Value, "XBO") {
			return kindStr
		}
		return kindInt
	case "!!float":
		return floatKind(n.Value)
	}
	return kindStr
}

// floatKind returns the type of a plain scalar that YAML reads as a float.
func floatKind(s string) valueKind {
	switch strings.TrimPrefix(s, "-") {
	case ".inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN":
		return kindInfNaN
	case "+.inf", "+.Inf", "+.INF":
		return kindStr
	}
	if !strings.Contains(s, ".") {
		return kindStr
	}
	return kindFloat
}

// plainKind returns the type of the plain scalar s (see kindOf).
func plainKind(s string) valueKind {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return kindNull
	case "true", "True", "TRUE", "false", "False", "FALSE":
		return kindBool
	}
	if _, _, ok := intValue(s); ok && !strings.ContainsAny(s, "XBO") {
		return kindInt
	}
	switch k := floatKind(s); k {
	case kindInfNaN:
		return k
	case kindFloat:
		if _, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64); err == nil {
			return k
		}
	}
	return kindStr
}

// intValue parses an integer as YAML writes it: decimal, 0x, 0o or 0b,
// with underscores. big is set (and i zero) for a value above
// math.MaxInt64.
func intValue(s string) (i int64, big uint64, ok bool) {
	p := strings.ReplaceAll(s, "_", "")
	if i, err := strconv.ParseInt(p, 0, 64); err == nil {
		return i, 0, true
	}
	if u, err := strconv.ParseUint(strings.TrimPrefix(p, "+"), 0, 64); err == nil {
		return 0, u, true
	}
	return 0, 0, false
}

// floatValue parses a decimal number.
func floatValue(s string) float64 {
	f, _ := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	return f
}

// isMergeKey reports whether the key node k is <<.
func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Tag == "!!merge" && k.Style == 0
}

// resolve follows an alias to the node holding the value. It returns nil
// for a null value or a bad alias (reported).
func (w *walker) resolve(n *yaml.Node, field string) *yaml.Node {
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if kindOf(n) != kindNull {
			return n
		}
		if len(w.unknown) > 0 {
			if name, ok := w.unknown[rawPos(n)]; ok && n.Value == "~" {
				w.errorf(rawPos(n), field, "unknown alias *%s", name)
			}
		}
		return nil
	case yaml.AliasNode:
		if n.Alias == nil || inside(n, n.Alias) {
			w.errorf(rawPos(n), field, "alias *%s is inside the node it refers to", n.Value)
			return nil
		}
		return w.resolve(n.Alias, field) // an alias never names an alias
	}
	return n
}

// isAlias reports whether n is an alias, good or bad.
func (w *walker) isAlias(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode {
		return true
	}
	_, unknown := w.unknown[rawPos(n)]
	return unknown && n.Kind == yaml.ScalarNode && n.Value == "~"
}

// inside reports whether the alias a is inside the node n it refers to: a
// is after n starts (the anchor comes first), so it is inside unless it
// comes after the last node of n.
func inside(a, n *yaml.Node) bool {
	last := n
	for last.Kind != yaml.AliasNode && len(last.Content) > 0 {
		last = last.Content[len(last.Content)-1]
	}
	return !after(rawPos(a), rawPos(last))
}

// after reports whether p comes after q in the file.
func after(p, q pos) bool {
	return p.line > q.line || p.line == q.line && p.col > q.col
}

// describe names the YAML type of a resolved node for type errors.
func describe(n *yaml.Node) string {
	switch kindOf(n) {
	case kindNull:
		return "null"
	case kindMap:
		return "a mapping"
	case kindSeq:
		return "a list"
	case kindInt:
		return "integer " + n.Value
	case kindFloat, kindInfNaN:
		return "number " + n.Value
	case kindBool:
		return "boolean " + n.Value
	case kindStr:
		return strconv.Quote(n.Value)
	case kindBlock:
		return "a block string"
	}
	return "an alias"
}

// scalar returns the text of a scalar node. Numbers and booleans give their
// source text, so `version: 1.10` reads as "1.10".
func scalar(n *yaml.Node) (string, bool) {
	switch kindOf(n) {
	case kindStr, kindBlock, kindInt, kindFloat, kindInfNaN, kindBool:
		return n.Value, true
	}
	return "", false
}

// entry is one key of a mapping with its (unresolved) value.
type entry struct {
	key    string
	keyPos pos
	value  *yaml.Node
}

// entries returns the keys of a mapping node in file order, expanding merge
// keys (`<<: *defaults`); explicit keys win over merged ones. A duplicate
// key is reported and the first one kept. ok is false when n is not a
// mapping (reported).
func (w *walker) entries(n *yaml.Node, field string, depth int) ([]entry, bool) {
	if n == nil || n.Kind != yaml.MappingNode {
		w.errorf(w.posOf(n), field, "want a mapping, got %s", describe(n))
		return nil, false
	}
	var merged []entry
	explicit := make([]entry, 0, len(n.Content)/2)
	// index maps keys to their position in explicit, for mappings too
	// large to search.
	var index map[string]int
	if len(n.Content) > 2*smallMapping {
		index = make(map[string]int, len(n.Content)/2)
	}
	find := func(key string) (int, bool) {
		if index != nil {
			i, ok := index[key]
			return i, ok
		}
		for i := range explicit {
			if explicit[i].key == key {
				return i, true
			}
		}
		return 0, false
	}
	add := func(e entry) {
		if index != nil {
			index[e.key] = len(explicit)
		}
		explicit = append(explicit, e)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if isMergeKey(k) {
			if depth >= maxAliasDepth {
				w.errorf(rawPos(k), field, "merge keys nested too deeply")
				continue
			}
			merged = append(merged, w.mergeEntries(v, rawPos(k), field, depth+1)...)
			continue
		}
		key, ok := scalar(w.resolve(k, field))
		if !ok {
			w.errorf(rawPos(k), field, "mapping keys must be strings")
			continue
		}
		e := entry{key: key, keyPos: rawPos(k), value: v}
		if i, dup := find(key); dup {
			w.errorf(e.keyPos, joinField(field, key), "duplicate key (first at line %d)", explicit[i].keyPos.line)
			continue
		}
		add(e)
	}
	if len(merged) > 0 && index == nil {
		index = make(map[string]int, len(explicit)+len(merged))
		for i, e := range explicit {
			index[e.key] = i
		}
	}
	for _, m := range merged {
		if _, ok := index[m.key]; !ok {
			add(m)
		}
	}
	return explicit, true
}

// smallMapping is the most keys a mapping may have for entries to look
// for duplicates without a map.
const smallMapping = 16

// mergeEntries expands the value of a merge key at p: a mapping or a list
// of mappings, where earlier mappings win.
func (w *walker) mergeEntries(n *yaml.Node, p pos, field string, depth int) []entry {
	values := []*yaml.Node{n}
	if seq := w.resolve(n, field); seq != nil && seq.Kind == yaml.SequenceNode {
		values = seq.Content
	}
	var out []entry
	have := map[string]bool{}
	for _, v := range values {
		r := w.resolve(v, field)
		if r == nil {
			if !w.isAlias(v) { // a bad alias is reported
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
	fields []entry // the known keys present, in file order
}

// object reads n as a mapping whose keys must be among known; unknown keys
// are reported with a did-you-mean hint. It returns nil when n is not a
// mapping (reported). A null n gives an empty object.
func (w *walker) object(n *yaml.Node, field string, p pos, known ...string) *object {
	o := &object{w: w, field: field, pos: p}
	n = w.resolve(n, field)
	if n == nil {
		return o
	}
	o.pos = w.posOf(n)
	es, ok := w.entries(n, field, 0)
	if !ok {
		return nil
	}
	o.fields = es[:0] // es is this object's own
	for _, e := range es {
		if !slices.Contains(known, e.key) {
			msg := "unknown field"
			if s := suggest(e.key, known); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			w.errorf(e.keyPos, joinField(field, e.key), "%s", msg)
			continue
		}
		o.fields = append(o.fields, e)
	}
	return o
}

// child is a field's resolved value with its path and position. node is nil
// when the field is absent or null.
type child struct {
	node  *yaml.Node
	field string
	pos   pos
	set   bool // the key is present (even if null)
}

// get returns the named field.
func (o *object) get(name string) child {
	f := joinField(o.field, name)
	i := slices.IndexFunc(o.fields, func(e entry) bool { return e.key == name })
	if i < 0 {
		return child{field: f, pos: o.pos}
	}
	e := o.fields[i]
	n := o.w.resolve(e.value, f)
	p := o.w.posOf(n)
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
	return w.keep(s), ok
}

// boolean reads a true/false field.
func (w *walker) boolean(c child) (bool, bool) {
	if c.node == nil {
		return false, false
	}
	if kindOf(c.node) != kindBool {
		w.errorf(c.pos, c.field, "want true or false, got %s", describe(c.node))
		return false, false
	}
	return c.node.Value[0] == 't' || c.node.Value[0] == 'T', true
}

// int reads an integer field and checks it against [lo, hi].
func (w *walker) int(c child, lo, hi int64) (int64, bool) {
	if c.node == nil {
		return 0, false
	}
	if kindOf(c.node) != kindInt {
		w.errorf(c.pos, c.field, "want an integer, got %s", describe(c.node))
		return 0, false
	}
	i, big, _ := intValue(c.node.Value)
	if big > 0 {
		w.errorf(c.pos, c.field, "%d is out of range", big)
		return 0, false
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
	switch kindOf(c.node) {
	case kindInt:
		i, big, _ := intValue(c.node.Value)
		f = float64(i)
		if big > 0 {
			f = float64(big)
		}
	case kindFloat:
		f = floatValue(c.node.Value)
	default:
		w.errorf(c.pos, c.field, "want a number, got %s", describe(c.node))
		return 0, false
	}
	if !(f > 0) || math.IsInf(f, 0) || f > math.MaxFloat32 {
		w.errorf(c.pos, c.field, "%s must be a positive number", c.node.Value)
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
	node  *yaml.Node
	field string
	pos   pos
}

// list reads a list field; nil when absent, null or not a list (reported).
func (w *walker) list(c child) ([]item, bool) {
	if c.node == nil {
		return nil, false
	}
	seq := c.node
	if seq.Kind != yaml.SequenceNode {
		w.errorf(c.pos, c.field, "want a list, got %s", describe(c.node))
		return nil, false
	}
	items := make([]item, 0, len(seq.Content))
	for i, v := range seq.Content {
		f := c.field + "[" + strconv.Itoa(i) + "]"
		r := w.resolve(v, f)
		p := w.posOf(r)
		if r == nil {
			p = rawPos(v)
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
			vp = w.posOf(v)
			var ok bool
			if s, ok = scalar(v); !ok {
				w.errorf(vp, f, "want a string, got %s", describe(v))
				continue
			}
		}
		out = append(out, kv{key: w.keep(e.key), value: w.keep(s), keyPos: e.keyPos, valuePos: vp, field: f})
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

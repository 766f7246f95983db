package config

import (
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Most configs are written in a small part of YAML: block mappings and
// sequences, one entry a line, with plain or one-line quoted scalars and
// one-line flow collections of scalars. go.yaml.in/yaml/v3 reads that part
// at about 5 MB/s a core, allocating a token for every indicator and a
// buffer for every scalar, which was most of checking a config of 10,000
// applications. parseFast reads that part alone, a line at a time, and
// builds the node tree go.yaml.in/yaml/v3 builds of it: the same kinds,
// styles, tags, values, lines and columns (comments, which the decoder
// does not read, are left out). Values are substrings of the file as
// one string (which the Config keeps as its content), and nodes and their children lists are cut from shared slabs.
//
// It is no YAML parser of its own: the moment a file leaves that part
// (anchors, aliases, tags, block scalars, multi-line scalars, escapes,
// quoted keys, nested or multi-line flow collections, empty values,
// indentless sequences, documents markers, directives, tabs, carriage
// returns, any byte outside printable ASCII, nesting deeper than
// fastMaxDepth), it gives up (ok false) and the file is parsed by
// go.yaml.in/yaml/v3 as before, which also gives every error with its
// position. FuzzParseFast holds it to that: whatever it accepts, the
// library parses to the same tree.

// fastMaxDepth is the deepest nesting parseFast reads; deeper files go to
// the library, and the walker's limit (maxDepth) reports them.
const fastMaxDepth = 48

// fastMaxTags bounds how many distinct plain scalars that could be
// numbers, timestamps or floats parseFast asks the library to resolve.
const fastMaxTags = 4096

// fastMaxKey is the longest key parseFast reads: the library refuses
// implicit keys longer than 1,024 characters.
const fastMaxKey = 512

// fastSlab is how many nodes, or children pointers, a slab holds.
const fastSlab = 1024

// fastLine is one line of the file that holds more than spaces and a
// comment.
type fastLine struct {
	lineStart int // offset of the line's first byte
	start     int // offset of its first byte that is not a space
	end       int // offset after its last byte that is not a space
	num       int // line number, from 1
}

// indent is the line's indentation, in spaces.
func (l fastLine) indent() int { return l.start - l.lineStart }

// fastParser is the state of one parseFast.
type fastParser struct {
	text  string
	lines []fastLine
	i     int // the line being read
	nodes []yaml.Node
	kids  []*yaml.Node
	stack []*yaml.Node
	tags  map[string]string
}

// parseFast returns the document node of text when text is in the part
// of YAML it reads, and ok false otherwise. The nodes' values are
// substrings of text.
func parseFast(text string) (doc *yaml.Node, ok bool) {
	p := &fastParser{text: text}
	if !p.scanLines() || len(p.lines) == 0 {
		return nil, false
	}
	first := p.lines[0]
	body, ok := p.block(first.indent(), 0)
	if !ok || p.i != len(p.lines) {
		return nil, false
	}
	doc = p.node(yaml.DocumentNode, "", "", body.Line, body.Column)
	doc.Content = []*yaml.Node{body}
	return doc, true
}

// scanLines lists the lines that hold more than spaces and a comment,
// and reports false for a byte or a line parseFast does not read.
func (p *fastParser) scanLines() bool {
	t := p.text
	// Room for every line, but not for a file of blank lines: a line a
	// config reads is seldom under 16 bytes, and appends past that.
	p.lines = make([]fastLine, 0, min(strings.Count(t, "\n")+1, len(t)/16+1))
	num := 0
	for ls := 0; ls < len(t); {
		num++
		le := strings.IndexByte(t[ls:], '\n')
		if le < 0 {
			le = len(t)
		} else {
			le += ls
		}
		s := ls
		for s < le && t[s] == ' ' {
			s++
		}
		e := le
		for e > s && t[e-1] == ' ' {
			e--
		}
		for k := s; k < e; k++ {
			if c := t[k]; c < 0x20 || c > 0x7e {
				return false
			}
		}
		switch {
		case s == e || t[s] == '#':
		case s == ls && (t[s] == '%' || strings.HasPrefix(t[s:e], "---") || strings.HasPrefix(t[s:e], "...")):
			return false
		default:
			p.lines = append(p.lines, fastLine{lineStart: ls, start: s, end: e, num: num})
		}
		ls = le + 1
	}
	return true
}

// node returns a new node from the slab.
func (p *fastParser) node(kind yaml.Kind, tag, value string, line, col int) *yaml.Node {
	if len(p.nodes) == cap(p.nodes) {
		p.nodes = make([]yaml.Node, 0, fastSlab)
	}
	p.nodes = p.nodes[:len(p.nodes)+1]
	n := &p.nodes[len(p.nodes)-1]
	n.Kind, n.Tag, n.Value, n.Line, n.Column = kind, tag, value, line, col
	return n
}

// children returns the nodes pushed on the stack since mark, as a list of
// its own capacity cut from the slab, and pops them.
func (p *fastParser) children(mark int) []*yaml.Node {
	n := len(p.stack) - mark
	if n == 0 {
		return nil
	}
	if len(p.kids)+n > cap(p.kids) {
		p.kids = make([]*yaml.Node, 0, max(fastSlab, n))
	}
	at := len(p.kids)
	p.kids = append(p.kids, p.stack[mark:]...)
	clear(p.stack[mark:])
	p.stack = p.stack[:mark]
	return p.kids[at : at+n : at+n]
}

// isItem reports whether a sequence entry starts at offset j of a line
// ending at end: a dash alone or before a space.
func (p *fastParser) isItem(j, end int) bool {
	return p.text[j] == '-' && (j+1 == end || p.text[j+1] == ' ')
}

// block reads the block mapping or sequence whose first line, p.i, is
// indented by col.
func (p *fastParser) block(col, depth int) (*yaml.Node, bool) {
	if depth > fastMaxDepth {
		return nil, false
	}
	l := p.lines[p.i]
	if p.isItem(l.start, l.end) {
		return p.sequence(col, depth)
	}
	return p.mapping(col, l.start, depth)
}

// mapping reads the block mapping whose keys are at column col (from 0),
// the first at offset off of line p.i.
func (p *fastParser) mapping(col, off, depth int) (*yaml.Node, bool) {
	l := p.lines[p.i]
	m := p.node(yaml.MappingNode, "!!map", "", l.num, col+1)
	mark := len(p.stack)
	for {
		key, after, ok := p.key(l, off)
		if !ok {
			return nil, false
		}
		p.stack = append(p.stack, key)
		value, ok := p.value(l, after, col, depth)
		if !ok {
			return nil, false
		}
		p.stack = append(p.stack, value)
		more, ok := p.nextEntry(col, false)
		if !ok {
			return nil, false
		}
		if !more {
			break
		}
		l = p.lines[p.i]
		off = l.start
	}
	m.Content = p.children(mark)
	return m, true
}

// nextEntry reports whether line p.i is the next entry of the block at
// column col, a list item if item is set, else a key (more), and false
// ok for a line the block cannot be followed by: one indented past col,
// or an entry of the other kind at col.
func (p *fastParser) nextEntry(col int, item bool) (more, ok bool) {
	if p.i == len(p.lines) {
		return false, true
	}
	l := p.lines[p.i]
	switch {
	case l.indent() < col:
		return false, true
	case l.indent() > col || p.isItem(l.start, l.end) != item:
		return false, false
	}
	return true, true
}

// below reads the block on the lines after line p.i, which must be
// indented past col: the value of a key, or a list item, alone on its
// line.
func (p *fastParser) below(col, depth int) (*yaml.Node, bool) {
	p.i++
	if p.i == len(p.lines) || p.lines[p.i].indent() <= col {
		// An empty value or item, or a list at its key's column.
		return nil, false
	}
	return p.block(p.lines[p.i].indent(), depth+1)
}

// sequence reads the block sequence whose dashes are at column col, the
// first on line p.i.
func (p *fastParser) sequence(col, depth int) (*yaml.Node, bool) {
	l := p.lines[p.i]
	s := p.node(yaml.SequenceNode, "!!seq", "", l.num, col+1)
	mark := len(p.stack)
	for {
		j := p.skipSpaces(l.start+1, l.end)
		var item *yaml.Node
		var ok bool
		switch {
		case j == l.end: // the item is the block below the dash
			item, ok = p.below(col, depth)
		case p.text[j] == '#' || p.isItem(j, l.end):
			return nil, false
		case p.isKey(j, l.end): // a mapping starting on the dash's line
			item, ok = p.mapping(j-l.lineStart, j, depth+1)
		default:
			item, ok = p.inline(l, j, col, depth+1)
		}
		if !ok {
			return nil, false
		}
		p.stack = append(p.stack, item)
		more, ok := p.nextEntry(col, true)
		if !ok {
			return nil, false
		}
		if !more {
			break
		}
		l = p.lines[p.i]
	}
	s.Content = p.children(mark)
	return s, true
}

// isKey reports whether what starts at offset j of a line ending at end
// is a plain key and its colon: a colon before a space or the end of the
// line, and no comment before it.
func (p *fastParser) isKey(j, end int) bool {
	switch p.text[j] {
	case '"', '\'', '[', '{':
		return false
	}
	_, ok := p.keyEnd(j, end)
	return ok
}

// keyEnd returns the offset of the colon that ends the plain key at j.
func (p *fastParser) keyEnd(j, end int) (int, bool) {
	t := p.text
	for k := j; k < end; k++ {
		switch t[k] {
		case ':':
			if k+1 == end || t[k+1] == ' ' {
				return k, true
			}
		case '#':
			if k > j && t[k-1] == ' ' {
				return 0, false
			}
		}
	}
	return 0, false
}

// key reads the plain key at offset off of line l, and returns the offset
// after its colon.
func (p *fastParser) key(l fastLine, off int) (key *yaml.Node, after int, ok bool) {
	t := p.text
	if plainStartRefused(t, off, l.end) {
		return nil, 0, false
	}
	colon, ok := p.keyEnd(off, l.end)
	if !ok || colon == off || colon-off > fastMaxKey || t[colon-1] == ' ' {
		return nil, 0, false
	}
	v := t[off:colon]
	tag, ok := p.plainTag(v)
	if !ok {
		return nil, 0, false
	}
	return p.node(yaml.ScalarNode, tag, v, l.num, off-l.lineStart+1), colon + 1, true
}

// value reads the value after a key's colon at offset after of line l,
// the key being at column col: the block on the lines below, or a scalar
// or flow collection on the line.
func (p *fastParser) value(l fastLine, after, col, depth int) (*yaml.Node, bool) {
	j := p.skipSpaces(after, l.end)
	if j == l.end || p.text[j] == '#' {
		return p.below(col, depth)
	}
	return p.inline(l, j, col, depth+1)
}

// inline reads the scalar or flow collection at offset j of line l, which
// must end the line (but for a comment), and moves to the next line,
// which must not be indented past col (a continuation or an error).
func (p *fastParser) inline(l fastLine, j, col, depth int) (*yaml.Node, bool) {
	if depth > fastMaxDepth {
		return nil, false
	}
	var n *yaml.Node
	var end int
	var ok bool
	switch p.text[j] {
	case '"', '\'':
		n, end, ok = p.quoted(l, j, l.end)
	case '[', '{':
		n, end, ok = p.flow(l, j)
	default:
		n, end, ok = p.plain(l, j)
	}
	if !ok || !p.restIsComment(end, l.end) {
		return nil, false
	}
	p.i++
	if p.i < len(p.lines) && p.lines[p.i].indent() > col {
		return nil, false
	}
	return n, true
}

// restIsComment reports whether offsets [k, end) hold only spaces and
// then, after at least one, a comment.
func (p *fastParser) restIsComment(k, end int) bool {
	s := k
	k = p.skipSpaces(k, end)
	return k == end || (k > s && p.text[k] == '#')
}

// plainStartRefused reports whether a plain scalar cannot start at j (a
// line ending at end), or parseFast does not read one that does.
func plainStartRefused(t string, j, end int) bool {
	switch t[j] {
	case ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return true
	case '-', '?', ':':
		return j+1 == end || t[j+1] == ' '
	}
	return false
}

// plain reads the block plain scalar at offset j of line l: up to a
// comment or the end of the line.
func (p *fastParser) plain(l fastLine, j int) (*yaml.Node, int, bool) {
	t := p.text
	if plainStartRefused(t, j, l.end) {
		return nil, 0, false
	}
	e := l.end
	for k := j + 1; k < l.end; k++ {
		if t[k] == '#' && t[k-1] == ' ' {
			e = k
			break
		}
		if t[k] == ':' && (k+1 == l.end || t[k+1] == ' ') {
			return nil, 0, false // a key where a value is, or a continuation
		}
	}
	for e > j && t[e-1] == ' ' {
		e--
	}
	v := t[j:e]
	tag, ok := p.plainTag(v)
	if !ok {
		return nil, 0, false
	}
	return p.node(yaml.ScalarNode, tag, v, l.num, j-l.lineStart+1), e, true
}

// quoted reads the quoted scalar at offset j of line l, which must close
// before end, and returns the offset after its closing quote.
func (p *fastParser) quoted(l fastLine, j, end int) (*yaml.Node, int, bool) {
	t := p.text
	q := t[j]
	escaped := false
	k := j + 1
	for ; k < end; k++ {
		if q == '"' && t[k] == '\\' {
			return nil, 0, false
		}
		if t[k] == q {
			if q == '\'' && k+1 < end && t[k+1] == '\'' {
				escaped = true
				k++
				continue
			}
			break
		}
	}
	if k >= end {
		return nil, 0, false // closes on a later line, or not at all
	}
	v := t[j+1 : k]
	style := yaml.DoubleQuotedStyle
	if q == '\'' {
		style = yaml.SingleQuotedStyle
		if escaped {
			v = strings.ReplaceAll(v, "''", "'")
		}
	}
	n := p.node(yaml.ScalarNode, "!!str", v, l.num, j-l.lineStart+1)
	n.Style = style
	return n, k + 1, true
}

// flow reads the flow sequence or mapping of scalars at offset j of line
// l, and returns the offset after its closing bracket.
func (p *fastParser) flow(l fastLine, j int) (*yaml.Node, int, bool) {
	t := p.text
	open := t[j]
	kind, tag, closer := yaml.SequenceNode, "!!seq", byte(']')
	if open == '{' {
		kind, tag, closer = yaml.MappingNode, "!!map", '}'
	}
	n := p.node(kind, tag, "", l.num, j-l.lineStart+1)
	n.Style = yaml.FlowStyle
	mark := len(p.stack)
	k := p.skipSpaces(j+1, l.end)
	if k < l.end && t[k] == closer {
		return n, k + 1, true
	}
	for {
		var s *yaml.Node
		var ok bool
		if open == '{' {
			if s, k, ok = p.flowScalar(l, k, ':'); !ok || t[k] != ':' || k+1 >= l.end || t[k+1] != ' ' {
				return nil, 0, false
			}
			p.stack = append(p.stack, s)
			k = p.skipSpaces(k+1, l.end)
		}
		if s, k, ok = p.flowScalar(l, k, closer); !ok {
			return nil, 0, false
		}
		p.stack = append(p.stack, s)
		if k == l.end {
			return nil, 0, false
		}
		if t[k] == closer {
			n.Content = p.children(mark)
			return n, k + 1, true
		}
		if t[k] != ',' {
			return nil, 0, false
		}
		k = p.skipSpaces(k+1, l.end)
	}
}

// skipSpaces returns the first offset from k that is not a space.
func (p *fastParser) skipSpaces(k, end int) int {
	for k < end && p.text[k] == ' ' {
		k++
	}
	return k
}

// flowScalar reads a scalar in a flow collection at offset j, ended by a
// comma or stop (a colon after a key, a closing bracket after a value),
// and returns the offset of that ending character.
func (p *fastParser) flowScalar(l fastLine, j int, stop byte) (*yaml.Node, int, bool) {
	t := p.text
	if j == l.end {
		return nil, 0, false
	}
	if t[j] == '"' || t[j] == '\'' {
		s, k, ok := p.quoted(l, j, l.end)
		if !ok {
			return nil, 0, false
		}
		k = p.skipSpaces(k, l.end)
		if k == l.end || (t[k] != ',' && t[k] != stop) || stop == ':' {
			return nil, 0, false
		}
		return s, k, true
	}
	if plainStartRefused(t, j, l.end) {
		return nil, 0, false
	}
	k := j
	for ; k < l.end; k++ {
		c := t[k]
		if c == ',' || c == stop {
			break
		}
		switch c {
		case '[', ']', '{', '}', '#', ':', '"', '\'':
			return nil, 0, false
		}
	}
	if k == l.end {
		return nil, 0, false
	}
	e := k
	for e > j && t[e-1] == ' ' {
		e--
	}
	if e == j || (stop == ':' && e != k) {
		return nil, 0, false
	}
	v := t[j:e]
	tag, ok := p.plainTag(v)
	if !ok {
		return nil, 0, false
	}
	return p.node(yaml.ScalarNode, tag, v, l.num, j-l.lineStart+1), k, true
}

// plainTag returns the tag go.yaml.in/yaml/v3 resolves the plain scalar v
// to. Only a scalar starting with a sign, a digit, a dot or a letter of
// its few keywords can be anything but a string; of those, decimal
// integers and the keywords are told here, and the library is asked
// about the rest, once each.
func (p *fastParser) plainTag(v string) (string, bool) {
	switch v {
	case "<<":
		return "!!merge", true
	case "true", "True", "TRUE", "false", "False", "FALSE":
		return "!!bool", true
	case "~", "null", "Null", "NULL":
		return "!!null", true
	}
	switch c := v[0]; {
	case c >= '1' && c <= '9' && len(v) <= 18 && strings.Trim(v, "0123456789") == "":
		return "!!int", true
	case c == 'y' || c == 'Y' || c == 'n' || c == 'N' || c == 't' || c == 'T' || c == 'f' || c == 'F' || c == 'o' || c == 'O':
		return "!!str", true // no keyword: a string
	case c != '+' && c != '-' && c != '.' && (c < '0' || c > '9'):
		return "!!str", true
	}
	if tag, ok := p.tags[v]; ok {
		return tag, true
	}
	if len(p.tags) >= fastMaxTags {
		return "", false
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(v), &doc); err != nil || len(doc.Content) != 1 {
		return "", false
	}
	n := doc.Content[0]
	if n.Kind != yaml.ScalarNode || n.Style != 0 || n.Value != v {
		return "", false
	}
	if p.tags == nil {
		p.tags = map[string]string{}
	}
	p.tags[v] = n.Tag
	return n.Tag, true
}

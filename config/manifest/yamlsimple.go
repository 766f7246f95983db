package manifest

import (
	"strconv"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
)

// Most manifests are written in a small part of YAML: block mappings and
// sequences (sequences under a key indented or not, as kubectl and Helm
// write them), one entry a line, with plain or one-line quoted scalars,
// one-line flow collections (`{}`, `[a, b]`, `{name: x}`) and literal
// block scalars (`|`, `|-`). go.yaml.in/yaml/v2, the library
// sigs.k8s.io/yaml reads them with, takes about 25 µs and 118 allocations
// for a four-line ConfigMap on a slow core, allocating a token for every
// indicator and a map keyed by interface values that decodeFast then
// copies: for a source of thousands of objects, most of the config's load.
// decodeSimple reads that part alone, a line at a time, straight into the
// values decodeFast gives (map[string]any, []any, string, int64, float64,
// bool, nil), resolving each plain scalar as the library does (YAML 1.1:
// `yes` and `off` are booleans, `0777` is octal), and asks the library
// itself to resolve any plain scalar that could be a number, a float or a
// timestamp beyond a plain decimal integer.
//
// It is no YAML parser of its own: the moment a document leaves that part
// (anchors, aliases, tags, merge keys, quoted or non-string keys, folded
// or kept block scalars, indentation indicators, escapes in double
// quotes, multi-line scalars, multi-line flow collections, duplicate keys,
// tabs, carriage returns, any byte outside printable ASCII, nesting deeper
// than simpleMaxDepth), it gives up (ok false) and the document goes to
// decodeFast and then the library, which also gives every error with its
// position. FuzzDecodeFast holds it to that: whatever it decodes, the
// library decodes without an error to the same value.

// simpleMaxDepth is the deepest nesting decodeSimple reads.
const simpleMaxDepth = 48

// simpleMaxKey is the longest key decodeSimple reads: the library refuses
// implicit keys longer than 1,024 characters.
const simpleMaxKey = 512

// simpleLine is one line of a document.
type simpleLine struct {
	start int  // offset of the line's first byte
	text  int  // offset of its first byte that is not a space
	end   int  // offset after its last byte that is not a space
	brk   int  // offset of its line break
	blank bool // only spaces
	note  bool // a comment: its first byte that is not a space is '#'
}

// indent is the line's indentation, in spaces.
func (l simpleLine) indent() int { return l.text - l.start }

// simpleParser is the state of one decodeSimple.
type simpleParser struct {
	s     string
	lines []simpleLine
	next  int // the first line the last value read did not take
}

// decodeSimple decodes one YAML document into the value decodeFast gives,
// when the document is in the part of YAML it reads; ok is false for any
// other document.
func decodeSimple(data []byte) (v any, ok bool) {
	if len(data) == 0 || data[len(data)-1] != '\n' {
		return nil, false
	}
	p := simpleParser{s: string(data)}
	if !p.scan() {
		return nil, false
	}
	i := p.skip(0)
	if i == len(p.lines) {
		return nil, false // empty: the library's
	}
	v, ok = p.block(i, p.lines[i].text, -1, 0)
	if !ok || p.skip(p.next) != len(p.lines) {
		return nil, false
	}
	return v, true
}

// scan splits the document into lines, or reports a byte or a line
// decodeSimple does not read: a control character other than the line
// break (a tab, a carriage return), a byte outside ASCII, a document
// marker or a directive.
func (p *simpleParser) scan() bool {
	s := p.s
	p.lines = make([]simpleLine, 0, strings.Count(s, "\n"))
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\n' {
			p.lines = append(p.lines, p.line(start, i))
			start = i + 1
			continue
		}
		if c < ' ' || c > '~' {
			return false
		}
	}
	for _, l := range p.lines {
		if l.indent() == 0 && !l.blank {
			if t := s[l.text:l.end]; t[0] == '%' || strings.HasPrefix(t, "---") || strings.HasPrefix(t, "...") {
				return false
			}
		}
	}
	return true
}

// line describes the line from start to its break.
func (p *simpleParser) line(start, brk int) simpleLine {
	text := start
	for text < brk && p.s[text] == ' ' {
		text++
	}
	end := brk
	for end > text && p.s[end-1] == ' ' {
		end--
	}
	return simpleLine{start: start, text: text, end: end, brk: brk, blank: text == brk, note: text < brk && p.s[text] == '#'}
}

// skip returns the first line from i on that holds more than spaces and
// a comment.
func (p *simpleParser) skip(i int) int {
	for i < len(p.lines) && (p.lines[i].blank || p.lines[i].note) {
		i++
	}
	return i
}

// isDash reports whether a block sequence entry starts at offset k of a
// line that ends at end.
func (p *simpleParser) isDash(k, end int) bool {
	return p.s[k] == '-' && (k+1 == end || p.s[k+1] == ' ')
}

// block reads the block collection that starts at offset at of line i,
// in a column right of parent's.
func (p *simpleParser) block(i, at, parent, depth int) (any, bool) {
	l := p.lines[i]
	if at-l.start <= parent || depth > simpleMaxDepth {
		return nil, false
	}
	if p.isDash(at, l.end) {
		return p.sequence(i, at, depth)
	}
	if _, _, ok := p.key(at, l.end); ok {
		return p.mapping(i, at, depth)
	}
	return nil, false // a scalar on a line of its own
}

// mapping reads a block mapping whose first key starts at offset at of
// line i; its other keys are on lines of their own, in the same column.
func (p *simpleParser) mapping(i, at, depth int) (any, bool) {
	col := at - p.lines[i].start
	m := make(map[string]any)
	for {
		l := p.lines[i]
		k, after, ok := p.key(at, l.end)
		if !ok {
			return nil, false
		}
		if _, dup := m[k]; dup {
			return nil, false
		}
		v, ok := p.value(i, after, col, depth)
		if !ok {
			return nil, false
		}
		m[k] = v
		j := p.skip(p.next)
		if j == len(p.lines) || p.lines[j].indent() < col {
			p.next = j
			return m, true
		}
		if p.lines[j].indent() > col {
			return nil, false // a continued scalar, or an error
		}
		i, at = j, p.lines[j].text
	}
}

// value reads the value of the key on line i, which follows the key's
// colon at offset after; col is the mapping's column.
func (p *simpleParser) value(i, after, col, depth int) (any, bool) {
	l := p.lines[i]
	k := after
	for k < l.end && p.s[k] == ' ' {
		k++
	}
	if k < l.end && p.s[k] != '#' {
		return p.inline(i, k, col, depth)
	}
	// Nothing on the key's line: the value is below it, or null.
	j := p.skip(i + 1)
	if j < len(p.lines) {
		lj := p.lines[j]
		if lj.indent() > col {
			return p.block(j, lj.text, col, depth+1)
		}
		if lj.indent() == col && p.isDash(lj.text, lj.end) {
			return p.sequence(j, lj.text, depth+1) // not indented
		}
	}
	p.next = i + 1
	return nil, true
}

// sequence reads a block sequence whose first entry starts at offset at
// of line i; its other entries are on lines of their own, in the same
// column.
func (p *simpleParser) sequence(i, at, depth int) (any, bool) {
	if depth > simpleMaxDepth {
		return nil, false
	}
	col := at - p.lines[i].start
	seq := make([]any, 0, 4)
	for {
		l := p.lines[i]
		k := at + 1
		for k < l.end && p.s[k] == ' ' {
			k++
		}
		var v any
		var ok bool
		switch {
		case k == l.end || p.s[k] == '#':
			// Nothing on the entry's line: the entry is below it, or null.
			j := p.skip(i + 1)
			if j < len(p.lines) && p.lines[j].indent() > col {
				v, ok = p.block(j, p.lines[j].text, col, depth+1)
			} else {
				v, ok = nil, true
				p.next = i + 1
			}
		case p.isDash(k, l.end):
			v, ok = p.sequence(i, k, depth+1)
		default:
			if _, _, isKey := p.key(k, l.end); isKey {
				v, ok = p.mapping(i, k, depth+1)
			} else {
				v, ok = p.inline(i, k, col, depth)
			}
		}
		if !ok {
			return nil, false
		}
		seq = append(seq, v)
		j := p.skip(p.next)
		if j == len(p.lines) || p.lines[j].indent() < col || !p.isDash(p.lines[j].text, p.lines[j].end) {
			if j < len(p.lines) && p.lines[j].indent() > col {
				return nil, false // a continued scalar, or an error
			}
			p.next = j
			return seq, true
		}
		if p.lines[j].indent() > col {
			return nil, false
		}
		i, at = j, p.lines[j].text
	}
}

// key reads the plain key that starts at offset at of a line ending at
// end and returns it with the offset after its colon; ok is false where
// no such key starts (a scalar, a quoted or complex key, a key that does
// not resolve to a string).
func (p *simpleParser) key(at, end int) (k string, after int, ok bool) {
	s := p.s
	if indicator(s[at]) || s[at] == '-' {
		return "", 0, false
	}
	for j := at; j < end && j-at <= simpleMaxKey; j++ {
		switch s[j] {
		case ':':
			if j+1 < end && s[j+1] != ' ' {
				continue
			}
			if s[j-1] == ' ' {
				return "", 0, false
			}
			k = s[at:j]
			if k == "<<" {
				return "", 0, false // a merge key
			}
			v, ok := resolvePlain(k)
			if _, isString := v.(string); !ok || !isString {
				return "", 0, false
			}
			return k, j + 1, true
		case '#', ',', '[', ']', '{', '}', '"', '\'':
			return "", 0, false
		}
	}
	return "", 0, false
}

// indicator reports whether c, as a scalar's first byte, makes it
// something other than a plain scalar (or a plain scalar decodeSimple
// leaves to the library: `?` and `:` followed by a letter).
func indicator(c byte) bool {
	return strings.IndexByte("?:,[]{}#&*!|>'\"%@` ", c) >= 0
}

// inline reads the value that starts at offset k of line i, after a key
// or a sequence entry's dash: a flow collection, a quoted or plain scalar
// or a literal block scalar; col is the column of the collection it is
// in.
func (p *simpleParser) inline(i, k, col, depth int) (any, bool) {
	l := p.lines[i]
	s := p.s
	p.next = i + 1
	var v any
	var e int
	var ok bool
	switch s[k] {
	case '|':
		switch s[k:l.end] {
		case "|":
			return p.literal(i, col, false)
		case "|-":
			return p.literal(i, col, true)
		}
		return nil, false
	case '[', '{':
		v, e, ok = p.flow(k, l.end, depth+1)
	case '"', '\'':
		var q string
		q, e, ok = p.quoted(k, l.end)
		v = q
	default:
		return p.plain(k, l.end)
	}
	if !ok || !p.restIsComment(e, l.end) {
		return nil, false
	}
	return v, true
}

// restIsComment reports whether a line that ends at end holds nothing
// from offset k on but spaces and a comment.
func (p *simpleParser) restIsComment(k, end int) bool {
	if k == end {
		return true
	}
	if p.s[k] != ' ' {
		return false
	}
	for k < end && p.s[k] == ' ' {
		k++
	}
	return k == end || p.s[k] == '#'
}

// plain reads the plain scalar that starts at offset k of a line ending
// at end, up to a comment.
func (p *simpleParser) plain(k, end int) (any, bool) {
	s := p.s
	if indicator(s[k]) || p.isDash(k, end) {
		return nil, false
	}
	e := end
	for j := k; j < end; j++ {
		switch s[j] {
		case '#':
			if s[j-1] == ' ' {
				e = j
				for e > k && s[e-1] == ' ' {
					e--
				}
				j = end
			}
		case ':':
			if j+1 == end || s[j+1] == ' ' {
				return nil, false // a mapping where none may start
			}
		}
	}
	t := s[k:e]
	if strings.HasPrefix(t, "---") || strings.HasPrefix(t, "...") {
		return nil, false
	}
	return resolvePlain(t)
}

// quoted reads the one-line quoted scalar that starts at offset k of a
// line ending at end, and returns it with the offset after its closing
// quote.
func (p *simpleParser) quoted(k, end int) (string, int, bool) {
	s := p.s
	if s[k] == '"' {
		for j := k + 1; j < end; j++ {
			switch s[j] {
			case '\\':
				return "", 0, false // an escape: the library's
			case '"':
				return s[k+1 : j], j + 1, true
			}
		}
		return "", 0, false
	}
	doubled := false
	for j := k + 1; j < end; j++ {
		if s[j] != '\'' {
			continue
		}
		if j+1 < end && s[j+1] == '\'' {
			doubled = true
			j++
			continue
		}
		t := s[k+1 : j]
		if doubled {
			t = strings.ReplaceAll(t, "''", "'")
		}
		return t, j + 1, true
	}
	return "", 0, false
}

// flow reads the one-line flow collection that starts at offset k of a
// line ending at end, and returns it with the offset after its closing
// bracket. Its entries are plain or quoted scalars and flow collections;
// a mapping's keys are plain.
func (p *simpleParser) flow(k, end, depth int) (any, int, bool) {
	if depth > simpleMaxDepth {
		return nil, 0, false
	}
	s := p.s
	if s[k] == '[' {
		seq := make([]any, 0, 4)
		k = p.flowSpaces(k+1, end)
		if k < end && s[k] == ']' {
			return seq, k + 1, true
		}
		for {
			v, e, ok := p.flowEntry(k, end, depth)
			if !ok {
				return nil, 0, false
			}
			seq = append(seq, v)
			var more bool
			if k, more, ok = p.flowNext(e, end, ']'); !more {
				return seq, k, ok // not ok: a pair in a sequence, or an error
			}
		}
	}
	m := make(map[string]any)
	k = p.flowSpaces(k+1, end)
	if k < end && s[k] == '}' {
		return m, k + 1, true
	}
	for {
		if k == end || indicator(s[k]) || s[k] == '-' {
			return nil, 0, false
		}
		e := k
		for e < end && s[e] != ':' && strings.IndexByte(",[]{}#'\"?", s[e]) < 0 {
			e++
		}
		if e+1 >= end || s[e] != ':' || s[e+1] != ' ' || s[e-1] == ' ' {
			return nil, 0, false
		}
		key := s[k:e]
		kv, ok := resolvePlain(key)
		if _, isString := kv.(string); !ok || !isString || key == "<<" {
			return nil, 0, false
		}
		if _, dup := m[key]; dup {
			return nil, 0, false
		}
		k = p.flowSpaces(e+1, end)
		if k == end || s[k] == ',' || s[k] == '}' {
			return nil, 0, false // an empty value
		}
		v, e, ok := p.flowEntry(k, end, depth)
		if !ok {
			return nil, 0, false
		}
		m[key] = v
		var more bool
		if k, more, ok = p.flowNext(e, end, '}'); !more {
			return m, k, ok
		}
	}
}

// flowNext reads what follows an entry of a flow collection that ends
// with close, from offset k of a line ending at end: more is true after a
// comma (k is then the next entry's offset), false after close (k is then
// the offset after it); ok is false for anything else, and for a comma
// with no entry after it.
func (p *simpleParser) flowNext(k, end int, close byte) (next int, more, ok bool) {
	s := p.s
	k = p.flowSpaces(k, end)
	if k == end {
		return 0, false, false
	}
	switch s[k] {
	case close:
		return k + 1, false, true
	case ',':
		k = p.flowSpaces(k+1, end)
		if k == end || s[k] == close {
			return 0, false, false
		}
		return k, true, true
	}
	return 0, false, false
}

// flowSpaces skips the spaces from offset k of a line ending at end.
func (p *simpleParser) flowSpaces(k, end int) int {
	for k < end && p.s[k] == ' ' {
		k++
	}
	return k
}

// flowEntry reads a value in a flow collection, from offset k of a line
// ending at end, and returns it with the offset after it.
func (p *simpleParser) flowEntry(k, end, depth int) (any, int, bool) {
	s := p.s
	if k == end {
		return nil, 0, false
	}
	switch c := s[k]; {
	case c == '[' || c == '{':
		return p.flow(k, end, depth+1)
	case c == '"' || c == '\'':
		q, e, ok := p.quoted(k, end)
		return q, e, ok
	case indicator(c) || c == '-' && (k+1 == end || strings.IndexByte(" ,[]{}", s[k+1]) >= 0):
		return nil, 0, false
	}
	e := k
	for e < end && strings.IndexByte(",[]{}#:'\"?", s[e]) < 0 {
		e++
	}
	if e < end && strings.IndexByte("#:'\"?", s[e]) >= 0 {
		// A pair, a comment, a quote, or a '?', which ends a plain
		// scalar in a flow collection: the library's.
		return nil, 0, false
	}
	t := strings.TrimRight(s[k:e], " ")
	v, ok := resolvePlain(t)
	return v, e, ok
}

// literal reads the literal block scalar (`|`, or `|-` when strip) whose
// indicator ends line i, in a collection at column col: its lines are
// those below, indented as the first of them and more than col.
func (p *simpleParser) literal(i, col int, strip bool) (any, bool) {
	j := i + 1
	if j == len(p.lines) || p.lines[j].blank {
		return nil, false // empty, or leading blank lines: the library's
	}
	ind := p.lines[j].indent()
	if ind <= col {
		return nil, false
	}
	var b strings.Builder
	blanks := 0
	for ; j < len(p.lines); j++ {
		l := p.lines[j]
		if l.blank {
			if l.brk-l.start > ind {
				return nil, false // spaces that would be content
			}
			blanks++
			continue
		}
		if l.indent() < ind {
			if l.indent() > col {
				return nil, false
			}
			break
		}
		for ; blanks > 0; blanks-- {
			b.WriteByte('\n')
		}
		b.WriteString(p.s[l.start+ind : l.brk])
		b.WriteByte('\n')
	}
	p.next = j
	t := b.String()
	if strip {
		t = t[:len(t)-1]
	}
	return t, true
}

// resolvePlain is the value of a plain scalar, as go.yaml.in/yaml/v2
// resolves it and decodeFast converts it: the library itself resolves
// whatever could be a number or a timestamp, beyond a decimal integer of
// up to 18 digits, a decimal fraction (`0.5`) and a quantity (`64Mi`). ok is false for a value decodeFast does not convert.
func resolvePlain(t string) (any, bool) {
	if t == "" {
		return nil, false
	}
	switch t[0] {
	case 'y', 'Y', 'n', 'N', 't', 'T', 'f', 'F', 'o', 'O', '~':
		switch t {
		case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
			return true, true
		case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
			return false, true
		case "~", "null", "Null", "NULL":
			return nil, true
		}
		return t, true
	case '+', '-', '.', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if n, ok := decimal(t); ok {
			return n, true
		}
		if quantity(t) {
			return t, true
		}
		if decimalFraction(t) {
			// What the library's float syntax gives, no timestamp, no
			// integer and no underscore being possible.
			f, err := strconv.ParseFloat(t, 64)
			if err != nil {
				return nil, false
			}
			return jsonFloat(f)
		}
		var y any
		if err := yamlv2.Unmarshal([]byte(t), &y); err != nil {
			return nil, false
		}
		switch y.(type) {
		case map[any]any, []any:
			return nil, false
		}
		return jsonValue(y)
	case '<':
		if t == "<<" {
			return nil, false
		}
	}
	return t, true
}

// quantity reports whether t is digits then a letter that starts no
// number syntax (not e, o, x, b) and letters or digits, as in `64Mi` or
// `100m`: no integer, float or timestamp the library reads, so a string.
func quantity(t string) bool {
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 || i == len(t) || strings.IndexByte("eEoOxXbB", t[i]) >= 0 {
		return false
	}
	for ; i < len(t); i++ {
		c := t[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// decimalFraction reports whether t is digits, a point and digits, with
// an optional minus: a float in the library's syntax.
func decimalFraction(t string) bool {
	if t[0] == '-' {
		t = t[1:]
	}
	point := strings.IndexByte(t, '.')
	if point <= 0 || point == len(t)-1 || len(t) > 32 {
		return false
	}
	for i := 0; i < len(t); i++ {
		if i != point && (t[i] < '0' || t[i] > '9') {
			return false
		}
	}
	return true
}

// decimal reads a decimal integer of up to 18 digits with no sign but an
// optional minus and no leading zero (or "0").
func decimal(t string) (int64, bool) {
	d := t
	if d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 || d[0] == '0' && len(d) > 1 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(d); i++ {
		c := d[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if t[0] == '-' {
		if n == 0 {
			return 0, false // "-0": the library's
		}
		n = -n
	}
	return n, true
}

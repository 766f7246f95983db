package config

import (
	"bytes"
	"errors"
	"io"
	"runtime"

	"github.com/sourcegraph/conc/iter"
	yaml "go.yaml.in/yaml/v3"
)

// A large config is nearly all its applications list, and the node tree
// built of it is most of loading it. parseSplit parses that list in
// pieces, one per core (each as parseOne does: parseFast's, or
// go.yaml.in/yaml/v3's when a piece leaves parseFast's part of YAML), and
// the rest of the file apart, and joins the trees: the result is the tree
// parsing the whole file gives, or nothing (ok false) and the whole file
// is parsed as before. Comments, which the decoder does not read, may sit on other
// nodes than in the whole file's tree.
//
// Why the pieces parse as in the whole file: the list is the value of a
// top-level key written `applications:` alone on its line at column 0,
// and its items start with `- ` at one column, I. The pieces are cut
// before such item lines. A block scalar or a plain scalar cannot
// continue over a line at column I or less, so the only constructs that
// could span a cut are quoted scalars and flow collections, and those are
// then left open at the end of the piece before the cut, which fails to
// parse. Aliases can only refer to anchors before them: a piece starts
// with an item that has no '*' at all, and a piece or the rest of the file
// that uses an anchor from elsewhere fails to parse. The rest of the file
// is parsed with the list's lines left blank, so every line keeps its
// number, and the key must come out there, at its line, with an empty
// value; its value is then the list the pieces make.

// splitMinBytes is the smallest file parseDocuments parses in pieces:
// below it the whole parse takes a few milliseconds.
const splitMinBytes = 256 << 10

// parseDocuments parses every document of data, in pieces on every core
// when data is a large config (parseSplit), each piece as parseOne does.
func parseDocuments(data []byte, text string) ([]*yaml.Node, error) {
	if n := runtime.GOMAXPROCS(0); n >= 2 && len(data) >= splitMinBytes {
		if docs, ok := parseSplit(data, text, n); ok {
			return docs, nil
		}
	}
	return parseOne(data, text)
}

// parseOne parses every document of data in one pass: parseFast's of
// text, data as a string, when it is in the part of YAML it reads, else
// the library's.
func parseOne(data []byte, text string) ([]*yaml.Node, error) {
	if doc, ok := parseFast(text); ok {
		return []*yaml.Node{doc}, nil
	}
	return parseWhole(data)
}

// parseWhole parses every document of data in one pass.
func parseWhole(data []byte) ([]*yaml.Node, error) {
	// A Decoder, not Unmarshal, even for one document: Unmarshal stops
	// after the first, and misses what follows it that is not YAML.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		doc := &yaml.Node{}
		err := dec.Decode(doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, doc)
	}
}

// listKey is the line that parseSplit looks for: the applications key
// at column 0, with nothing but a comment after it.
var listKey = []byte("applications:")

// splitLayout is where parseSplit cuts a file of size bytes: the list's
// lines are [first, end) (line indexes from 0, starts[i] the offset of
// line i), and cuts are the line indexes where the pieces start, first
// among them.
type splitLayout struct {
	size       int
	starts     []int
	key        int
	first, end int
	cuts       []int
}

// offset returns where line i starts, or the file's size past its last
// line.
func (l *splitLayout) offset(i int) int {
	if i < len(l.starts) {
		return l.starts[i]
	}
	return l.size
}

// parseSplit parses data, text as a string, in at most n pieces (see
// above). ok false means that data is not a file it can cut, or that a
// piece did not parse: then data is to be parsed whole, which says why if
// it does not parse.
func parseSplit(data []byte, text string, n int) ([]*yaml.Node, bool) {
	l, ok := layout(data, n)
	if !ok {
		return nil, false
	}
	from, to := l.offset(l.first), l.offset(l.end)
	// The rest of the file, the list's lines blank.
	rest := make([]byte, 0, len(data)-(to-from)+(l.end-l.first))
	rest = append(rest, data[:from]...)
	rest = append(rest, bytes.Repeat([]byte{'\n'}, l.end-l.first)...)
	rest = append(rest, data[to:]...)
	docs, err := parseOne(rest, string(rest))
	if err != nil {
		return nil, false
	}
	slot := listSlot(docs, l.key+1)
	if slot == nil {
		return nil, false
	}
	if anchored(docs) && bytes.IndexByte(data[from:to], '*') >= 0 {
		// The items may use the rest's anchors: they would not parse.
		return nil, false
	}
	type piece struct {
		list *yaml.Node
		ok   bool
	}
	bounds := append(l.cuts[:len(l.cuts):len(l.cuts)], l.end)
	parsed := make([]piece, len(l.cuts))
	iter.ForEachIdx(parsed, func(i int, p *piece) {
		from, to := l.offset(bounds[i]), l.offset(bounds[i+1])
		docs, err := parseOne(data[from:to], text[from:to])
		if err != nil || len(docs) != 1 || len(docs[0].Content) != 1 {
			return
		}
		list := docs[0].Content[0]
		if list.Kind != yaml.SequenceNode || list.Style != 0 || list.Line != 1 {
			return
		}
		shiftLines(list, bounds[i])
		p.list, p.ok = list, true
	})
	var items []*yaml.Node
	for _, p := range parsed {
		if !p.ok {
			return nil, false
		}
		items = append(items, p.list.Content...)
	}
	list := parsed[0].list
	list.Content = items
	*slot = list
	return docs, true
}

// layout finds where data can be cut into at most n pieces. ok false
// means it cannot: no applications key alone on its line, or more than
// one, a list not written as a block list, carriage returns or tabs
// that start a line, or no item to cut before.
func layout(data []byte, n int) (l splitLayout, ok bool) {
	if bytes.IndexByte(data, '\r') >= 0 {
		return l, false
	}
	l.size, l.key = len(data), -1
	for off := 0; off < len(data); {
		l.starts = append(l.starts, off)
		next := bytes.IndexByte(data[off:], '\n')
		if next < 0 {
			next = len(data)
		} else {
			next += off + 1
		}
		if bytes.HasPrefix(data[off:next], listKey) && onlyComment(data[off+len(listKey):next]) {
			if l.key >= 0 {
				return l, false
			}
			l.key = len(l.starts) - 1
		}
		off = next
	}
	if l.key < 0 {
		return l, false
	}
	// line is line i without its newline.
	line := func(i int) []byte {
		return bytes.TrimSuffix(data[l.starts[i]:l.offset(i+1)], []byte{'\n'})
	}
	indent := -1
	var items []int
	l.end = len(l.starts)
	for i := l.key + 1; i < len(l.starts); i++ {
		s := line(i)
		sp := len(s) - len(bytes.TrimLeft(s, " "))
		switch {
		case sp == len(s):
			continue // blank
		case s[sp] == '\t':
			return l, false
		case indent < 0 && s[sp] == '#':
			continue // a comment before the first item
		case indent < 0:
			if !isItem(s[sp:]) {
				return l, false
			}
			indent, l.first = sp, i
			items = append(items, i)
		case sp == indent && isItem(s[sp:]):
			items = append(items, i)
		case sp == 0 && s[0] != '#':
			l.end = i
		}
		if l.end < len(l.starts) {
			break
		}
	}
	if indent < 0 {
		return l, false
	}
	// Cut before the item nearest after each n-th share that has no '*'.
	l.cuts = []int{l.first}
	for k := 1; k < n; k++ {
		for j := k * len(items) / n; j < len(items); j++ {
			it := items[j]
			if it <= l.cuts[len(l.cuts)-1] {
				continue
			}
			next := l.end
			if j+1 < len(items) {
				next = items[j+1]
			}
			if bytes.IndexByte(data[l.starts[it]:l.offset(next)], '*') < 0 {
				l.cuts = append(l.cuts, it)
				break
			}
		}
	}
	return l, len(l.cuts) > 1
}

// onlyComment reports whether s (the end of a line) is blank or a
// comment.
func onlyComment(s []byte) bool {
	s = bytes.TrimLeft(s, " \t")
	return len(s) == 0 || s[0] == '\n' || s[0] == '#'
}

// isItem reports whether s (a line from its first non-space character)
// starts a list item.
func isItem(s []byte) bool {
	return len(s) > 0 && s[0] == '-' && (len(s) == 1 || s[1] == ' ')
}

// listSlot returns where the applications key's value is in docs: the
// key at line (from 1) and column 1 of a top-level block mapping, plain,
// its value an empty null. It returns nil when there is no such key.
func listSlot(docs []*yaml.Node, line int) **yaml.Node {
	for _, doc := range docs {
		if len(doc.Content) != 1 {
			continue
		}
		m := doc.Content[0]
		if m.Kind != yaml.MappingNode || m.Style != 0 {
			continue
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			if k.Line != line || k.Column != 1 {
				continue
			}
			if k.Kind != yaml.ScalarNode || k.Style != 0 || k.Value != "applications" || k.Tag != "!!str" || k.Anchor != "" {
				return nil
			}
			if v.Kind != yaml.ScalarNode || v.Style != 0 || v.Tag != "!!null" || v.Value != "" || v.Anchor != "" {
				return nil
			}
			return &m.Content[i+1]
		}
	}
	return nil
}

// anchored reports whether any node of docs has an anchor.
func anchored(docs []*yaml.Node) bool {
	var walk func(n *yaml.Node) bool
	walk = func(n *yaml.Node) bool {
		if n.Anchor != "" {
			return true
		}
		for _, c := range n.Content {
			if walk(c) {
				return true
			}
		}
		return false
	}
	for _, d := range docs {
		if walk(d) {
			return true
		}
	}
	return false
}

// shiftLines adds by to the line of n and of every node under it.
func shiftLines(n *yaml.Node, by int) {
	n.Line += by
	for _, c := range n.Content {
		shiftLines(c, by)
	}
}

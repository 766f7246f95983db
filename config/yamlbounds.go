package config

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
	yaml "go.yaml.in/yaml/v3"

	"github.com/driftwatch/driftwatch/config/manifest"
)

// A config is parsed into a node tree by go.yaml.in/yaml/v3, in time that
// grows linearly with its size. Its tree is then checked against three
// limits that bound hostile input and the work of the decoder: how many
// keys a block mapping has, how deep mappings and lists nest, and how
// many nodes aliases expand to (aliasBounds). A file that
// go.yaml.in/yaml/v3 refuses is parsed again by goccy/go-yaml, whose
// syntax errors are the ones reported; as that parser takes time
// quadratic in two shapes of input (a block mapping with many keys, deep
// nesting), bounds checks its tokens for the first two limits first.

// maxMappingKeys is the most keys one block mapping may have (a flow
// mapping, {a: 1, b: 2}, is not limited). The schema's own mappings have
// a few dozen at most; the largest free-form ones, env and config, stay
// far below it in practice.
const maxMappingKeys = 1000

// maxNesting is how deep mappings and lists may nest, block and flow
// together. The schema nests six levels deep at most.
const maxNesting = 64

// aliasBaseline is the number of nodes the aliases of a config may expand
// to whatever its size; aliasPerNode is how many more each node of its
// tree allows. An alias is read again wherever it is used, so a file of a
// few KiB whose wide mapping is used a few hundred times would otherwise
// be decoded as hundreds of MiB. The budget keeps a shared block usable
// by every entry of a large file (500 applications whose env is the
// same 20 keys expand to about 20,000 nodes) and the work linear in the
// file's size. It is separate from maxMergedEntries, which bounds merge
// keys per document.
const (
	aliasBaseline = 1 << 16
	aliasPerNode  = 16
)

// parseYAML parses data into its documents. Problems are recorded in
// w.errs and give ok false: a syntax error or a file beyond the limits.
func (w *walker) parseYAML(data []byte, text string) (docs []*yaml.Node, ok bool) {
	w.text = source{data: data}
	docs, unknown, err := parseTree(data, text)
	if err != nil {
		w.reportSyntax(data, err)
		return nil, false
	}
	w.unknown = unknown
	ok, nodes := w.treeBounds(docs)
	return docs, ok && w.aliasBounds(docs, nodes)
}

// aliasBounds counts, on the tree and before anything is decoded, the
// nodes the aliases of docs expand to: each alias adds the nodes of the
// node it refers to, the aliases inside that node expanded (counted once
// per anchor), and all of them together may add at most aliasBaseline
// plus aliasPerNode per node of the tree. Past that, the alias that
// crosses the limit is recorded in w.errs at its line, and ok is false.
// nodes is the tree's node count (treeBounds).
func (w *walker) aliasBounds(docs []*yaml.Node, nodes int) bool {
	if bytes.IndexByte(w.text.data, '*') < 0 {
		return true // no alias: no need to walk the tree
	}
	limit := aliasBaseline + aliasPerNode*nodes
	if _, a := manifest.AliasExpansion(docs, limit); a != nil {
		w.errorf(rawPos(a), "", "aliases expand to more than %d nodes, the limit of this file (%d plus %d per node of it): *%s is used too often", limit, aliasBaseline, aliasPerNode, a.Value)
		return false
	}
	return true
}

// parseTree parses every document of data (text as a string), past what
// go.yaml.in/yaml/v3 refuses of what goccy/go-yaml (which parsed configs
// before) accepts:
// an alias to no anchor before it is parsed as a null (~), which unknown
// gives by position with the alias's name, and a %YAML 1.2 directive as
// %YAML 1.1 (the version go.yaml.in/yaml/v3 knows; it reads both alike).
func parseTree(data []byte, text string) (docs []*yaml.Node, unknown map[pos]string, err error) {
	docs, err = parseDocuments(data, text)
	if err != nil && strings.Contains(err.Error(), "incompatible YAML document") {
		if fixed := yaml12.ReplaceAll(data, []byte("${1}1.1")); !bytes.Equal(fixed, data) {
			data = fixed
			docs, err = parseDocuments(data, string(data))
		}
	}
	if err != nil && strings.Contains(err.Error(), "unknown anchor") {
		var fixed []byte
		if fixed, unknown = nullUnknownAliases(data); len(unknown) > 0 {
			docs, err = parseDocuments(fixed, string(fixed))
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return docs, unknown, nil
}

// yaml12 is a %YAML 1.2 directive.
var yaml12 = regexp.MustCompile(`(?m)^(%YAML[ \t]+)1\.2\b`)

// reportSyntax reports why data does not parse: err is the error of
// go.yaml.in/yaml/v3. The error reported is that of goccy/go-yaml, after
// its token bounds, or err with its line when goccy/go-yaml accepts data.
func (w *walker) reportSyntax(data []byte, err error) {
	f, gerr := w.parseGoccy(data, 0, parser.AllowDuplicateMapKey())
	if gerr != nil {
		w.syntaxError(gerr)
	}
	if f == nil {
		return
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var p pos
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		p.line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	}
	if parserProblem(msg) {
		// The parser's lines count from 0 (and line 0 goes unsaid), the
		// scanner's from 1.
		p.line++
	}
	w.errorf(p, "", "yaml: %s", msg)
}

// parserProblem reports whether msg is a problem that the parser of
// go.yaml.in/yaml/v3 finds, not its scanner.
func parserProblem(msg string) bool {
	switch msg {
	case "did not find expected ',' or ']'", "did not find expected ',' or '}'",
		"did not find expected '-' indicator", "did not find expected <document start>",
		"did not find expected <stream-start>", "did not find expected key",
		"did not find expected node content", "found duplicate %TAG directive",
		"found duplicate %YAML directive", "found incompatible YAML document",
		"found undefined tag handle":
		return true
	}
	return false
}

// parseGoccy parses data with goccy/go-yaml once bounds found no problem
// in its tokens. The problems bounds finds are recorded in w.errs and give
// a nil file and a nil error; err is a syntax error.
func (w *walker) parseGoccy(data []byte, mode parser.Mode, opts ...parser.Option) (f *ast.File, err error) {
	tokens := lexer.Tokenize(string(data))
	// An invalid token is a syntax error, which the parser reports.
	if tokens.InvalidToken() == nil && !w.bounds(tokens) {
		return nil, nil
	}
	return parser.Parse(tokens, mode, opts...)
}

// yamlLine is the position that starts a message of go.yaml.in/yaml/v3.
var yamlLine = regexp.MustCompile(`^line ([0-9]+): `)

// nullUnknownAliases returns data with every alias that refers to no
// anchor before it replaced by a null (~) of the same width, and the
// positions and names of those aliases.
func nullUnknownAliases(data []byte) ([]byte, map[pos]string) {
	tokens := lexer.Tokenize(string(data))
	defined := map[string]bool{}
	unknown := map[pos]string{}
	var at []pos
	for i, tk := range tokens {
		if i+1 >= len(tokens) || tk.Position == nil {
			continue
		}
		name := tokens[i+1].Value
		switch tk.Type {
		case token.AnchorType:
			defined[name] = true
		case token.AliasType:
			if !defined[name] {
				p := tokenPos(tk)
				unknown[p] = name
				at = append(at, p)
			}
		}
	}
	if len(unknown) == 0 {
		return data, nil
	}
	out := make([]byte, 0, len(data))
	line, col, next := 1, 1, 0
	for i := 0; i < len(data); {
		if next < len(at) && at[next] == (pos{line, col}) {
			// "*name" becomes "~" and as many spaces as name has
			// characters.
			name := unknown[at[next]]
			next++
			if bytes.HasPrefix(data[i:], []byte("*"+name)) {
				out = append(out, '~')
				n := utf8.RuneCountInString(name)
				out = append(out, bytes.Repeat([]byte{' '}, n)...)
				i += 1 + len(name)
				col += 1 + n
				continue
			}
		}
		r, size := utf8.DecodeRune(data[i:])
		out = append(out, data[i:i+size]...)
		i += size
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return out, unknown
}

// treeBounds checks that no block mapping of docs has more than
// maxMappingKeys keys and that nothing nests deeper than maxNesting,
// recording each problem in w.errs. It reports whether there was none.
func (w *walker) treeBounds(docs []*yaml.Node) (ok bool, nodes int) {
	ok, deep := true, false
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		nodes++
		switch n.Kind {
		case yaml.MappingNode, yaml.SequenceNode:
			if depth++; depth > maxNesting && !deep {
				deep, ok = true, false
				w.errorf(w.posOf(n), "", "nested more than %d levels deep", maxNesting)
			}
			if n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle == 0 && len(n.Content) > 2*maxMappingKeys {
				ok = false
				w.errorf(rawPos(n.Content[2*maxMappingKeys]), "", "a mapping has more than %d keys", maxMappingKeys)
			}
		case yaml.AliasNode:
			return
		}
		for _, c := range n.Content {
			walk(c, depth)
		}
	}
	for _, doc := range docs {
		walk(doc, 0)
	}
	return ok, nodes
}

// bounds checks that no block mapping of tokens has more than
// maxMappingKeys keys and that nothing nests deeper than maxNesting,
// recording each problem in w.errs. It reports whether there was none.
//
// Block structure is read from the columns of the tokens: a token that
// starts a line in block context ends every mapping and list whose column
// is greater; a key (the first token of its line other than list and
// explicit key indicators, when a ':' follows on the line) continues the
// mapping at its column or starts one; a '-' continues the list at its
// column or starts one.
func (w *walker) bounds(tokens token.Tokens) bool {
	type open struct {
		col      int
		list     bool
		keys     int
		reported bool
	}
	var (
		stack    []open
		flow     int  // open '[' and '{'
		deep     bool // maxNesting exceeded (reported once)
		line     = -1
		keyCol   = -1 // column of the current line's key candidate
		keyTk    *token.Token
		prevType token.Type
	)
	ok := true
	nested := func(tk *token.Token) {
		if len(stack)+flow > maxNesting && !deep {
			deep, ok = true, false
			w.errorf(tokenPos(tk), "", "nested more than %d levels deep", maxNesting)
		}
	}
	// key counts the key tk at column col: it ends a list at its column,
	// then continues the mapping at its column or starts one.
	key := func(col int, tk *token.Token) {
		for n := len(stack); n > 0 && stack[n-1].col == col && stack[n-1].list; n-- {
			stack = stack[:n-1]
		}
		n := len(stack)
		if n == 0 || stack[n-1].col != col {
			stack = append(stack, open{col: col, keys: 1})
			nested(tk)
			return
		}
		top := &stack[n-1]
		if top.keys++; top.keys > maxMappingKeys && !top.reported {
			top.reported, ok = true, false
			w.errorf(tokenPos(tk), "", "a mapping has more than %d keys", maxMappingKeys)
		}
	}
	for _, tk := range tokens {
		if tk.Type == token.CommentType || tk.Position == nil {
			continue
		}
		// The content of a | or > block scalar is one token that starts
		// at column 0: it ends nothing.
		content := prevType == token.LiteralType || prevType == token.FoldedType
		prevType = tk.Type
		if tk.Type == token.DocumentHeaderType || tk.Type == token.DocumentEndType {
			stack, flow, line = stack[:0], 0, -1
			continue
		}
		if tk.Position.Line != line && flow == 0 && !content {
			line, keyCol, keyTk = tk.Position.Line, -1, nil
			for len(stack) > 0 && stack[len(stack)-1].col > tk.Position.Column {
				stack = stack[:len(stack)-1]
			}
		}
		if flow > 0 {
			switch tk.Type {
			case token.SequenceStartType, token.MappingStartType:
				flow++
				nested(tk)
			case token.SequenceEndType, token.MappingEndType:
				flow--
			}
			continue
		}
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			flow++
			nested(tk)
			continue
		case token.SequenceEntryType:
			col := tk.Position.Column
			if n := len(stack); n == 0 || stack[n-1].col != col || !stack[n-1].list {
				stack = append(stack, open{col: col, list: true})
				nested(tk)
			}
			continue
		case token.MappingKeyType:
			// An explicit key, `? key`: the key is at the '?'; its
			// value, `: value`, starts a line of its own.
			if keyCol < 0 {
				key(tk.Position.Column, tk)
				keyCol = tk.Position.Column
			}
			continue
		case token.MappingValueType:
			if keyTk != nil {
				key(keyCol, keyTk)
				keyTk = nil
			}
			continue
		}
		if keyTk == nil && keyCol < 0 {
			keyCol, keyTk = tk.Position.Column, tk
		}
	}
	return ok
}

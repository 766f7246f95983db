package config

import (
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// The YAML parser takes time quadratic in two shapes of input: a block
// mapping with many keys (it recurses once per key and copies the keys
// parsed so far at each level) and deep nesting (each level copies the
// path of its parent). bounds checks the tokens for both, in linear time,
// before the parser runs, so that the time to parse a file of any shape
// grows linearly with its size.

// maxMappingKeys is the most keys one block mapping may have (a flow
// mapping, {a: 1, b: 2}, is not limited). The schema's own mappings have
// a few dozen at most; the largest free-form ones, env and config, stay
// far below it in practice.
const maxMappingKeys = 1000

// maxNesting is how deep mappings and lists may nest, block and flow
// together. The schema nests six levels deep at most.
const maxNesting = 64

// parseYAML parses data with the YAML parser once bounds found no problem.
// The problems bounds finds are recorded in w.errs and give a nil file and
// a nil error; err is a syntax error.
func (w *walker) parseYAML(data []byte, mode parser.Mode, opts ...parser.Option) (f *ast.File, err error) {
	tokens := lexer.Tokenize(string(data))
	// An invalid token is a syntax error, which the parser reports.
	if tokens.InvalidToken() == nil && !w.bounds(tokens) {
		return nil, nil
	}
	return parser.Parse(tokens, mode, opts...)
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

package manifest

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"helm.sh/helm/v4/pkg/engine"
)

// maxTemplateList is the longest list until, untilStep and seq make in a
// Helm template: a source gives at most DefaultMaxObjects objects, and a
// chart's loops are over replicas, ports and the like.
const maxTemplateList = 100000

// boundedEngine returns the Helm engine renderHelm uses: no client (lookup
// finds nothing), no DNS, and sprig's functions that make large output
// from small input (repeat, indent, nindent, replace, the regex replaces,
// the random strings, until, untilStep, seq) replaced by ones that refuse
// to make a string longer than limit bytes (the limit of one rendered
// template) or a list longer than maxTemplateList, before they allocate
// it. Each of them also fails once ctx is done: text/template offers no
// other way to stop a template, so a template that loops without calling
// any of them runs to its end.
func boundedEngine(ctx context.Context, limit int64) engine.Engine {
	f := boundedFuncs{ctx: ctx, limit: limit}
	return engine.Engine{CustomTemplateFuncs: template.FuncMap{
		"repeat":                     f.repeat,
		"indent":                     f.indent,
		"nindent":                    f.nindent,
		"replace":                    f.replace,
		"regexReplaceAll":            f.regexReplaceAll,
		"mustRegexReplaceAll":        f.regexReplaceAll,
		"regexReplaceAllLiteral":     f.regexReplaceAllLiteral,
		"mustRegexReplaceAllLiteral": f.regexReplaceAllLiteral,
		"randAlphaNum":               f.random("randAlphaNum"),
		"randAlpha":                  f.random("randAlpha"),
		"randAscii":                  f.random("randAscii"),
		"randNumeric":                f.random("randNumeric"),
		"randBytes":                  f.random("randBytes"),
		"until":                      f.until,
		"untilStep":                  f.untilStep,
		"seq":                        f.seq,
	}}
}

// boundedFuncs are the template functions of boundedEngine.
type boundedFuncs struct {
	ctx   context.Context
	limit int64
}

// check fails when the context is done or a function named name would
// make n bytes, more than the limit.
func (f boundedFuncs) check(name string, n int64) error {
	if err := f.ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if n > f.limit || n < 0 {
		return fmt.Errorf("%s would make more than %d bytes, the limit of one rendered template", name, f.limit)
	}
	return nil
}

func (f boundedFuncs) repeat(count int, s string) (string, error) {
	if count > 0 && int64(len(s)) > f.limit/int64(count) {
		return "", f.check("repeat", -1)
	}
	if err := f.check("repeat", int64(max(count, 0))*int64(len(s))); err != nil {
		return "", err
	}
	return strings.Repeat(s, max(count, 0)), nil
}

func (f boundedFuncs) indent(spaces int, s string) (string, error) {
	lines := int64(strings.Count(s, "\n")) + 1
	if spaces > 0 && lines > f.limit/int64(spaces) {
		return "", f.check("indent", -1)
	}
	if err := f.check("indent", int64(len(s))+lines*int64(max(spaces, 0))); err != nil {
		return "", err
	}
	pad := strings.Repeat(" ", max(spaces, 0))
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad), nil
}

func (f boundedFuncs) nindent(spaces int, s string) (string, error) {
	s, err := f.indent(spaces, s)
	return "\n" + s, err
}

func (f boundedFuncs) replace(old, repl, src string) (string, error) {
	n := int64(strings.Count(src, old))
	if d := int64(len(repl)) - int64(len(old)); d > 0 && n > 0 && n > (f.limit-int64(len(src)))/d {
		return "", f.check("replace", -1)
	}
	if err := f.check("replace", int64(len(src))); err != nil {
		return "", err
	}
	return strings.ReplaceAll(src, old, repl), nil
}

// regexReplaceAll is mustRegexReplaceAll (sprig's regexReplaceAll panics
// on a bad expression; the engine makes that an error too): each match is
// expanded in turn, and the result is refused once it passes the limit.
func (f boundedFuncs) regexReplaceAll(expr, s, repl string) (string, error) {
	return f.regexReplace("regexReplaceAll", expr, s, repl, false)
}

func (f boundedFuncs) regexReplaceAllLiteral(expr, s, repl string) (string, error) {
	return f.regexReplace("regexReplaceAllLiteral", expr, s, repl, true)
}

func (f boundedFuncs) regexReplace(name, expr, s, repl string, literal bool) (string, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if err := f.check(name, int64(len(s))); err != nil {
		return "", err
	}
	refs := int64(strings.Count(repl, "$"))
	var out []byte
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
		// At most the replacement with each $ reference the whole match.
		most := int64(len(out)) + int64(m[0]-last) + int64(len(repl)) + refs*int64(m[1]-m[0])
		if err := f.check(name, most); err != nil {
			return "", err
		}
		out = append(out, s[last:m[0]]...)
		if literal {
			out = append(out, repl...)
		} else {
			out = re.ExpandString(out, repl, s, m)
		}
		last = m[1]
	}
	out = append(out, s[last:]...)
	if err := f.check(name, int64(len(out))); err != nil {
		return "", err
	}
	return string(out), nil
}

// random returns sprig's function name, called only for a count within
// the limit.
func (f boundedFuncs) random(name string) func(int) (string, error) {
	var fn func(int) (string, error)
	switch g := sprig.TxtFuncMap()[name].(type) {
	case func(int) string:
		fn = func(n int) (string, error) { return g(n), nil }
	case func(int) (string, error):
		fn = g
	default:
		fn = func(int) (string, error) { return "", fmt.Errorf("%s: not available", name) }
	}
	return func(count int) (string, error) {
		if err := f.check(name, int64(count)); err != nil {
			return "", err
		}
		return fn(count)
	}
}

func (f boundedFuncs) until(count int) ([]int, error) {
	step := 1
	if count < 0 {
		step = -1
	}
	return f.untilStep(0, count, step)
}

// untilStep is sprig's untilStep: start, start+step... up to stop
// (excluded), or nothing when step leads away from it.
func (f boundedFuncs) untilStep(start, stop, step int) ([]int, error) {
	if err := f.ctx.Err(); err != nil {
		return nil, fmt.Errorf("untilStep: %w", err)
	}
	var n uint64
	switch {
	case stop < start && step < 0:
		d := uint64(start) - uint64(stop)
		s := uint64(-(step + 1)) + 1 // -step without overflow
		n = d / s
		if d%s != 0 {
			n++
		}
	case stop > start && step > 0:
		d := uint64(stop) - uint64(start)
		n = d / uint64(step)
		if d%uint64(step) != 0 {
			n++
		}
	}
	if n > maxTemplateList {
		return nil, fmt.Errorf("a list from %d to %d by %d would have more than %d items, the limit in a template", start, stop, step, maxTemplateList)
	}
	v := make([]int, n)
	for i := range v {
		v[i] = start + i*step
	}
	return v, nil
}

// seq is sprig's seq: seq END, seq START END, seq START STEP END, the
// numbers separated by spaces.
func (f boundedFuncs) seq(params ...int) (string, error) {
	var start, end, step int
	switch len(params) {
	case 1:
		start, end, step = 1, params[0], 1
		if end < start {
			step = -1
		}
	case 2:
		start, end, step = params[0], params[1], 1
		if end < start {
			step = -1
		}
	case 3:
		start, step, end = params[0], params[1], params[2]
		if end < start && step > 0 {
			return "", nil
		}
	default:
		return "", nil
	}
	inc := 1
	if end < start {
		inc = -1
	}
	v, err := f.untilStep(start, end+inc, step)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for i, x := range v {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(x))
	}
	return b.String(), nil
}

package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem found in a config file, with the position of the YAML
// node it is about.
type Error struct {
	// File is the config file's path as given to Load or Parse.
	File string
	// Line and Column are 1-based; zero when the position is unknown.
	Line, Column int
	// Field is the path of the field, e.g. "applications[2].service.port" or
	// "clusters[0].labels[env]"; empty for problems with the whole file.
	Field string
	// Msg says what is wrong, lowercase, without the position.
	Msg string
}

// Error formats e as "file:line:column: field.path: message", leaving out
// the parts that are empty.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:%d:", e.Line, e.Column)
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is every problem found in a config file, in file order. Load and
// Parse return it as their error; use errors.As to get at the entries.
type ErrorList []*Error

// Error returns one error per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// sortErrors orders l by position; errors at the same position keep the
// order in which they were found.
func sortErrors(l ErrorList) {
	slices.SortStableFunc(l, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
}

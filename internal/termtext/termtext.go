// Package termtext makes text from clusters and hubs safe to show on a
// terminal: the terminal UI, the text report of driftwatch diff and the
// demo's headless lines put every such string through Clean.
package termtext

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clean returns s fit for one line of a terminal: what someone wrote into
// a managed object (a value, a field manager's name, an error a cluster
// returned) can then neither drive the terminal (retitle, clear or
// recolour it, move the cursor) nor break a layout. Line breaks and tabs
// become spaces; the other C0 controls, ESC, DEL, the C1 controls
// (U+0080-U+009F), bytes that are not UTF-8, the bidirectional controls
// (which reorder what is read) and the line and paragraph separators are
// shown as Go escapes: "\x1b", "\x9b", "\u009b", "\u202e". An escape
// says which control the text holds, as strconv.Quote writes it (U+FFFD
// would hide it, and could not be told from a bad encoding), and it is
// plain ASCII, one cell a character. Text that needs none of this is
// returned as is, without allocating.
func Clean(s string) string {
	i := 0
	for i < len(s) {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			i++
			continue
		} else if c < 0x80 {
			break
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	const hex = "0123456789abcdef"
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\r' && i+1 < len(s) && s[i+1] == '\n':
			b.WriteByte(' ')
			i += 2
			continue
		case c == '\r' || c == '\n' || c == '\t':
			b.WriteByte(' ')
		case c < 0x20 || c == 0x7f:
			b.WriteString(`\x`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		case c >= 0x80:
			r, n := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && n == 1:
				b.WriteString(`\x`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xf])
			case unsafeRune(r, n):
				b.WriteString(`\u`)
				for shift := 12; shift >= 0; shift -= 4 {
					b.WriteByte(hex[(r>>shift)&0xf])
				}
			default:
				b.WriteString(s[i : i+n])
			}
			i += n
			continue
		default:
			b.WriteByte(c)
		}
		i++
	}
	return b.String()
}

// unsafeRune reports whether Clean escapes a decoded non-ASCII rune of n
// bytes: a byte that is not UTF-8, a C1 control, a bidirectional control,
// a line or paragraph separator.
func unsafeRune(r rune, n int) bool {
	switch {
	case r == utf8.RuneError:
		return n == 1
	case r <= 0x9f:
		return true
	case r < 0x61c:
		return false
	}
	return unicode.In(r, unicode.Bidi_Control, unicode.Zl, unicode.Zp)
}

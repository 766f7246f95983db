package termtext

import (
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestCleanEscapesControlCharacters: line breaks and tabs become spaces;
// C0 controls, ESC, DEL, C1 controls, bytes that are not UTF-8,
// bidirectional controls and line separators become Go escapes, plain
// ASCII one cell a character; other text is kept, without allocating.
func TestCleanEscapesControlCharacters(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain text", "plain text"},
		{"ünïcode ✓ 中文", "ünïcode ✓ 中文"},
		{"a\r\nb\nc\rd\te", "a b c d e"},
		{"true\x1b]0;pwned\x07\x1b[2J", `true\x1b]0;pwned\x07\x1b[2J`},
		{"nul\x00 del\x7f", `nul\x00 del\x7f`},
		{"c1 \u009b31m \u0085", `c1 \u009b31m \u0085`},
		{"lone \x9b byte \xff", `lone \x9b byte \xff`},
		{"bidi \u202eevil\u202c \u2066x\u2069", `bidi \u202eevil\u202c \u2066x\u2069`},
		{"lines \u2028 \u2029", `lines \u2028 \u2029`},
	}
	for _, tt := range tests {
		got := Clean(tt.in)
		if got != tt.want {
			t.Errorf("Clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if again := Clean(got); again != got {
			t.Errorf("Clean is not idempotent on %q: %q", got, again)
		}
		if tt.in != "ünïcode ✓ 中文" && ansi.StringWidth(got) != len(got) {
			t.Errorf("ansi.StringWidth(Clean(%q)) = %d, want one cell a character", tt.in, ansi.StringWidth(got))
		}
	}
	if s := "no change"; testing.AllocsPerRun(100, func() { Clean(s) }) != 0 {
		t.Error("Clean allocates for text that needs no change")
	}
}

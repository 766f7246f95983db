package hub

import "testing"

// TestShortCommit: the first 7 characters of a SHA, a shorter one as it is.
func TestShortCommit(t *testing.T) {
	for in, want := range map[string]string{"": "", "abc": "abc", "0123456789abcdef": "0123456"} {
		if got := ShortCommit(in); got != want {
			t.Errorf("ShortCommit(%q) = %q, want %q", in, got, want)
		}
	}
}

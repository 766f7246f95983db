package app

import (
	"os"
	"testing"

	"github.com/creack/pty"
)

// TestTerminals: the UI's terminal check wants standard input and output
// both terminals: a pseudo-terminal passes, a pipe on either side does
// not.
func TestTerminals(t *testing.T) {
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptm.Close()
	defer tty.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	tests := []struct {
		name    string
		in, out *os.File
		want    bool
	}{
		{"a terminal", tty, tty, true},
		{"input from a pipe", r, tty, false},
		{"output to a pipe", tty, w, false},
		{"pipes", r, w, false},
	}
	for _, tt := range tests {
		if got := terminals(tt.in, tt.out); got != tt.want {
			t.Errorf("%s: terminals = %v, want %v", tt.name, got, tt.want)
		}
	}
}

package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// TestStatmParts reads the anonymous and the file-backed parts of a
// resident set from /proc/PID/statm's text in bytes, and refuses text that
// is not statm's.
func TestStatmParts(t *testing.T) {
	anon, file, err := statmParts([]byte("315387 3104 721 320 0 20549 0\n"), 4096)
	if err != nil || anon != (3104-721)*4096 || file != 721*4096 {
		t.Errorf("statmParts = %d, %d, %v; want %d, %d", anon, file, err, (3104-721)*4096, 721*4096)
	}
	for _, bad := range []string{"", "315387 3104\n", "315387 many 721 320 0 20549 0\n", "315387 3104 -1 320 0 20549 0\n", "315387 700 721 320 0 20549 0\n"} {
		if _, _, err := statmParts([]byte(bad), 4096); err == nil || !strings.Contains(err.Error(), "statm") {
			t.Errorf("statmParts(%q): err = %v, want one naming statm", bad, err)
		}
	}
}

// TestWaitHeapReturned: a hub that has not returned its first sync's heap
// is waited for until the limit, and the wait says so; a cancelled wait
// says it stopped.
func TestWaitHeapReturned(t *testing.T) {
	h := hub.New(hub.Options{})
	if got := waitHeapReturned(t.Context(), h, 20*time.Millisecond); !strings.Contains(got, "not returned after 20ms") {
		t.Errorf("a hub that returned nothing: %q, want it to say so", got)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if got := waitHeapReturned(ctx, h, time.Minute); got != "stopped" {
		t.Errorf("a cancelled wait: %q, want stopped", got)
	}
}

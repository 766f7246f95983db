package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// TestStatusField reads kB fields of /proc/self/status's text in bytes and
// names a field it lacks.
func TestStatusField(t *testing.T) {
	text := []byte("Name:\tdriftwatch\nVmHWM:\t  120000 kB\nRssAnon:\t   35840 kB\nRssFile:\t   61440 kB\nRssShmem:\t       0 kB\n")
	for field, want := range map[string]uint64{"VmHWM": 120000 << 10, "RssAnon": 35 << 20, "RssFile": 60 << 20, "RssShmem": 0} {
		if got, err := statusField(text, field); err != nil || got != want {
			t.Errorf("%s = %d, %v; want %d", field, got, err, want)
		}
	}
	if _, err := statusField(text, "VmRSS"); err == nil || !strings.Contains(err.Error(), "VmRSS") {
		t.Errorf("a missing field: err = %v, want one naming it", err)
	}
	if _, err := statusField([]byte("RssAnon:\tmany kB\n"), "RssAnon"); err == nil {
		t.Error("a field that is not a number: no error")
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

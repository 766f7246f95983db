package procstatus

import (
	"strings"
	"testing"
)

// TestParse reads kB fields of /proc/self/status's text in bytes and
// names a field it lacks.
func TestParse(t *testing.T) {
	text := []byte("Name:\tdriftwatch\nVmHWM:\t  120000 kB\nRssAnon:\t   35840 kB\nRssFile:\t   61440 kB\nRssShmem:\t       0 kB\n")
	for field, want := range map[string]uint64{"VmHWM": 120000 << 10, "RssAnon": 35 << 20, "RssFile": 60 << 20, "RssShmem": 0} {
		if got, err := Parse(text, field); err != nil || got != want {
			t.Errorf("%s = %d, %v; want %d", field, got, err, want)
		}
	}
	if _, err := Parse(text, "VmRSS"); err == nil || !strings.Contains(err.Error(), "VmRSS") {
		t.Errorf("a missing field: err = %v, want one naming it", err)
	}
	if _, err := Parse([]byte("RssAnon:\tmany kB\n"), "RssAnon"); err == nil {
		t.Error("a field that is not a number: no error")
	}
}

//go:build linux

package startheap

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestAdvise asks this machine's kernel for huge pages as driftwatch -f
// does. Where the kernel's settings allow it, the range is advised (the
// "hg" flag on its mappings), the heap's next allocations take huge pages
// in it, and End withdraws the request ("nh"); elsewhere Advise asks for
// nothing and says why, as plan does from the same files.
func TestAdvise(t *testing.T) {
	a, why := Advise()
	if a == nil {
		if huge, availWhy := Available(); availWhy == "" || why == "" {
			t.Fatalf("Advise asked for nothing (%q) where the kernel's settings allow it (huge page size %d, %q)", why, huge, availWhy)
		}
		t.Logf("no huge pages on this machine: %s", why)
		return
	}
	lo, hi := a.Range()
	if hi <= lo || hi-lo < Size/2 {
		t.Fatalf("advised range %#x-%#x is smaller than half of %d bytes", lo, hi, Size)
	}
	if m := mappings(t, lo, hi); !m.allFlag("hg") {
		t.Fatalf("the range %#x-%#x is not advised for huge pages: %v", lo, hi, m)
	}
	// The heap's next allocations: 24 MiB in 256 KiB objects, written.
	keep := make([][]byte, 0, 96)
	for range 96 {
		b := make([]byte, 256<<10)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
	}
	if m := mappings(t, lo, hi); m.hugeKiB == 0 {
		t.Errorf("no huge page backs the advised range after 24 MiB of allocations: %v", m)
	} else {
		t.Logf("%d KiB of the range in huge pages", m.hugeKiB)
	}
	if err := a.End(); err != nil {
		t.Fatal(err)
	}
	if err := a.End(); err != nil { // again: nothing more
		t.Fatal(err)
	}
	if m := mappings(t, lo, hi); m.anyFlag("hg") || !m.allFlag("nh") {
		t.Errorf("End left the range advised: %v", m)
	}
	_ = keep[len(keep)-1]
}

// ranged is what /proc/self/smaps says of the mappings that overlap a
// range: each one's flags, and the huge pages of those inside it.
type ranged struct {
	flags   [][]string
	hugeKiB int
}

func (r ranged) allFlag(f string) bool {
	for _, fl := range r.flags {
		if !contains(fl, f) {
			return false
		}
	}
	return len(r.flags) > 0
}

func (r ranged) anyFlag(f string) bool {
	for _, fl := range r.flags {
		if contains(fl, f) {
			return true
		}
	}
	return false
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// mappings reads /proc/self/smaps for the mappings that overlap [lo, hi).
func mappings(t *testing.T, lo, hi uintptr) ranged {
	t.Helper()
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	var r ranged
	in := false
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if from, to, ok := strings.Cut(f[0], "-"); ok && !strings.HasSuffix(f[0], ":") {
			a, err1 := strconv.ParseUint(from, 16, 64)
			b, err2 := strconv.ParseUint(to, 16, 64)
			if err1 == nil && err2 == nil {
				in = uintptr(a) < hi && uintptr(b) > lo
				continue
			}
		}
		if !in {
			continue
		}
		switch f[0] {
		case "VmFlags:":
			r.flags = append(r.flags, f[1:])
		case "AnonHugePages:":
			n, _ := strconv.Atoi(f[1])
			r.hugeKiB += n
		}
	}
	if len(r.flags) == 0 {
		t.Fatalf("no mapping overlaps %#x-%#x", lo, hi)
	}
	return r
}

package startheap

import (
	"strings"
	"testing"
)

// buddyinfo is /proc/buddyinfo of a 2-core virtual machine with 4 KiB
// pages: 426 free blocks of order 9 (2 MiB) and 736+753+3 of order 10 in
// its zones, 3,412 free huge pages in all.
const buddyinfo = `Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 
Node 0, zone    DMA32      0      4      2      2      1      2      0      3      3      1    753 
Node 0, zone   Normal   9639   9392   4467   3448   1933    408    698   1137    804    426    736 
`

func TestPlan(t *testing.T) {
	const mib = 1 << 20
	fragmented := "Node 0, zone   Normal   9639   9392   4467   3448   1933    408    698   1137    804    10    5\n"
	for _, c := range []struct {
		name, enabled, buddy string
		hugePage, page, size int
		ok                   bool
		why                  string
	}{
		{"on request, free huge pages", "always [madvise] never\n", buddyinfo, 2 * mib, 4096, Size, true, ""},
		{"just enough", "always [madvise] never", "Node 0, zone Normal 0 0 0 0 0 0 0 0 0 62 1\n", 2 * mib, 4096, Size, true, ""},
		{"one short", "always [madvise] never", "Node 0, zone Normal 0 0 0 0 0 0 0 0 0 61 1\n", 2 * mib, 4096, Size, false, "has 63 free huge pages, fewer than 64"},
		{"fragmented", "always [madvise] never", fragmented, 2 * mib, 4096, Size, false, "has 20 free huge pages, fewer than 64: a fault would have it compact memory"},
		{"always", "[always] madvise never", buddyinfo, 2 * mib, 4096, Size, false, "already (transparent huge pages: always)"},
		{"never", "always madvise [never]", buddyinfo, 2 * mib, 4096, Size, false, "transparent huge pages are never"},
		{"no mode", "always madvise never", buddyinfo, 2 * mib, 4096, Size, false, "no transparent huge page mode"},
		{"empty mode", "[]", buddyinfo, 2 * mib, 4096, Size, false, "no transparent huge page mode"},
		{"no buddyinfo", "[madvise]", "", 2 * mib, 4096, Size, false, "no zones"},
		{"bad count", "[madvise]", "Node 0, zone Normal 1 2 x\n", 2 * mib, 4096, Size, false, `count "x"`},
		{"negative count", "[madvise]", "Node 0, zone Normal 1 2 -3\n", 2 * mib, 4096, Size, false, `count "-3"`},
		{"no counts", "[madvise]", "Node 0, zone\n", 2 * mib, 4096, Size, false, "no counts"},
		{"huge page not larger", "[madvise]", buddyinfo, 4096, 4096, Size, false, "huge page size 4096, page size 4096"},
		{"huge page not a multiple", "[madvise]", buddyinfo, 2*mib + 4096/2, 4096, Size, false, "huge page size"},
		// 64 KiB pages and 512 MiB huge pages (arm64): order 13.
		{"arm64 64k", "[madvise]", "Node 0, zone Normal 0 0 0 0 0 0 0 0 0 0 0 0 0 3\n", 512 * mib, 64 << 10, 1024 * mib, false, "has 3 free huge pages, fewer than 4"},
		{"arm64 64k enough", "[madvise]", "Node 0, zone Normal 0 0 0 0 0 0 0 0 0 0 0 0 0 4\n", 512 * mib, 64 << 10, 1024 * mib, true, ""},
		{"huge pages too large for Size", "[madvise]", "Node 0, zone Normal 0 0 0 0 0 0 0 0 0 0 0 0 0 4\n", 512 * mib, 64 << 10, Size, false, "huge pages of 512 MiB are too large for a range of 64 MiB"},
		{"one huge page too few", "[madvise]", buddyinfo, 2 * mib, 4096, 2*mib + 4096, false, "too large"},
		{"huge counts saturate", "[madvise]", "Node 0, zone Normal 0 0 0 0 0 0 0 0 0 9223372036854775807 9223372036854775807\n", 2 * mib, 4096, Size, true, ""},
	} {
		ok, why := plan(c.enabled, c.buddy, c.hugePage, c.page, c.size)
		if ok != c.ok || (c.why == "") != (why == "") || !strings.Contains(why, c.why) {
			t.Errorf("%s: plan = %v, %q; want %v, %q", c.name, ok, why, c.ok, c.why)
		}
	}
}

func TestFreeBlocks(t *testing.T) {
	n, err := freeBlocks(buddyinfo, 9)
	if want := 1 + 2*3 + 1 + 2*753 + 426 + 2*736; err != nil || n != want {
		t.Errorf("order 9: %d, %v; want %d", n, err, want)
	}
	n, err = freeBlocks(buddyinfo, 10)
	if want := 3 + 753 + 736; err != nil || n != want {
		t.Errorf("order 10: %d, %v; want %d", n, err, want)
	}
}

func TestOff(t *testing.T) {
	for _, c := range []struct {
		env map[string]string
		why string
	}{
		{nil, ""},
		{map[string]string{"DRIFTWATCH_HUGEPAGES": "on"}, ""},
		{map[string]string{"DRIFTWATCH_HUGEPAGES": "1"}, ""},
		{map[string]string{"DRIFTWATCH_HUGEPAGES": "OFF"}, "DRIFTWATCH_HUGEPAGES=OFF"},
		{map[string]string{"DRIFTWATCH_HUGEPAGES": "false"}, "DRIFTWATCH_HUGEPAGES=false"},
		{map[string]string{"GODEBUG": "disablethp=0"}, ""},
		{map[string]string{"GODEBUG": "madvdontneed=1, disablethp=1"}, "GODEBUG=disablethp=1"},
	} {
		if why := Off(func(k string) string { return c.env[k] }); why != c.why {
			t.Errorf("Off(%v) = %q, want %q", c.env, why, c.why)
		}
	}
}

package startheap

import (
	"fmt"
	"strconv"
	"strings"
)

// Size is the part of the address space Advise asks huge pages for: the
// heap's growth over the start of driftwatch -f over 5,000 objects, with
// room (37 MiB mapped at its first frame).
const Size = 64 << 20

// Off returns why the environment turns the start-up heap's huge pages
// off, or "": DRIFTWATCH_HUGEPAGES set to "off", "0", "false" or "no"
// (any case), or GODEBUG asking the runtime for no huge pages
// (disablethp=1).
func Off(getenv func(string) string) string {
	switch v := getenv("DRIFTWATCH_HUGEPAGES"); strings.ToLower(v) {
	case "off", "0", "false", "no":
		return "DRIFTWATCH_HUGEPAGES=" + v
	}
	for _, kv := range strings.Split(getenv("GODEBUG"), ",") {
		if strings.TrimSpace(kv) == "disablethp=1" {
			return "GODEBUG=disablethp=1"
		}
	}
	return ""
}

// plan decides whether to ask for huge pages on size bytes, from the
// kernel's transparent huge page mode (the text of
// /sys/kernel/mm/transparent_hugepage/enabled), its free memory blocks (the
// text of /proc/buddyinfo) and its huge and base page sizes: the request
// is made only where huge pages are handed out on request and the kernel
// has twice the free huge pages it could take. It returns why not
// otherwise.
func plan(enabled, buddyinfo string, hugePage, page, size int) (bool, string) {
	mode, ok := selected(enabled)
	switch {
	case !ok:
		return false, fmt.Sprintf("no transparent huge page mode in %q", strings.TrimSpace(enabled))
	case mode == "always":
		return false, "the kernel backs the heap with huge pages already (transparent huge pages: always)"
	case mode != "madvise":
		return false, "transparent huge pages are " + mode
	}
	if hugePage <= page || page <= 0 || hugePage%page != 0 {
		return false, fmt.Sprintf("huge page size %d, page size %d", hugePage, page)
	}
	if size < 2*hugePage { // an unaligned range of size bytes may hold no whole huge page
		return false, fmt.Sprintf("huge pages of %d MiB are too large for a range of %d MiB", hugePage>>20, size>>20)
	}
	order := 0
	for p := hugePage / page; p > 1; p /= 2 {
		order++
	}
	free, err := freeBlocks(buddyinfo, order)
	if err != nil {
		return false, err.Error()
	}
	if want := 2 * size / hugePage; free < want {
		return false, fmt.Sprintf("the kernel has %d free huge pages, fewer than %d: a fault would have it compact memory", free, want)
	}
	return true, ""
}

// selected returns the bracketed word of a sysfs choice ("always
// [madvise] never").
func selected(s string) (string, bool) {
	_, rest, ok := strings.Cut(s, "[")
	if !ok {
		return "", false
	}
	word, _, ok := strings.Cut(rest, "]")
	return word, ok && word != ""
}

// freeBlocks counts the free blocks of 2^order base pages in /proc/buddyinfo
// (a line per zone: "Node 0, zone Normal" then the free blocks of each
// order from 0), a larger free block counting as the blocks it holds.
func freeBlocks(buddyinfo string, order int) (int, error) {
	total, zones := 0, 0
	for line := range strings.Lines(buddyinfo) {
		_, counts, ok := strings.Cut(line, "zone")
		if !ok {
			continue
		}
		f := strings.Fields(counts)
		if len(f) < 2 {
			return 0, fmt.Errorf("/proc/buddyinfo: no counts in %q", strings.TrimSpace(line))
		}
		zones++
		for o, c := range f[1:] {
			n, err := strconv.Atoi(c)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("/proc/buddyinfo: count %q in %q", c, strings.TrimSpace(line))
			}
			if o >= order && o-order < 20 {
				total = min(total+n<<(o-order), 1<<40) // no overflow
			}
		}
	}
	if zones == 0 {
		return 0, fmt.Errorf("/proc/buddyinfo: no zones")
	}
	return total, nil
}

//go:build linux

package startheap

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Advice is a request for huge pages on a range of the heap's address
// space, from Advise until End.
type Advice struct {
	lo, hi uintptr
	once   sync.Once
	err    error
}

// Advise asks the kernel to back the next Size bytes the Go heap grows
// into with transparent huge pages, where that cannot stall a fault (see
// the package comment). It returns nil and why not otherwise. It makes
// the runtime map the range (an allocation of Size bytes it never
// touches) and then runs a garbage collection, which frees that
// allocation: the heap's next allocations take the range. Call it early,
// once.
func Advise() (*Advice, string) {
	hugePage, why := Available()
	if why != "" {
		return nil, why
	}
	// A fresh allocation of this size is a span of its own, mapped from
	// memory the heap never used, which the runtime does not clear: no
	// page of it is touched here.
	b := make([]byte, Size)
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	h := uintptr(hugePage)
	a := &Advice{lo: (start + h - 1) &^ (h - 1), hi: (start + Size) &^ (h - 1)}
	if a.lo >= a.hi { // plan makes Size at least two huge pages
		return nil, "no whole huge page in the range"
	}
	err := madvise(a.lo, a.hi, unix.MADV_HUGEPAGE)
	runtime.KeepAlive(b)
	if err != nil {
		return nil, "madvise: " + err.Error()
	}
	runtime.GC() // frees b: the heap grows into the range from now on
	return a, ""
}

// Available reads the kernel's settings and returns its huge page size
// where Advise would ask for huge pages now, or why it would not.
func Available() (hugePage int, why string) {
	enabled, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return 0, "no transparent huge pages: " + err.Error()
	}
	hpage, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")
	if err != nil {
		return 0, "no transparent huge pages: " + err.Error()
	}
	hugePage, err = strconv.Atoi(strings.TrimSpace(string(hpage)))
	if err != nil {
		return 0, fmt.Sprintf("huge page size %q", strings.TrimSpace(string(hpage)))
	}
	buddy, err := os.ReadFile("/proc/buddyinfo")
	if err != nil {
		return 0, "free memory blocks unknown: " + err.Error()
	}
	if ok, why := plan(string(enabled), string(buddy), hugePage, os.Getpagesize(), Size); !ok {
		return 0, why
	}
	return hugePage, ""
}

// Range returns the advised range of addresses, [lo, hi).
func (a *Advice) Range() (lo, hi uintptr) { return a.lo, a.hi }

// End withdraws the request (MADV_NOHUGEPAGE): pages faulted from now on
// are base pages, and the kernel no longer collapses the range's pages
// into huge ones; those it has stay. It is safe to call more than once
// and on a nil Advice.
func (a *Advice) End() error {
	if a == nil {
		return nil
	}
	a.once.Do(func() { a.err = madvise(a.lo, a.hi, unix.MADV_NOHUGEPAGE) })
	return a.err
}

// madvise gives advice on [lo, hi).
func madvise(lo, hi uintptr, advice int) error {
	if _, _, e := unix.Syscall(unix.SYS_MADVISE, lo, hi-lo, uintptr(advice)); e != 0 {
		return e
	}
	return nil
}

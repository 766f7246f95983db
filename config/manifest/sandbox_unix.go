//go:build unix

package manifest

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// limitSelf bounds this process's data segment to mem bytes more than it
// has mapped now (the runtime's own, and the race detector's shadow
// memory in a test binary built with -race): the kernel then refuses the
// runtime more memory, and it dies with "out of memory".
func limitSelf(mem uint64) error {
	limit := dataNow() + mem
	return syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: limit, Max: limit})
}

// dataNow returns the process's data segment (VmData in
// /proc/self/status) in bytes, or 0 where there is no such file.
func dataNow() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmData:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

//go:build unix

package bench

import (
	"syscall"
	"time"
)

// CPUTime returns the CPU time (user plus system) this process has used.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// MinorFaults returns the minor page faults this process has taken: pages
// it touched that the kernel had to map (and zero, for fresh anonymous
// memory) without reading a disk.
func MinorFaults() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Minflt
}

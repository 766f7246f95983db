//go:build unix

package manifest

import (
	"syscall"

	"github.com/driftwatch/driftwatch/internal/procstatus"
)

// limitSelf bounds this process's data segment to mem bytes more than it
// has mapped now (the runtime's own, and the race detector's shadow
// memory in a test binary built with -race; nothing where
// /proc/self/status is missing): the kernel then refuses the runtime
// more memory, and it dies with "out of memory".
func limitSelf(mem uint64) error {
	now, _ := procstatus.Field("VmData")
	limit := now + mem
	return syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: limit, Max: limit})
}

package localcluster

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// pinTasks sets the CPU affinity of every thread of process pid (0: this
// process) to cpus. Threads a pinned thread creates later inherit it; a
// thread that ended meanwhile is skipped.
func pinTasks(pid int, cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	dir := "/proc/self/task"
	if pid != 0 {
		dir = "/proc/" + strconv.Itoa(pid) + "/task"
	}
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("cpu affinity: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("cpu affinity of thread %d: %w", tid, err)
		}
	}
	return nil
}

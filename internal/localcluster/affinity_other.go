//go:build !linux

package localcluster

import "errors"

// pinTasks is Linux only (sched_setaffinity).
func pinTasks(int, []int) error {
	return errors.New("cpu affinity: supported on Linux only")
}

//go:build !unix

package bench

import "time"

// CPUTime returns the CPU time this process has used; zero where it is not
// measured.
func CPUTime() time.Duration { return 0 }

//go:build !unix

package bench

import "time"

// CPUTime returns the CPU time this process has used; zero where it is not
// measured.
func CPUTime() time.Duration { return 0 }

// MinorFaults returns the minor page faults this process has taken; zero
// where they are not counted.
func MinorFaults() int64 { return 0 }

//go:build !unix

package tui

import (
	"testing"
	"time"
)

// processCPU is not measured on this platform.
func processCPU(testing.TB) time.Duration { return 0 }

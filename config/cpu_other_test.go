//go:build !unix

package config

import (
	"testing"
	"time"
)

// processCPU is not measured on this platform.
func processCPU(testing.TB) time.Duration { return 0 }

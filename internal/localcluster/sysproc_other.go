//go:build !unix

package localcluster

import (
	"os"
	"syscall"
)

// sysProcAttr returns no special attributes: process groups are a Unix
// feature.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup kills p (there is no graceful signal to send here).
func signalGroup(p *os.Process, _ bool) { _ = p.Kill() }

// processAlive cannot tell here, so it says yes: nothing is removed.
func processAlive(int) bool { return true }

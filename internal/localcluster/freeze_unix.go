//go:build unix

package localcluster

import (
	"errors"
	"fmt"
	"syscall"
)

// FreezeAPIServer stops kube-apiserver with SIGSTOP without ending it: its
// port stays open and accepts connections, and every call hangs, as with a
// cluster behind a network partition. thaw resumes it (SIGCONT); call it
// before Stop, or a frozen apiserver only dies after the stop grace.
func (c *Cluster) FreezeAPIServer() (thaw func(), err error) {
	c.mu.Lock()
	p := c.procs[binAPIServer]
	c.mu.Unlock()
	if p == nil {
		return nil, errors.New("localcluster: kube-apiserver is not running")
	}
	pid := p.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("localcluster: freeze kube-apiserver: %w", err)
	}
	return func() { _ = syscall.Kill(pid, syscall.SIGCONT) }, nil
}

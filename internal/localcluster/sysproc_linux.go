package localcluster

import (
	"errors"
	"os"
	"syscall"
)

// sysProcAttr puts a component in its own process group (so stopping it
// reaches anything it spawns) and has the kernel kill it when the thread
// that started it dies, so a crashed or killed test binary orphans nothing.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends SIGTERM (or SIGKILL with kill) to the process group led
// by p, falling back to p alone.
func signalGroup(p *os.Process, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	if err := syscall.Kill(-p.Pid, sig); err != nil {
		_ = p.Signal(sig)
	}
}

// processAlive reports whether a process with this id exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

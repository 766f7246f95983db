package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// defaultStopGrace is how long a component gets to exit after SIGTERM before its
// process group is killed.
const defaultStopGrace = 5 * time.Second

// process is one running component. Its owner (the Cluster) must call stop,
// which waits for the goroutine that reaps it.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has been reaped
	waitErr error         // valid after done is closed
}

// spawner starts processes from one goroutine locked to its OS thread for
// the life of a Set. The parent-death signal (Pdeathsig) fires when the
// thread that forked the child ends, not the process (go.dev/issue/27505):
// an ordinary goroutine's thread may be ended by the runtime after any
// other goroutine locks it and exits. A thread that only this goroutine
// ever runs on lives until close, when every component is already stopped.
type spawner struct {
	reqs chan spawnRequest
	done chan struct{}
}

type spawnRequest struct {
	cmd  *exec.Cmd
	errc chan<- error
}

// newSpawner starts the spawner goroutine; close ends it.
func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnRequest), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *spawner) run() {
	defer close(s.done)
	runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
	for r := range s.reqs {
		r.errc <- r.cmd.Start()
	}
}

// start starts cmd on the spawner's thread. It must not be called after
// close.
func (s *spawner) start(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	s.reqs <- spawnRequest{cmd: cmd, errc: errc}
	return <-errc
}

// close ends the spawner goroutine and waits for it.
func (s *spawner) close() {
	close(s.reqs)
	<-s.done
}

// startProcess runs bin with args in its own process group, with stdout and
// stderr appended to logPath. On Linux the process is killed when this Go
// process dies.
func startProcess(sp *spawner, name, bin string, args []string, dir, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: open log: %w", name, err)
	}
	defer logFile.Close() // the child holds its own descriptor
	fmt.Fprintf(logFile, "=== %s: %s %s\n", time.Now().Format(time.RFC3339Nano), bin, strings.Join(args, " "))

	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := sp.start(cmd); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &process{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// pid returns the process id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes how the process ended; call only after done.
func (p *process) exitError() error {
	if p.waitErr != nil {
		return fmt.Errorf("%s exited: %w", p.name, p.waitErr)
	}
	return fmt.Errorf("%s exited", p.name)
}

// stop sends SIGTERM to the process group, SIGKILL after grace, and waits
// until the process has been reaped. It is safe to call more than once and
// concurrently.
func (p *process) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	signalGroup(p.cmd.Process, false)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return
	case <-t.C:
	}
	signalGroup(p.cmd.Process, true)
	<-p.done
}

// errPortInUse marks a start that failed because a port picked as free was
// taken in the meantime; the start is retried with new ports.
var errPortInUse = errors.New("port already in use")

// checkPortClash wraps err with errPortInUse when the log of p says a listen
// failed because the address was in use.
func checkPortClash(p *process, err error) error {
	tail := tailFile(p.logPath, 40)
	if strings.Contains(tail, "address already in use") {
		return fmt.Errorf("%w: %w", errPortInUse, err)
	}
	return err
}

// freePorts returns n distinct TCP ports that were free on 127.0.0.1. All
// listeners are held until every port is chosen, so the ports differ.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// tailFile returns the last n lines of the file at path ("" if unreadable).
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const maxRead = 64 << 10
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(st.Size()-maxRead, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if err != nil {
		return ""
	}
	b = bytes.TrimRight(b, "\n")
	lines := bytes.Split(b, []byte("\n"))
	if off > 0 && len(lines) > 1 {
		lines = lines[1:] // first line is probably cut
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

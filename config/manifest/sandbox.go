package manifest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Sandbox limits, when a Sandbox leaves its own at zero.
const (
	// DefaultSandboxTimeout bounds one sandboxed render.
	DefaultSandboxTimeout = 2 * time.Minute
	// DefaultSandboxMemory bounds the worker's data segment (the Go heap
	// and the runtime's own memory): 2 GiB.
	DefaultSandboxMemory = 2 << 30
	// workerIdle is how long a worker waits for its next request before
	// it exits: a load renders its sources one after another, and a
	// worker that stays costs its memory.
	workerIdle = 30 * time.Second
	// workerGrace is how long past its timeout a worker's own watchdog
	// waits before it exits, should the hub have died and nobody kill it.
	workerGrace = 5 * time.Second
)

// workerEnv is the environment variable that makes a driftwatch binary
// (or a test binary whose TestMain calls ServeWorker) a render worker
// instead of what it is; see ServeWorker. Its value is the
// worker's memory limit in bytes, its timeout and how long it waits for
// a request, in milliseconds: "MEMORY,TIMEOUT,IDLE".
const workerEnv = "DRIFTWATCH_RENDER_WORKER"

// workerStderrHead is how much of a worker's standard error is kept:
// the start, where a Go runtime writes why it died.
const workerStderrHead = 2048

// Sandbox runs the stage of a render that a source's author controls in
// a child process, the worker, which is killed when a render takes longer
// than Timeout and dies when it needs more memory than MemoryLimit: the
// template stage of a Helm render (loading the chart and its values and
// executing its templates: the chart's own code) and a kustomize build.
// A chart's templates are a program: text/template cannot be stopped from
// outside, and a loop over a values list writing text grows the heap
// until the process dies. A few kustomizations including one another
// build objects exponential in number. In a worker either costs one
// render an error naming the chart or kustomization, not the hub. The
// worker starts with an empty environment (its limits aside), reads
// requests on its standard input and writes the rendered files (or
// built objects) on its standard output, which the parent reads up to
// the render's size limit; the parent decodes them into objects as an
// in-process render does. One worker serves the Sandbox's renders one at
// a time and exits after 30 s without one (or when the parent's end of
// its input closes), so a load of many sources starts one process, not
// one per source; a killed or dead worker is replaced at the next render.
// A Sandbox is safe for concurrent use; renders through it take turns.
type Sandbox struct {
	// Path is the worker: a driftwatch binary, which serves renders when
	// started with DRIFTWATCH_RENDER_WORKER set (see ServeWorker). Self
	// returns this binary.
	Path string
	// Args are extra arguments given to Path (Self gives a test binary
	// -test.run=^$, so that one whose TestMain does not serve renders
	// runs no tests and answers nothing).
	Args []string
	// Timeout bounds one render; zero means DefaultSandboxTimeout.
	Timeout time.Duration
	// MemoryLimit bounds the worker's data segment (RLIMIT_DATA: the Go
	// heap and the runtime's memory) in bytes; zero means
	// DefaultSandboxMemory. Where the platform has no such limit
	// (Windows), only the timeout holds.
	MemoryLimit int64

	idle time.Duration // workerIdle when zero (tests shorten it)
	mu   sync.Mutex
	w    *worker // the running worker, nil before the first render and after one died
}

// Self returns a Sandbox that runs this very binary as the worker: the
// driftwatch binary, whose main calls ServeWorker first. A test binary
// must call ServeWorker at the start of its TestMain to be one.
func Self() *Sandbox {
	path := "/proc/self/exe" // this binary even if replaced on disk
	if _, err := os.Stat(path); err != nil {
		if exe, xerr := os.Executable(); xerr == nil {
			path = exe
		}
	}
	s := &Sandbox{Path: path}
	if testing.Testing() {
		s.Args = []string{"-test.run=^$"}
	}
	return s
}

func (s *Sandbox) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return DefaultSandboxTimeout
}

func (s *Sandbox) memoryLimit() int64 {
	if s.MemoryLimit > 0 {
		return s.MemoryLimit
	}
	return DefaultSandboxMemory
}

// workerAnswer is what the worker sends back for one request: the
// templated chart or the built kustomization, or the error that stopped
// it.
type workerAnswer struct {
	Templated  *templated   `json:"templated,omitempty"`
	Kustomized *kustomized  `json:"kustomized,omitempty"`
	Error      *workerError `json:"error,omitempty"`
}

// answers reports whether the answer holds exactly one of its parts.
func (a *workerAnswer) answers() bool {
	n := 0
	for _, set := range []bool{a.Templated != nil, a.Kustomized != nil, a.Error != nil} {
		if set {
			n++
		}
	}
	return n == 1
}

// workerError carries an error across the process boundary: an *Error
// keeps its origin.
type workerError struct {
	Msg  string `json:"msg"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

func (e *workerError) err() error {
	if e.File != "" {
		return &Error{Origin: Origin{File: e.File, Line: e.Line}, Msg: e.Msg}
	}
	return errors.New(e.Msg)
}

// worker is a running worker process and the parent's ends of its pipes.
type worker struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *os.File
	dec    *json.Decoder
	budget *budgetReader
	errOut *os.File // the read end of its standard error
	// exited: the worker has been reaped; stderr is what it wrote there.
	exited bool
	stderr string
}

// errWorkerGone is a worker that had exited (idle) before it took a
// request: the render is tried again on a new one.
var errWorkerGone = errors.New("the worker had exited")

// render runs helmTemplates for r in the worker.
func (s *Sandbox) render(ctx context.Context, r Request) (*templated, error) {
	ans, err := s.run(ctx, r, "helm chart "+r.Helm.Chart)
	if err != nil {
		return nil, err
	}
	return ans.Templated, nil
}

// run has the worker render r (helmTemplates or kustomizeBuild) and
// returns its answer; what names the chart or kustomization in errors.
func (s *Sandbox) run(ctx context.Context, r Request, what string) (*workerAnswer, error) {
	r.Sandbox = nil
	req, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for attempt := 1; ; attempt++ {
		if s.w == nil {
			if s.w, err = s.start(); err != nil {
				return nil, fmt.Errorf("%s: renderer %s: %w", what, s.Path, err)
			}
		}
		ans, err := s.exchange(ctx, req, r.maxRendered()+1<<20) // the JSON's own overhead is far less
		if errors.Is(err, errWorkerGone) && attempt == 1 {
			// It was idle and exited as the request came: a new one.
			s.w.out.Close()
			s.w.errOut.Close()
			s.w = nil
			continue
		}
		if err != nil {
			return nil, s.failed(ctx, what, err)
		}
		if ans.Error != nil {
			return nil, ans.Error.err()
		}
		if (r.Helm != nil) != (ans.Templated != nil) {
			return nil, s.failed(ctx, what, errNoAnswer)
		}
		return ans, nil
	}
}

// start starts a worker.
func (s *Sandbox) start() (*worker, error) {
	cmd := exec.Command(s.Path, s.Args...)
	// GOTRACEBACK=none: a worker that dies writes why in a line, not every
	// goroutine's stack into a pipe nobody reads until it is gone.
	idle := s.idle
	if idle <= 0 {
		idle = workerIdle
	}
	cmd.Env = []string{fmt.Sprintf("%s=%d,%d,%d", workerEnv, s.memoryLimit(), s.timeout().Milliseconds(), idle.Milliseconds()), "GOTRACEBACK=none"}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		in.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		in.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW // files: no copying goroutines
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		in.Close()
		outR.Close()
		errR.Close()
		return nil, err
	}
	b := &budgetReader{r: outR}
	return &worker{cmd: cmd, in: in, out: outR, dec: json.NewDecoder(b), budget: b, errOut: errR}, nil
}

// exchange sends one request to the worker and reads its answer, within
// the timeout and max bytes. errWorkerGone: the worker had exited before
// it read the request, without an error.
func (s *Sandbox) exchange(ctx context.Context, req []byte, max int64) (*workerAnswer, error) {
	w := s.w
	deadline := time.Now().Add(s.timeout())
	if err := w.out.SetReadDeadline(deadline); err != nil {
		return nil, err
	}
	// The caller's cancellation ends the wait for the answer too; its
	// function is waited for once started.
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		w.out.SetReadDeadline(time.Now())
	})
	defer func() {
		if !stop() {
			<-fired
		}
	}()
	w.budget.left, w.budget.max = max, max
	if _, err := w.in.Write(append(req, '\n')); err != nil {
		return nil, s.gone(err)
	}
	var ans workerAnswer
	if err := w.dec.Decode(&ans); err != nil {
		if w.budget.left < 0 {
			return nil, errOverBudget
		}
		return nil, s.gone(err)
	}
	if !ans.answers() {
		return nil, errNoAnswer
	}
	return &ans, nil
}

var (
	errOverBudget = errors.New("answer over its limit")
	errNoAnswer   = errors.New("answered no render (is it a driftwatch binary?)")
)

// gone looks at a failed write or read: a worker whose pipes ended has
// exited (or is exiting) and is reaped; one that exited cleanly without
// a word before it answered was idle (errWorkerGone).
func (s *Sandbox) gone(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.EPIPE) {
		return fmt.Errorf("%w (%v)", errNoAnswer, err)
	}
	w := s.w
	w.in.Close()
	werr := w.cmd.Wait()
	w.exited, w.stderr = true, readHead(w.errOut)
	switch {
	case werr != nil:
		return werr // an *exec.ExitError
	case w.stderr != "":
		return fmt.Errorf("%w: %s", errNoAnswer, firstLine(w.stderr))
	}
	return errWorkerGone
}

// failed kills and reaps the worker after a failed exchange and returns
// the render's error; what names the chart or kustomization.
func (s *Sandbox) failed(ctx context.Context, what string, err error) error {
	w := s.w
	s.w = nil
	if !w.exited {
		w.cmd.Process.Kill()
		w.in.Close()
		w.cmd.Wait()
		w.stderr = readHead(w.errOut)
	}
	w.out.Close()
	w.errOut.Close()
	stderr := w.stderr
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%s: rendering took longer than %s: stopped", what, s.timeout())
	case errors.Is(err, errOverBudget):
		return fmt.Errorf("%s: the renderer wrote more than %d bytes: stopped", what, w.budget.max)
	case strings.Contains(stderr, "out of memory") || strings.Contains(stderr, "cannot allocate memory") ||
		strings.Contains(stderr, "failed to allocate"): // the race detector's allocator
		return fmt.Errorf("%s: rendering needed more than %d MiB of memory: stopped", what, s.memoryLimit()>>20)
	case strings.Contains(stderr, "pthread_create failed"):
		// Near the limit a new thread's stack no longer fits in the
		// data segment either (glibc says EAGAIN for that ENOMEM).
		return fmt.Errorf("%s: rendering needed more than %d MiB of memory: stopped (no room left for a new thread)", what, s.memoryLimit()>>20)
	case errors.As(err, &exit):
		return fmt.Errorf("%s: renderer %s failed (%v): %s", what, s.Path, exit, firstLine(stderr))
	case errors.Is(err, errWorkerGone):
		err = errNoAnswer // twice in a row: it is no worker
	}
	return fmt.Errorf("%s: renderer %s: %w", what, s.Path, err)
}

// readHead reads what a dead worker wrote on its standard error, up to
// workerStderrHead bytes, waiting at most a moment for it.
func readHead(f *os.File) string {
	f.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	buf := make([]byte, workerStderrHead)
	n, _ := io.ReadFull(f, buf)
	return string(buf[:n])
}

// budgetReader reads from r until left bytes are used up, then fails:
// a worker's answer cannot grow the parent's memory beyond the render's
// own limit.
type budgetReader struct {
	r         io.Reader
	left, max int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		b.left = -1
		return 0, errOverBudget
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// firstLine returns the first line of s, quoted, or "no output".
func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if l = strings.TrimSpace(l); l != "" {
		return fmt.Sprintf("%q", l)
	}
	return "no output"
}

// ServeWorker makes this process a render worker when the environment
// asks for one (DRIFTWATCH_RENDER_WORKER, as Sandbox starts it): it limits its own memory, renders the requests it reads on
// standard input one at a time, writing each answer on standard output,
// and exits when its input ends, after 30 s without a request, or when
// a render outlives its timeout. Otherwise it returns at once. The
// driftwatch binary calls it first thing in main; a test binary whose
// tests render through Self calls it first in TestMain.
func ServeWorker() {
	v, ok := os.LookupEnv(workerEnv)
	if !ok {
		return
	}
	os.Exit(serveWorker(v, os.Stdin, os.Stdout, os.Stderr))
}

// serveWorker is ServeWorker's work, with the limits its environment
// variable gave; it returns the exit code.
func serveWorker(limits string, in io.Reader, out, errOut io.Writer) int {
	var nums [3]int64
	parts := strings.Split(limits, ",")
	for i := range nums {
		if len(parts) != len(nums) {
			break
		}
		nums[i], _ = strconv.ParseInt(parts[i], 10, 64)
	}
	mem, timeout, idle := nums[0], time.Duration(nums[1])*time.Millisecond, time.Duration(nums[2])*time.Millisecond
	if mem <= 0 || timeout <= 0 || idle <= 0 {
		fmt.Fprintf(errOut, "render worker: %s=%q: want MEMORY,TIMEOUT,IDLE (bytes, milliseconds, milliseconds)\n", workerEnv, limits)
		return 2
	}
	// The limits are set at the first request, not before: the tests
	// call serveWorker in their own process with input it refuses.
	limited := false
	dec := json.NewDecoder(in)
	enc := json.NewEncoder(out)
	for {
		idleExit := time.AfterFunc(idle, func() { os.Exit(0) })
		var req Request
		err := dec.Decode(&req)
		idleExit.Stop()
		if errors.Is(err, io.EOF) {
			return 0
		}
		if err != nil || (req.Helm == nil) == (req.Kustomize == "") {
			fmt.Fprintln(errOut, "render worker: no helm or kustomize request on standard input")
			return 2
		}
		if !limited {
			// The collector works harder as the limit nears, so that a
			// large render that fits finishes rather than dies.
			debug.SetMemoryLimit(mem * 3 / 4)
			if err := limitSelf(uint64(mem)); err != nil {
				fmt.Fprintln(errOut, "render worker: limits:", err)
				return 2
			}
			limited = true
		}
		// Should nobody kill a render that outlived its timeout (the hub
		// died), the worker ends it.
		watchdog := time.AfterFunc(timeout+workerGrace, func() {
			fmt.Fprintf(errOut, "render worker: rendering took longer than %s\n", timeout)
			os.Exit(3)
		})
		var ans workerAnswer
		if req.Helm != nil {
			ans.Templated, err = helmTemplates(context.Background(), req)
		} else {
			ans.Kustomized, err = kustomizeBuild(req)
		}
		watchdog.Stop()
		if err != nil {
			we := &workerError{Msg: err.Error()}
			if e, ok := errors.AsType[*Error](err); ok {
				we = &workerError{Msg: e.Msg, File: e.Origin.File, Line: e.Origin.Line}
			}
			ans = workerAnswer{Error: we}
		}
		if err := enc.Encode(ans); err != nil {
			fmt.Fprintln(errOut, "render worker: write answer:", err)
			return 2
		}
	}
}

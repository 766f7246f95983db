package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/clusters/drift"
	"github.com/driftwatch/driftwatch/internal/procstatus"
)

// ResetPeakRSS resets this process's peak resident set size to its current
// size (Linux: /proc/self/clear_refs), so PeakRSS measures from now on.
func ResetPeakRSS() error {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return fmt.Errorf("reset peak rss: %w", err)
	}
	return nil
}

// PeakRSS returns this process's peak resident set size in bytes
// (VmHWM, Linux).
func PeakRSS() (uint64, error) { return procstatus.Field("VmHWM") }

// RSS returns this process's resident set size in bytes (VmRSS, Linux).
func RSS() (uint64, error) { return procstatus.Field("VmRSS") }

// rssSplitEvery is how often a rssSplit samples the resident set's parts.
const rssSplitEvery = 20 * time.Millisecond

// rssSplit follows the peaks of the anonymous and the file-backed parts of
// this process's resident set over a span, by sampling them every
// rssSplitEvery (the kernel keeps the peak of their sum only, VmHWM): what
// a peak RSS is made of, the hub's memory apart from the binary's pages.
// Its samples are taken one after the other (followRSSSplit), never at
// once.
//
// A sample reads /proc/self/statm from a file kept open (one pread of a
// few bytes), not /proc/self/status (open, read and close of 1.5 KB of
// text the kernel formats each time), ten times faster
// (BenchmarkRSSSample): the sampler
// runs in the measured process, and its cost is part of the CPU the runs
// report.
type rssSplit struct {
	anon, file uint64
	err        error
	statm      *os.File
	buf        [128]byte
}

// sample takes one reading into the peaks.
func (r *rssSplit) sample() {
	if r.err != nil {
		return
	}
	if r.statm == nil {
		if r.statm, r.err = os.Open("/proc/self/statm"); r.err != nil {
			r.err = fmt.Errorf("read rss parts: %w", r.err)
			return
		}
	}
	n, err := r.statm.ReadAt(r.buf[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		r.err = fmt.Errorf("read rss parts: %w", err)
		return
	}
	anon, file, err := statmParts(r.buf[:n], uint64(os.Getpagesize()))
	if err != nil {
		r.err = err
		return
	}
	r.anon, r.file = max(r.anon, anon), max(r.file, file)
}

// close closes the file the samples read.
func (r *rssSplit) close() {
	if r.statm != nil {
		_ = r.statm.Close()
		r.statm = nil
	}
}

// statmParts reads the anonymous and the file-backed parts of a resident
// set from the text of /proc/PID/statm ("size resident shared text lib
// data dt", in pages of pageSize bytes), in bytes: the file-backed part is
// its shared pages (RssFile and RssShmem of /proc/PID/status; a hub maps
// no shared memory), the anonymous part the rest of the resident pages
// (RssAnon).
func statmParts(b []byte, pageSize uint64) (anon, file uint64, err error) {
	f := bytes.Fields(b)
	if len(f) < 3 {
		return 0, 0, fmt.Errorf("read rss parts: /proc/self/statm %q: want at least 3 fields", b)
	}
	resident, err1 := strconv.ParseUint(string(f[1]), 10, 64)
	shared, err2 := strconv.ParseUint(string(f[2]), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("read rss parts: /proc/self/statm: %w", err)
	}
	if shared > resident {
		return 0, 0, fmt.Errorf("read rss parts: /proc/self/statm %q: more shared pages than resident ones", b)
	}
	return (resident - shared) * pageSize, shared * pageSize, nil
}

// peaks returns the peaks sampled so far; zero for both when a reading
// failed (not Linux).
func (r *rssSplit) peaks() (anon, file uint64) {
	if r.err != nil {
		return 0, 0
	}
	return r.anon, r.file
}

// followRSSSplit samples the resident set's parts from now until stop,
// which returns their peaks (one last sample included): the first sample
// before the sampler starts, the last after it ended (stop waits for it,
// and a second call returns the same peaks).
func (b *bencher) followRSSSplit() (stop func() (anon, file uint64)) {
	r := &rssSplit{}
	r.sample()
	end := b.every(rssSplitEvery, r.sample)
	return sync.OnceValues(func() (uint64, uint64) {
		end()
		r.sample()
		r.close()
		return r.peaks()
	})
}

// LoadAverage returns the machine's 1, 5 and 15 minute load averages as
// text (Linux: /proc/loadavg).
func LoadAverage() (string, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "", fmt.Errorf("load average: %w", err)
	}
	f := bytes.Fields(b)
	if len(f) < 3 {
		return "", errors.New("load average: unexpected /proc/loadavg")
	}
	return string(bytes.Join(f[:3], []byte(" "))), nil
}

// heapBefore returns the heap in use before a hub is given its objects
// (heapInUse), once the process-wide constants the hub builds on first use
// are built: the schema of the built-in kinds, which drift detection
// compiles once per process (drift.BuiltinSchema), is the same 0.7 MB for
// 10 objects or 10,000 and is not a cost per object.
// Every mode measures from here (see heapNote).
func heapBefore() uint64 {
	drift.BuiltinSchema(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	return heapInUse()
}

// heapNote says what the heap per object counts, for the modes that
// measure it.
const heapNote = "heap per object: the heap in use after GC once the hub settled, minus the heap before the config was loaded, per managed object; " +
	"process-wide constants built once on first use (the schema of the built-in kinds for drift detection, 0.7 MB) are built before the first measure, in every mode."

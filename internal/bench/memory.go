package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/clusters/drift"
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
func PeakRSS() (uint64, error) { return procStatus("VmHWM") }

// RSS returns this process's resident set size in bytes (VmRSS, Linux).
func RSS() (uint64, error) { return procStatus("VmRSS") }

// rssParts returns the anonymous part of this process's resident set (the
// Go heap, stacks, the runtime's own memory) and its file-backed part (the
// pages of the binary and of mapped files in memory, such as the state
// file), in bytes (RssAnon and RssFile, Linux).
func rssParts() (anon, file uint64, err error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0, fmt.Errorf("read rss parts: %w", err)
	}
	if anon, err = statusField(b, "RssAnon"); err != nil {
		return 0, 0, err
	}
	file, err = statusField(b, "RssFile")
	return anon, file, err
}

// rssSplitEvery is how often a rssSplit samples the resident set's parts.
const rssSplitEvery = 20 * time.Millisecond

// rssSplit follows the peaks of the anonymous and the file-backed parts of
// this process's resident set over a span, by sampling them every
// rssSplitEvery (the kernel keeps the peak of their sum only, VmHWM): what
// a peak RSS is made of, the hub's memory apart from the binary's pages.
// Its samples are taken one after the other (followRSSSplit), never at
// once.
type rssSplit struct {
	anon, file uint64
	err        error
}

// sample takes one reading into the peaks.
func (r *rssSplit) sample() {
	anon, file, err := rssParts()
	if err != nil {
		r.err = err
		return
	}
	r.anon, r.file = max(r.anon, anon), max(r.file, file)
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
// before the sampler starts, the last after it ended (stop waits for it).
func (b *bencher) followRSSSplit() (stop func() (anon, file uint64)) {
	r := &rssSplit{}
	r.sample()
	end := b.every(rssSplitEvery, r.sample)
	return func() (uint64, uint64) {
		end()
		r.sample()
		return r.peaks()
	}
}

// procStatus reads one "kB" field of /proc/self/status, in bytes.
func procStatus(field string) (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", field, err)
	}
	return statusField(b, field)
}

// statusField reads one "kB" field of the text of /proc/self/status, in
// bytes.
func statusField(b []byte, field string) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	prefix := []byte(field + ":")
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, prefix) {
			continue
		}
		f := bytes.Fields(line[len(prefix):])
		if len(f) == 0 {
			break
		}
		kb, err := strconv.ParseUint(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", field, err)
		}
		return kb * 1024, nil
	}
	return 0, errors.New("read " + field + ": not in /proc/self/status")
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

package bench

import (
	"os"
	"runtime"
	"syscall"
	"testing"

	"github.com/driftwatch/driftwatch/internal/procstatus"
)

// TestRSSSplitFollowsPeaks: the split's anonymous peak grows with memory
// the process touches between two samples, and stays at its peak when the
// memory is released; the parts' peaks are each within the process's
// peak RSS.
func TestRSSSplitFollowsPeaks(t *testing.T) {
	var r rssSplit
	defer r.close()
	r.sample()
	anon0, file0 := r.peaks()
	if anon0 == 0 || file0 == 0 {
		t.Fatalf("peaks after one sample: anonymous %d, file-backed %d; want both above zero", anon0, file0)
	}
	const size = 64 << 20
	buf := make([]byte, size)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1 // resident
	}
	r.sample()
	runtime.KeepAlive(buf)
	buf = nil
	runtime.GC()
	r.sample()
	anon, file := r.peaks()
	if anon < anon0+size*3/4 {
		t.Errorf("anonymous peak %d MiB after touching %d MiB, from %d MiB; want it grown by most of it", anon>>20, size>>20, anon0>>20)
	}
	if file < file0 {
		t.Errorf("file-backed peak went down: %d, was %d", file, file0)
	}
	hwm, err := PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	if anon > hwm || file > hwm {
		t.Errorf("a part's peak above the process's peak RSS %d: anonymous %d, file-backed %d", hwm, anon, file)
	}
}

// TestRSSSplitAgreesWithStatus: a sample's parts are the resident set's
// anonymous and file-backed parts as /proc/self/status gives them (RssAnon,
// RssFile and RssShmem), read one after the other with nothing allocated
// between them.
func TestRSSSplitAgreesWithStatus(t *testing.T) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var r rssSplit
	defer r.close()
	r.sample()
	anon, file := r.peaks()
	want := map[string]uint64{}
	for _, field := range []string{"RssAnon", "RssFile", "RssShmem"} {
		if want[field], err = procstatus.Parse(b, field); err != nil {
			t.Fatal(err)
		}
	}
	const slack = 2 << 20 // what the process may touch between the two reads
	near := func(a, b uint64) bool { return max(a, b)-min(a, b) <= slack }
	if !near(anon, want["RssAnon"]) || !near(file, want["RssFile"]+want["RssShmem"]) {
		t.Errorf("sample: anonymous %d, file-backed %d; /proc/self/status: RssAnon %d, RssFile %d, RssShmem %d",
			anon, file, want["RssAnon"], want["RssFile"], want["RssShmem"])
	}
}

// TestMinorFaultsCountsFreshPages: touching 8 MiB of fresh anonymous
// memory, a page at a time, counts a minor fault for most of its 2,048
// pages.
func TestMinorFaultsCountsFreshPages(t *testing.T) {
	const size = 8 << 20
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Munmap(b) }()
	before := MinorFaults()
	for i := 0; i < len(b); i += os.Getpagesize() {
		b[i] = 1
	}
	if got := MinorFaults() - before; got < size/int64(os.Getpagesize())*3/4 {
		t.Errorf("%d minor faults touching %d fresh pages; want most of them counted", got, size/os.Getpagesize())
	}
}

// BenchmarkRSSSample measures one sample of the resident set's parts as
// the bench's sampler takes it (/proc/self/statm, a file kept open) beside
// reading /proc/self/status, which it read before, in the same run.
func BenchmarkRSSSample(b *testing.B) {
	b.Run("statm-kept-open", func(b *testing.B) {
		var r rssSplit
		defer r.close()
		for b.Loop() {
			r.sample()
		}
		if anon, _ := r.peaks(); anon == 0 {
			b.Fatal("no sample")
		}
	})
	b.Run("status-read-and-parsed", func(b *testing.B) {
		for b.Loop() {
			s, err := os.ReadFile("/proc/self/status")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := procstatus.Parse(s, "RssAnon"); err != nil {
				b.Fatal(err)
			}
			if _, err := procstatus.Parse(s, "RssFile"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

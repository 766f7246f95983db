//go:build unix

package intent

import (
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// BenchmarkPutAppliedStream measures PutApplied as a cold sync calls it:
// 64 workers, each recording an object and then applying it (a 100 ms
// call, slept here), so that writes arrive a few milliseconds apart. It
// reports the writes each flush carried and this process's CPU per write
// (user and system: the fsyncs), with the stores' linger (linger=10ms) and,
// as the baseline, without one (linger=0).
func BenchmarkPutAppliedStream(b *testing.B) {
	for _, linger := range []time.Duration{groupLinger, 0} {
		b.Run("linger="+linger.String(), func(b *testing.B) {
			s := openT(b, filepath.Join(b.TempDir(), "hub.db"))
			s.applied.linger = linger
			const workers = 64
			var n atomic.Int64
			cpu0 := processCPU(b)
			b.ResetTimer()
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for {
						i := n.Add(1)
						if i > int64(b.N) {
							return
						}
						if err := s.PutApplied(ref("prod", "shop", "obj"+strconv.FormatInt(i, 10), hub.KindDeployment)); err != nil {
							b.Error(err)
							return
						}
						time.Sleep(100 * time.Millisecond)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			s.applied.mu.Lock()
			flushes := s.applied.flushes
			s.applied.mu.Unlock()
			b.ReportMetric(float64(b.N)/float64(max(flushes, 1)), "writes/flush")
			b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/write")
		})
	}
}

// processCPU is this process's user and system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

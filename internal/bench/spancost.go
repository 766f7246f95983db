package bench

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"time"
)

// spanCost is what one span of a run cost, and where: this process's CPU
// (the hub, or the plain client of a floor, and the bench's own watches),
// the local control planes' CPU (every etcd and kube-apiserver), and the
// calls the apiservers served (their own request histograms, every client
// counted). Set beside a floor's, it says whether a slower span did more
// work or waited.
type spanCost struct {
	ProcessCPU msDuration `json:"processCPUMs"`
	// ProcessGC is the part of ProcessCPU the Go runtime estimates it
	// spent collecting garbage (runtime/metrics
	// /cpu/classes/gc/total:cpu-seconds): marking in the background, on
	// idle cores and in assists, and the pauses.
	ProcessGC msDuration `json:"processGCCPUMs,omitempty"`
	// ProcessAlloc is what this process allocated on its heap in the
	// span, and GCCycles how many collections it ran: the garbage
	// collector's work grows with the bytes allocated, not with the heap
	// kept (runtime/metrics /gc/heap/allocs:bytes and
	// /gc/cycles/total:gc-cycles).
	ProcessAlloc    uint64     `json:"processAllocBytes,omitempty"`
	GCCycles        uint64     `json:"gcCycles,omitempty"`
	ControlPlaneCPU msDuration `json:"controlPlaneCPUMs"`
	// Span is the span's length, from the first reading to the second.
	Span        msDuration `json:"spanMs,omitempty"`
	Mutating    uint64     `json:"mutatingCalls"`
	Reads       uint64     `json:"readCalls"`
	MutatingP99 msDuration `json:"mutatingP99Ms"`
	// CoresBusy is the CPU above (the control planes' and this process's)
	// over the span's length, in cores, and Cores how many the machine
	// has: a span that keeps every core busy is bound by the machine, not
	// by waiting.
	CoresBusy float64 `json:"coresBusy,omitempty"`
	Cores     int     `json:"cores,omitempty"`
	// Error says what could not be measured (the rest is still set).
	Error string `json:"error,omitempty"`
}

// costReading is one side of a span: spanCost subtracts two.
type costReading struct {
	at                        time.Time
	process, gc, controlPlane time.Duration
	alloc, cycles             uint64
	requests                  map[string]RequestDurations
	err                       error
}

// readCost reads this process's and the control planes' CPU and scrapes
// every apiserver's request histogram.
func (b *bencher) readCost(ctx context.Context) costReading {
	r := costReading{at: time.Now(), process: CPUTime(), gc: gcCPU()}
	r.alloc, r.cycles = heapAllocs()
	for _, lc := range b.set.Clusters {
		d, err := lc.CPUTime()
		if err != nil {
			r.err = err
			break
		}
		r.controlPlane += d
	}
	req, err := b.scrapeAPIServers(ctx)
	if err != nil && r.err == nil {
		r.err = err
	}
	r.requests = req
	return r
}

// gcCPU is the CPU time the Go runtime estimates this process spent
// collecting garbage so far (0 where the metric is not supported).
func gcCPU() time.Duration {
	sample := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return time.Duration(sample[0].Value.Float64() * float64(time.Second))
}

// heapAllocs returns the bytes this process allocated on its heap so far
// and the garbage collections it completed.
func heapAllocs() (bytes, cycles uint64) {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() == metrics.KindUint64 {
		bytes = sample[0].Value.Uint64()
	}
	if sample[1].Value.Kind() == metrics.KindUint64 {
		cycles = sample[1].Value.Uint64()
	}
	return bytes, cycles
}

// costSince returns the cost of the span from before to now.
func (b *bencher) costSince(ctx context.Context, before costReading) *spanCost {
	after := b.readCost(ctx)
	c := &spanCost{ProcessCPU: msDuration(after.process - before.process), ProcessGC: msDuration(after.gc - before.gc),
		ProcessAlloc: after.alloc - before.alloc, GCCycles: after.cycles - before.cycles, Span: msDuration(after.at.Sub(before.at))}
	for _, err := range []error{before.err, after.err} {
		if err != nil && c.Error == "" {
			c.Error = err.Error()
		}
	}
	if before.err == nil && after.err == nil {
		c.ControlPlaneCPU = msDuration(after.controlPlane - before.controlPlane)
		var mutating Histogram
		for name, a := range after.requests {
			old := before.requests[name]
			m := a[VerbsMutating].Sub(old[VerbsMutating])
			c.Mutating += m.Count
			c.Reads += a[VerbsRead].Sub(old[VerbsRead]).Count
			mutating = mutating.plus(m)
		}
		if q := mutating.Quantile(0.99); mutating.Count > 0 {
			c.MutatingP99 = secondsDuration(q)
		}
		c.busy(after.at.Sub(before.at), runtime.NumCPU())
	}
	return c
}

// busy sets CoresBusy and Cores for a span of length span on a machine of
// cores.
func (c *spanCost) busy(span time.Duration, cores int) {
	if span <= 0 {
		return
	}
	c.CoresBusy = (c.ControlPlaneCPU.dur() + c.ProcessCPU.dur()).Seconds() / span.Seconds()
	c.Cores = cores
}

// controlPlanePercent is the control planes' CPU over the span, in percent
// of one core, or -1 when it was not measured.
func (c *spanCost) controlPlanePercent() float64 {
	if c == nil || c.Error != "" || c.Span <= 0 {
		return -1
	}
	return 100 * c.ControlPlaneCPU.dur().Seconds() / c.Span.dur().Seconds()
}

// total is the span's CPU, the control planes' and this process's, or 0
// when either was not measured (a nil cost, or one with an Error).
func (c *spanCost) total() msDuration {
	if c == nil || c.Error != "" {
		return 0
	}
	return c.ControlPlaneCPU + c.ProcessCPU
}

// per is the span's CPU (total) per unit of work done in it, n units (a
// created object, a repaired drift), or 0 when either is unknown.
func (c *spanCost) per(n int) msDuration {
	if t := c.total(); t > 0 && n > 0 {
		return t / msDuration(n)
	}
	return 0
}

// plus returns the sum of two histograms of the same buckets.
func (h Histogram) plus(o Histogram) Histogram {
	s := Histogram{Count: h.Count + o.Count, Buckets: make(map[float64]uint64, max(len(h.Buckets), len(o.Buckets)))}
	for ub, n := range h.Buckets {
		s.Buckets[ub] += n
	}
	for ub, n := range o.Buckets {
		s.Buckets[ub] += n
	}
	return s
}

// String is the cost as one table cell.
func (c *spanCost) String() string {
	if c == nil {
		return "not measured"
	}
	gc := ""
	if c.ProcessGC > 0 && c.ProcessCPU > 0 {
		gc = fmt.Sprintf(" (%.0f%% collecting garbage)", 100*float64(c.ProcessGC)/float64(c.ProcessCPU))
	}
	if c.ProcessAlloc > 0 {
		gc += fmt.Sprintf(", %s allocated, %d collections", fmtBytes(c.ProcessAlloc), c.GCCycles)
	}
	s := fmt.Sprintf("control planes %s, this process %s cpu%s; %d writes (p99 %s), %d reads",
		fmtDur(c.ControlPlaneCPU.dur()), fmtDur(c.ProcessCPU.dur()), gc, c.Mutating, fmtDur(c.MutatingP99.dur()), c.Reads)
	if c.Cores > 0 {
		s += fmt.Sprintf("; %.2f of %d cores busy", c.CoresBusy, c.Cores)
	}
	if c.Error != "" {
		s += " (partly not measured: " + c.Error + ")"
	}
	return s
}

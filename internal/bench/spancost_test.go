package bench

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestSpanCost(t *testing.T) {
	a := Histogram{Count: 3, Buckets: map[float64]uint64{0.1: 2, 1: 3}}
	b := Histogram{Count: 1, Buckets: map[float64]uint64{0.1: 0, 1: 1}}
	s := a.plus(b)
	if s.Count != 4 || s.Buckets[0.1] != 2 || s.Buckets[1] != 4 {
		t.Fatalf("plus = %+v", s)
	}
	c := &spanCost{ProcessCPU: msDuration(2 * time.Second), ControlPlaneCPU: msDuration(30 * time.Second),
		Mutating: 2500, Reads: 12, MutatingP99: msDuration(80 * time.Millisecond)}
	for _, want := range []string{"control planes 30", "this process 2", "2500 writes", "12 reads"} {
		if !strings.Contains(c.String(), want) {
			t.Errorf("%q lacks %q", c, want)
		}
	}
	if strings.Contains(c.String(), "collecting garbage") {
		t.Errorf("%q tells a garbage collection share nobody measured", c)
	}
	c.ProcessGC = msDuration(500 * time.Millisecond)
	if !strings.Contains(c.String(), "this process 2.00s cpu (25% collecting garbage)") {
		t.Errorf("%q lacks the garbage collection share", c)
	}
	c.ProcessAlloc, c.GCCycles = 3<<30, 14
	if !strings.Contains(c.String(), "(25% collecting garbage), 3072.0 MiB allocated, 14 collections;") {
		t.Errorf("%q lacks what the process allocated", c)
	}
	if strings.Contains(c.String(), "cores busy") {
		t.Errorf("%q tells cores busy for a span of no length", c)
	}
	c.busy(16*time.Second, 2)
	if c.CoresBusy != 2 || !strings.Contains(c.String(), "2.00 of 2 cores busy") {
		t.Errorf("32 s of cpu in 16 s on 2 cores: %q (CoresBusy %v)", c, c.CoresBusy)
	}
	c.Error = "cluster c1: no process running"
	if !strings.Contains(c.String(), "partly not measured: cluster c1") {
		t.Errorf("%q does not say what was not measured", c)
	}
	if (*spanCost)(nil).String() != "not measured" {
		t.Error("nil cost")
	}
}

func TestControlPlanePercent(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *spanCost
		want float64
	}{
		{"measured", &spanCost{ControlPlaneCPU: msDuration(1500 * time.Millisecond), Span: msDuration(10 * time.Second)}, 15},
		{"not run", nil, -1},
		{"no length", &spanCost{ControlPlaneCPU: msDuration(time.Second)}, -1},
		{"failed", &spanCost{ControlPlaneCPU: msDuration(time.Second), Span: msDuration(time.Second), Error: "gone"}, -1},
	} {
		if got := tc.c.controlPlanePercent(); got != tc.want {
			t.Errorf("%s: %v%%, want %v", tc.name, got, tc.want)
		}
	}
}

// The garbage collector's CPU is read from the runtime, and grows with
// the garbage this process makes.
func TestGCCPU(t *testing.T) {
	before := gcCPU()
	makeGarbage(200)
	runtime.GC()
	if after := gcCPU(); after <= before {
		t.Errorf("gc cpu %s after 200 MiB of garbage and a collection, %s before", after, before)
	}
}

// What the process allocated and the collections it ran are read from the
// runtime, and grow with the garbage it makes.
func TestHeapAllocs(t *testing.T) {
	bytes0, cycles0 := heapAllocs()
	makeGarbage(64)
	runtime.GC()
	bytes1, cycles1 := heapAllocs()
	if bytes1-bytes0 < 64<<20 {
		t.Errorf("allocated %d bytes across 64 MiB of garbage", bytes1-bytes0)
	}
	if cycles1 <= cycles0 {
		t.Errorf("collections %d after a forced one, %d before", cycles1, cycles0)
	}
}

// makeGarbage allocates mib MiB, a MiB at a time, keeping the last few
// alive as it goes, and drops them all.
func makeGarbage(mib int) {
	var keep [][]byte
	for range mib {
		keep = append(keep, make([]byte, 1<<20))
		if len(keep) > 4 {
			keep = keep[1:]
		}
	}
	runtime.KeepAlive(keep)
}

package intent

import (
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/driftwatch/driftwatch/hub"
)

// BenchmarkPutApplied measures one durable write: an Update transaction
// committed with fsync.
func BenchmarkPutApplied(b *testing.B) {
	s := openT(b, filepath.Join(b.TempDir(), "hub.db"))
	i := 0
	for b.Loop() {
		r := ref("prod", "shop", "obj"+strconv.Itoa(i%1000), hub.KindDeployment)
		i++
		if err := s.PutApplied(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPutAppliedParallel measures PutApplied from concurrent workers,
// as the hub's workers call it: the group commit shares one fsync among the
// calls that arrive while a commit is running.
func BenchmarkPutAppliedParallel(b *testing.B) {
	s := openT(b, filepath.Join(b.TempDir(), "hub.db"))
	b.SetParallelism(8)
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			if err := s.PutApplied(ref("prod", "shop", "obj"+strconv.FormatInt(i%1000, 10), hub.KindDeployment)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

package intent

import (
	"path/filepath"
	"strconv"
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

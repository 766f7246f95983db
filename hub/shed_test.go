package hub

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
)

// TestQueuedWritesHoldNoBody: first applies waiting for a writer hold no
// unpacked body (a cold sync hands one off for every object at once), and
// each write, once it runs, applies its spec's whole body.
func TestQueuedWritesHoldNoBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, size = 100, 64 << 10
		rng := rand.New(rand.NewPCG(1, 2))
		raw := make([]byte, size*3/4)
		specs := make([]NodeSpec, n)
		want := make(map[NodeID][]byte, n)
		for i := range specs {
			for j := range raw {
				raw[j] = byte(rng.Uint32())
			}
			// Random text does not compress: the packed body the hub
			// keeps is as large as the unpacked one.
			s := spec("a", fmt.Sprintf("cm-%d", i), "v1")
			s.Body = []byte(`{"data":{"k":"` + base64.StdEncoding.EncodeToString(raw) + `"}}`)
			specs[i] = s
			want[s.ID] = bytes.Clone(s.Body)
		}
		b := newFake(true)
		release := make(chan struct{})
		var mu sync.Mutex
		applied := map[NodeID]bool{}
		b.onWrite = func(ctx context.Context, _ NodeID) error {
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		b.onBody = func(id NodeID, body []byte) {
			mu.Lock()
			defer mu.Unlock()
			if !bytes.Equal(body, want[id]) {
				t.Errorf("%s: the write applied a body of %d bytes, want the spec's %d", id, len(body), len(want[id]))
			}
			applied[id] = true
		}
		const writers = 2
		f := start(t, b, Options{Workers: 2, Writers: writers})
		f.h.SetDesired(specs)
		specs, raw = nil, nil
		synctest.Wait()
		before := heapAlloc()

		f.ready("a", 1, 1)
		synctest.Wait() // every first apply classified and handed off; two in flight
		queued := heapAlloc() - before
		t.Logf("%d first applies waiting for %d writers: %d bytes", n, writers, queued)

		// Before the writes shed their unpacked bodies each of the n
		// waiting writes held one (two copies): 6.4 MB or more.
		if limit := uint64(n * size / 8); queued > limit {
			t.Errorf("%d first applies waiting for %d writers hold %d bytes more than none, want at most %d (a body is %d)", n, writers, queued, limit, size)
		}
		close(release)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(applied) != n {
			t.Errorf("%d objects applied, want %d", len(applied), n)
		}
	})
}

// heapAlloc returns the bytes of live heap objects after a collection.
func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

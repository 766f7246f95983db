package gitsource

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// packObject is one object of a hand-made pack: its type (1 commit, 2
// tree, 3 blob, 7 ref delta), the size its header declares, a ref
// delta's base, and its data (compressed when written).
type packObject struct {
	typ      byte
	declared int
	base     [20]byte
	data     []byte
}

// handPack writes a pack of objs (no trailing checksum: checkPack stops
// after the last object).
func handPack(t *testing.T, objs ...packObject) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("PACK")
	binary.Write(&b, binary.BigEndian, uint32(2))
	binary.Write(&b, binary.BigEndian, uint32(len(objs)))
	for _, o := range objs {
		size := o.declared
		c := o.typ<<4 | byte(size&0x0f)
		size >>= 4
		for size > 0 {
			b.WriteByte(c | 0x80)
			c = byte(size & 0x7f)
			size >>= 7
		}
		b.WriteByte(c)
		if o.typ == 7 {
			b.Write(o.base[:])
		}
		z := zlib.NewWriter(&b)
		if _, err := z.Write(o.data); err != nil {
			t.Fatal(err)
		}
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// varint is a delta header's variable-length number.
func varint(v uint64) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(out, c)
		}
		out = append(out, c|0x80)
	}
}

// TestCheckPack: a pack passes when every object and every delta's target
// is within the limit; a blob declared larger, a delta building a larger
// object (1 TiB from a dozen bytes), or data longer than declared is
// refused before anything is indexed.
func TestCheckPack(t *testing.T) {
	base := packObject{typ: 3, declared: 4, data: []byte("base")}
	delta := func(target uint64) packObject {
		d := append(append(varint(4), varint(target)...), 4, 'n', 'e', 'x', 't')
		return packObject{typ: 7, declared: len(d), data: d}
	}
	for _, tt := range []struct {
		name string
		pack []byte
		want string
	}{
		{"small", handPack(t, base, delta(4)), ""},
		{"blob over the limit", handPack(t, packObject{typ: 3, declared: 2000, data: make([]byte, 2000)}), "a blob object of 2000 bytes, more than 1024 (maxObjectBytes)"},
		{"delta building a terabyte", handPack(t, base, delta(1<<40)), "a delta building an object of 1099511627776 bytes, more than 1024"},
		{"data longer than declared", handPack(t, packObject{typ: 3, declared: 10, data: make([]byte, 5000)}), "object 0"},
		{"delta without a header", handPack(t, base, packObject{typ: 7, declared: 1, data: []byte{0x80}}), "delta header cut short"},
		{"not a pack", []byte("PACX"), "read pack"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := checkPack(bytes.NewReader(tt.pack), 1024)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("checkPack: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("checkPack = %v, want %q", err, tt.want)
			case strings.Contains(tt.want, "maxObjectBytes") && !errors.Is(err, ErrTooLarge):
				t.Fatalf("checkPack = %v, want ErrTooLarge", err)
			}
		})
	}
}

// TestFetchInflatesNothingWhole: a repository of a few megabytes whose one
// file is 256 MiB of zeros is refused over HTTP (before its pack is
// indexed) and over file:// (before the file is read) without the heap
// growing by the file: go-git inflated it whole, three times over, before
// the checkout's limit refused it (3.2 GiB of heap and 46 s for 1 GiB).
func TestFetchInflatesNothingWhole(t *testing.T) {
	f := newFixture(t)
	fh, err := os.Create(filepath.Join(f.work, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := fh.Truncate(256 << 20); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	f.run(f.work, "add", "-A")
	f.run(f.work, "commit", "-q", "-m", "big")
	f.push()
	srv := startGitServer(t, f, "", "")
	for _, tc := range []struct{ transport, url, want string }{
		{"http", srv.url("repo.git"), "a blob object of 268435456 bytes, more than 67108864 (maxObjectBytes)"},
		{"file", f.fileURL(), "big.bin alone has 268435456"},
	} {
		t.Run(tc.transport, func(t *testing.T) {
			r := openOK(t, Options{URL: tc.url, Ref: "main", CacheDir: t.TempDir(), MaxBytes: 64 << 20})
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			var peak uint64
			var wg sync.WaitGroup
			done := make(chan struct{})
			wg.Go(func() {
				for {
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					peak = max(peak, ms.HeapAlloc)
					select {
					case <-done:
						return
					case <-time.After(10 * time.Millisecond):
					}
				}
			})
			_, err := r.Fetch(t.Context())
			close(done)
			wg.Wait()
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Fetch = %v, want %q", err, tc.want)
			}
			if grew := int64(peak) - int64(before.HeapAlloc); grew > 64<<20 {
				t.Errorf("the heap grew by %d MiB for a 256 MiB file", grew>>20)
			}
		})
	}
}

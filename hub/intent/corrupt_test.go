package intent

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/driftwatch/driftwatch/hub"
)

// filledStore returns the bytes of a closed store file with enough records
// to span many pages.
func filledStore(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "full.db")
	s := openT(t, path)
	for i := range 300 {
		r := ref("prod", "shop", "obj"+strings.Repeat("x", i%50)+string(rune('a'+i%26))+string(rune('a'+i/26)), hub.KindDeployment)
		must(t, s.PutApplied(r))
	}
	must(t, s.Close())
	b, err := os.ReadFile(path)
	must(t, err)
	return b
}

// pageSize and rootPage read the newest meta page of a bbolt file.
func metaOf(t *testing.T, b []byte) (pageSize, root, freelist, pgid uint64) {
	t.Helper()
	m, ok := readBoltMeta(bytes.NewReader(b), 0)
	if !ok {
		t.Fatal("no valid meta page 0")
	}
	if m1, ok := readBoltMeta(bytes.NewReader(b), int64(m.pageSize)); ok && m1.txid > m.txid {
		m = m1
	}
	off := 0
	if m.txid%2 == 1 {
		off = int(m.pageSize)
	}
	meta := b[off+boltPageHeader:]
	e := binary.NativeEndian
	return m.pageSize, e.Uint64(meta[16:]), e.Uint64(meta[32:]), m.pgid
}

func garble(b []byte, from, to int) []byte {
	out := bytes.Clone(b)
	r := rand.New(rand.NewPCG(1, 2))
	for i := from; i < to && i < len(out); i++ {
		out[i] = byte(r.Uint32())
	}
	return out
}

func TestCorruptFileRefused(t *testing.T) {
	full := filledStore(t)
	ps, root, _, pgid := metaOf(t, full)
	if pgid < 8 {
		t.Fatalf("test store too small: %d pages", pgid)
	}
	random := garble(make([]byte, 64<<10), 0, 64<<10)

	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"random bytes", random, "invalid database"},
		{"a few bytes", []byte("hello"), "invalid database"},
		{"text", []byte(strings.Repeat("not a database\n", 1000)), "invalid database"},
		{"truncated to one page", full[:ps], "truncated"},
		{"truncated at a page boundary", full[:(pgid/2)*ps], "truncated"},
		{"truncated mid-page", full[:(pgid/2)*ps+100], "truncated"},
		{"truncated, meta 0 damaged", garble(full[:(pgid/2)*ps], 0, int(ps)), "truncated"},
		{"root page garbled", garble(full, int(root*ps), int((root+1)*ps)), "consistency check"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hub.db")
			must(t, os.WriteFile(path, tt.data, 0o600))
			for range 2 { // refused again, not locked by the first attempt
				_, err := Open(path, Options{})
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Open = %v, want ErrCorrupt", err)
				}
				for _, want := range []string{path, "corrupt or unreadable", "not reset", "move it away", tt.want} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
			}
			after, err := os.ReadFile(path)
			must(t, err)
			if !bytes.Equal(after, tt.data) {
				t.Error("a refused file was changed")
			}
		})
	}
}

func TestEmptyFileIsNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	must(t, os.WriteFile(path, nil, 0o600))
	s := openT(t, path)
	must(t, s.SetPaused("prod", true, at0(), hub.SwitchNote{}))
	must(t, s.Close())
	if v := readVersion(t, path); v != "2" {
		t.Errorf("version = %q, want 2", v)
	}
}

func TestForeignDatabaseRefused(t *testing.T) {
	tests := []struct {
		name string
		fill func(tx *bolt.Tx) error
		want string
	}{
		{"another program's buckets", func(tx *bolt.Tx) error {
			_, err := tx.CreateBucket([]byte("key"))
			return err
		}, `unexpected top-level entry "key"`},
		{"meta without version", func(tx *bolt.Tx) error {
			_, err := tx.CreateBucket([]byte(bucketMeta))
			return err
		}, "no key version"},
		{"bad version", func(tx *bolt.Tx) error {
			b, err := tx.CreateBucket([]byte(bucketMeta))
			if err != nil {
				return err
			}
			return b.Put([]byte(keyVersion), []byte("one"))
		}, "bucket meta key version"},
		{"version 1 missing a bucket", func(tx *bolt.Tx) error {
			b, err := tx.CreateBucket([]byte(bucketMeta))
			if err != nil {
				return err
			}
			return b.Put([]byte(keyVersion), []byte("1"))
		}, "no bucket paused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hub.db")
			writeBolt(t, path, tt.fill)
			before, err := os.ReadFile(path)
			must(t, err)
			_, err = Open(path, Options{})
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Open = %v, want ErrCorrupt with %q", err, tt.want)
			}
			after, err := os.ReadFile(path)
			must(t, err)
			if !bytes.Equal(before, after) {
				t.Error("a refused file was changed")
			}
		})
	}
}

func TestBadRecord(t *testing.T) {
	id := hub.NewNodeID("prod", "shop", "api", hub.KindDeployment).String()
	good := `{"id":"` + id + `","name":"api","kind":"deployment"}`
	tests := []struct {
		bucket, key, value string
		want               string
	}{
		{bucketPaused, "prod", `yes`, `bucket paused key "prod"`},
		{bucketPolicies, "shop", `42`, `bucket policies key "shop"`},
		{bucketHolds, "cluster/prod", `{"scope":"cluster","name":"prod","colour":"red"}`, `unknown field "colour"`},
		{bucketHolds, "cluster/prod", `{"scope":"cluster","name":"dev"}`, "record is for cluster/dev"},
		{bucketHolds, "team/x", `{"scope":"team","name":"x"}`, `bucket holds key "team/x"`},
		{bucketDecommissions, "not-a-node-id", `{}`, `bucket decommissions key "not-a-node-id"`},
		{bucketDecommissions, id, `{"ref":` + good + `} {}`, "data after the JSON value"},
		{bucketDecommissions, id, `{"ref":{"id":"prod:shop/db:service"}}`, "record is for prod:shop/db:service"},
		{bucketApplied, id, `{"id":"bad"}`, `bucket applied key "` + id + `"`},
		{bucketApplied, id, `{"id":"prod:x:service"}`, "record is for prod:x:service"},
		{bucketApplied, "prod::deployment", good, "empty resource"},
	}
	for _, tt := range tests {
		t.Run(tt.bucket+" "+tt.key+" "+tt.want, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hub.db")
			s := openT(t, path)
			must(t, s.Close())
			writeBolt(t, path, func(tx *bolt.Tx) error {
				return tx.Bucket([]byte(tt.bucket)).Put([]byte(tt.key), []byte(tt.value))
			})
			s = openT(t, path)
			_, err := s.Load()
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Load = %v, want ErrCorrupt with %q", err, tt.want)
			}
			if strings.Contains(tt.want, "empty resource") && !errors.Is(err, hub.ErrInvalidNodeID) {
				t.Errorf("Load = %v, want it to wrap hub.ErrInvalidNodeID", err)
			}
		})
	}
}

func TestNestedBucketRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	must(t, openT(t, path).Close())
	writeBolt(t, path, func(tx *bolt.Tx) error {
		_, err := tx.Bucket([]byte(bucketHolds)).CreateBucket([]byte("inner"))
		return err
	})
	_, err := openT(t, path).Load()
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `bucket holds key "inner": nested bucket`) {
		t.Fatalf("Load = %v, want a nested bucket error", err)
	}
}

// TestCorruptedWhileOpen damages the file under an open store: bbolt panics
// (or faults) reading the pages, and the store reports it as corrupt instead
// of crashing.
func TestCorruptedWhileOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	s := openT(t, path)
	for i := range 200 {
		must(t, s.PutApplied(ref("prod", "shop", "obj"+strings.Repeat("y", i%40)+string(rune('a'+i%26))+string(rune('a'+i/26)), hub.KindService)))
	}
	b, err := os.ReadFile(path)
	must(t, err)
	ps, root, freelist, pgid := metaOf(t, b)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	must(t, err)
	for p := uint64(2); p < pgid; p++ {
		if p == freelist {
			continue
		}
		junk := garble(make([]byte, ps), 0, int(ps))
		if p == root {
			// A branch page whose children point far past the file.
			binary.NativeEndian.PutUint64(junk[0:], root)
			binary.NativeEndian.PutUint16(junk[8:], 0x01) // branch page
			binary.NativeEndian.PutUint16(junk[10:], 4)
		}
		_, err := f.WriteAt(junk, int64(p*ps))
		must(t, err)
	}
	must(t, f.Close())

	_, err = s.Load()
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Load = %v, want ErrCorrupt", err)
	}
	if err := s.PutApplied(ref("prod", "shop", "new", hub.KindService)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("PutApplied = %v, want ErrCorrupt", err)
	}
	must(t, s.Close())
}

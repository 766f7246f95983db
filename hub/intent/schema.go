package intent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// Bucket names and the meta bucket's key.
const (
	bucketMeta          = "meta"
	bucketPaused        = "paused"
	bucketPolicies      = "policies"
	bucketHolds         = "holds"
	bucketDecommissions = "decommissions"
	bucketApplied       = "applied"
	bucketPauseNotes    = "pauseNotes"
	bucketPolicyNotes   = "policyNotes"

	keyVersion = "version"
)

// buckets returns every top-level bucket of the current schema.
func buckets() []string {
	return []string{bucketMeta, bucketPaused, bucketPauseNotes, bucketPolicies, bucketPolicyNotes, bucketHolds, bucketDecommissions, bucketApplied}
}

// migration upgrades a state file by one schema version. It runs inside the
// transaction that opens the file, so a file is either fully migrated or
// untouched.
type migration func(tx *bolt.Tx) error

// migrations returns the upgrade steps indexed by the version each upgrades
// from: steps[v] takes a file from version v to v+1, so len(steps) is the
// schema version this code reads and writes. To change the layout, append a
// step.
func migrations() []migration {
	return []migration{
		0: migrateV0,
		1: migrateV1,
	}
}

// migrateV0 brings a file without a meta bucket (or a new, empty one) to
// version 1: it creates the meta bucket and any missing record bucket.
func migrateV0(tx *bolt.Tx) error {
	for _, name := range buckets() {
		if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

// migrateV1 brings a version 1 file to version 2: pauses and policy
// overrides get their notes (when each was set, by whom and why), in
// buckets of their own, so the paused and policies buckets keep their
// records; those set before have none. Hold records may have their author.
func migrateV1(tx *bolt.Tx) error {
	for _, name := range []string{bucketPauseNotes, bucketPolicyNotes} {
		if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

// upgrade checks the schema and, when the file is older than steps know,
// migrates it in one write transaction. An up-to-date file is only read.
func (s *Store) upgrade(steps []migration) error {
	upToDate := false
	err := s.view(func(tx *bolt.Tx) error {
		v, err := readSchema(tx, s.path, len(steps))
		if err != nil || v < len(steps) {
			return err
		}
		upToDate = true
		return checkPresent(tx, s.path)
	})
	if err != nil || upToDate {
		return err
	}
	var stepErr error
	err = s.guard(func() error {
		return s.db.Update(func(tx *bolt.Tx) error {
			stepErr = migrate(tx, s.path, steps)
			return stepErr
		})
	})
	if err != nil && stepErr == nil && !errors.Is(err, ErrCorrupt) {
		// The commit failed: the file is as it was.
		return fmt.Errorf("state file %s: migrate: %w", s.path, err)
	}
	return err
}

// migrate runs the steps from the file's version up to len(steps), records
// the new version and checks that every bucket is there.
func migrate(tx *bolt.Tx, path string, steps []migration) error {
	v, err := readSchema(tx, path, len(steps))
	if err != nil {
		return err
	}
	for from := v; from < len(steps); from++ {
		if err := steps[from](tx); err != nil {
			return fmt.Errorf("state file %s: migrate schema version %d to %d: %w", path, from, from+1, err)
		}
	}
	if v < len(steps) {
		b := tx.Bucket([]byte(bucketMeta))
		if b == nil {
			return fmt.Errorf("state file %s: migrate schema version %d to %d: no bucket %s", path, v, len(steps), bucketMeta)
		}
		if err := b.Put([]byte(keyVersion), strconv.AppendInt(nil, int64(len(steps)), 10)); err != nil {
			return fmt.Errorf("state file %s: write schema version: %w", path, err)
		}
	}
	return checkPresent(tx, path)
}

// readSchema returns the file's schema version: that of the meta bucket, or
// 0 without one. It refuses a version newer than known and a file with a
// top-level entry that is not one of the schema's buckets (not a driftwatch
// state file, or damaged).
func readSchema(tx *bolt.Tx, path string, known int) (int, error) {
	v := 0
	if meta := tx.Bucket([]byte(bucketMeta)); meta != nil {
		raw := meta.Get([]byte(keyVersion))
		if raw == nil {
			return 0, corrupt(path, fmt.Errorf("bucket %s: no key %s", bucketMeta, keyVersion))
		}
		n, err := strconv.ParseUint(string(raw), 10, 31)
		if err != nil {
			return 0, corrupt(path, fmt.Errorf("bucket %s key %s: %w", bucketMeta, keyVersion, err))
		}
		v = int(n)
	}
	if v > known {
		return 0, fmt.Errorf("state file %s: %w: schema version %d, this driftwatch knows up to %d", path, ErrNewerSchema, v, known)
	}
	valid := make(map[string]bool)
	for _, name := range buckets() {
		valid[name] = true
	}
	c := tx.Cursor()
	for k, val := c.First(); k != nil; k, val = c.Next() {
		if val != nil || !valid[string(k)] {
			return 0, corrupt(path, fmt.Errorf("unexpected top-level entry %q: not a driftwatch state file", k))
		}
	}
	return v, nil
}

// checkPresent reports a missing bucket.
func checkPresent(tx *bolt.Tx, path string) error {
	for _, name := range buckets() {
		if tx.Bucket([]byte(name)) == nil {
			return corrupt(path, fmt.Errorf("no bucket %s", name))
		}
	}
	return nil
}

// bbolt's on-disk format (file format version 2, unchanged since 2014), read
// by preflight. Integers are in the machine's byte order.
const (
	boltMagic   = 0xED0CDAED
	boltVersion = 2
	// boltPageHeader is a page's header: id u64, flags u16, count u16,
	// overflow u32.
	boltPageHeader = 16
	// boltMetaLen is the meta record after the header: magic, version,
	// page size and flags u32; root page, sequence, freelist page, page
	// high-water mark, txid and checksum u64. The checksum is FNV-1a 64 of
	// the bytes before it.
	boltMetaLen      = 64
	boltMetaChecksum = 56
)

// boltMeta is what preflight needs of a meta page.
type boltMeta struct {
	pageSize uint64
	pgid     uint64
	txid     uint64
}

// readBoltMeta decodes the meta page at off; ok is false unless it is a
// valid one.
func readBoltMeta(r io.ReaderAt, off int64) (m boltMeta, ok bool) {
	var buf [boltPageHeader + boltMetaLen]byte
	if _, err := r.ReadAt(buf[:], off); err != nil {
		return boltMeta{}, false
	}
	b := buf[boltPageHeader:]
	e := binary.NativeEndian
	if e.Uint32(b[0:]) != boltMagic || e.Uint32(b[4:]) != boltVersion {
		return boltMeta{}, false
	}
	h := fnv.New64a()
	_, _ = h.Write(b[:boltMetaChecksum])
	if h.Sum64() != e.Uint64(b[boltMetaChecksum:]) {
		return boltMeta{}, false
	}
	return boltMeta{pageSize: uint64(e.Uint32(b[8:])), pgid: e.Uint64(b[40:]), txid: e.Uint64(b[48:])}, true
}

// preflight reports a truncated state file before bbolt maps it: bbolt
// panics reading a page past the end of the file, and its mapping then keeps
// the file locked until the process exits. It reads the newest valid meta
// page and checks that the file holds every page below its high-water mark.
// It only ever refuses a file: what it cannot judge (no valid meta page, an
// unreadable file, a symbolic link) is left to bbolt and the private open
// it goes through, which refuses a link with a clear error; so a link is
// never followed here either.
func preflight(path string) error {
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
		return nil
	}
	best, found := readBoltMeta(f, 0)
	if found {
		if m1, ok := readBoltMeta(f, int64(best.pageSize)); ok && m1.txid > best.txid {
			best = m1
		}
	} else {
		// Page 0 is damaged: find page 1 as bbolt does, trying each page
		// size from 1KiB to 16MiB.
		for ps := uint64(1 << 10); ps <= 1<<24; ps <<= 1 {
			if m1, ok := readBoltMeta(f, int64(ps)); ok && m1.pageSize == ps {
				best, found = m1, true
				break
			}
		}
	}
	if !found {
		return nil
	}
	size := uint64(st.Size())
	if need := best.pgid * best.pageSize; size < need || size < 2*best.pageSize {
		return corrupt(path, fmt.Errorf("truncated: %d bytes, its pages need %d", size, max(need, 2*best.pageSize)))
	}
	return nil
}

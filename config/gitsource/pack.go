package gitsource

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// largeObject is the size past which the object store reads an object
// from its pack as it is read (a checkout copies it to its file), instead
// of inflating it whole into memory first.
const largeObject = 1 << 20

// checkPack reads the pack in r from its start to its last object, in
// constant memory, and refuses it (with ErrTooLarge) when an object
// inflates to more than limit bytes, or a delta builds one larger than
// that: go-git holds each object whole while it indexes a pack, and a
// pack of a few megabytes can inflate to gigabytes (a 4.5 MiB repository
// holding 1 GiB of zeros took 3.2 GiB of heap and 46 s before the
// checkout's limit refused it). An object's inflated size is the one its
// header declares (go-git's scanner refuses data longer than declared);
// a delta's target size is the second number of its data.
func checkPack(r io.Reader, limit int64) error {
	sc := packfile.NewScanner(r)
	_, count, err := sc.Header()
	if err != nil {
		return fmt.Errorf("read pack: %w", err)
	}
	for i := range count {
		h, err := sc.NextObjectHeader()
		if err != nil {
			return fmt.Errorf("read pack: object %d: %w", i, err)
		}
		if h.Length > limit {
			return fmt.Errorf("a %s object of %d bytes, more than %d (maxObjectBytes): %w", h.Type, h.Length, limit, ErrTooLarge)
		}
		d := &deltaHead{}
		if _, _, err := sc.NextObject(d); err != nil {
			return fmt.Errorf("read pack: object %d: %w", i, err)
		}
		if h.Type.IsDelta() {
			target, err := d.targetSize()
			if err != nil {
				return fmt.Errorf("read pack: object %d: %w", i, err)
			}
			if target > limit {
				return fmt.Errorf("a delta building an object of %d bytes, more than %d (maxObjectBytes): %w", target, limit, ErrTooLarge)
			}
		}
	}
	return nil
}

// deltaHead discards what it is written but its first bytes: the head of
// a delta, two variable-length numbers (the base's size, the target's).
type deltaHead struct {
	head [20]byte
	n    int
}

func (d *deltaHead) Write(p []byte) (int, error) {
	d.n += copy(d.head[d.n:], p)
	return len(p), nil
}

// targetSize decodes the delta's target size: git writes both sizes as
// little-endian base-128 numbers, encoding/binary's unsigned varints.
func (d *deltaHead) targetSize() (int64, error) {
	b := d.head[:d.n]
	_, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, errors.New("delta header cut short")
	}
	target, m := binary.Uvarint(b[n:])
	if m <= 0 {
		return 0, errors.New("delta header cut short")
	}
	return int64(min(target, 1<<62)), nil
}

// Package pack keeps small byte strings that look alike (the JSON or
// protobuf encodings of the objects of one kind) compressed against a
// dictionary: the first string of their family. Objects of one kind share
// their field names, most values and their layout, so an object of a few
// hundred bytes that differs from the dictionary in names and a few values
// packs to a few dozen. The compression is S2 (github.com/klauspost/compress)
// with a dictionary; packing and unpacking take a few microseconds.
package pack

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/s2"
)

// MaxSample is the most of a sample a dictionary keeps (its first bytes).
const MaxSample = 16 << 10

// ErrCorrupt is wrapped by every error of Unpack: the input is not
// something the Dict packed.
var ErrCorrupt = errors.New("pack: corrupt packed bytes")

// Dict packs and unpacks the strings of one family against a dictionary
// made from a sample of it. A Dict is never changed once made (but for the
// largest length it packed, which only grows) and is safe for concurrent
// use. Bytes packed by one Dict unpack only with that Dict.
//
// A Dict costs its sample (up to MaxSample) and, once its Pack packed
// something, a 32 KiB match table (a Batch's table goes with the Batch).
type Dict struct {
	// sample is the dictionary's content (with room for s2 past it).
	sample []byte
	// d is nil when the sample was too short for a dictionary: the
	// strings are then compressed on their own.
	d *s2.Dict
	// largest is the greatest length Pack was given: an unpacked length
	// beyond it is corrupt input (and never allocated).
	largest atomic.Int64
}

// NewDict returns a Dict whose dictionary is sample (its first MaxSample
// bytes). The Dict keeps a copy: the caller may reuse sample.
func NewDict(sample []byte) *Dict {
	sample = sample[:min(len(sample), MaxSample)]
	// s2 wants 16 bytes of room past the dictionary; the copy has them.
	own := append(make([]byte, 0, len(sample)+16), sample...)
	return &Dict{sample: own, d: newS2Dict(own)}
}

// newS2Dict returns the s2 dictionary of sample (nil when it is too short).
// Equal samples give dictionaries that pack and unpack alike.
func newS2Dict(sample []byte) *s2.Dict {
	return s2.MakeDict(sample, sample[:min(len(sample), 32)])
}

// Pack returns b packed, in a new slice of its exact length (nil for an
// empty b). b is not changed or kept.
func (d *Dict) Pack(b []byte) []byte {
	return exact(d.AppendPack(nil, b))
}

// AppendPack appends b packed to dst and returns the extended slice, which
// may have spare capacity (Pack returns one that has none). With a nil dst
// the result is the encoder's own buffer: nothing is copied, for a caller
// that copies it where it keeps it.
func (d *Dict) AppendPack(dst, b []byte) []byte { return d.appendPack(d.d, dst, b) }

// appendPack appends b packed against enc (d's dictionary, or a copy of
// it) to dst.
func (d *Dict) appendPack(enc *s2.Dict, dst, b []byte) []byte {
	if len(b) == 0 {
		return dst
	}
	for n := int64(len(b)); ; {
		cur := d.largest.Load()
		if n <= cur || d.largest.CompareAndSwap(cur, n) {
			break
		}
	}
	var out []byte
	if enc != nil {
		out = enc.Encode(nil, b)
	} else {
		out = s2.Encode(nil, b)
	}
	if dst == nil {
		return out
	}
	return append(dst, out...)
}

// exact returns b in a new slice of its exact length (nil for an empty b).
func exact(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// Batch packs strings as its Dict's Pack does, with match tables of its
// own that go with the Batch: for a Dict that packs many strings at once
// now and then (a desired state, a rendering) and otherwise only unpacks,
// so that it never keeps the 32 KiB of tables. A Batch is not safe for
// concurrent use.
type Batch struct {
	dict *Dict
	enc  *s2.Dict
}

// Batch returns a new Batch of d.
func (d *Dict) Batch() *Batch {
	b := &Batch{dict: d}
	if d.d != nil {
		b.enc = newS2Dict(d.sample)
	}
	return b
}

// Pack is Dict.Pack, through the Batch's tables; its Dict unpacks the
// result.
func (b *Batch) Pack(p []byte) []byte { return exact(b.dict.appendPack(b.enc, nil, p)) }

// Dict returns the Dict the Batch packs for.
func (b *Batch) Dict() *Dict { return b.dict }

// Unpack returns the bytes p was packed from, in a new slice the caller
// owns (nil for an empty p). Input that d did not pack gives an error that
// wraps ErrCorrupt, never a panic; most such input is detected, but the
// format has no checksum, so damaged bytes may also unpack to other bytes.
func (d *Dict) Unpack(p []byte) ([]byte, error) {
	if len(p) == 0 {
		return nil, nil
	}
	n, err := s2.DecodedLen(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if n == 0 || int64(n) > d.largest.Load() {
		return nil, fmt.Errorf("%w: length %d", ErrCorrupt, n)
	}
	var out []byte
	if d.d != nil {
		out, err = d.d.Decode(nil, p)
	} else {
		out, err = s2.Decode(nil, p)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return out, nil
}

// Dicts holds one Dict per key (a kind), each made from the first sample
// given for its key. The zero Dicts is ready to use; it is safe for
// concurrent use and must not be copied once used.
type Dicts[K comparable] struct {
	mu sync.Mutex
	m  map[K]*Dict
}

// For returns the Dict of key, made from sample when key has none yet.
func (s *Dicts[K]) For(key K, sample []byte) *Dict {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.m[key]; ok {
		return d
	}
	if s.m == nil {
		s.m = make(map[K]*Dict)
	}
	d := NewDict(sample)
	s.m[key] = d
	return d
}

// Len returns the number of keys that have a Dict.
func (s *Dicts[K]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

package pack

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// object returns the JSON of object i of a family that differs in its
// name and a few values, like the objects of one kind.
func object(i int) []byte {
	return fmt.Appendf(nil, `{"metadata":{"creationTimestamp":"2026-12-01T21:46:%02dZ","labels":{"app":"sts-%05d","driftwatch.io/application":"mixed-sts"}},`+
		`"spec":{"podManagementPolicy":"OrderedReady","replicas":%d,"revisionHistoryLimit":10,"selector":{"matchLabels":{"app":"sts-%05d"}},"serviceName":"sts-%05d",`+
		`"template":{"metadata":{"labels":{"app":"sts-%05d"}},"spec":{"containers":[{"env":[{"name":"MODE","value":"primary"}],"image":"registry.example/db:3.2.0",`+
		`"imagePullPolicy":"IfNotPresent","name":"db","ports":[{"containerPort":5432,"name":"sql","protocol":"TCP"}],"resources":{},`+
		`"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always"}}}}`,
		i%60, i, i%3, i, i, i)
}

func TestRoundTrip(t *testing.T) {
	long := bytes.Repeat([]byte("abcdefghij"), 10000) // beyond MaxSample
	rnd := make([]byte, 5000)
	for i := range rnd {
		rnd[i] = byte(rand.N(256))
	}
	for _, tc := range []struct {
		name   string
		sample []byte
	}{
		{"object sample", object(0)},
		{"no sample", nil},
		{"short sample", []byte("{}")},
		{"long sample", long},
		{"random sample", rnd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDict(tc.sample)
			for _, in := range [][]byte{object(0), object(1), object(12345), []byte("x"), []byte("{}"), long, rnd, tc.sample} {
				if len(in) == 0 {
					continue
				}
				p := d.Pack(in)
				if len(p) == 0 || cap(p) != len(p) {
					t.Fatalf("packed %d bytes to len %d cap %d", len(in), len(p), cap(p))
				}
				out, err := d.Unpack(p)
				if err != nil {
					t.Fatalf("unpack %d bytes: %v", len(in), err)
				}
				if !bytes.Equal(out, in) {
					t.Fatalf("round trip of %d bytes gave %d different bytes", len(in), len(out))
				}
			}
		})
	}
}

func TestEmpty(t *testing.T) {
	d := NewDict(object(0))
	if p := d.Pack(nil); p != nil {
		t.Errorf("Pack(nil) = %v", p)
	}
	if p := d.Pack([]byte{}); p != nil {
		t.Errorf("Pack(empty) = %v", p)
	}
	if out, err := d.Unpack(nil); out != nil || err != nil {
		t.Errorf("Unpack(nil) = %v, %v", out, err)
	}
}

// TestPacksSmall: an object of the dictionary's family packs to a small
// fraction of its size.
func TestPacksSmall(t *testing.T) {
	d := NewDict(object(0))
	in := object(4321)
	if p := d.Pack(in); len(p)*8 > len(in) {
		t.Errorf("%d bytes packed to %d", len(in), len(p))
	}
}

// TestSampleCopied: the dictionary is a copy; changing the sample after
// NewDict changes nothing.
func TestSampleCopied(t *testing.T) {
	sample := object(0)
	d := NewDict(sample)
	p := d.Pack(object(1))
	for i := range sample {
		sample[i] = 'x'
	}
	out, err := d.Unpack(p)
	if err != nil || !bytes.Equal(out, object(1)) {
		t.Fatalf("after the sample changed: %q, %v", out, err)
	}
}

// TestCorrupt: damaged, truncated, foreign and random input gives an
// error wrapping ErrCorrupt or (the format has no checksum) other bytes,
// never a panic; a length beyond anything packed is refused before any
// allocation.
func TestCorrupt(t *testing.T) {
	d := NewDict(object(0))
	p := d.Pack(object(7))
	other := NewDict(object(0))
	_ = other.Pack(object(7))
	cases := map[string][]byte{
		"truncated":  p[:len(p)/2],
		"one byte":   p[:1],
		"bad header": {0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"huge":       {0xff, 0xff, 0xff, 0xff, 0x0f, 0x00},
		"plain json": object(7),
	}
	for name, in := range cases {
		if _, err := d.Unpack(in); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := NewDict(nil).Unpack(p); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a Dict that never packed: err %v, want ErrCorrupt", err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		in := append([]byte(nil), p...)
		switch r.IntN(3) {
		case 0:
			in[r.IntN(len(in))] ^= byte(1 + r.IntN(255))
		case 1:
			in = in[:r.IntN(len(in))]
		default:
			in = make([]byte, 1+r.IntN(64))
			for i := range in {
				in[i] = byte(r.IntN(256))
			}
		}
		_, _ = d.Unpack(in) // must not panic
	}
}

func FuzzUnpack(f *testing.F) {
	d := NewDict(object(0))
	f.Add(d.Pack(object(1)))
	f.Add(d.Pack([]byte("x")))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := d.Unpack(in)
		if err == nil && len(in) > 0 && len(out) == 0 {
			t.Fatalf("no error and nothing unpacked from %x", in)
		}
	})
}

func TestDicts(t *testing.T) {
	var s Dicts[string]
	a := s.For("a", object(0))
	if s.For("a", []byte("something else entirely")) != a {
		t.Fatal("a second sample made a new Dict")
	}
	var wg sync.WaitGroup
	got := make([]*Dict, 8)
	for i := range got {
		wg.Go(func() { got[i] = s.For("b", object(i)) })
	}
	wg.Wait()
	for _, d := range got {
		if d != got[0] || d == a {
			t.Fatal("concurrent For gave different Dicts")
		}
	}
	if s.Len() != 2 {
		t.Errorf("Len %d", s.Len())
	}
}

// TestConcurrent: one Dict packs and unpacks from several goroutines
// (run with -race).
func TestConcurrent(t *testing.T) {
	d := NewDict(object(0))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				in := object(g*1000 + i)
				out, err := d.Unpack(d.Pack(in))
				if err != nil || !bytes.Equal(out, in) {
					t.Errorf("round trip: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkPack(b *testing.B) {
	d := NewDict(object(0))
	in := object(4321)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n = len(d.Pack(in))
	}
	b.ReportMetric(float64(n), "packed-bytes")
}

func BenchmarkUnpack(b *testing.B) {
	d := NewDict(object(0))
	in := object(4321)
	p := d.Pack(in)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Unpack(p); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBatch: a Batch packs exactly as its Dict does, and the Dict unpacks
// what it packed; with a sample too short for a dictionary too.
func TestBatch(t *testing.T) {
	for _, sample := range [][]byte{object(0), []byte("{}"), nil} {
		d := NewDict(sample)
		b := d.Batch()
		if b.Dict() != d {
			t.Fatal("Batch.Dict is another Dict")
		}
		for i := range 50 {
			in := object(i)
			p := b.Pack(in)
			if want := d.Pack(in); !bytes.Equal(p, want) {
				t.Fatalf("sample %q, object %d: the Batch packed %x, the Dict %x", sample, i, p, want)
			}
			out, err := d.Unpack(p)
			if err != nil || !bytes.Equal(out, in) {
				t.Fatalf("sample %q, object %d: round trip %q, %v", sample, i, out, err)
			}
		}
		if p := b.Pack(nil); p != nil {
			t.Errorf("Batch.Pack(nil) = %v", p)
		}
	}
	// A Dict whose strings all went through Batches unpacks them without
	// ever packing one itself.
	d := NewDict(object(0))
	p := d.Batch().Pack(object(3))
	if out, err := d.Unpack(p); err != nil || !bytes.Equal(out, object(3)) {
		t.Fatalf("unpack of a Batch's: %q, %v", out, err)
	}
}

// TestAppendPack: AppendPack appends what Pack returns.
func TestAppendPack(t *testing.T) {
	d := NewDict(object(0))
	in := object(9)
	want := d.Pack(in)
	if got := d.AppendPack(nil, in); !bytes.Equal(got, want) {
		t.Fatalf("AppendPack(nil) = %x, want %x", got, want)
	}
	got := d.AppendPack([]byte("prefix"), in)
	if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want) {
		t.Fatalf("AppendPack(prefix) = %q", got)
	}
	if got := d.AppendPack([]byte("x"), nil); string(got) != "x" {
		t.Fatalf("AppendPack of nothing = %q", got)
	}
}

package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"k8s.io/client-go/rest"
)

// requestDurationMetric is the apiserver's request latency histogram.
const requestDurationMetric = "apiserver_request_duration_seconds"

// Verb classes of the apiserver latency table.
const (
	VerbsMutating = "mutating"
	VerbsRead     = "read"
)

// verbClass returns the class of an apiserver verb label, or "" for verbs
// the table leaves out (WATCH, CONNECT, DELETECOLLECTION...).
func verbClass(verb string) string {
	switch strings.ToUpper(verb) {
	case "POST", "PUT", "PATCH", "DELETE", "APPLY":
		return VerbsMutating
	case "GET", "LIST":
		return VerbsRead
	}
	return ""
}

// Histogram is a cumulative histogram summed over series: the count of
// observations at or below each upper bound, and the total count.
type Histogram struct {
	Count   uint64
	Buckets map[float64]uint64
}

// add sums the series h into the histogram.
func (h *Histogram) add(m *dto.Histogram) {
	if h.Buckets == nil {
		h.Buckets = make(map[float64]uint64)
	}
	h.Count += m.GetSampleCount()
	for _, b := range m.GetBucket() {
		h.Buckets[b.GetUpperBound()] += b.GetCumulativeCount()
	}
}

// Sub returns h minus an earlier scrape of the same series (bounds missing
// from old count as zero; a negative delta, from a restarted server, as
// zero).
func (h Histogram) Sub(old Histogram) Histogram {
	d := Histogram{Buckets: make(map[float64]uint64, len(h.Buckets))}
	sub := func(a, b uint64) uint64 {
		if b > a {
			return 0
		}
		return a - b
	}
	d.Count = sub(h.Count, old.Count)
	for ub, n := range h.Buckets {
		d.Buckets[ub] = sub(n, old.Buckets[ub])
	}
	return d
}

// Quantile returns the q-quantile (0 < q < 1) in seconds the way
// Prometheus' histogram_quantile does: find the bucket holding the rank and
// interpolate linearly inside it; a rank in the +Inf bucket gives the
// highest finite bound. It returns NaN for an empty histogram.
func (h Histogram) Quantile(q float64) float64 {
	if h.Count == 0 || q < 0 || q > 1 {
		return math.NaN()
	}
	type bucket struct {
		ub float64
		n  float64
	}
	bs := make([]bucket, 0, len(h.Buckets)+1)
	for ub, n := range h.Buckets {
		if !math.IsInf(ub, +1) {
			bs = append(bs, bucket{ub, float64(n)})
		}
	}
	slices.SortFunc(bs, func(a, b bucket) int {
		switch {
		case a.ub < b.ub:
			return -1
		case a.ub > b.ub:
			return 1
		}
		return 0
	})
	bs = append(bs, bucket{math.Inf(+1), float64(h.Count)})
	// Summed or subtracted scrapes can break monotonicity by a little.
	for i := 1; i < len(bs); i++ {
		bs[i].n = max(bs[i].n, bs[i-1].n)
	}
	if len(bs) < 2 {
		return math.NaN()
	}
	rank := q * bs[len(bs)-1].n
	b, _ := slices.BinarySearchFunc(bs[:len(bs)-1], rank, func(e bucket, r float64) int {
		if e.n >= r {
			return 1
		}
		return -1
	})
	if b == len(bs)-1 {
		return bs[len(bs)-2].ub
	}
	if b == 0 && bs[0].ub <= 0 {
		return bs[0].ub
	}
	start, end, count := 0.0, bs[b].ub, bs[b].n
	if b > 0 {
		start = bs[b-1].ub
		count -= bs[b-1].n
		rank -= bs[b-1].n
	}
	if count == 0 {
		return end
	}
	return start + (end-start)*(rank/count)
}

// RequestDurations is one scrape of an apiserver's request latency
// histogram, summed by verb class (VerbsMutating, VerbsRead).
type RequestDurations map[string]Histogram

// ParseRequestDurations reads a /metrics exposition in format (see
// expfmt.ResponseFormat) and sums apiserver_request_duration_seconds by
// verb class.
func ParseRequestDurations(r io.Reader, format expfmt.Format) (RequestDurations, error) {
	return parseRequestDurations(r, format, true)
}

// parseRequestDurations is ParseRequestDurations; filter false parses
// every family of a text exposition (the benchmark's baseline).
func parseRequestDurations(r io.Reader, format expfmt.Format, filter bool) (RequestDurations, error) {
	if filter && format.FormatType() == expfmt.TypeTextPlain {
		// An apiserver's exposition is megabytes, and the family is
		// about a tenth of it: parsing the rest would put tens of
		// megabytes of garbage on the measured process's heap at
		// every span it measures.
		r = familyLines(r, requestDurationMetric)
	}
	dec := expfmt.NewDecoder(r, format)
	out := RequestDurations{}
	for {
		var mf dto.MetricFamily
		err := dec.Decode(&mf)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("parse metrics: %w", err)
		}
		if mf.GetName() != requestDurationMetric || mf.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		for _, m := range mf.GetMetric() {
			class := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "verb" {
					class = verbClass(l.GetValue())
				}
			}
			if class == "" || m.GetHistogram() == nil {
				continue
			}
			h := out[class]
			h.add(m.GetHistogram())
			out[class] = h
		}
	}
}

// familyLines returns the lines of a text exposition read from r that
// belong to the metric family name: its samples (name, name_bucket,
// name_sum and name_count) and its HELP and TYPE comments. The others are
// skipped as read, without being copied.
func familyLines(r io.Reader, name string) io.Reader {
	return &familyReader{in: bufio.NewReaderSize(r, 64<<10), name: name}
}

// familyReader is familyLines' reader.
type familyReader struct {
	in   *bufio.Reader
	name string
	line []byte // the line being assembled when it is longer than the buffer
	out  []byte // what a Read still has to return of the last line kept
	err  error
}

func (f *familyReader) Read(p []byte) (int, error) {
	for len(f.out) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		chunk, err := f.in.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			f.line = append(f.line, chunk...)
			continue
		}
		f.err = err
		line := chunk
		if len(f.line) > 0 {
			f.line = append(f.line, chunk...)
			line = f.line
		}
		if inFamily(line, f.name) {
			f.out = line
		}
		if len(f.out) == 0 {
			f.line = f.line[:0]
		}
	}
	n := copy(p, f.out)
	f.out = f.out[n:]
	if len(f.out) == 0 {
		f.line = f.line[:0]
	}
	return n, nil
}

// inFamily reports whether a line of a text exposition belongs to the
// family name.
func inFamily(line []byte, name string) bool {
	if rest, ok := bytes.CutPrefix(line, []byte("# HELP ")); ok {
		line = rest
	} else if rest, ok := bytes.CutPrefix(line, []byte("# TYPE ")); ok {
		line = rest
	} else if len(line) > 0 && line[0] == '#' {
		return false
	}
	rest, ok := bytes.CutPrefix(line, []byte(name))
	if !ok {
		return false
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if r, ok := bytes.CutPrefix(rest, []byte(suffix)); ok {
			rest = r
			break
		}
	}
	return len(rest) > 0 && (rest[0] == '{' || rest[0] == ' ' || rest[0] == '\t')
}

// ScrapeRequestDurations GETs the apiserver's own /metrics with rc (an
// admin config) and sums its request latency histogram by verb class.
func ScrapeRequestDurations(ctx context.Context, rc *rest.Config) (RequestDurations, error) {
	client, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("scrape %s/metrics: client: %w", rc.Host, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(rc.Host, "/")+"/metrics", nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s/metrics: %w", rc.Host, err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s/metrics: %w", rc.Host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s/metrics: %s", rc.Host, resp.Status)
	}
	d, err := ParseRequestDurations(resp.Body, expfmt.ResponseFormat(resp.Header))
	if err != nil {
		return nil, fmt.Errorf("scrape %s/metrics: %w", rc.Host, err)
	}
	return d, nil
}

// apiserverLatency is one apiserver's request latency for one verb class
// over a measured span (the difference of two scrapes), with percentiles
// interpolated inside the histogram's buckets.
type apiserverLatency struct {
	Cluster string     `json:"cluster"`
	Verbs   string     `json:"verbs"`
	N       uint64     `json:"n"`
	P50     msDuration `json:"p50Ms"`
	P99     msDuration `json:"p99Ms"`
}

// apiserverLatencies returns the latency rows of the span between before
// and after, per cluster (in the order given) and verb class.
func apiserverLatencies(clusters []string, before, after map[string]RequestDurations) []apiserverLatency {
	var out []apiserverLatency
	for _, c := range clusters {
		for _, class := range []string{VerbsMutating, VerbsRead} {
			d := after[c][class].Sub(before[c][class])
			row := apiserverLatency{Cluster: c, Verbs: class, N: d.Count}
			if d.Count > 0 {
				row.P50 = secondsDuration(d.Quantile(0.5))
				row.P99 = secondsDuration(d.Quantile(0.99))
			}
			out = append(out, row)
		}
	}
	return out
}

func secondsDuration(s float64) msDuration {
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return 0
	}
	return msDuration(time.Duration(s * float64(time.Second)).Round(time.Microsecond))
}

// apiserverSLO is the Kubernetes API call latency SLO for mutating calls
// (p99 per resource and verb; here over all of them).
const apiserverSLO = time.Second

package chartrepo

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkPollNothingNew measures what a poll that finds nothing new
// costs the hub: a Fetch whose version is already cached downloads and
// reads the index, then nothing more. Beside it, the floor: the same
// index downloaded and read whole by a plain client; and what parsing an
// index that did change costs. Indexes of 100 and
// 10,000 entries (the second about the size of a large public
// repository's: 500 charts of 20 versions).
//
//	go test -run '^$' -bench PollNothingNew -benchmem ./config/chartrepo/
func BenchmarkPollNothingNew(b *testing.B) {
	for _, size := range []struct{ charts, versions int }{{5, 20}, {500, 20}} {
		archive := makeChart(b, "chart-0", "1.0.19", "1.0", 0)
		var idx strings.Builder
		idx.WriteString("apiVersion: v1\nentries:\n")
		for c := range size.charts {
			fmt.Fprintf(&idx, "  chart-%d:\n", c)
			for v := range size.versions {
				fmt.Fprintf(&idx, "  - apiVersion: v2\n    name: chart-%d\n    version: 1.0.%d\n    appVersion: \"1.0\"\n    description: A chart of the benchmark's repository, with a line of text as real ones have.\n    urls:\n    - charts/chart-%d-1.0.%d.tgz\n    digest: %s\n    created: \"2026-01-01T00:00:00Z\"\n",
					c, v, c, v, strings.TrimPrefix(sha(archive), "sha256:"))
			}
		}
		index := []byte(idx.String())
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			switch req.URL.Path {
			case "/repo/index.yaml":
				_, _ = w.Write(index)
			case "/repo/charts/chart-0-1.0.19.tgz":
				_, _ = w.Write(archive)
			default:
				http.NotFound(w, req)
			}
		}))
		name := fmt.Sprintf("entries=%d", size.charts*size.versions)
		b.Run(name+"/floor", func(b *testing.B) {
			b.SetBytes(int64(len(index)))
			for b.Loop() {
				resp, err := http.Get(srv.URL + "/repo/index.yaml")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					b.Fatal(err)
				}
				_ = resp.Body.Close()
			}
		})
		b.Run(name+"/parse", func(b *testing.B) {
			// What a poll costs when the index did change: it is parsed
			// and the version picked again.
			b.SetBytes(int64(len(index)))
			for b.Loop() {
				if _, _, err := parseIndex(index, "chart-0"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/fetch", func(b *testing.B) {
			r, err := Open(Options{URL: srv.URL + "/repo", Chart: "chart-0", Version: "~1.0", CacheDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.Fetch(b.Context()); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(index)))
			for b.Loop() {
				rev, err := r.Fetch(b.Context())
				if err != nil || rev.Downloaded != 0 {
					b.Fatalf("fetch: %+v, %v", rev, err)
				}
			}
		})
		srv.Close()
	}
}

package e2etest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// ChartRepo is a Helm chart repository (index.yaml and chart archives)
// served over HTTP on loopback until the test ends, to which a test
// publishes chart versions.
type ChartRepo struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	archives map[string][]byte // by file name
	entries  []chartEntry
	down     bool
	// Requests counts the requests served, by path.
	requests map[string]int
}

// chartEntry is one published version in the index.
type chartEntry struct {
	name, version, appVersion, file, digest string
	created                                 time.Time
}

// NewChartRepo starts an empty chart repository.
func NewChartRepo(t testing.TB) *ChartRepo {
	t.Helper()
	r := &ChartRepo{t: t, archives: map[string][]byte{}, requests: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// URL is the repository's URL (what helm.repo names).
func (r *ChartRepo) URL() string { return r.srv.URL + "/charts" }

// Down makes the repository answer 503 to everything (true) or serve
// again (false).
func (r *ChartRepo) Down(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = down
}

// Requests returns how many requests asked for the file name (index.yaml,
// web-1.0.0.tgz).
func (r *ChartRepo) Requests(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[name]
}

// Publish adds version of chart name to the repository: its Chart.yaml
// is made here, files are the chart's other files (templates/cm.yaml,
// values.yaml) by path inside the chart.
func (r *ChartRepo) Publish(name, version, appVersion string, files map[string]string) {
	r.t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	all := map[string]string{"Chart.yaml": fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\nappVersion: %q\n", name, version, appVersion)}
	for p, c := range files {
		all[p] = c
	}
	names := make([]string, 0, len(all))
	for p := range all {
		names = append(names, p)
	}
	slices.Sort(names)
	for _, p := range names {
		c := all[p]
		if err := tw.WriteHeader(&tar.Header{Name: path.Join(name, p), Mode: 0o644, Size: int64(len(c)), Typeflag: tar.TypeReg, ModTime: time.Unix(1, 0)}); err != nil {
			r.t.Fatal(err)
		}
		if _, err := tw.Write([]byte(c)); err != nil {
			r.t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		r.t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		r.t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	file := fmt.Sprintf("%s-%s.tgz", name, version)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.archives[file] = buf.Bytes()
	r.entries = append(r.entries, chartEntry{name: name, version: version, appVersion: appVersion, file: file,
		digest: hex.EncodeToString(sum[:]), created: time.Date(2026, 1, 1, 0, 0, len(r.entries), 0, time.UTC)})
}

// Digest returns the "sha256:<hex>" digest of a published version's
// archive, "" if it was not published.
func (r *ChartRepo) Digest(name, version string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.entries {
		if e.name == name && e.version == version {
			return "sha256:" + e.digest
		}
	}
	return ""
}

// serve serves /charts/index.yaml and /charts/<archive>.
func (r *ChartRepo) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := strings.TrimPrefix(req.URL.Path, "/charts/")
	r.requests[name]++
	if r.down {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	if name == "index.yaml" {
		var b strings.Builder
		b.WriteString("apiVersion: v1\nentries:\n")
		byName := map[string][]chartEntry{}
		var order []string
		for _, e := range r.entries {
			if byName[e.name] == nil {
				order = append(order, e.name)
			}
			byName[e.name] = append(byName[e.name], e)
		}
		for _, n := range order {
			fmt.Fprintf(&b, "  %s:\n", n)
			for _, e := range byName[n] {
				fmt.Fprintf(&b, "    - apiVersion: v2\n      name: %s\n      version: %s\n      appVersion: %q\n      digest: %s\n      created: %s\n      urls: [%s]\n",
					e.name, e.version, e.appVersion, e.digest, e.created.Format(time.RFC3339), e.file)
			}
		}
		b.WriteString("generated: \"2026-01-01T00:00:00Z\"\n")
		w.Header().Set("Content-Type", "application/x-yaml")
		_, _ = w.Write([]byte(b.String()))
		return
	}
	data, ok := r.archives[name]
	if !ok {
		http.NotFound(w, req)
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	_, _ = w.Write(data)
}

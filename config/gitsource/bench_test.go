package gitsource

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkFetch fetches a repository of 1,000 manifest files (about 300
// bytes each, in 20 folders) over smart HTTP and file://: "cold" is a
// first Fetch into an empty cache, "noop" a Fetch with nothing new. It
// reports the bytes of the cache on disk (the bare repository and the
// checked-out tree) and the pack bytes downloaded per Fetch.
func BenchmarkFetch(b *testing.B) {
	f := newFixture(b)
	files := make(map[string]string, 1000)
	for i := range 1000 {
		files[fmt.Sprintf("apps/team-%02d/app-%04d.yaml", i%20, i)] = fmt.Sprintf(
			"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-%04d\n  namespace: team-%02d\n  labels: {app: app-%04d}\nspec:\n  replicas: %d\n  template:\n    spec:\n      containers:\n      - name: app\n        image: registry.example.com/app-%04d:1.%d.0\n%s",
			i, i%20, i, 1+i%3, i, i%7, strings.Repeat("# padding\n", 5))
	}
	f.commit("1,000 files", files)
	f.push()
	srv := startGitServer(b, f, "", "")
	for _, transport := range []string{"http", "file"} {
		u := srv.url("repo.git")
		if transport == "file" {
			u = f.fileURL()
		}
		b.Run(transport+"/cold", func(b *testing.B) {
			var disk, downloaded int64
			for b.Loop() {
				cache := b.TempDir()
				r, err := Open(Options{URL: u, Ref: "main", CacheDir: cache})
				if err != nil {
					b.Fatal(err)
				}
				rev, err := r.Fetch(b.Context())
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				disk += diskBytes(b, cache)
				downloaded += rev.Downloaded
				b.StartTimer()
			}
			b.ReportMetric(float64(disk)/float64(b.N), "disk-bytes/op")
			b.ReportMetric(float64(downloaded)/float64(b.N), "pack-bytes/op")
		})
		b.Run(transport+"/noop", func(b *testing.B) {
			cache := b.TempDir()
			r, err := Open(Options{URL: u, Ref: "main", CacheDir: cache})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.Fetch(b.Context()); err != nil {
				b.Fatal(err)
			}
			var downloaded int64
			for b.Loop() {
				rev, err := r.Fetch(b.Context())
				if err != nil {
					b.Fatal(err)
				}
				downloaded += rev.Downloaded
			}
			b.ReportMetric(float64(diskBytes(b, cache)), "disk-bytes")
			b.ReportMetric(float64(downloaded)/float64(b.N), "pack-bytes/op")
		})
	}
}

// diskBytes is the apparent size of the files under dir.
func diskBytes(tb testing.TB, dir string) int64 {
	tb.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

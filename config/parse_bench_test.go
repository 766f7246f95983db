package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/internal/benchconfig"
)

// Parse time must grow linearly with the size of the file: compare
// cpu-ns/op of BenchmarkParse/1MB and /8MB (a ratio near 8), never a timed
// unit test. cpu-ns/op is the process's CPU time per op, which unlike ns/op
// does not grow when other processes compete for the cores.
//
//	go test -run '^$' -bench 'Parse|Check' -benchtime 3x ./config/

// benchClusters is the clusters section of the generated configs.
const benchClusters = `hub:
  id: bench
clusters:
  - id: dev
    kubeconfig: /kube/dev
    labels: {env: dev}
  - id: staging
    kubeconfig: /kube/staging
    labels: {env: staging}
  - id: prod
    kubeconfig: /kube/prod
    labels: {env: prod}
applications:
`

// benchConfig returns a valid config of at least size bytes.
func benchConfig(size int, anchors bool) []byte {
	var b strings.Builder
	b.WriteString(benchClusters)
	for i := 0; b.Len() < size; i++ {
		benchconfig.App(&b, i, anchors)
	}
	return []byte(b.String())
}

// benchApps returns a valid config of n applications.
func benchApps(n int) []byte {
	var b strings.Builder
	b.WriteString(benchClusters)
	for i := range n {
		benchconfig.App(&b, i, false)
	}
	return []byte(b.String())
}

// benchParse parses data once per op.
func benchParse(b *testing.B, data []byte) {
	b.SetBytes(int64(len(data)))
	defer reportCPU(b)()
	for b.Loop() {
		if _, err := Parse("bench.yaml", data, testOptions()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse parses generated configs of 1, 4 and 8 MB, the same with
// an anchor and an alias for every two applications, and a config of
// 10,000 applications.
func BenchmarkParse(b *testing.B) {
	for _, mb := range []int{1, 4, 8} {
		data := benchConfig(mb<<20, false)
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) { benchParse(b, data) })
	}
	for _, mb := range []int{1, 8} {
		data := benchConfig(mb<<20, true)
		b.Run(fmt.Sprintf("%dMB-anchors", mb), func(b *testing.B) { benchParse(b, data) })
	}
	data := benchApps(10000)
	b.Run("10000apps", func(b *testing.B) { benchParse(b, data) })
}

// BenchmarkCheck is what `driftwatch check` does with a file of 10,000
// applications, printing aside: Load, the clusters outlined in parallel,
// then per cluster the applications targeting it and its namespaces.
func BenchmarkCheck(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.yaml")
	if err := os.WriteFile(path, benchApps(10000), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Run("10000apps", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			cfg, err := Load(path, testOptions())
			if err != nil {
				b.Fatal(err)
			}
			compiled, err := OutlineClusters(cfg, cfg.ClusterInfos())
			if err != nil {
				b.Fatal(err)
			}
			objects := 0
			for i, cl := range cfg.Clusters {
				_ = cfg.AppsFor(cl.Info())
				objects += len(compiled[i])
				_ = cfg.Namespaces(cl.ID)
			}
			if objects == 0 {
				b.Fatal("no object compiled")
			}
		}
	})
}

// reportCPU adds a cpu-ns/op metric: process CPU time per op. Call the
// returned function after the loop.
func reportCPU(b *testing.B) func() {
	start := processCPU(b)
	return func() {
		if used := processCPU(b) - start; used > 0 && b.N > 0 {
			b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}

// BenchmarkSource5k is what a relaunch over one cluster and a source of
// 5,000 ConfigMaps waits for before the hub starts: Load (the manifests
// read, decoded and encoded) and the cluster's specs compiled. Compare
// -cpu 1,2: the documents' decoding, their encoding and the specs are
// spread over the cores.
//
//	go test -run '^$' -bench Source5k -benchtime 20x -cpu 1,2 ./config/
func BenchmarkSource5k(b *testing.B) {
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifests", "all.yaml"), []byte(benchconfig.ConfigMaps("bench", 5000)), 0o600); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "driftwatch.yaml")
	if err := os.WriteFile(path, []byte("clusters: [{id: c1, kubeconfig: /kube/c1}]\nsources: [{id: cms, path: manifests, clusters: [c1]}]\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	defer reportCPU(b)()
	for b.Loop() {
		cfg, err := Load(path, testOptions())
		if err != nil {
			b.Fatal(err)
		}
		specs, err := CompileCluster(cfg, ClusterInfo{ID: "c1"})
		if err != nil || len(specs) != 5001 {
			b.Fatalf("%d specs, %v", len(specs), err)
		}
	}
}

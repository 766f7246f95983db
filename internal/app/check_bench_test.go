package app

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/internal/benchconfig"
)

// BenchmarkCheckCommand is `driftwatch check` of a config of 10,000
// applications over three clusters (60,000 objects), kubeconfigs read
// and the plan printed, as a user runs it:
//
//	go test -run '^$' -bench CheckCommand -benchtime 5x ./internal/app/
//
// With DRIFTWATCH_BENCH_CONFIG_DIR set to a folder, the config
// (config.yaml) and its kubeconfigs are written there and kept, so that
// the command itself can be timed on the same file:
//
//	DRIFTWATCH_BENCH_CONFIG_DIR=/tmp/check10k go test -run '^$' -bench CheckCommand -benchtime 1x ./internal/app/
//	time driftwatch check -f /tmp/check10k/config.yaml > /dev/null
func BenchmarkCheckCommand(b *testing.B) {
	dir := b.TempDir()
	if keep := os.Getenv("DRIFTWATCH_BENCH_CONFIG_DIR"); keep != "" {
		if err := os.MkdirAll(keep, 0o700); err != nil {
			b.Fatal(err)
		}
		dir = keep
	}
	var cfg strings.Builder
	cfg.WriteString("hub:\n  id: bench\nclusters:\n")
	for i, c := range []string{"dev", "staging", "prod"} {
		kc := filepath.Join(dir, c)
		writeBenchKubeconfig(b, kc, c, 6441+i)
		fmt.Fprintf(&cfg, "  - id: %s\n    kubeconfig: %s\n    labels: {env: %s}\n", c, kc, c)
	}
	cfg.WriteString("applications:\n")
	for i := range 10000 {
		benchconfig.App(&cfg, i, false)
	}
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte(cfg.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	env := Env{Getenv: func(k string) string {
		if k == "HOME" {
			return dir
		}
		return ""
	}, Stdout: io.Discard, Stderr: io.Discard}
	for b.Loop() {
		if err := Check(CheckOptions{File: file}, env); err != nil {
			b.Fatal(err)
		}
	}
}

// writeBenchKubeconfig writes a kubeconfig whose one context, name, points
// at a loopback port (never contacted).
func writeBenchKubeconfig(b *testing.B, path, name string, port int) {
	b.Helper()
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: %[1]s, cluster: {server: "https://127.0.0.1:%[2]d"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: %[1]s, context: {cluster: %[1]s, user: u}}]
current-context: %[1]s
`, name, port)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		b.Fatal(err)
	}
}

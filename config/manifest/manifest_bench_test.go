package manifest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkRenderFiles5k renders one file of 5,000 ConfigMaps, as the
// TUI's relaunch benchmark loads them:
//
//	go test -run '^$' -bench RenderFiles5k -benchtime 10x ./config/manifest/
func BenchmarkRenderFiles5k(b *testing.B) {
	var s strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&s, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%04d\n  namespace: tui\n  labels: {app: cm-%04d, tier: bench}\ndata:\n  key: value-%d\n  other: \"some longer value for the ConfigMap %d\"\n", i, i, i, i)
	}
	path := filepath.Join(b.TempDir(), "all.yaml")
	if err := os.WriteFile(path, []byte(s.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		objs, err := Render(b.Context(), Request{Path: path})
		if err != nil || len(objs) != 5000 {
			b.Fatalf("%d objects, %v", len(objs), err)
		}
	}
}

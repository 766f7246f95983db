package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/clusters/terraform"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/driftgen"
)

// requireTofu skips without $DRIFTWATCH_TOFU_DIR (a plain `go test`), and
// fails when the variable is set but the tools are not there: under
// scripts/test.sh every test here must run.
func requireTofu(t *testing.T) {
	t.Helper()
	dir := os.Getenv(terraform.EnvToolsDir)
	if dir == "" {
		t.Skipf("$%s is not set: build the tools with scripts/build-binaries.sh tofu", terraform.EnvToolsDir)
	}
	for _, p := range []string{filepath.Join(dir, "bin", "tofu"), filepath.Join(dir, "tofurc")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("$%s=%s: %v (build the tools with scripts/build-binaries.sh tofu)", terraform.EnvToolsDir, dir, err)
		}
	}
}

// TestDemoWorkspaceWithoutTools: without the tools the demo has no
// workspace, and no error (it says how to build them).
func TestDemoWorkspaceWithoutTools(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-tools")
	getenv := func(k string) string {
		if k == terraform.EnvToolsDir {
			return missing
		}
		return ""
	}
	ws, err := setupDemoWorkspace(t.Context(), t.TempDir(), getenv)
	if err != nil || ws != nil {
		t.Fatalf("setupDemoWorkspace without tools = %+v, %v; want nil, nil", ws, err)
	}
	if !strings.Contains(demoToolsHint, "scripts/build-binaries.sh tofu") {
		t.Fatalf("the hint %q does not say how to build the tools", demoToolsHint)
	}
}

// TestDemoWorkspaceDriftAndRepair: the demo's workspace set up with real
// tofu (init and first apply), run by the hub with the demo's terraform
// section; the drift generator edits one file and deletes another, and the
// hub repairs both (apply -target) back to the configuration's content.
func TestDemoWorkspaceDriftAndRepair(t *testing.T) {
	requireTofu(t)
	dir := t.TempDir()
	ws, err := setupDemoWorkspace(t.Context(), dir, os.Getenv)
	if err != nil {
		t.Fatalf("demo workspace: %v", err)
	}
	if ws == nil {
		t.Fatalf("demo workspace: no workspace although $%s is set", terraform.EnvToolsDir)
	}
	want := make(map[string][]byte)
	for addr, f := range ws.Files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("%s after the first apply: %v", addr, err)
		}
		want[addr] = b
	}
	if len(want) != len(demoWorkspaceFiles()) {
		t.Fatalf("files %v, want one per resource of %v", ws.Files, demoWorkspaceFiles())
	}

	path := filepath.Join(dir, "demo.yaml")
	if err := os.WriteFile(path, []byte(demoTerraformSection(ws.Dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startApp(t, path, func(o *Options) {
		o.TerraformEnv, o.TerraformStopGrace = ws.Env, demoTerraformStopGrace
	})
	a.waitSnap(t, 2*time.Minute, "the workspace's resources in sync", allInSync(len(want)))

	gen := driftgen.New(nil, 1)
	drifts := []struct {
		addr string
		act  driftgen.Action
	}{
		{"local_file.motd", driftgen.ActionEdit},
		{"local_file.flags", driftgen.ActionDelete},
	}
	for _, tt := range drifts {
		id := terraform.NodeID(demoWorkspaceID, tt.addr, "local_file")
		n, ok := a.last.Node(id)
		if !ok {
			t.Fatalf("%s is not in the snapshot", id)
		}
		d := gen.Do(t.Context(), driftgen.Target{ID: n.ID, Kind: n.Kind, File: ws.Files[tt.addr]}, tt.act)
		if d.Err != nil {
			t.Fatalf("drift %s: %v", tt.act, d.Err)
		}
		a.waitSnap(t, 2*time.Minute, tt.addr+" repaired after "+string(tt.act), repairedAfter(id, d.At.Add(-time.Second)))
		r, _ := a.last.Node(id)
		wantClass := hub.DriftModified
		if tt.act == driftgen.ActionDelete {
			wantClass = hub.DriftMissing
		}
		if got := r.LastRepair.Drift.Class; got != wantClass {
			t.Errorf("%s after %s: drift class %s, want %s", tt.addr, tt.act, got, wantClass)
		}
		got, err := os.ReadFile(ws.Files[tt.addr])
		if err != nil {
			t.Fatalf("%s after its repair: %v", tt.addr, err)
		}
		if string(got) != string(want[tt.addr]) {
			t.Fatalf("%s after its repair: %q, want %q", tt.addr, got, want[tt.addr])
		}
	}
}

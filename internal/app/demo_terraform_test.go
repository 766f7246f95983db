package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/clusters/terraform"
	"github.com/driftwatch/driftwatch/clusters/terraform/tftest"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/driftgen"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

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
	tftest.Tools(t)
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

// TestReloadTerraformWorkspaces: a reload that renames a workspace stops
// the old one (its resources and health leave the hub, its files are left
// as they are) and starts the new one on the same folder; a changed
// interval restarts it; the running workspace keeps repairing after each
// reload, and a reload emptying the config is refused.
func TestReloadTerraformWorkspaces(t *testing.T) {
	tftest.Tools(t)
	dir := t.TempDir()
	ws, err := setupDemoWorkspace(t.Context(), dir, os.Getenv)
	if err != nil || ws == nil {
		t.Fatalf("demo workspace: %+v, %v", ws, err)
	}
	n := len(demoWorkspaceFiles())
	path := filepath.Join(dir, "demo.yaml")
	section := func(id, interval string) string {
		return fmt.Sprintf("terraform:\n  - id: %s\n    dir: %s\n    interval: %s\n", id, strconv.Quote(ws.Dir), interval)
	}
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(section("files-a", "1m"))
	a := startApp(t, path, func(o *Options) {
		o.TerraformEnv, o.TerraformStopGrace = ws.Env, demoTerraformStopGrace
	})
	only := func(id, detect string) func(*hub.Snapshot) bool {
		return func(s *hub.Snapshot) bool {
			if len(s.Clusters) != 1 || s.Clusters[0].Cluster != id || s.Clusters[0].State != hub.ClusterSynced || s.Clusters[0].Detection != detect {
				return false
			}
			for _, nd := range s.Nodes {
				if nd.ID.Cluster != id {
					return false
				}
			}
			return allInSync(n)(s)
		}
	}
	a.waitSnap(t, 2*time.Minute, "files-a in sync", only("files-a", "poll 1m"))

	write(section("files-b", "1m"))
	if err := a.Reload(false); err != nil {
		t.Fatalf("reload renaming the workspace: %v", err)
	}
	a.waitSnap(t, 2*time.Minute, "files-b alone, in sync", only("files-b", "poll 1m"))
	if _, ok := a.Workspace("files-a"); ok {
		t.Error("files-a is still a backend after its reload")
	}

	write(section("files-b", "30s"))
	if err := a.Reload(false); err != nil {
		t.Fatalf("reload changing the interval: %v", err)
	}
	a.waitSnap(t, 2*time.Minute, "files-b restarted with the new interval", only("files-b", "poll 30s"))

	// Still repairing after the reloads.
	id := terraform.NodeID("files-b", "local_file.motd", "local_file")
	before, err := os.ReadFile(ws.Files["local_file.motd"])
	if err != nil {
		t.Fatal(err)
	}
	d := driftgen.New(nil, 1).Do(t.Context(), driftgen.Target{ID: id, Kind: "local_file", File: ws.Files["local_file.motd"]}, driftgen.ActionEdit)
	if d.Err != nil {
		t.Fatal(d.Err)
	}
	a.waitSnap(t, 2*time.Minute, "motd repaired after the reloads", repairedAfter(id, d.At.Add(-time.Second)))
	if got, _ := os.ReadFile(ws.Files["local_file.motd"]); string(got) != string(before) {
		t.Errorf("motd after its repair = %q, want %q", got, before)
	}

	// A config emptied of its only workspace is refused: the running
	// one keeps going with its resources, and its files stay.
	write("hub:\n  stateFile: none\n")
	if err := a.Reload(false); err == nil {
		t.Fatal("a reload of a config without any cluster or workspace was accepted")
	}
	a.waitSnap(t, 2*time.Minute, "files-b still running after a refused reload", only("files-b", "poll 30s"))
	for addr, f := range ws.Files {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s after the reloads: %v (never destroyed)", addr, err)
		}
	}
}

// TestBrokenWorkspaceClustersKeepWorking: a workspace whose configuration
// does not load is a health error of its own (init or plan failing, with
// tofu's file and line) while a cluster of the same hub is reconciled and
// repaired as usual; once the file is fixed the workspace is ready and its
// resources in sync.
func TestBrokenWorkspaceClustersKeepWorking(t *testing.T) {
	tftest.Tools(t)
	set := lctest.Start(t, localcluster.Options{Count: 1})
	ws, err := setupDemoWorkspace(t.Context(), t.TempDir(), os.Getenv)
	if err != nil || ws == nil {
		t.Fatalf("demo workspace: %+v, %v", ws, err)
	}
	broken := filepath.Join(ws.Dir, "broken.tf")
	if err := os.WriteFile(broken, []byte("resource \"local_file\" \"oops\" {\n  filename = \n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := e2eConfig(t, set, "ops", fmt.Sprintf("terraform:\n  - id: infra\n    dir: %s\n", strconv.Quote(ws.Dir)), "web", "api")
	a := startApp(t, path, func(o *Options) {
		o.TerraformEnv, o.TerraformStopGrace = ws.Env, demoTerraformStopGrace
	})
	failing := func(s *hub.Snapshot) bool {
		c, ok := s.Cluster("infra")
		// init fails first on a file that does not parse.
		return ok && c.State == hub.ClusterUnreachable && strings.Contains(c.LastError, "failing: broken.tf:2: Invalid expression")
	}
	clusterInSync := func(s *hub.Snapshot) bool {
		n := 0
		for _, nd := range s.Nodes {
			if nd.ID.Cluster == "c1" {
				if nd.Status != hub.StatusInSync && nd.Status != hub.StatusRepaired {
					return false
				}
				n++
			}
		}
		return n > 0
	}
	a.waitSnap(t, 2*time.Minute, "the workspace failing and the cluster in sync", func(s *hub.Snapshot) bool {
		return failing(s) && clusterInSync(s)
	})

	worker := hub.NewNodeID("c1", "ops", "worker", hub.KindDeployment)
	c := kubernetes.NewForConfigOrDie(set.Clusters[0].RESTConfig())
	deleted := time.Now()
	if err := c.AppsV1().Deployments("ops").Delete(t.Context(), "worker", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	a.waitSnap(t, time.Minute, "the cluster's deleted Deployment repaired while the workspace fails", func(s *hub.Snapshot) bool {
		return repairedAfter(worker, deleted.Add(-time.Second))(s) && failing(s)
	})

	if err := os.Remove(broken); err != nil {
		t.Fatal(err)
	}
	a.waitSnap(t, 2*time.Minute, "the workspace ready with its resources in sync", func(s *hub.Snapshot) bool {
		c, ok := s.Cluster("infra")
		if !ok || c.State != hub.ClusterSynced {
			return false
		}
		n := 0
		for _, nd := range s.Nodes {
			if nd.ID.Cluster == "infra" {
				if nd.Status != hub.StatusInSync {
					return false
				}
				n++
			}
		}
		return n == len(demoWorkspaceFiles())
	})
}

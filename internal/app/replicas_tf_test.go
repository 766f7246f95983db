package app

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/config"
)

// TestWorkspacesRefusedWithCoordination: config.Load refuses Terraform
// workspaces beside hub.coordination (with the line); a config built in
// code that has both is refused by New too, before it contacts anything.
func TestWorkspacesRefusedWithCoordination(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := unreachableKubeconfig(t, dir)
	if err := os.Mkdir(filepath.Join(dir, "tf"), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "driftwatch.yaml")
	body := "hub:\n  stateFile: none\n  coordination:\n    kubeconfig: " + kubeconfig + "\n    namespace: driftwatch\n" +
		"clusters:\n  - id: c1\n    kubeconfig: " + kubeconfig + "\n"
	if err := os.WriteFile(path, []byte(body+"terraform:\n  - id: files\n    dir: tf\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(string) string { return "" }
	if _, err := config.Load(path, config.LoadOptions{Getenv: getenv}); err == nil || !strings.Contains(err.Error(), "terraform[0]: terraform workspaces are not shared among replicas") {
		t.Fatalf("config.Load of workspaces with coordination: %v", err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, config.LoadOptions{Getenv: getenv})
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	cfg.Terraform = []config.Workspace{{ID: "files", Dir: filepath.Join(dir, "tf"), Interval: time.Minute}}
	a, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		_ = a.Close()
		t.Fatal("New accepted Terraform workspaces with hub.coordination")
	}
	if !errors.Is(err, errWorkspacesWithReplicas) {
		t.Fatalf("New: %v, want %v", err, errWorkspacesWithReplicas)
	}
}

package terraform_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/driftwatch/driftwatch/clusters/terraform"
	"github.com/driftwatch/driftwatch/clusters/terraform/tftest"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// mainTF manages two files in the workspace's folder (watched) and one in
// its out/ subfolder (not watched: only a poll finds its drift); the keys
// of for_each hold colons.
const mainTF = `terraform {
  required_providers {
    local = {
      source  = "hashicorp/local"
      version = "1.4.0"
    }
  }
}

resource "local_file" "motd" {
  filename = "${path.module}/motd.txt"
  content  = "hello\n"
}

resource "local_file" "conf" {
  for_each = {
    "eu:west" = "region=eu-west-1\n"
  }
  filename = "${path.module}/conf-${replace(each.key, ":", "-")}.txt"
  content  = each.value
}

resource "local_file" "deep" {
  filename = "${path.module}/out/deep.txt"
  content  = "deep\n"
}
`

// workspaceDir makes a workspace folder with mainTF (and extra
// configuration) and applies it with the real binary.
func workspaceDir(t testing.TB, bin, cliConfig string, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(mainTF+strings.Join(extra, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	tf, err := tfexec.NewTerraform(dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TF_CLI_CONFIG_FILE": cliConfig, "PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME")}
	if err := tf.SetEnv(env); err != nil {
		t.Fatal(err)
	}
	if err := tf.Init(t.Context()); err != nil {
		t.Fatalf("tofu init: %v", err)
	}
	if err := tf.Apply(t.Context()); err != nil {
		t.Fatalf("tofu apply: %v", err)
	}
	return dir
}

// backends is the hub's backend lookup for one workspace.
type backends struct{ w *terraform.Workspace }

func (b backends) Backend(id string) (hub.Backend, bool) {
	if id == b.w.ID() {
		return b.w, true
	}
	return nil, false
}

// run is a real hub with one workspace, both running until the test ends.
type run struct {
	hub *hub.Hub
	ws  *terraform.Workspace
	dir string
	// logs holds every log line of the hub and the workspace.
	logs *lockedBuffer
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startOptions are start's optional settings.
type startOptions struct {
	vars   map[string]string
	binary string
	// beforeSpecs, when set, runs each time the workspace hands its
	// desired state over, before it reaches the hub.
	beforeSpecs func()
}

func start(t testing.TB, dir, cliConfig string, policy hub.Policy, interval time.Duration, so ...startOptions) *run {
	t.Helper()
	var o startOptions
	if len(so) > 0 {
		o = so[0]
	}
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(io.MultiWriter(testWriter{t}, logs), &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := hub.New(hub.Options{ID: "test", Workers: 2, Logger: log.With("component", "hub"), Resync: -1})
	ws, err := terraform.New(terraform.Options{
		ID: "files", Dir: dir, Interval: interval, LockRetry: 200 * time.Millisecond, Policy: policy,
		Vars: o.vars, Binary: o.binary,
		Env:    map[string]string{"TF_CLI_CONFIG_FILE": cliConfig},
		Logger: log.With("component", "terraform"),
		OnSpecs: func(id string, specs []hub.NodeSpec) {
			if o.beforeSpecs != nil {
				o.beforeSpecs()
			}
			h.SetDesiredCluster(id, specs)
		},
	}, h)
	if err != nil {
		t.Fatal(err)
	}
	h.SetBackends(backends{ws})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = h.Run(ctx) }()
	go func() { defer wg.Done(); _ = ws.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return &run{hub: h, ws: ws, dir: dir, logs: logs}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

var (
	motd = terraform.NodeID("files", "local_file.motd", "local_file")
	conf = terraform.NodeID("files", `local_file.conf["eu:west"]`, "local_file")
	deep = terraform.NodeID("files", "local_file.deep", "local_file")
)

// waitFor polls the hub's snapshot until cond holds.
func (r *run) waitFor(t testing.TB, what string, timeout time.Duration, cond func(*hub.Snapshot) bool) *hub.Snapshot {
	t.Helper()
	var s *hub.Snapshot
	testwait.For(t, timeout, what, func() error {
		s = r.hub.Snapshot()
		if cond(s) {
			return nil
		}
		var b strings.Builder
		for _, c := range s.Clusters {
			fmt.Fprintf(&b, "\n  cluster %s: %s %s", c.Cluster, c.State, c.LastError)
		}
		for _, n := range s.Nodes {
			fmt.Fprintf(&b, "\n  %s: %s %s", n.ID, n.Status, n.Reason)
		}
		return fmt.Errorf("snapshot:%s", b.String())
	})
	return s
}

func status(s *hub.Snapshot, id hub.NodeID) hub.Status {
	n, ok := s.Node(id)
	if !ok {
		return ""
	}
	return n.Status
}

func ready(s *hub.Snapshot) bool {
	c, ok := s.Cluster("files")
	if !ok || c.State != hub.ClusterSynced {
		return false
	}
	for _, id := range []hub.NodeID{motd, conf, deep} {
		if st := status(s, id); st != hub.StatusInSync {
			return false
		}
	}
	return true
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// lastDrift returns the class and fields of a NodeID's latest drift record.
func lastDrift(s *hub.Snapshot, id hub.NodeID) (hub.DriftClass, []hub.FieldDiff) {
	n, ok := s.Node(id)
	if !ok || n.LastRepair == nil {
		return "", nil
	}
	return n.LastRepair.Drift.Class, n.LastRepair.Drift.Fields
}

func TestWorkspaceRepairsEditedAndDeletedFiles(t *testing.T) {
	bin, cli := tftest.Tools(t)
	dir := workspaceDir(t, bin, cli)
	// A long interval: detection below comes from fsnotify.
	r := start(t, dir, cli, hub.PolicyRepair, time.Hour)
	r.waitFor(t, "workspace ready, every resource in sync", 60*time.Second, ready)

	// Edited outside: modified, with the content diff, and repaired.
	motdPath := filepath.Join(dir, "motd.txt")
	if err := os.WriteFile(motdPath, []byte("defaced\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	edited := time.Now()
	s := r.waitFor(t, "motd repaired", 60*time.Second, func(s *hub.Snapshot) bool {
		n, _ := s.Node(motd)
		return n.Repairs >= 1 && readFile(t, motdPath) == "hello\n"
	})
	t.Logf("edit to repair (fsnotify, interval 1h): %s", time.Since(edited).Round(time.Millisecond))
	class, fields := lastDrift(s, motd)
	if class != hub.DriftModified {
		t.Errorf("motd drift class = %q, want %q", class, hub.DriftModified)
	}
	want := hub.FieldDiff{Path: "content", Desired: "hello\n", Actual: "defaced\n"}
	if len(fields) != 1 || fields[0] != want {
		t.Errorf("motd fields = %+v, want [%+v]", fields, want)
	}

	// Deleted outside: missing, recreated.
	confPath := filepath.Join(dir, "conf-eu-west.txt")
	if err := os.Remove(confPath); err != nil {
		t.Fatal(err)
	}
	s = r.waitFor(t, "conf recreated", 60*time.Second, func(s *hub.Snapshot) bool {
		n, _ := s.Node(conf)
		return n.Repairs >= 1 && readFile(t, confPath) == "region=eu-west-1\n"
	})
	if class, _ := lastDrift(s, conf); class != hub.DriftMissing {
		t.Errorf("conf drift class = %q, want %q", class, hub.DriftMissing)
	}
	r.waitFor(t, "both verified in sync", 30*time.Second, func(s *hub.Snapshot) bool {
		return (status(s, motd) == hub.StatusRepaired || status(s, motd) == hub.StatusInSync) &&
			(status(s, conf) == hub.StatusRepaired || status(s, conf) == hub.StatusInSync)
	})
}

func TestWorkspaceIntervalFindsUnwatchedDrift(t *testing.T) {
	bin, cli := tftest.Tools(t)
	dir := workspaceDir(t, bin, cli)
	// out/ is not watched: only the poll at the interval finds this.
	r := start(t, dir, cli, hub.PolicyRepair, time.Second)
	r.waitFor(t, "workspace ready", 60*time.Second, ready)
	deepPath := filepath.Join(dir, "out", "deep.txt")
	if err := os.WriteFile(deepPath, []byte("shallow\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := r.waitFor(t, "deep repaired by a poll", 60*time.Second, func(s *hub.Snapshot) bool {
		n, _ := s.Node(deep)
		return n.Repairs >= 1 && readFile(t, deepPath) == "deep\n"
	})
	if class, fields := lastDrift(s, deep); class != hub.DriftModified || len(fields) != 1 || fields[0].Actual != "shallow\n" {
		t.Errorf("deep drift = %s %+v, want modified content -> shallow", class, fields)
	}
}

func TestWorkspaceWarnReportsWithoutApplying(t *testing.T) {
	bin, cli := tftest.Tools(t)
	dir := workspaceDir(t, bin, cli)
	r := start(t, dir, cli, hub.PolicyWarn, time.Hour)
	r.waitFor(t, "workspace ready", 60*time.Second, ready)
	motdPath := filepath.Join(dir, "motd.txt")
	if err := os.WriteFile(motdPath, []byte("defaced\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := r.waitFor(t, "motd warn-only", 60*time.Second, func(s *hub.Snapshot) bool {
		return status(s, motd) == hub.StatusWarnOnly
	})
	if class, fields := lastDrift(s, motd); class != hub.DriftModified || len(fields) != 1 || fields[0].Actual != "defaced\n" {
		t.Errorf("motd drift = %s %+v, want modified content -> defaced", class, fields)
	}
	// Another poll later, the file is still as edited: nothing applied.
	if err := r.ws.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, motdPath); got != "defaced\n" {
		t.Errorf("motd.txt = %q after a warn-only drift, want it left as edited", got)
	}
	if n, _ := r.hub.Snapshot().Node(motd); n.Repairs != 0 {
		t.Errorf("motd repairs = %d under warn, want 0", n.Repairs)
	}
}

func TestWorkspaceBrokenConfigIsAHealthError(t *testing.T) {
	bin, cli := tftest.Tools(t)
	dir := workspaceDir(t, bin, cli)
	r := start(t, dir, cli, hub.PolicyRepair, time.Hour)
	r.waitFor(t, "workspace ready", 60*time.Second, ready)
	good := filepath.Join(dir, "main.tf")
	broken := filepath.Join(dir, "broken.tf")
	if err := os.WriteFile(broken, []byte("resource \"local_file\" \"x\" {\n  filename = \n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := r.waitFor(t, "plan failing", 60*time.Second, func(s *hub.Snapshot) bool {
		c, _ := s.Cluster("files")
		return c.State == hub.ClusterUnreachable
	})
	c, _ := s.Cluster("files")
	if !strings.HasPrefix(c.LastError, "plan failing: ") || !strings.Contains(c.LastError, "broken.tf:2") {
		t.Errorf("health error = %q, want plan failing with the file and line", c.LastError)
	}
	if c.Source != terraform.Source {
		t.Errorf("source = %q, want %q", c.Source, terraform.Source)
	}
	// Resources are not shown as in sync while the plan fails.
	if st := status(s, motd); st == hub.StatusInSync {
		t.Errorf("motd status = %s while the plan fails", st)
	}
	if err := os.Remove(broken); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "ready again", 60*time.Second, ready)
	if _, err := os.Stat(good); err != nil {
		t.Fatal(err)
	}
}

func TestWorkspaceLockedStateIsReportedAndRetried(t *testing.T) {
	bin, cli := tftest.Tools(t)
	dir := workspaceDir(t, bin, cli)
	// Hold the local backend's lock (an fcntl write lock on the state
	// file, as a running tofu apply would) before the workspace starts.
	f, err := os.OpenFile(filepath.Join(dir, "terraform.tfstate"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		t.Fatal(err)
	}
	r := start(t, dir, cli, hub.PolicyRepair, time.Hour)
	s := r.waitFor(t, "locked", 60*time.Second, func(s *hub.Snapshot) bool {
		c, _ := s.Cluster("files")
		return strings.HasPrefix(c.LastError, "locked: ")
	})
	c, _ := s.Cluster("files")
	if c.State != hub.ClusterDegraded {
		t.Errorf("state while locked = %s, want %s", c.State, hub.ClusterDegraded)
	}
	lk.Type = syscall.F_UNLCK
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		t.Fatal(err)
	}
	// Retried at LockRetry, not at the hour-long interval.
	r.waitFor(t, "ready once the lock is gone", 60*time.Second, ready)
}

// TestWorkspaceNeverDestroysARemovedResource: a repair of a resource
// removed from the configuration but still in the state (released) is
// refused, and the file stays.
func TestWorkspaceNeverDestroysARemovedResource(t *testing.T) {
	bin, cli := tftest.Tools(t)
	dir := workspaceDir(t, bin, cli)
	r := start(t, dir, cli, hub.PolicyRepair, time.Hour)
	r.waitFor(t, "workspace ready", 60*time.Second, ready)
	i := strings.Index(mainTF, `resource "local_file" "deep"`)
	if i < 0 {
		t.Fatal("mainTF has no local_file.deep")
	}
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(mainTF[:i]), 0o644); err != nil {
		t.Fatal(err)
	}
	// Still in the state: a repair's plan for it would destroy it.
	if err := r.ws.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	s := r.hub.Snapshot()
	if n, _ := s.Node(deep); n.Reason != terraform.RemovedNote || n.Policy != hub.PolicyWarn {
		t.Errorf("local_file.deep after it left the config: reason %q, policy %s; want %q, warn", n.Reason, n.Policy, terraform.RemovedNote)
	}
	if c, _ := s.Cluster("files"); c.State != hub.ClusterSynced || c.LastError != "not applied: removed from config (never destroyed) local_file.deep" {
		t.Errorf("workspace health = %s %q, want synced with the removed resource named", c.State, c.LastError)
	}
	deepPath := filepath.Join(dir, "out", "deep.txt")
	_, err := r.ws.Repair(t.Context(), hub.NodeSpec{ID: deep, Name: "local_file.deep", Kind: "local_file"}, hub.State{}, hub.Drift{Class: hub.DriftModified})
	if !errors.Is(err, terraform.ErrReleased) || !errors.Is(err, hub.ErrRefused) {
		t.Fatalf("repair of a resource removed from the configuration: %v, want %v", err, terraform.ErrReleased)
	}
	t.Logf("refused: %v", err)
	if got := readFile(t, deepPath); got != "deep\n" {
		t.Fatalf("out/deep.txt = %q after a refused repair, want it left (never destroyed)", got)
	}
	// The resources still in the configuration are still repaired.
	motdPath := filepath.Join(dir, "motd.txt")
	if err := os.WriteFile(motdPath, []byte("defaced\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "motd repaired", 60*time.Second, func(s *hub.Snapshot) bool {
		n, _ := s.Node(motd)
		return n.Repairs >= 1 && readFile(t, motdPath) == "hello\n"
	})
	if got := readFile(t, deepPath); got != "deep\n" {
		t.Fatalf("out/deep.txt = %q after motd's repair, want it left", got)
	}
	// Its drift is reported, never repaired: the loop treats it as warn.
	if err := os.WriteFile(deepPath, []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.ws.Trigger()
	r.waitFor(t, "deep warn-only", 60*time.Second, func(s *hub.Snapshot) bool {
		return status(s, deep) == hub.StatusWarnOnly
	})
	if err := r.ws.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, deepPath); got != "edited\n" {
		t.Errorf("out/deep.txt = %q, want the edit left (a removed resource is never repaired)", got)
	}
}

// A configuration edited but not applied is not drift: the resources stay
// in sync, and the workspace's note names what is not applied; applying it
// clears the note.
func TestWorkspaceReportsConfigNotApplied(t *testing.T) {
	bin, cli := tftest.Tools(t)
	dir := workspaceDir(t, bin, cli)
	r := start(t, dir, cli, hub.PolicyRepair, time.Hour)
	r.waitFor(t, "workspace ready", 60*time.Second, ready)
	edited := strings.Replace(mainTF, `content  = "hello\n"`, `content  = "hello, world\n"`, 1)
	if edited == mainTF {
		t.Fatal("mainTF has no motd content to change")
	}
	edited += `
resource "local_file" "extra" {
  filename = "${path.module}/extra.txt"
  content  = "extra\n"
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	const want = "not applied: added in config local_file.extra; changed in config local_file.motd"
	s := r.waitFor(t, "the note of what is not applied", 60*time.Second, func(s *hub.Snapshot) bool {
		c, _ := s.Cluster("files")
		return c.LastError == want
	})
	if !ready(s) {
		t.Errorf("a config not applied made the workspace or a resource leave sync")
	}
	if n, _ := s.Node(motd); n.Repairs != 0 || n.Reason != "" {
		t.Errorf("motd: %d repairs, reason %q; want none (a changed config is not drift)", n.Repairs, n.Reason)
	}
	if got := readFile(t, filepath.Join(dir, "motd.txt")); got != "hello\n" {
		t.Errorf("motd.txt = %q, want it untouched until someone applies", got)
	}
	tf, err := tfexec.NewTerraform(dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := tf.SetEnv(map[string]string{"TF_CLI_CONFIG_FILE": cli, "PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME")}); err != nil {
		t.Fatal(err)
	}
	if err := tf.Apply(t.Context()); err != nil {
		t.Fatalf("tofu apply: %v", err)
	}
	r.ws.Trigger()
	r.waitFor(t, "the note cleared and local_file.extra managed", 60*time.Second, func(s *hub.Snapshot) bool {
		c, _ := s.Cluster("files")
		extra := terraform.NodeID("files", "local_file.extra", "local_file")
		return c.State == hub.ClusterSynced && c.LastError == "" && status(s, extra) == hub.StatusInSync
	})
}

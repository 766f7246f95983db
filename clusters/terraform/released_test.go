package terraform_test

import (
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/driftwatch/driftwatch/clusters/terraform"
	"github.com/driftwatch/driftwatch/clusters/terraform/tftest"
	"github.com/driftwatch/driftwatch/hub"
)

// secretTF adds to mainTF a file written from a sensitive variable.
const secretTF = `
variable "token" {
  type      = string
  sensitive = true
}

resource "local_file" "token" {
  filename          = "${path.module}/token.txt"
  sensitive_content = var.token
}
`

const (
	tokenValue    = "s3cret-token-value"
	tamperedValue = "tampered-by-hand"
)

// TestWorkspaceSensitiveDriftRepaired: a file written from a sensitive
// variable, edited by hand, is drift shown as "(sensitive value changed)"
// and repaired; neither value ever reaches the hub's snapshot (what the API
// and the stream serve), its feed or the logs.
func TestWorkspaceSensitiveDriftRepaired(t *testing.T) {
	bin, cli := tftest.Tools(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(mainTF+secretTF), 0o644); err != nil {
		t.Fatal(err)
	}
	tf := tofu(t, dir, bin, cli)
	if err := tf.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := tf.Apply(t.Context(), tfexec.Var("token="+tokenValue)); err != nil {
		t.Fatal(err)
	}
	token := terraform.NodeID("files", "local_file.token", "local_file")
	r := start(t, dir, cli, hub.PolicyRepair, time.Hour, startOptions{vars: map[string]string{"token": tokenValue}})
	r.waitFor(t, "ready", 60*time.Second, func(s *hub.Snapshot) bool { return ready(s) && status(s, token) == hub.StatusInSync })

	tokenPath := filepath.Join(dir, "token.txt")
	if err := os.WriteFile(tokenPath, []byte(tamperedValue), 0o644); err != nil {
		t.Fatal(err)
	}
	s := r.waitFor(t, "token repaired", 60*time.Second, func(s *hub.Snapshot) bool {
		n, _ := s.Node(token)
		return n.Repairs >= 1 && readFile(t, tokenPath) == tokenValue
	})
	class, fields := lastDrift(s, token)
	want := hub.FieldDiff{Path: "sensitive_content", Desired: "(sensitive)", Actual: "(sensitive value changed)"}
	if class != hub.DriftModified || len(fields) != 1 || fields[0] != want {
		t.Errorf("token drift = %s %+v, want modified [%+v]", class, fields, want)
	}
	s = r.waitFor(t, "token verified", 30*time.Second, func(s *hub.Snapshot) bool {
		st := status(s, token)
		return st == hub.StatusRepaired || st == hub.StatusInSync
	})
	snap, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	// The provider's id of the file is the SHA-1 of its content.
	for _, v := range []string{tokenValue, tamperedValue, fmt.Sprintf("%x", sha1.Sum([]byte(tokenValue)))} {
		if strings.Contains(string(snap), v) {
			t.Errorf("the snapshot holds %q", v)
		}
		if strings.Contains(r.logs.String(), v) {
			t.Errorf("the logs hold %q", v)
		}
	}
}

// TestWorkspaceReleasedRefusesForcedRepair: a resource removed from the
// configuration, then edited, is released: a forced repair (RepairNow, as
// POST .../repair) is refused with the reason, the file stays as edited,
// the resource stays in the state, and nothing is "pruned".
func TestWorkspaceReleasedRefusesForcedRepair(t *testing.T) {
	bin, cli := tftest.Tools(t)
	dir := workspaceDir(t, bin, cli)
	r := start(t, dir, cli, hub.PolicyRepair, time.Hour)
	r.waitFor(t, "workspace ready", 60*time.Second, ready)
	i := strings.Index(mainTF, `resource "local_file" "deep"`)
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(mainTF[:i]), 0o644); err != nil {
		t.Fatal(err)
	}
	r.ws.Trigger()
	r.waitFor(t, "deep released", 60*time.Second, func(s *hub.Snapshot) bool {
		n, _ := s.Node(deep)
		return n.Policy == hub.PolicyWarn
	})
	if !strings.Contains(r.logs.String(), "resource removed from the configuration: released") {
		t.Errorf("no log line for the release")
	}
	deepPath := filepath.Join(dir, "out", "deep.txt")
	if err := os.WriteFile(deepPath, []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.ws.Trigger()
	r.waitFor(t, "deep warn-only", 60*time.Second, func(s *hub.Snapshot) bool { return status(s, deep) == hub.StatusWarnOnly })
	if err := r.hub.RepairNow(deep); err != nil {
		t.Fatal(err)
	}
	s := r.waitFor(t, "the forced repair refused", 60*time.Second, func(s *hub.Snapshot) bool {
		n, _ := s.Node(deep)
		return strings.Contains(n.Reason, "repair refused: released")
	})
	n, _ := s.Node(deep)
	t.Logf("refused: %s %s", n.Status, n.Reason)
	if n.Status != hub.StatusWarnOnly || n.Repairs != 0 {
		t.Errorf("deep after the forced repair: %s, %d repairs; want warn-only, none", n.Status, n.Repairs)
	}
	// Polls later, still released, still in the state, still as edited.
	if err := r.ws.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The poll's observations reach the hub's workers asynchronously and no
	// event marks "nothing to do": 500 ms is several local applies' time.
	time.Sleep(500 * time.Millisecond)
	if got := readFile(t, deepPath); got != "edited\n" {
		t.Errorf("out/deep.txt = %q, want it left as edited", got)
	}
	state, err := tofu(t, dir, bin, cli).Show(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, res := range state.Values.RootModule.Resources {
		addrs = append(addrs, res.Address)
	}
	if !slices.Contains(addrs, "local_file.deep") {
		t.Errorf("local_file.deep left the state: %v", addrs)
	}
	for _, f := range r.hub.Snapshot().Feed {
		if strings.Contains(f.Action, "pruned") {
			t.Errorf("feed: %s %s", f.ID, f.Action)
		}
	}
	if n, _ := r.hub.Snapshot().Node(deep); n.Status != hub.StatusWarnOnly {
		t.Errorf("deep later: %s %q, want warn-only", n.Status, n.Reason)
	}
}

// TestPollRunsOnePlan counts the tofu runs of a poll: one plan and one
// show of its saved plan.
func TestPollRunsOnePlan(t *testing.T) {
	bin, cli := tftest.Tools(t)
	dir := workspaceDir(t, bin, cli)
	wrapper, runs := countingBinary(t, bin)
	r := start(t, dir, cli, hub.PolicyRepair, time.Hour, startOptions{binary: wrapper})
	r.waitFor(t, "workspace ready", 60*time.Second, ready)
	before := len(runs())
	if err := r.ws.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := runs()[before:]
	if want := []string{"plan", "show"}; !slices.Equal(got, want) {
		t.Errorf("a poll ran %v, want %v", got, want)
	}
}

// tofu is the real binary on a folder, with the provider mirror.
func tofu(t *testing.T, dir, bin, cli string) *tfexec.Terraform {
	t.Helper()
	tf, err := tfexec.NewTerraform(dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := tf.SetEnv(map[string]string{"TF_CLI_CONFIG_FILE": cli, "PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME")}); err != nil {
		t.Fatal(err)
	}
	return tf
}

// TestWorkspaceResourceLeavingTheStateIsReleased: a resource removed from
// the state by hand (tofu state rm) leaves the hub as "released", never
// "pruned", and its file stays.
func TestWorkspaceResourceLeavingTheStateIsReleased(t *testing.T) {
	bin, cli := tftest.Tools(t)
	dir := workspaceDir(t, bin, cli)
	r := start(t, dir, cli, hub.PolicyRepair, time.Hour)
	r.waitFor(t, "workspace ready", 60*time.Second, ready)
	if err := tofu(t, dir, bin, cli).StateRm(t.Context(), "local_file.deep"); err != nil {
		t.Fatal(err)
	}
	r.ws.Trigger()
	s := r.waitFor(t, "deep gone from the hub", 60*time.Second, func(s *hub.Snapshot) bool {
		_, ok := s.Node(deep)
		return !ok
	})
	var actions []string
	for _, f := range s.Feed {
		if f.ID == deep {
			actions = append(actions, f.Action)
		}
	}
	if len(actions) != 1 || !strings.HasPrefix(actions[0], "released") {
		t.Errorf("feed for deep = %q, want one released entry", actions)
	}
	if !strings.Contains(r.logs.String(), "resource no longer in the state: released, nothing deleted") {
		t.Error("no log line for the release")
	}
	if got := readFile(t, filepath.Join(dir, "out", "deep.txt")); got != "deep\n" {
		t.Errorf("out/deep.txt = %q, want it left", got)
	}
}

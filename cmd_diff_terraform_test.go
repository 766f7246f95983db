package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/driftwatch/driftwatch/clusters/terraform"
	"github.com/driftwatch/driftwatch/clusters/terraform/tftest"
)

// diffTF is a workspace of two local files, one of them written from a
// sensitive variable.
const diffTF = `terraform {
  required_providers {
    local = {
      source  = "hashicorp/local"
      version = "1.4.0"
    }
  }
}

variable "token" {
  type      = string
  sensitive = true
}

resource "local_file" "motd" {
  filename = "${path.module}/motd.txt"
  content  = "hello\n"
}

resource "local_file" "token" {
  filename          = "${path.module}/token.txt"
  sensitive_content = var.token
}
`

const (
	diffSecret = "s3cret-diff-token"
	// diffSecretSHA1 is the local provider's id of a file holding
	// diffSecret: a derivative of the secret, never shown either.
	diffSecretSHA1 = "913d206d0b4572d40c0caf932afc4c139c253ab9"
)

// runDiff runs `driftwatch diff` and checks its exit code.
func runDiff(t *testing.T, getenv func(string) string, wantCode int, args ...string) (string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(t.Context(), append([]string{"diff"}, args...), getenv, &out, &errOut)
	if code := exitCode(err, &errOut); code != wantCode {
		t.Fatalf("diff %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, wantCode, &out, &errOut)
	}
	return out.String(), errOut.String()
}

// TestDiffWorkspaceBinaryMissing: without the binary, diff fails clearly
// (exit 3, naming the binary and how to build it), never "in sync".
func TestDiffWorkspaceBinaryMissing(t *testing.T) {
	if _, err := exec.LookPath("tofu"); err == nil {
		t.Skip("tofu is in $PATH: it would be found")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "driftwatch.yaml")
	if err := os.WriteFile(cfg, []byte("terraform:\n  - id: files\n    dir: .\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tools := filepath.Join(dir, "no-tools")
	getenv := func(k string) string {
		return map[string]string{"HOME": dir, terraform.EnvToolsDir: tools}[k]
	}
	out, _ := runDiff(t, getenv, 3, "-f", cfg)
	for _, want := range []string{"unreachable files:", "binary missing: tofu is neither in " + filepath.Join(tools, "bin"),
		"scripts/build-binaries.sh tofu", "summary: no object checked; 1 workspace not planned"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, _ = runDiff(t, getenv, 3, "-f", cfg, "-o", "json")
	var rep struct {
		ExitCode    int `json:"exitCode"`
		Unreachable []struct {
			Cluster, Error string
		} `json:"unreachable"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if rep.ExitCode != 3 || len(rep.Unreachable) != 1 || !strings.Contains(rep.Unreachable[0].Error, "binary missing") {
		t.Errorf("json: %s", out)
	}
}

// TestDiffWorkspace runs `driftwatch diff` on a workspace with the real
// tofu: exit 0 in sync, 1 with an edited file and with an edited sensitive
// one (shown as "(sensitive value changed)", its values never printed),
// and nothing repaired; the --cluster filter takes the workspace's id.
func TestDiffWorkspace(t *testing.T) {
	bin, cli := tftest.Tools(t)
	dir := t.TempDir()
	tfDir := filepath.Join(dir, "tf")
	if err := os.Mkdir(tfDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tfDir, "main.tf"), []byte(diffTF), 0o644); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(dir, "secret.tfvars")
	if err := os.WriteFile(secretFile, []byte(`token = "`+diffSecret+`"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := tfexec.NewTerraform(tfDir, bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := tf.SetEnv(map[string]string{"TF_CLI_CONFIG_FILE": cli, "PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME")}); err != nil {
		t.Fatal(err)
	}
	if err := tf.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := tf.Apply(t.Context(), tfexec.VarFile(secretFile)); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "driftwatch.yaml")
	if err := os.WriteFile(cfg, []byte("terraform:\n  - id: files\n    dir: tf\n    binary: "+bin+"\n    varFiles: [secret.tfvars]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TF_CLI_CONFIG_FILE", cli) // tofu gets driftwatch's environment
	getenv := func(k string) string { return map[string]string{"HOME": dir}[k] }
	noSecret := func(t *testing.T, texts ...string) {
		t.Helper()
		for _, s := range texts {
			for _, secret := range []string{diffSecret, diffSecretSHA1, "tampered-token"} {
				if strings.Contains(s, secret) {
					t.Errorf("diff printed %q:\n%s", secret, s)
				}
			}
		}
	}

	out, errOut := runDiff(t, getenv, 0, "-f", cfg)
	if !strings.Contains(out, "summary: 2 objects on 1 workspace: all in sync") {
		t.Errorf("in sync: %s", out)
	}
	noSecret(t, out, errOut)

	if err := os.WriteFile(filepath.Join(tfDir, "motd.txt"), []byte("defaced\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tfDir, "token.txt"), []byte("tampered-token"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut = runDiff(t, getenv, 1, "-f", cfg, "--cluster", "files")
	for _, want := range []string{"--- desired files:local_file.motd:local_file", " content: |\n-  hello\n+  defaced",
		"+++ live files:local_file.token:local_file (modified)", "-sensitive_content: (sensitive)", "+sensitive_content: (sensitive value changed)",
		"summary: 2 objects on 1 workspace: 0 in sync, 2 drifted (2 modified)"} {
		if !strings.Contains(out, want) {
			t.Errorf("drift: the output lacks %q:\n%s", want, out)
		}
	}
	noSecret(t, out, errOut)
	out, errOut = runDiff(t, getenv, 1, "-f", cfg, "-o", "json")
	noSecret(t, out, errOut)
	if got, _ := os.ReadFile(filepath.Join(tfDir, "token.txt")); string(got) != "tampered-token" {
		t.Errorf("token.txt = %q after diff, want it left as edited (diff writes nothing)", got)
	}
	if err := os.Remove(filepath.Join(tfDir, "motd.txt")); err != nil {
		t.Fatal(err)
	}
	out, _ = runDiff(t, getenv, 1, "-f", cfg)
	if !strings.Contains(out, "(1 missing, 1 modified)") {
		t.Errorf("a deleted file: %s", out)
	}
}

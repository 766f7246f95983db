package app

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/driftwatch/driftwatch/clusters/terraform"
)

// demoWorkspaceID is the id of the demo's Terraform workspace.
const demoWorkspaceID = "infra-files"

// demoWorkspaceInterval is the time between the demo workspace's polls; an
// edit of one of its files is seen at once (the folder is watched).
const demoWorkspaceInterval = 15 * time.Second

// demoTerraformStopGrace is how long a tofu run of the demo gets to exit
// after an interrupt before it is killed: the demo ends within seconds.
const demoTerraformStopGrace = time.Second

// demoMainTF is the demo workspace's root module: three local files in the
// workspace's own folder (watched, so an edit shows at once).
const demoMainTF = `# driftwatch demo: a Terraform workspace of local files. The demo's drift
# generator edits (and now and then deletes) them; driftwatch repairs them
# with apply -target.
terraform {
  required_providers {
    local = {
      source  = "hashicorp/local"
      version = "1.4.0"
    }
  }
}

resource "local_file" "motd" {
  filename = "${path.module}/motd.txt"
  content  = "Welcome to the demo fleet.\n"
}

resource "local_file" "proxy" {
  filename = "${path.module}/proxy.conf"
  content  = "upstream storefront { server storefront.shop:8080; }\n"
}

resource "local_file" "flags" {
  filename = "${path.module}/flags.json"
  content  = "{\"search\": true, \"checkout_v2\": false}\n"
}
`

// demoWorkspaceFiles maps the demo workspace's resource addresses to the
// files they manage (relative to its folder).
func demoWorkspaceFiles() map[string]string {
	return map[string]string{
		"local_file.motd":  "motd.txt",
		"local_file.proxy": "proxy.conf",
		"local_file.flags": "flags.json",
	}
}

// demoTerraformSection is the demo config's terraform section for the
// workspace in dir.
func demoTerraformSection(dir string) string {
	return fmt.Sprintf(`# A Terraform workspace of local files beside the clusters; the drift
# generator edits and deletes its files too.
terraform:
  - id: %s
    dir: %s
    interval: %s
`, demoWorkspaceID, strconv.Quote(dir), demoWorkspaceInterval)
}

// demoWorkspace is the demo's Terraform workspace, initialised and applied.
type demoWorkspace struct {
	// Dir is the workspace's folder.
	Dir string
	// Env is the environment of its runs (the tools' CLI config).
	Env map[string]string
	// Files maps each resource address to the absolute path of its file.
	Files map[string]string
}

// demoToolsHint is what the demo says once when the Terraform tools are
// not built.
const demoToolsHint = "no Terraform workspace: OpenTofu and the local provider are not built (run scripts/build-binaries.sh tofu to add one)"

// setupDemoWorkspace writes the demo workspace into dir/terraform and runs
// `tofu init` and a first `tofu apply` there (the hub manages what is in
// the state only, so the demo applies it first). It returns nil and no
// error when the tools of scripts/build-binaries.sh are not built.
func setupDemoWorkspace(ctx context.Context, dir string, getenv func(string) string) (*demoWorkspace, error) {
	tools := terraform.ToolsDir(getenv)
	if tools == "" {
		return nil, nil
	}
	bin := filepath.Join(tools, "bin", "tofu")
	cliConfig := terraform.CLIConfig(getenv)
	if st, err := os.Stat(bin); err != nil || !st.Mode().IsRegular() || cliConfig == "" {
		return nil, nil
	}
	wsDir := filepath.Join(dir, "terraform")
	if err := os.MkdirAll(wsDir, 0o755); err != nil {
		return nil, fmt.Errorf("demo workspace: %w", err)
	}
	mainTF := filepath.Join(wsDir, "main.tf")
	if err := os.WriteFile(mainTF, []byte(demoMainTF), 0o644); err != nil {
		return nil, fmt.Errorf("demo workspace: %w", err)
	}
	tf, err := tfexec.NewTerraform(wsDir, bin)
	if err != nil {
		return nil, fmt.Errorf("demo workspace %s: %w", wsDir, err)
	}
	env := envWithout(os.Environ(), tfexec.ProhibitedEnv)
	runEnv := map[string]string{"TF_CLI_CONFIG_FILE": cliConfig}
	maps.Copy(env, runEnv)
	if err := tf.SetEnv(env); err != nil {
		return nil, fmt.Errorf("demo workspace %s: environment: %w", wsDir, err)
	}
	if err := tf.SetWaitDelay(demoTerraformStopGrace); err != nil {
		return nil, fmt.Errorf("demo workspace %s: %w", wsDir, err)
	}
	if err := tf.Init(ctx, tfexec.Upgrade(false)); err != nil {
		return nil, fmt.Errorf("demo workspace %s: tofu init: %w", wsDir, err)
	}
	if err := tf.Apply(ctx); err != nil {
		return nil, fmt.Errorf("demo workspace %s: tofu apply: %w", wsDir, err)
	}
	files := make(map[string]string)
	for addr, f := range demoWorkspaceFiles() {
		files[addr] = filepath.Join(wsDir, f)
	}
	return &demoWorkspace{Dir: wsDir, Env: runEnv, Files: files}, nil
}

// envWithout returns an environment as a map, without the variables
// prohibited lists (terraform-exec sets those itself).
func envWithout(environ []string, prohibited func(map[string]string) []string) map[string]string {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for _, k := range prohibited(env) {
		delete(env, k)
	}
	return env
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckRedactsWorkspaceSecrets: check prints a workspace's vars, but
// never the value of a variable the workspace declares sensitive nor of
// one the config reads from the environment.
func TestCheckRedactsWorkspaceSecrets(t *testing.T) {
	dir := t.TempDir()
	tf := filepath.Join(dir, "tf")
	if err := os.Mkdir(tf, 0o755); err != nil {
		t.Fatal(err)
	}
	decls := `variable "token" {
  type      = string
  sensitive = true
}
variable "motd" {}
variable "api_key" {
  sensitive = false
}
`
	if err := os.WriteFile(filepath.Join(tf, "variables.tf"), []byte(decls), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tf, "more.tf.json"), []byte(`{"variable": {"db_password": {"sensitive": true}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "driftwatch.yaml")
	src := `terraform:
  - id: files
    dir: tf
    binary: /nonexistent/tofu
    vars: {token: supersecretvalue, motd: hello, db_password: hunter2hunter2, api_key: "${API_KEY}"}
`
	if err := os.WriteFile(cfgPath, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		return map[string]string{"HOME": "/home/ops", "API_KEY": "envsecretvalue"}[k]
	}
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"check", "-f", cfgPath}, getenv, &out, &errOut); err != nil {
		t.Fatalf("check: %v\n%s%s", err, &out, &errOut)
	}
	want := "vars:     api_key=(secret, from the environment), db_password=(sensitive), motd=hello, token=(sensitive)"
	if !strings.Contains(out.String(), want) {
		t.Errorf("check output lacks %q:\n%s", want, &out)
	}
	for _, secret := range []string{"supersecretvalue", "hunter2hunter2", "envsecretvalue"} {
		if strings.Contains(out.String()+errOut.String(), secret) {
			t.Errorf("check printed the secret %q:\n%s%s", secret, &out, &errOut)
		}
	}

	// Declarations that do not parse: no value is shown, and a warning
	// says why.
	if err := os.WriteFile(filepath.Join(tf, "broken.tf"), []byte("variable \"x\" {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	if err := run(t.Context(), []string{"check", "-f", cfgPath}, getenv, &out, &errOut); err != nil {
		t.Fatalf("check: %v\n%s%s", err, &out, &errOut)
	}
	if !strings.Contains(out.String(), "motd=(hidden: variable declarations unreadable)") || strings.Contains(out.String(), "supersecretvalue") {
		t.Errorf("unreadable declarations: %s", &out)
	}
	if !strings.Contains(errOut.String(), "broken.tf") {
		t.Errorf("no warning naming broken.tf: %s", &errOut)
	}
}

package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The plan shows each webhook (where it goes, what it takes, its header
// names) and never the secret parts: the URL's path and query, the
// headers' values.
func TestCheckPlanShowsWebhooks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hub.yaml")
	body := `clusters:
  - id: c1
    kubeconfig: /nowhere/kubeconfig
applications:
  - id: web
    namespace: shop
    clusters: [c1]
    image: registry.example/web:1
notifications:
  webhooks:
    - name: oncall
      url: https://hooks.example.com/services/T000/B000/s3cr3tp4th?token=q5ecret
      headers: {X-Api-Key: h3adersecret, X-Team: sre}
      events: [repair-failed, cluster-unreachable]
      minSeverity: critical
      clusters: [c1]
`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	env := Env{Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errOut}
	if err := Check(CheckOptions{File: path, Output: FormatText, SkipKubeconfigs: true}, env); err != nil {
		t.Fatalf("check: %v\n%s", err, errOut.String())
	}
	plan := out.String()
	for _, want := range []string{
		"webhook oncall\n",
		"to:           https://hooks.example.com/... (path not shown)",
		"events:       repair-failed, cluster-unreachable",
		"min severity: critical",
		"clusters:     c1",
		"headers:      X-Api-Key, X-Team (values not shown)",
		"1 webhook",
	} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan lacks %q:\n%s", want, plan)
		}
	}
	for _, secret := range []string{"s3cr3tp4th", "q5ecret", "h3adersecret", "sre"} {
		if strings.Contains(plan, secret) {
			t.Errorf("plan shows the secret %q:\n%s", secret, plan)
		}
	}
}

package main

import (
	"bufio"
	"context"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"
	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/clusters/terraform/tftest"
	"github.com/driftwatch/driftwatch/internal/api"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// TestServeWorkspaceSecrets runs serve with a workspace whose file is
// written from a sensitive variable (given in a var file): edited by hand,
// it is repaired, and neither the secret nor the edited value reaches the
// API, the stream, the metrics, the logs or the state file.
func TestServeWorkspaceSecrets(t *testing.T) {
	bin, cli := tftest.Tools(t)
	dir := t.TempDir()
	tfDir := filepath.Join(dir, "tf")
	if err := os.Mkdir(tfDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tfDir, "main.tf"), []byte(diffTF), 0o644); err != nil {
		t.Fatal(err)
	}
	varFile := filepath.Join(dir, "secret.tfvars")
	if err := os.WriteFile(varFile, []byte(`token = "`+diffSecret+`"`+"\n"), 0o600); err != nil {
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
	if err := tf.Apply(t.Context(), tfexec.VarFile(varFile)); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "driftwatch.yaml")
	src := "hub: {id: tf-secrets}\nterraform:\n  - id: files\n    dir: tf\n    binary: " + bin + "\n    varFiles: [secret.tfvars]\n    interval: 1h\n"
	if err := os.WriteFile(cfg, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TF_CLI_CONFIG_FILE", cli) // tofu gets driftwatch's environment

	stateHome := t.TempDir()
	getenv := func(k string) string { return map[string]string{"XDG_STATE_HOME": stateHome, "HOME": dir}[k] }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	var wg conc.WaitGroup
	defer wg.Wait()
	defer cancel()
	var runErr error
	wg.Go(func() {
		runErr = run(ctx, []string{"serve", "-f", cfg, "--listen", "127.0.0.1:0", "--probe-listen", "127.0.0.1:0"}, getenv, out, errOut)
	})
	defer func() {
		if t.Failed() {
			cancel()
			wg.Wait()
			t.Logf("serve returned %v", runErr)
		}
	}()
	var base, probes string
	testwait.For(t, 20*time.Second, "serve to start", func() error {
		base, probes = serveAddrs(out.String())
		return testwait.Check(probes != "", "no addresses printed; log:\n%s", errOut)
	})
	token, err := api.ReadToken(filepath.Join(stateHome, "driftwatch", "tokens"))
	if err != nil {
		t.Fatal(err)
	}
	// The stream, read until the test ends.
	stream := &syncBuffer{}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/watch", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			_, _ = stream.Write(append(sc.Bytes(), '\n'))
		}
	})
	waitHTTP := func(what string, cond func() bool) {
		t.Helper()
		testwait.For(t, 60*time.Second, what, func() error {
			return testwait.Check(cond(), "logs:\n%s", errOut)
		})
	}
	waitHTTP("both resources in sync", func() bool {
		_, body := httpGet(t, probes+"/metrics")
		return metricValue(body, `driftwatch_managed_objects{cluster="files",status="in-sync"}`) == 2
	})
	tokenPath := filepath.Join(tfDir, "token.txt")
	if err := os.WriteFile(tokenPath, []byte("tampered-token"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitHTTP("the token file repaired", func() bool {
		b, _ := os.ReadFile(tokenPath)
		_, body := httpGet(t, probes+"/metrics")
		return string(b) == diffSecret && metricValue(body, `driftwatch_repairs_total{cluster="files",outcome="success"}`) >= 1
	})
	_, snapshot := httpGetAuth(t, base+"/api/v1/snapshot", token)
	if !strings.Contains(snapshot, "(sensitive value changed)") {
		t.Errorf("the snapshot does not show the sensitive drift:\n%s", snapshot)
	}
	_, node := httpGetAuth(t, base+"/api/v1/nodes/files:local_file.token:local_file", token)
	_, metrics := httpGet(t, probes+"/metrics")
	cancel()
	wg.Wait()
	if runErr != nil {
		t.Errorf("serve: %v", runErr)
	}
	outputs := map[string]string{"snapshot": snapshot, "node": node, "metrics": metrics, "stream": stream.String(),
		"logs": errOut.String(), "stdout": out.String()}
	if err := filepath.WalkDir(stateHome, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		outputs[p] = string(b)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stream.String(), "sensitive_content") {
		t.Errorf("the stream never showed the drift: %d bytes", len(stream.String()))
	}
	for name, text := range outputs {
		for _, secret := range []string{diffSecret, diffSecretSHA1, "tampered-token"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds %q", name, secret)
			}
		}
	}
}

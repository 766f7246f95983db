package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/config"
)

// TestConfigSchema: `driftwatch config schema` prints the committed
// schema (which the config package's tests keep in step with the code);
// `config` alone or with an unknown command is a usage error.
func TestConfigSchema(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := exitCode(run(t.Context(), []string{"config", "schema"}, testEnv, &out, &errOut), &errOut); code != 0 || errOut.Len() > 0 {
		t.Fatalf("exit %d, stderr %q", code, &errOut)
	}
	want, err := os.ReadFile("docs/config.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Error("config schema does not print docs/config.schema.json")
	}
	var schema struct {
		ID string `json:"$id"`
	}
	if err := json.Unmarshal(out.Bytes(), &schema); err != nil || schema.ID != config.SchemaURL {
		t.Errorf("$id %q (%v), want %q", schema.ID, err, config.SchemaURL)
	}

	for _, tt := range []struct {
		args    []string
		errLine string
	}{
		{[]string{"config"}, "config: name a command: schema (see driftwatch config --help)"},
		{[]string{"config", "schemas"}, `config: unknown command "schemas": want schema (see driftwatch config --help)`},
		{[]string{"config", "schema", "x"}, `config schema: unexpected argument "x" (see driftwatch config schema --help)`},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := exitCode(run(t.Context(), tt.args, testEnv, &out, &errOut), &errOut); code != 2 || out.Len() > 0 {
				t.Errorf("exit %d, stdout %q: want 2 and nothing", code, &out)
			}
			if got := strings.TrimSpace(errOut.String()); got != "driftwatch: "+tt.errLine {
				t.Errorf("stderr %q, want %q", got, "driftwatch: "+tt.errLine)
			}
		})
	}
}

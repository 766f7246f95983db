package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/driftwatch/driftwatch/internal/app"
)

// TestClientFlags: the token comes from --token-file, else
// $DRIFTWATCH_TOKEN, else the default token file; a file others may read
// and a malformed token are refused.
func TestClientFlags(t *testing.T) {
	const (
		fileTok    = "file-token-0123456789-abcdefghijklmn"
		envTok     = "env-token-0123456789-abcdefghijklmno"
		defaultTok = "default-token-0123456789-abcdefghijk"
	)
	write := func(dir, name, content string, perm os.FileMode) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, perm); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tokenFile := write(t.TempDir(), "token", fileTok+"\n", 0o600)
	loose := write(t.TempDir(), "token", fileTok+"\n", 0o644)
	state := t.TempDir()
	write(filepath.Join(state, "driftwatch"), "tokens", "# made by serve\n"+defaultTok+" operator default\n", 0o600)
	home := t.TempDir()
	write(filepath.Join(home, ".local", "state", "driftwatch"), "tokens", defaultTok+" operator default\n", 0o600)
	looseState := t.TempDir()
	write(filepath.Join(looseState, "driftwatch"), "tokens", defaultTok+" operator default\n", 0o640)

	for _, tt := range []struct {
		name    string
		args    []string
		env     map[string]string
		want    string
		wantErr string
	}{
		{name: "token file first", args: []string{"--token-file", tokenFile}, env: map[string]string{app.TokenEnv: envTok, "XDG_STATE_HOME": state}, want: fileTok},
		{name: "then the environment", env: map[string]string{app.TokenEnv: envTok, "XDG_STATE_HOME": state}, want: envTok},
		{name: "then the default file", env: map[string]string{"XDG_STATE_HOME": state}, want: defaultTok},
		{name: "default file under HOME", env: map[string]string{"HOME": home, "XDG_STATE_HOME": "relative"}, want: defaultTok},
		{name: "no default file", env: map[string]string{"XDG_STATE_HOME": t.TempDir()}, want: ""},
		{name: "no state folder at all", env: map[string]string{}, want: ""},
		{name: "loose token file", args: []string{"--token-file", loose}, wantErr: "--token-file: " + loose + ": mode 0644"},
		{name: "missing token file", args: []string{"--token-file", filepath.Join(state, "none")}, wantErr: "no such file"},
		{name: "loose default file", env: map[string]string{"XDG_STATE_HOME": looseState}, wantErr: "default token file"},
		{name: "short environment token", env: map[string]string{app.TokenEnv: "short"}, wantErr: "$DRIFTWATCH_TOKEN:1: token too short"},
	} {
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		var cf clientFlags
		cf.addFlags(fs)
		if err := fs.Parse(append(tt.args, "--ca-file", "ca.pem")); err != nil {
			t.Fatal(err)
		}
		opts, err := cf.options(func(k string) string { return tt.env[k] })
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: %v, want %q", tt.name, err, tt.wantErr)
			}
			if err != nil && (strings.Contains(err.Error(), fileTok) || strings.Contains(err.Error(), defaultTok)) {
				t.Errorf("%s: the error holds a token: %v", tt.name, err)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case opts.Token != tt.want || opts.CAFile != "ca.pem":
			t.Errorf("%s: %+v, want token %q", tt.name, opts, tt.want)
		}
	}
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/driftwatch/driftwatch/hub/api"
	"github.com/driftwatch/driftwatch/internal/safefile"
)

// tokenEnv is the environment variable a client reads its token from.
const tokenEnv = "DRIFTWATCH_TOKEN"

// defaultTokenFile is where serve keeps the operator token it makes on its
// first start when it has no --token-file, and where clients on the same
// machine find it: $XDG_STATE_HOME/driftwatch/tokens, else
// ~/.local/state/driftwatch/tokens; "" when neither XDG_STATE_HOME nor
// HOME is an absolute folder.
func defaultTokenFile(getenv func(string) string) string {
	base := getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(base) {
		home := getenv("HOME")
		if !filepath.IsAbs(home) {
			return ""
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "driftwatch", "tokens")
}

// clientFlags are the flags of every command that talks to a running hub
// (attach, reload): how it authenticates and which CA it trusts.
type clientFlags struct {
	tokenFile string
	caFile    string
}

// addClientFlags registers --token-file and --ca-file on fs.
func addClientFlags(fs *flag.FlagSet) *clientFlags {
	var f clientFlags
	fs.StringVar(&f.tokenFile, "token-file", "", "file holding the hub's bearer token (default: $"+tokenEnv+", else the token file serve made on this machine)")
	fs.StringVar(&f.caFile, "ca-file", "", "PEM file of the CA that signed the hub's certificate (https addresses; default: the system's)")
	return &f
}

// options resolves the client's options once the flags are parsed. The
// token is the first one of --token-file, else $DRIFTWATCH_TOKEN, else the
// first one of the default token file (so a user on serve's machine needs
// nothing); with none of them the client sends no token. A token file that
// group or others may read is refused, like ssh refuses such a key.
func (f *clientFlags) options(getenv func(string) string) (api.ClientOptions, error) {
	opts := api.ClientOptions{CAFile: f.caFile}
	switch {
	case f.tokenFile != "":
		tok, err := api.ReadToken(f.tokenFile)
		if err != nil {
			return opts, fmt.Errorf("--token-file: %w", err)
		}
		opts.Token = tok
	case getenv(tokenEnv) != "":
		tok, err := api.FirstToken("$"+tokenEnv, []byte(getenv(tokenEnv)))
		if err != nil {
			return opts, err
		}
		opts.Token = tok
	default:
		path := defaultTokenFile(getenv)
		if path == "" {
			break
		}
		data, err := safefile.ReadPrivate(path)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return opts, fmt.Errorf("default token file: %w (or pass --token-file or set %s)", err, tokenEnv)
		}
		if opts.Token, err = api.FirstToken(path, data); err != nil {
			return opts, fmt.Errorf("default token file: %w", err)
		}
	}
	return opts, nil
}

package main

import (
	"github.com/spf13/pflag"

	"github.com/driftwatch/driftwatch/internal/api"
	"github.com/driftwatch/driftwatch/internal/app"
)

// clientFlags are the flags of every command that talks to a running hub
// (attach, reload): how it authenticates and which CA it trusts.
type clientFlags struct {
	tokenFile string
	caFile    string
}

// addFlags registers --token-file and --ca-file on fs.
func (f *clientFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.tokenFile, "token-file", "", "file holding the hub's bearer token (default: $"+app.TokenEnv+", else the token file serve made on this machine)")
	fs.StringVar(&f.caFile, "ca-file", "", "PEM file of the CA that signed the hub's certificate (https addresses; default: the system's)")
}

// options resolves the client's options once the flags are parsed (see
// app.ClientOptions).
func (f *clientFlags) options(getenv func(string) string) (api.ClientOptions, error) {
	return app.ClientOptions(f.tokenFile, f.caFile, getenv)
}

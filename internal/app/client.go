package app

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/driftwatch/driftwatch/internal/api"
	"github.com/driftwatch/driftwatch/internal/safefile"
)

// TokenEnv is the environment variable a client reads its token from.
const TokenEnv = "DRIFTWATCH_TOKEN"

// DefaultTokenFile is where serve keeps the operator token it makes on its
// first start when it has no --token-file, and where clients on the same
// machine find it: $XDG_STATE_HOME/driftwatch/tokens, else
// ~/.local/state/driftwatch/tokens; "" when neither XDG_STATE_HOME nor
// HOME is an absolute folder.
func DefaultTokenFile(getenv func(string) string) string {
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

// ClientOptions resolves the options of a client of a running hub (attach,
// reload) from --token-file and --ca-file. The token is the first one of
// --token-file, else $DRIFTWATCH_TOKEN, else the
// first one of the default token file (so a user on serve's machine needs
// nothing); with none of them the client sends no token. A token file that
// group or others may read is refused, like ssh refuses such a key.
func ClientOptions(tokenFile, caFile string, getenv func(string) string) (api.ClientOptions, error) {
	opts := api.ClientOptions{CAFile: caFile}
	switch {
	case tokenFile != "":
		tok, err := api.ReadToken(tokenFile)
		if err != nil {
			return opts, fmt.Errorf("--token-file: %w", err)
		}
		opts.Token = tok
	case getenv(TokenEnv) != "":
		tok, err := api.FirstToken("$"+TokenEnv, []byte(getenv(TokenEnv)))
		if err != nil {
			return opts, err
		}
		opts.Token = tok
	default:
		path := DefaultTokenFile(getenv)
		if path == "" {
			break
		}
		data, err := safefile.ReadPrivate(path)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return opts, fmt.Errorf("default token file: %w (or pass --token-file or set %s)", err, TokenEnv)
		}
		if opts.Token, err = api.FirstToken(path, data); err != nil {
			return opts, fmt.Errorf("default token file: %w", err)
		}
	}
	return opts, nil
}

package app

import (
	"testing"

	"github.com/driftwatch/driftwatch/internal/api"
)

func TestDefaultTokenFile(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_STATE_HOME": "/s", "HOME": "/h"}, "/s/driftwatch/tokens"},
		{map[string]string{"XDG_STATE_HOME": "rel", "HOME": "/h"}, "/h/.local/state/driftwatch/tokens"},
		{map[string]string{"HOME": "/h"}, "/h/.local/state/driftwatch/tokens"},
		{map[string]string{"HOME": "h"}, ""},
		{map[string]string{}, ""},
	} {
		if got := DefaultTokenFile(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.env, got, tt.want)
		}
	}
}

// TestDefaultTokenName: the default token is named after its user, with
// white space a token file cannot hold replaced; none is "default".
func TestDefaultTokenName(t *testing.T) {
	for user, want := range map[string]string{"alice": "alice", "Jane Doe": "Jane-Doe", " ": "default", "local": "default", `CORP\jdoe`: `CORP\jdoe`} {
		if got := defaultTokenName(user); got != want {
			t.Errorf("defaultTokenName(%q) = %q, want %q", user, got, want)
		}
		if _, err := api.ParseTokens("t", []byte("0123456789abcdef0123456789abcdef operator "+defaultTokenName(user)+"\n")); err != nil {
			t.Errorf("a token file naming %q: %v", user, err)
		}
	}
}

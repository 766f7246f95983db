package app

import "testing"

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

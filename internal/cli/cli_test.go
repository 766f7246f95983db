package cli

import (
	"runtime/debug"
	"testing"
)

// TestBuildVersion: a stamped version wins; else the build information's
// module version, else its VCS revision; else dev.
func TestBuildVersion(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	info := func(mainVersion string, settings ...string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/driftwatch/driftwatch", Version: mainVersion}}
			for i := 0; i+1 < len(settings); i += 2 {
				bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
			}
			return bi, true
		}
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	tests := []struct {
		name          string
		stamped       string
		info          func() (*debug.BuildInfo, bool)
		want, wantRev string
	}{
		{"stamped", "v1.4.0", info("v1.3.0", "vcs.revision", rev), "v1.4.0", rev},
		{"go install module@version", "dev", info("v1.3.0"), "v1.3.0", ""},
		{"go build in a checkout: a pseudo-version", "dev", info("v0.0.0-20261201120000-0123456789ab+dirty", "vcs.revision", rev, "vcs.modified", "true"),
			"v0.0.0-20261201120000-0123456789ab+dirty", rev},
		{"devel with a revision", "dev", info("(devel)", "vcs.revision", rev, "vcs.modified", "false"), "0123456789ab", rev},
		{"devel with a modified tree", "", info("(devel)", "vcs.revision", rev, "vcs.modified", "true"), "0123456789ab-dirty", rev},
		{"devel without VCS information", "dev", info("(devel)"), "dev", ""},
		{"no build information", "dev", none, "dev", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, gotRev := BuildVersion(tt.stamped, tt.info)
			if got != tt.want || gotRev != tt.wantRev {
				t.Errorf("BuildVersion = %q, %q; want %q, %q", got, gotRev, tt.want, tt.wantRev)
			}
		})
	}
}

func TestFormats(t *testing.T) {
	tests := map[string][]string{
		"":                   nil,
		"yaml":               {"yaml"},
		"text or json":       {"text", "json"},
		"text, json or yaml": {"text", "json", "yaml"},
	}
	for want, formats := range tests {
		if got := Formats(formats...); got != want {
			t.Errorf("Formats(%q) = %q, want %q", formats, got, want)
		}
	}
}

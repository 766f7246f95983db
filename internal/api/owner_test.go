package api

import (
	"os"
	"testing"
)

func TestPrivateMode(t *testing.T) {
	tests := []struct {
		name        string
		perm        os.FileMode
		owner, euid int
		want        bool
	}{
		{"0600 own file", 0o600, 1000, 1000, true},
		{"0400 own file", 0o400, 1000, 1000, true},
		{"0640 own file", 0o640, 1000, 1000, false},
		{"0644 own file", 0o644, 1000, 1000, false},
		{"0440 root file, Secret volume with fsGroup", 0o440, 0, 65532, true},
		{"0640 root file", 0o640, 0, 65532, true},
		{"0660 root file: group may write", 0o660, 0, 65532, false},
		{"0444 root file: others may read", 0o444, 0, 65532, false},
		{"0450 root file: group may execute", 0o450, 0, 65532, false},
		{"0440 root file read by root", 0o440, 0, 0, false},
		{"0440 file of another user", 0o440, 1001, 1000, false},
		{"0440 unknown owner", 0o440, -1, 1000, false},
		{"0440 root file, unknown euid", 0o440, 0, -1, false},
	}
	for _, tt := range tests {
		if got := privateMode(tt.perm, tt.owner, tt.euid); got != tt.want {
			t.Errorf("%s: privateMode(%04o, %d, %d) = %v, want %v", tt.name, tt.perm, tt.owner, tt.euid, got, tt.want)
		}
	}
}

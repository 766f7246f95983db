package terraform

import (
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

func TestNodeIDRoundTrip(t *testing.T) {
	tests := []struct {
		workspace, address, typ string
		want                    string
	}{
		{"files", "local_file.motd", "local_file", "files:local_file.motd:local_file"},
		{"db", `module.db["eu:west"].aws_db_instance.main`, "aws_db_instance", `db:module.db["eu:west"].aws_db_instance.main:aws_db_instance`},
		{"dns", `aws_route53_record.r["a:b:c"]`, "aws_route53_record", `dns:aws_route53_record.r["a:b:c"]:aws_route53_record`},
		{"w", `module.a[0].module.b["x\"y:z"].t.n[3]`, "t", `w:module.a[0].module.b["x\"y:z"].t.n[3]:t`},
	}
	for _, tt := range tests {
		id := NodeID(tt.workspace, tt.address, tt.typ)
		if got := id.String(); got != tt.want {
			t.Errorf("NodeID(%q, %q, %q) = %q, want %q", tt.workspace, tt.address, tt.typ, got, tt.want)
		}
		back, err := hub.ParseNodeID(id.String())
		if err != nil || back != id {
			t.Errorf("ParseNodeID(%q) = %+v, %v; want %+v", id, back, err, id)
		}
	}
}

// FuzzNodeIDRoundTrip checks that any resource address (brackets, quotes,
// colons) round-trips through the NodeID text form.
func FuzzNodeIDRoundTrip(f *testing.F) {
	f.Add("files", `module.db["eu:west"].local_file.x`, "local_file")
	f.Add("ws", `t.n["::"]`, "t")
	f.Add("ws", `module.m["a]b"].t.n[0]`, "t")
	f.Fuzz(func(t *testing.T, workspace, address, typ string) {
		if workspace == "" || strings.Contains(workspace, ":") || typ == "" || strings.Contains(typ, ":") || address == "" {
			t.Skip()
		}
		id := NodeID(workspace, address, typ)
		back, err := hub.ParseNodeID(id.String())
		if err != nil {
			t.Fatalf("ParseNodeID(%q): %v", id, err)
		}
		if back != id {
			t.Fatalf("round trip of %q = %+v, want %+v", id, back, id)
		}
	})
}

func TestDiffValues(t *testing.T) {
	tests := []struct {
		name            string
		desired, actual map[string]any
		want            []hub.FieldDiff
	}{
		{"equal", map[string]any{"a": "x"}, map[string]any{"a": "x"}, nil},
		{"changed string", map[string]any{"content": "hello\n"}, map[string]any{"content": "bye\n"},
			[]hub.FieldDiff{{Path: "content", Desired: "hello\n", Actual: "bye\n"}}},
		{"nested and number", map[string]any{"tags": map[string]any{"env": "prod"}, "size": 3.0},
			map[string]any{"tags": map[string]any{"env": "dev"}, "size": 4.0},
			[]hub.FieldDiff{{Path: "size", Desired: "3", Actual: "4"}, {Path: "tags.env", Desired: "prod", Actual: "dev"}}},
		{"added entry", map[string]any{"tags": map[string]any{}}, map[string]any{"tags": map[string]any{"owner": "bob"}},
			[]hub.FieldDiff{{Path: "tags.owner", Desired: "<none>", Actual: "bob"}}},
		{"null desired is not managed", map[string]any{"id": nil}, map[string]any{"id": "abc"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := diffValues(tt.desired, tt.actual)
			if len(got) != len(tt.want) {
				t.Fatalf("diffValues = %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("diffValues[%d] = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestIgnoredFile(t *testing.T) {
	for name, want := range map[string]bool{
		"terraform.tfstate": true, "terraform.tfstate.backup": true, ".terraform.lock.hcl": true,
		".terraform.tfstate.lock.info": true, "main.tf": false, "motd.txt": false,
	} {
		if got := ignoredFile(name); got != want {
			t.Errorf("ignoredFile(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestDetection(t *testing.T) {
	for in, want := range map[time.Duration]string{
		time.Minute: "poll 1m", 30 * time.Second: "poll 30s", 90 * time.Minute: "poll 1h30m", time.Hour: "poll 1h", 1500 * time.Millisecond: "poll 1.5s",
	} {
		if got := Detection(in); got != want {
			t.Errorf("Detection(%s) = %q, want %q", in, got, want)
		}
	}
}

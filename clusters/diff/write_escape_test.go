package diff

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/driftwatch/driftwatch/hub"
)

// TestWriteTextEscapesClusterControlCharacters: a live value, a field
// manager, an ignored field and the errors of a cluster carry terminal
// escape sequences; the text report shows them escaped and puts no
// control character but the line breaks on the terminal.
func TestWriteTextEscapesClusterControlCharacters(t *testing.T) {
	const evil = "\x1b]0;pwned\x07\x1b[2J\u009b\x9b\u202e"
	at := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	id, err := hub.ParseNodeID("prod-eu:shop/web:configmap")
	if err != nil {
		t.Fatal(err)
	}
	cm := configMap(id.String(), map[string]any{"a": "1"})
	cmLive := live(cm, func(m map[string]any) { m["data"].(map[string]any)["a"] = "2" })
	r := &Report{At: at,
		Objects: []Object{
			{ID: id, Application: "web", Class: hub.DriftModified,
				Fields:      []hub.FieldDiff{{Path: "data.a", Desired: "1", Actual: "1" + evil}},
				Attribution: &hub.Attribution{Manager: "edit" + evil, At: at.Add(-time.Minute)},
				Ignored:     []hub.IgnoredField{{FieldDiff: hub.FieldDiff{Path: "data.b", Desired: "2", Actual: "3" + evil}, Rule: "b", Manager: "m" + evil}},
				Diff:        mustUnified(t, cm, cmLive)},
			{ID: id, Application: "web", Err: errors.New("forbidden" + evil)},
		},
		Unreachable:  []ClusterError{{Cluster: "staging", Objects: 1, Err: errors.New("refused" + evil)}},
		Unauthorized: []ClusterError{{Cluster: "edge", Objects: 1, Err: errors.New("rejected" + evil)}},
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	if !utf8.ValidString(out) {
		t.Errorf("the report is not UTF-8: %q", out)
	}
	for i, c := range out {
		if (c < 0x20 && c != '\n') || (c >= 0x7f && c <= 0x9f) || c == '\u202e' {
			t.Errorf("the report carries control character %U: %q", c, out[max(0, i-30):min(len(out), i+10)])
			break
		}
	}
	for _, want := range []string{
		`changed by edit\x1b]0;pwned\x07\x1b[2J\u009b\x9b\u202e`,
		`3\x1b]0;pwned\x07\x1b[2J\u009b\x9b\u202e, ignored`,
		`forbidden\x1b]0;pwned`, `refused\x1b]0;pwned`, `rejected\x1b]0;pwned`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}

package app

import (
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// TestRepairLineEscapesClusterText: the demo's headless line quotes a
// live value and a field manager; their escape sequences are shown as
// text, never written to the terminal.
func TestRepairLineEscapesClusterText(t *testing.T) {
	const evil = "\x1b]0;pwned\x07\x1b[2J"
	id, err := hub.ParseNodeID("demo-a:demo/web:configmap")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	n := hub.NodeStatus{ID: id, LastRepair: &hub.Repair{ID: id,
		Drift:       hub.Drift{Class: hub.DriftModified, Fields: []hub.FieldDiff{{Path: "data.debug", Desired: "false", Actual: "true" + evil}}},
		Attribution: &hub.Attribution{Manager: "edit" + evil},
		ObservedAt:  at, ClassifiedAt: at, AppliedAt: at.Add(3 * time.Millisecond), VerifiedAt: at.Add(5 * time.Millisecond)}}
	line := repairLine(n)
	if strings.ContainsAny(line, "\x1b\x07\n") {
		t.Errorf("the line carries control characters: %q", line)
	}
	for _, want := range []string{`true\x1b]0;pwned\x07\x1b[2J`, `(by edit\x1b]0;pwned\x07\x1b[2J)`} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
}

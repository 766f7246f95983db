package terraform

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/hub"
)

// nopSink is a hub.Sink that drops everything.
type nopSink struct{}

func (nopSink) Observe(hub.Event)                {}
func (nopSink) ClusterChanged(hub.ClusterHealth) {}

// TestHealthLogLevels: a workspace that cannot be read or planned
// (unreachable) or is locked (degraded) is logged as a warning with the
// error; starting and becoming ready again as info.
func TestHealthLogLevels(t *testing.T) {
	var logs bytes.Buffer
	w, err := New(Options{ID: "ws", Dir: t.TempDir(), OnSpecs: func(string, []hub.NodeSpec) {},
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))}, nopSink{})
	if err != nil {
		t.Fatal(err)
	}
	w.report(hub.ClusterConnecting, "initialising")
	w.report(hub.ClusterUnreachable, "plan failing: exit status 1")
	w.report(hub.ClusterSynced, "")
	w.report(hub.ClusterDegraded, "locked: held by ci")
	w.report(hub.ClusterSynced, "")
	var got []string
	for line := range strings.Lines(logs.String()) {
		var rec struct{ Level, Msg, State, Err string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.TrimSpace(rec.Level+" "+rec.Msg+" "+rec.State+" "+rec.Err))
	}
	want := []string{"INFO workspace health connecting", "WARN workspace health unreachable plan failing: exit status 1",
		"INFO workspace ready", "WARN workspace health degraded locked: held by ci", "INFO workspace ready"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

package diff

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// Ignored differences are listed, not counted as drift: an object whose only
// differences are ignored is in sync and the exit code says so.
func TestReportIgnored(t *testing.T) {
	id := hub.NewNodeID("prod", "shop", "web", hub.KindDeployment)
	r := &Report{At: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC), Objects: []Object{{
		ID: id, Application: "web", Class: hub.DriftNone,
		Ignored: []hub.IgnoredField{{FieldDiff: hub.FieldDiff{Path: "spec.replicas", Desired: "2", Actual: "5"}, Rule: "autoscaler", Manager: "hpa"}},
	}}}
	if r.ExitCode() != ExitInSync {
		t.Errorf("exit code %d, want %d (ignored differences are not drift)", r.ExitCode(), ExitInSync)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := "ignored prod:shop/web:deployment spec.replicas: 2 -> 5, ignored (rule autoscaler, owned by hpa)\n"
	if !strings.Contains(text.String(), want) {
		t.Errorf("text:\n%s\nwant a line %q", text.String(), want)
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Objects []struct {
			Ignored []struct{ Path, Rule, Manager string } `json:"ignored"`
		} `json:"objects"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Objects) != 1 || len(doc.Objects[0].Ignored) != 1 || doc.Objects[0].Ignored[0].Rule != "autoscaler" || doc.Objects[0].Ignored[0].Manager != "hpa" {
		t.Errorf("json: %s", js.String())
	}
}

package tui

import (
	"strings"
	"testing"
)

// TestInitialStatus: Options.Status shows in the status bar from the first
// render, and the next status message replaces it.
func TestInitialStatus(t *testing.T) {
	const note = "no Terraform workspace: build it first"
	m, _ := newFixtureModel(t, 120, 30, Options{Status: note})
	if out := m.View().Content; !strings.Contains(out, note) {
		t.Fatalf("first render lacks the initial status %q:\n%s", note, out)
	}
	m.setStatus("repair queued", false)
	if out := m.View().Content; strings.Contains(out, note) {
		t.Fatalf("the initial status is still shown after another one:\n%s", out)
	}
}

package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
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

// TestClusterViewShowsASyncedNote: a synced source with a note (a Terraform
// workspace with configuration not applied) shows it under its info line;
// one without a note keeps the two-line header.
func TestClusterViewShowsASyncedNote(t *testing.T) {
	const note = "not applied: added in config local_file.extra"
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	keys := defaultKeys()
	for _, tc := range []struct {
		lastError string
		lines     int
	}{{note, 3}, {"", 2}} {
		v := newClusterView(newStyles(true), &keys, func() time.Time { return now })
		v.SetSize(120, 20)
		snap := buildSnapshot("hub", []hub.ClusterStatus{{ClusterHealth: hub.ClusterHealth{
			Cluster: "files", State: hub.ClusterSynced, Since: now.Add(-time.Minute), Source: "terraform", LastError: tc.lastError}}}, nil, nil, nil)
		v.open("files", snap)
		if got := v.headerLines(); got != tc.lines {
			t.Errorf("note %q: %d header lines, want %d", tc.lastError, got, tc.lines)
		}
		if out := v.View(); tc.lastError != "" && !strings.Contains(out, "synced for 1m: "+note) {
			t.Errorf("the synced note is not shown:\n%s", out)
		}
	}
}

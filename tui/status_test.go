package tui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
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

// TestStopOnDone: a program whose context ends is asked to quit (killed
// only if it has not ended after quitGrace); after a hangup it is killed at
// once; one that ended first is left alone.
func TestStopOnDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		run := func(cause error, endsAfterQuit bool) (quits, kills int, took time.Duration) {
			ctx, cancel := context.WithCancelCause(t.Context())
			ended := make(chan struct{})
			var once sync.Once
			end := func() { once.Do(func() { close(ended) }) }
			quit := func() {
				quits++
				if endsAfterQuit {
					end()
				}
			}
			kill := func() { kills++; end() }
			start := time.Now()
			done := make(chan struct{})
			go func() { defer close(done); stopOnDone(ctx, ended, quit, kill) }()
			cancel(cause)
			<-done
			return quits, kills, time.Since(start)
		}
		if q, k, d := run(context.Canceled, true); q != 1 || k != 0 || d != 0 {
			t.Errorf("context ended, program quits: %d quits, %d kills after %s; want 1, 0 at once", q, k, d)
		}
		if q, k, d := run(context.Canceled, false); q != 1 || k != 1 || d != quitGrace {
			t.Errorf("context ended, program stuck: %d quits, %d kills after %s; want 1, 1 after %s", q, k, d, quitGrace)
		}
		if q, k, d := run(fmt.Errorf("pty: %w", ErrHangup), true); q != 0 || k != 1 || d != 0 {
			t.Errorf("hangup: %d quits, %d kills after %s; want 0, 1 at once", q, k, d)
		}
		ended := make(chan struct{})
		close(ended)
		stopOnDone(t.Context(), ended, func() { t.Error("quit after the program ended") }, func() { t.Error("kill after the program ended") })
	})
}

package tui

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/driftwatch/driftwatch/hub"
)

// panicSource is a fakeSource whose repair and hold panic.
type panicSource struct{ *fakeSource }

func (panicSource) RepairNow(hub.NodeID) error { panic("injected repair failure") }

func (panicSource) Hold(hub.HoldTarget, time.Duration, string) (hub.Hold, error) {
	panic("injected hold failure")
}

// TestActionPanics: a panic in an action (a confirmed action, a hold, a
// reload, an extra key, writing a rule) is recovered, logged with its
// stack to Options.Logger and shown as the action's error.
func TestActionPanics(t *testing.T) {
	const inv = "prod-eu:casehub/inventory:deployment"
	tests := []struct {
		name   string
		steps  []step
		status string
		in     string // the log's name of the action
	}{
		{name: "repair", steps: []step{keys("enter", "r", "y")},
			status: `error: panic in the action "Repair ` + inv + ` now?": injected repair failure`,
			in:     `the action \"Repair ` + inv + ` now?\"`},
		{name: "hold", steps: []step{keys("enter", "h", "enter"), text("x"), keys("enter")},
			status: "error: panic in the hold of node " + inv + ": injected hold failure", in: "the hold of node " + inv},
		{name: "reload", steps: []step{keys(":"), text("reload"), keys("enter")},
			status: "error: panic in the reload: injected reload failure", in: "the reload"},
		{name: "extra key", steps: []step{keys("g")},
			status: "error: panic in the action of key g: injected extra failure", in: "the action of key g"},
		{name: "write rule", steps: []step{{snap: contestedFixture()}, keys(":"), text("node prod-eu:casehub/search:deployment"),
			keys("enter", "i", "W", "y")},
			status: "injected write failure", in: "the action"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs safeBuffer
			m := New(panicSource{newFakeSource()}, Options{NoColor: true, Now: fixedClock,
				Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
				Reload:    func() (string, error) { panic("injected reload failure") },
				WriteRule: func(string, string) (string, error) { panic("injected write failure") },
				Extra: []ExtraKey{{Binding: key.NewBinding(key.WithKeys("g"), key.WithHelp("g", "toggle")),
					Run: func() string { panic("injected extra failure") }}}})
			t.Cleanup(m.Close)
			m.Update(tea.WindowSizeMsg{Width: 160, Height: 40})
			m.Update(snapshotMsg{snap: fixture()})
			run(t, m, tt.steps)
			if got := m.StatusMessage(); !strings.Contains(got, tt.status) || !strings.HasPrefix(got, "error: panic in ") {
				t.Errorf("status = %q, want the panic %q", got, tt.status)
			}
			if l := string(logs.Bytes()); !strings.Contains(l, "panic recovered") || !strings.Contains(l, `in="`+tt.in) ||
				!strings.Contains(l, "actions_test.go") {
				t.Errorf("the panic is not logged with its stack:\n%s", l)
			}
		})
	}
}

// startSignalWatcher starts os/signal's watcher outside any synctest
// bubble: Run asks for SIGHUP, and os/signal starts its watcher at the
// first signal.Notify, whose channels would belong to the bubble if that
// call were made inside one (a later Notify outside it is then fatal).
func startSignalWatcher() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGHUP)
	signal.Stop(c)
}

// runInBubble starts Run over the fixture with opts inside the current
// synctest bubble, its input a pipe (typing returns once the program read
// the keys). end cancels Run's context, closes its input and returns what
// Run returned.
func runInBubble(t *testing.T, opts Options, out io.Writer) (typeKeys func(string), end func() error) {
	in, w := io.Pipe()
	// bubbletea does not wait for the clock's last tick command: its
	// timer fires (in the bubble's time) before the bubble ends.
	t.Cleanup(func() { time.Sleep(time.Second) })
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		opts.NoColor, opts.Now = true, fixedClock
		errc <- Run(ctx, newFakeSource(fixture()), opts,
			tea.WithInput(in), tea.WithOutput(out), tea.WithoutSignals(), tea.WithWindowSize(200, 24))
	}()
	typeKeys = func(s string) {
		if _, err := w.Write([]byte(s)); err != nil {
			t.Errorf("typing %q: %v", s, err)
		}
	}
	return typeKeys, func() error {
		cancel()
		w.Close()
		return <-errc
	}
}

// TestRunWaitsForActions: Run does not return while an action is still
// running (here a reload, with Run's context ended meanwhile), since its
// caller then closes what the action uses; it returns once the action
// ended.
func TestRunWaitsForActions(t *testing.T) {
	startSignalWatcher()
	synctest.Test(t, func(t *testing.T) {
		started, release := make(chan struct{}), make(chan struct{})
		var finished, returned atomic.Bool
		reload := func() (string, error) {
			close(started)
			<-release
			finished.Store(true)
			return "reloaded", nil
		}
		var notice safeBuffer
		typeKeys, end := runInBubble(t, Options{Reload: reload, Notice: &notice}, io.Discard)
		typeKeys(":reload\r")
		<-started
		endc := make(chan error, 1)
		go func() {
			err := end()
			returned.Store(true)
			endc <- err
		}()
		synctest.Wait() // the program has ended; Run waits for the reload, or has returned
		if returned.Load() {
			t.Error("Run returned while the reload was still running")
		}
		time.Sleep(time.Second) // past actionNoticeAfter: the wait is said
		if got := string(notice.Bytes()); got != "waiting for 1 action(s) in progress (a reload, a hold...) to end\n" {
			t.Errorf("notice %q", got)
		}
		close(release)
		if err := <-endc; err != nil {
			t.Fatalf("Run = %v", err)
		}
		if !finished.Load() {
			t.Fatal("Run returned before the reload ended")
		}
	})
}

// TestRunSurvivesActionPanic: a panic in an action does not end the UI
// (bubbletea's own recovery would kill the program): the status bar shows
// it as the action's error, and Run ends as usual.
func TestRunSurvivesActionPanic(t *testing.T) {
	startSignalWatcher()
	synctest.Test(t, func(t *testing.T) {
		var out safeBuffer
		typeKeys, end := runInBubble(t, Options{Reload: func() (string, error) { panic("injected reload failure") }}, &out)
		typeKeys(":reload\r")
		synctest.Wait()
		time.Sleep(time.Second) // a frame is rendered
		if !strings.Contains(string(out.Bytes()), "error: panic in the reload: injected reload failure") {
			t.Errorf("the status bar does not show the panic:\n%s", out.Bytes())
		}
		if err := end(); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	})
}

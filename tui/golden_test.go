package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/driftwatch/driftwatch/hub"
)

// newFixtureModel returns a NoColor model at w x h showing the fixture.
func newFixtureModel(t testing.TB, w, h int, opts Options) (*Model, *fakeSource) {
	t.Helper()
	src := newFakeSource()
	opts.NoColor = true
	if opts.Now == nil {
		opts.Now = fixedClock
	}
	m := New(src, opts)
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	m.Update(snapshotMsg{snap: fixture()})
	return m, src
}

// press sends keys to the model and runs the commands they return (not
// ticks or subscriptions: unit tests never call Init).
func press(t testing.TB, m *Model, keys ...string) {
	t.Helper()
	for _, k := range keys {
		_, cmd := m.Update(keyPress(k))
		runCmd(m, cmd)
	}
}

// typeText types text into the model.
func typeText(t testing.TB, m *Model, text string) {
	t.Helper()
	for _, r := range text {
		if r == ' ' {
			press(t, m, "space")
			continue
		}
		press(t, m, string(r))
	}
}

// showNode feeds the model snapshot s (its Seq moved on) and opens the
// node view of id with the :node command.
func showNode(t testing.TB, m *Model, s *hub.Snapshot, id hub.NodeID) {
	t.Helper()
	s.Seq++
	m.Update(snapshotMsg{snap: s})
	press(t, m, ":")
	typeText(t, m, "node "+id.String())
	press(t, m, "enter")
}

func runCmd(m *Model, cmd tea.Cmd) tea.Msg {
	if cmd == nil {
		return nil
	}
	msg := cmd()
	switch msg := msg.(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			runCmd(m, c)
		}
	case tea.QuitMsg:
		return msg
	case nil:
	default:
		_, next := m.Update(msg)
		runCmd(m, next)
	}
	return msg
}

func TestGoldenViews(t *testing.T) {
	screens := []struct {
		name string
		keys []string
	}{
		{"overview", nil},
		{"overview_feed", []string{"tab", "down", "down"}},
		{"cluster", []string{"enter"}},
		{"cluster_unreachable", []string{"down", "down", "enter"}},
		{"cluster_status_sort_problems", []string{"enter", "s", "x"}},
		{"detail", []string{":", "node prod-eu:casehub/inventory:deployment", "enter"}},
		{"detail_failed", []string{":", "node prod-eu:casehub/orders-config:configmap", "enter"}},
		{"help", []string{"?"}},
		{"confirm", []string{"enter", "r"}},
		{"filter", []string{"enter", "/", "ord"}},
		{"hold_prompt", []string{"enter", "h", "enter"}},
	}
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		for _, s := range screens {
			t.Run(fmt.Sprintf("%s_%dx%d", s.name, size[0], size[1]), func(t *testing.T) {
				m, _ := newFixtureModel(t, size[0], size[1], Options{})
				for _, k := range s.keys {
					if len([]rune(k)) > 1 && k != "enter" && k != "tab" && k != "down" {
						typeText(t, m, k)
						continue
					}
					press(t, m, k)
				}
				out := m.View().Content
				checkScreen(t, out, size[0], size[1])
				golden.RequireEqual(t, out)
			})
		}
	}
}

// checkScreen checks that a frame fills exactly h lines of at most w cells.
func checkScreen(t *testing.T, out string, w, h int) {
	t.Helper()
	lines := strings.Split(out, "\n")
	if len(lines) != h {
		t.Errorf("frame has %d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if n := ansi.StringWidth(l); n > w {
			t.Errorf("line %d is %d cells wide, want <= %d: %q", i, n, w, l)
		}
	}
}

package tui

import (
	"strings"
	"testing"
)

// TestWriteRuleKey: W in the node detail, once i shows the proposal, asks
// and then hands the proposed rule to Options.WriteRule; without the
// option it says how to enable it; read-only refuses it; without the
// proposal on screen it asks for i first.
func TestWriteRuleKey(t *testing.T) {
	type call struct{ app, rule string }
	tests := []struct {
		name       string
		readOnly   bool
		enabled    bool
		keys       []string
		wantCalled bool
		wantStatus string
	}{
		{"writes after i and y", false, true, []string{"i", "W", "y"}, true, "rule written"},
		{"cancelled", false, true, []string{"i", "W", "n"}, false, ""},
		{"not enabled", false, false, []string{"i", "W"}, false, WriteRuleHint},
		{"read-only", true, true, []string{"i", "W"}, false, ReadOnlyMessage},
		{"proposal not shown", false, true, []string{"W"}, false, "press i first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls []call
			opts := Options{ReadOnly: tt.readOnly}
			if tt.enabled {
				opts.WriteRule = func(app, rule string) (string, error) {
					calls = append(calls, call{app, rule})
					return "rule written", nil
				}
			}
			m, _ := newFixtureModel(t, 120, 40, opts)
			m.Update(snapshotMsg{snap: contestedFixture()})
			press(t, m, ":")
			typeText(t, m, "node prod-eu:casehub/search:deployment")
			press(t, m, "enter")
			press(t, m, tt.keys...)
			if got := len(calls) == 1; got != tt.wantCalled || len(calls) > 1 {
				t.Fatalf("WriteRule calls %+v, want called: %v", calls, tt.wantCalled)
			}
			if tt.wantCalled {
				c := calls[0]
				n, _ := contestedFixture().Node(nid("prod-eu:casehub/search:deployment"))
				if c.app != "search" || c.rule != ProposeIgnoreRule(n) ||
					!strings.Contains(c.rule, `managers: ["fake-autoscaler"]`) {
					t.Fatalf("WriteRule(%q, %q), want application search and the proposed rule", c.app, c.rule)
				}
			}
			if !strings.Contains(m.StatusMessage(), tt.wantStatus) {
				t.Fatalf("status %q, want it to hold %q", m.StatusMessage(), tt.wantStatus)
			}
		})
	}
	t.Run("help names the key", func(t *testing.T) {
		m, _ := newFixtureModel(t, 120, 40, Options{})
		m.Update(snapshotMsg{snap: contestedFixture()})
		press(t, m, ":")
		typeText(t, m, "node prod-eu:casehub/search:deployment")
		press(t, m, "enter", "i")
		if out := m.View().Content; !strings.Contains(out, "W writes it") {
			t.Fatalf("the proposal does not name W:\n%s", out)
		}
	})
}

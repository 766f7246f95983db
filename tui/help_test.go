package tui

import (
	"strings"
	"testing"
)

// TestHelpListsTheNodeKeys: the help screen lists the keys the node view
// offers (docs/drift.md tells users to press i, then W).
func TestHelpListsTheNodeKeys(t *testing.T) {
	m, _ := newFixtureModel(t, 160, 48, Options{})
	press(t, m, "?")
	out := m.View().Content
	for _, k := range []string{m.keys.Ignore.Help().Key, m.keys.WriteRule.Help().Key} {
		want := k + "   " + map[string]string{"i": "propose an ignore rule (node)", "W": "write the proposed ignore rule to the config (node)"}[k]
		if !strings.Contains(out, want) {
			t.Errorf("the help lacks %q:\n%s", want, out)
		}
	}
}

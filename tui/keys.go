package tui

import (
	"charm.land/bubbles/v2/key"
)

// keyMap holds every key binding of the UI, with its help text.
type keyMap struct {
	Up, Down, PageUp, PageDown, Home, End key.Binding
	Enter, Back, Quit, ForceQuit, Tab     key.Binding
	Help, Command, Filter                 key.Binding
	Sort, Reverse, Problems               key.Binding
	Repair, Pause, Warn, Hold, Release    key.Binding
	// Ignore shows the ignore rule that would end a node's drift or fight.
	Ignore key.Binding
	// WriteRule writes the proposed ignore rule into the config file.
	WriteRule key.Binding
	Yes, No   key.Binding
	// Commands typed after ":" (documentation only: never matched).
	CmdCluster, CmdNode, CmdReload, CmdQuit key.Binding
}

func defaultKeys() keyMap {
	b := func(help, desc string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	return keyMap{
		Up:       b("↑/k", "up", "up", "k"),
		Down:     b("↓/j", "down", "down", "j"),
		PageUp:   b("pgup/ctrl+b", "page up", "pgup", "ctrl+b"),
		PageDown: b("pgdn/ctrl+f", "page down", "pgdown", "ctrl+f"),
		Home:     b("home", "first row", "home"),
		End:      b("end", "last row", "end"),
		Enter:    b("enter", "open", "enter"),
		Back:     b("esc", "back / clear filter", "esc"),
		Quit:     b("q", "back (quit on overview)", "q"),
		// ForceQuit quits from anywhere.
		ForceQuit: b("ctrl+c", "quit", "ctrl+c"),
		Tab:       b("tab", "focus clusters/feed", "tab"),
		Help:      b("?", "help", "?"),
		Command:   b(":", "command", ":"),
		Filter:    b("/", "filter", "/"),
		Sort:      b("s", "sort column", "s"),
		Reverse:   b("S", "reverse sort", "S"),
		Problems:  b("x", "problems only", "x"),
		Repair:    b("r", "repair now", "r"),
		Pause:     b("p", "pause/resume cluster", "p"),
		Warn:      b("w", "toggle warn-only (app)", "w"),
		Hold:      b("h", "hold repairs (ttl, reason)", "h"),
		Release:   b("H", "release the hold", "H"),
		Ignore:    b("i", "propose an ignore rule (node)", "i"),
		WriteRule: b("W", "write the proposed ignore rule to the config (node)", "W"),
		Yes:       b("y", "confirm", "y", "Y"),
		No:        b("n/esc", "cancel", "n", "N", "esc"),

		CmdCluster: b(":cluster <id>", "open a cluster", ":cluster"),
		CmdNode:    b(":node <nodeid>", "open a node", ":node"),
		CmdReload:  b(":reload", "reload the config", ":reload"),
		CmdQuit:    b(":q", "quit", ":q"),
	}
}

// movement reports the cursor delta of a movement key for a page of h rows;
// home and end return very large deltas that callers clamp.
func (k keyMap) movement(msg interface{ String() string }, h int) (int, bool) {
	page := max(h-1, 1)
	switch {
	case key.Matches(msg, k.Up):
		return -1, true
	case key.Matches(msg, k.Down):
		return 1, true
	case key.Matches(msg, k.PageUp):
		return -page, true
	case key.Matches(msg, k.PageDown):
		return page, true
	case key.Matches(msg, k.Home):
		return -1 << 30, true
	case key.Matches(msg, k.End):
		return 1 << 30, true
	}
	return 0, false
}

package tui

import (
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// helpSection is a titled group of key bindings.
type helpSection struct {
	title    string
	bindings []key.Binding
}

// helpView lists every key binding, grouped, in as many columns as fit, and
// a legend of the overview's columns. It scrolls when it does not fit.
type helpView struct {
	st       *styles
	keys     *keyMap
	help     help.Model
	sections []helpSection

	width, height int
	off           int
	lineCount     int
}

func newHelpView(st *styles, keys *keyMap, extra []ExtraKey) *helpView {
	h := help.New()
	h.Styles = st.help
	k := keys
	// doc documents several bindings on one line (the help screen must fit
	// 80x24); it is never matched.
	doc := func(keys, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys), key.WithHelp(keys, desc))
	}
	both := func(a, b key.Binding, desc string) key.Binding {
		return doc(a.Help().Key+" "+b.Help().Key, desc)
	}
	sections := []helpSection{
		{"NAVIGATION", []key.Binding{
			both(k.Up, k.Down, "move"),
			doc("pgup pgdn", "page (also ctrl+b ctrl+f)"),
			both(k.Home, k.End, "first / last row"),
			k.Enter, k.Back, k.Tab,
		}},
		{"VIEWS", []key.Binding{k.Help, k.Command, k.Filter, both(k.Sort, k.Reverse, "sort column / reverse"), k.Problems}},
		{"ACTIONS (ask y/n)", []key.Binding{k.Repair, k.Pause, k.Warn, k.Hold, k.Release, k.Ignore, k.WriteRule, doc("y n", "confirm / cancel")}},
		{"COMMANDS", []key.Binding{k.CmdCluster, k.CmdNode, k.CmdReload, k.CmdQuit}},
		{"QUIT", []key.Binding{k.Quit, k.ForceQuit}},
		{"OVERVIEW COLUMNS", []key.Binding{
			doc("SYNC", "in-sync + repaired"),
			doc("DRIFT", "drifted, warn-only, paused, held"),
			doc("FIXING", "repairing"),
			doc("FAIL", "failed, forbidden"),
			doc("STUCK", "stuck (deadline exceeded)"),
			doc("EV/S", "watch events per second"),
			doc("LAST", "age of the last watch event"),
			doc("TTR", "median event-to-repaired time"),
		}},
	}
	if len(extra) > 0 {
		var b []key.Binding
		for _, e := range extra {
			b = append(b, e.Binding)
		}
		sections = append(sections, helpSection{"EXTRA", b})
	}
	return &helpView{st: st, keys: keys, help: h, sections: sections}
}

// SetSize sets the size of the view's area.
func (v *helpView) SetSize(w, h int) {
	v.width, v.height = w, h
	v.help.SetWidth(w)
}

// Update scrolls.
func (v *helpView) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	if d, ok := v.keys.movement(k, v.height); ok {
		v.off = clamp(v.off+d, 0, max(v.lineCount-v.height, 0))
	}
	return nil
}

// colGap separates help columns.
const colGap = 3

func (v *helpView) render() []string {
	blocks := make([]string, 0, len(v.sections))
	heights := make([]int, 0, len(v.sections))
	colW := 0
	for _, s := range v.sections {
		b := v.st.title.render(s.title) + "\n" + v.help.FullHelpView([][]key.Binding{s.bindings})
		blocks = append(blocks, b)
		heights = append(heights, lipgloss.Height(b))
		colW = max(colW, lipgloss.Width(b))
	}
	cols := max(1, min((v.width+colGap)/(colW+colGap), 3, len(blocks)))
	groups := balance(heights, cols)
	var columns []string
	for i, g := range groups {
		col := strings.Join(blocks[g[0]:g[1]], "\n\n")
		if i < len(groups)-1 {
			col = lipgloss.NewStyle().Width(colW + colGap).Render(col)
		}
		columns = append(columns, col)
	}
	var lines []string
	for _, l := range strings.Split(lipgloss.JoinHorizontal(lipgloss.Top, columns...), "\n") {
		lines = append(lines, strings.TrimRight(l, " "))
	}
	return lines
}

// balance splits sections (in order) into at most n columns so that the
// tallest column is as short as possible; it returns [start, end) ranges.
func balance(heights []int, n int) [][2]int {
	best, bestH := [][2]int(nil), -1
	var try func(start, left int, acc [][2]int, tallest int)
	try = func(start, left int, acc [][2]int, tallest int) {
		if start == len(heights) {
			if bestH < 0 || tallest < bestH {
				best, bestH = append([][2]int(nil), acc...), tallest
			}
			return
		}
		if left == 0 {
			return
		}
		h := -1 // blank lines between sections
		for end := start + 1; end <= len(heights); end++ {
			h += heights[end-1] + 1
			try(end, left-1, append(acc, [2]int{start, end}), max(tallest, h))
		}
	}
	try(0, n, nil, 0)
	return best
}

// View renders the visible part of the help.
func (v *helpView) View() string {
	lines := v.render()
	v.lineCount = len(lines)
	v.off = clamp(v.off, 0, max(len(lines)-v.height, 0))
	end := min(v.off+v.height, len(lines))
	out := make([]string, 0, end-v.off)
	for _, l := range lines[v.off:end] {
		out = append(out, truncate(l, v.width))
	}
	return strings.Join(out, "\n")
}

package tui

import (
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"

	"github.com/driftwatch/driftwatch/hub"
)

// style is a lipgloss style reduced to the escape sequences around its
// text, so that rendering a cell is two concatenations rather than a full
// lipgloss render (which dominates a frame otherwise). The zero style
// renders text unchanged: NoColor output holds no escape sequences at all.
// Only use it on single-line text.
type style struct {
	prefix, suffix string
	on             bool
}

// mkStyle captures the escape sequences lipgloss puts around a text.
func mkStyle(s lipgloss.Style) style {
	const marker = "x"
	r := s.Render(marker)
	i := strings.Index(r, marker)
	if i <= 0 {
		return style{}
	}
	return style{prefix: r[:i], suffix: r[i+len(marker):], on: true}
}

func (st style) render(text string) string {
	if !st.on || text == "" {
		return text
	}
	return st.prefix + text + st.suffix
}

// styles holds every style the views use. It is built once by newStyles and
// passed to the views; nothing else holds styles.
type styles struct {
	header    style // table headers
	title     style // section titles
	crumb     style // breadcrumb in the top line
	dim       style // secondary text
	bold      style
	selected  style // the row under the cursor (whole row)
	statusBar style
	prompt    style // confirm and command prompts
	inputCur  style // the input cursor cell
	errText   style
	warn      style
	accent    style
	diffDel   style
	diffAdd   style
	grey      style
	red       style
	yellow    style
	magenta   style
	cyan      style
	green     style
	contested style // contested objects: a fight with another writer
	help      help.Styles
	// cursor is what replaces the input cursor cell when styles are off.
	plainCursor string
}

func newStyles(noColor bool) *styles {
	if noColor {
		return &styles{plainCursor: "_"}
	}
	on := mkStyle
	fg := func(c string) lipgloss.Style { return lipgloss.NewStyle().Foreground(lipgloss.Color(c)) }
	st := &styles{
		header:    on(lipgloss.NewStyle().Bold(true).Underline(true)),
		title:     on(lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("6"))),
		crumb:     on(lipgloss.NewStyle().Bold(true)),
		dim:       on(fg("8")),
		bold:      on(lipgloss.NewStyle().Bold(true)),
		selected:  on(lipgloss.NewStyle().Reverse(true)),
		statusBar: on(lipgloss.NewStyle().Reverse(true)),
		prompt:    on(lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("3"))),
		inputCur:  on(lipgloss.NewStyle().Reverse(true)),
		errText:   on(fg("1").Bold(true)),
		warn:      on(fg("3")),
		accent:    on(fg("6")),
		diffDel:   on(fg("1")),
		diffAdd:   on(fg("2")),
		grey:      on(fg("8")),
		red:       on(fg("1")),
		yellow:    on(fg("3")),
		magenta:   on(fg("5")),
		cyan:      on(fg("6")),
		green:     on(fg("2")),
		contested: on(fg("208").Bold(true)),
	}
	st.help = help.Styles{
		Ellipsis:       fg("8"),
		ShortKey:       lipgloss.NewStyle().Bold(true),
		ShortDesc:      fg("8"),
		ShortSeparator: fg("8"),
		FullKey:        lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("6")),
		FullDesc:       lipgloss.NewStyle(),
		FullSeparator:  fg("8"),
	}
	return st
}

// health returns the style of a cluster state: synced green, degraded
// yellow, unreachable and unauthorized red, connecting (and removed) grey.
func (st *styles) health(s hub.ClusterState) style {
	switch s {
	case hub.ClusterSynced:
		return st.green
	case hub.ClusterDegraded:
		return st.yellow
	case hub.ClusterUnreachable, hub.ClusterUnauthorized:
		return st.red
	}
	return st.grey
}

// status returns the style of a node status.
func (st *styles) status(s hub.Status) style {
	switch s {
	case hub.StatusInSync, hub.StatusRepaired:
		return st.green
	case hub.StatusRepairing:
		return st.cyan
	case hub.StatusDrifted, hub.StatusWarnOnly, hub.StatusOrphan, hub.StatusForeign:
		return st.yellow
	case hub.StatusPaused, hub.StatusHeld:
		return st.magenta
	case hub.StatusFailed, hub.StatusStuck, hub.StatusForbidden:
		return st.errText
	case hub.StatusContested:
		return st.contested
	}
	return st.grey
}

// class returns the style of a drift class.
func (st *styles) class(c hub.DriftClass) style {
	switch c {
	case hub.DriftNone:
		return st.green
	case hub.DriftMissing:
		return st.red
	case hub.DriftModified, hub.DriftAdded:
		return st.yellow
	case hub.DriftUnlabelled:
		return st.magenta
	}
	return st.grey
}
